"""A FedGA site that lies about its personal tree in the last round.

The server checks the tree against its request before it keeps it: the agreed
classes (one share per class, each in [0, 1]), the agreed features, numeric
splits at finite thresholds, at most the global depth, node counts within the
site's declared rows. FedGA continues without a client: the liar is named in a
:class:`~fedtrees.exceptions.ClientDropoutWarning` (client, round, kind, field)
and left without a tree; the others keep theirs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from fedtrees import FedGAClassifier
from fedtrees.algorithms.fedga._payloads import TreeReply
from fedtrees.exceptions import ClientDropoutWarning
from fedtrees.federation import Fault, Federation, Payload
from fedtrees.tree import NodeStats, TreeBuilder, pack_trees

GA = {"n_generations": 2, "population_size": 6, "depth_range": (2, 3)}
LAST = 1 + GA["n_generations"] + 3  # init, local, generations, final, trees


def _federation(*faults: Fault) -> Federation:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 4))
    y = (X[:, 0] > 0).astype(int)
    return Federation.from_groups(X, y, np.repeat(list("abcd"), 60), faults=faults)


def _deeper(reply: TreeReply) -> TreeReply:
    """A chain of four splits: deeper than the global depth (3 at most)."""
    builder = TreeBuilder(n_features=4, classes=np.arange(2))
    half = NodeStats.from_class_counts(np.array([1.0, 1.0]), impurity=0.5)
    node = builder.add_root(half)
    for _ in range(4):
        node, _ = builder.split_numeric(node, 0, 0.0, half, half)
    return TreeReply(**pack_trees([builder.build()]))


LIES: dict[str, tuple[Callable[[Any], Any], str]] = {
    "three_classes": (
        lambda r: dataclasses.replace(r, value=np.hstack([r.value, r.value[:, :1]])),
        r"field 'value'",
    ),
    "too_deep": (_deeper, r"field 'trees' .*deeper than max_depth=\d"),
    "nan_value": (
        lambda r: dataclasses.replace(r, value=np.full_like(r.value, np.nan)),
        r"field 'value'",
    ),
    "infinite_threshold": (
        lambda r: dataclasses.replace(
            r, threshold=np.where(r.node_kind > 0, np.inf, r.threshold)
        ),
        r"field 'trees' .*numeric splits need a finite threshold",
    ),
}


def _only_trees(change: Callable[[Any], Any]) -> Callable[[Payload], Payload]:
    def mutate(reply: Payload) -> Payload:
        return change(reply) if isinstance(reply, TreeReply) else reply

    return mutate


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("lie", sorted(LIES))
def test_a_lying_personal_tree_is_refused_naming_the_site(lie: str) -> None:
    change, field = LIES[lie]
    fault = Fault("d", "mutate", round=LAST, mutate=_only_trees(change))
    with pytest.warns(
        ClientDropoutWarning, match=rf"Client 'd', round {LAST}, 'fedga.tree': {field}"
    ):
        model = FedGAClassifier(random_state=0, **GA).fit_federation(_federation(fault))
    assert sorted(model.trees_) == ["a", "b", "c"]  # the liar has none
    assert sorted(model.structures_) == ["a", "b", "c", "d"]
