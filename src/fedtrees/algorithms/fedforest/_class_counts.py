"""``class_weight="balanced"``: the pooled class counts, one round before the forest.

scikit-learn's ``"balanced"`` weighs class c by ``n / (n_classes * count[c])``
over the training rows; ``"balanced_subsample"`` does the same per tree from
the tree's bootstrap sample (draws counted with multiplicity). Federated, the
counts are sums over the sites: each site counts the rows of each agreed class
(and, for ``"balanced_subsample"``, its draws of each class in each tree's
client-stratified bootstrap, keyed as the forest's own: :mod:`._client`); the
server sums them and sets the weights (:func:`fedtrees.algorithms._class_weight.
balanced_weights`), which every later request carries in its full form.

**Decision (one preamble round):** the weights must be known before the first
statistic is computed, so the counts take one round of their own before the
forest's first round (grid or first level); it is a preamble (:class:`Ask`
``preamble``): the forest's next request goes out in full form again, carrying
the weights. ``"balanced"`` counts rows weighted by their sample weights, as
scikit-learn's forests do (``compute_class_weight(..., sample_weight=...)``;
row counts without weights); ``"balanced_subsample"`` counts each tree's draws,
unweighted, as scikit-learn does. What it reveals: each site's (weighted) row
count per class, which the first level's root statistics reveal anyway
(exactly without the bootstrap; as a bootstrap draw of them otherwise).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from fedtrees.algorithms._class_weight import balanced_weights
from fedtrees.algorithms.fedforest._client import bootstrap_counts, check_sizes
from fedtrees.algorithms.fedforest._forest import start_state
from fedtrees.algorithms.fedforest._layout import compact
from fedtrees.algorithms.fedforest._payloads import COUNTS, LevelFields
from fedtrees.algorithms.fedforest._phase import Got, Phase
from fedtrees.algorithms.fedforest._steps import Ask, fixed
from fedtrees.exceptions import ValidationError
from fedtrees.federation import (
    ClientData,
    Field,
    InvalidField,
    Payload,
    ReplySpec,
    as_reply,
    handler,
    payload,
)

if TYPE_CHECKING:
    from fedtrees.algorithms.fedforest._state import LevelState

__all__ = ["ClassCountReply", "ClassCountRequest", "ClassCountStep", "class_counts"]


@payload("fedforest.class_counts_reply")
class ClassCountReply(Payload):
    """Rows (weighted) per agreed class ``(C,)``; per tree, draws ``(B, C)``.

    ``tree_counts`` is ``(0, C)`` when not asked (``per_tree`` False).
    """

    counts: np.ndarray
    tree_counts: np.ndarray


@payload("fedforest.class_counts")
class ClassCountRequest(LevelFields):
    """Count the rows of each class (and each tree's draws of it if ``per_tree``).

    Always in full form: the settings (seed, bootstrap, the client's trees)
    key the bootstrap draws exactly as the forest will.
    """

    per_tree: bool

    def expected_reply(self) -> ReplySpec:
        """Expect counts within the declared rows; each tree's draws sum to them."""
        trees = int(self.participation.shape[0]) if self.per_tree else 0
        return ReplySpec(
            ClassCountReply,
            {
                "counts": Field.array(
                    COUNTS, (self.width,), nonnegative=True, weights=True
                ),
                "tree_counts": Field.array(
                    COUNTS, (trees, self.width), nonnegative=True, rows=True
                ),
            },
            check=self._check_draws,
        )

    def _check_draws(self, reply: Any) -> None:
        """Refuse draws that do not add up to the rows in each tree the client is in."""
        if not self.per_tree:
            return
        drawn = np.asarray(reply.tree_counts, dtype=np.float64).sum(axis=1)
        inside = np.asarray(self.participation, dtype=bool)
        rows = drawn[inside]
        if np.any(drawn[~inside] != 0) or np.any(rows != rows.max(initial=0)):
            raise InvalidField(
                "tree_counts",
                "must draw as many rows (the client's) in each tree the client "
                "takes part in, and none in the others",
            )


@handler("fedforest.class_counts")
def class_counts(request: ClassCountRequest, data: ClientData) -> ClassCountReply:
    """Count this client's rows per class, and its bootstrap draws per tree.

    Keeps nothing: the forest's next request is a full one.
    """
    check_sizes(request, data)
    if not request.full:
        raise ValidationError(
            f"Request {request.kind!r}: field 'full' must be True (the counts key "
            "the bootstrap by the fit's settings, which only the full form holds)."
        )
    forest = start_state(request)
    codes = data.label_codes(forest.classes)
    width = int(np.asarray(forest.classes).shape[0])
    counts = np.bincount(codes, weights=data.weights, minlength=width)
    trees = np.zeros((0, width), dtype=np.int64)
    if request.per_tree:
        drawn = bootstrap_counts(forest, data.client_id, data.n_rows)
        trees = np.stack(
            [np.bincount(codes, weights=row, minlength=width) for row in drawn]
        ).astype(np.int64)
    return ClassCountReply(compact(counts), compact(trees))


class ClassCountStep:
    """Ask every client for its class counts; set the forest's class weights."""

    def __init__(self, next_phase: Callable[[], Phase]) -> None:
        self.next_phase = next_phase  # the forest's start, known once it begins

    def ask(self, state: LevelState) -> Ask:
        """Ask a preamble: no node is asked about; the full form carries settings."""
        per_tree = state.config.class_weight == "balanced_subsample"
        empty = np.full((0, 1), -1, dtype=np.int64)
        return Ask(
            ClassCountRequest,
            empty,
            np.zeros(0, np.int64),
            fixed(per_tree=per_tree and state.config.bootstrap),
            preamble=True,
        )

    def absorb(self, state: LevelState, got: Sequence[Got]) -> Phase:
        """Sum the counts; the weights: per tree from its draws, or for all trees."""
        replies = [as_reply(r, ClassCountReply) for _, _, r in got]
        width = state.growth.width
        per_tree = any(r.tree_counts.shape[0] for r in replies)
        if per_tree:
            trees = state.config.n_estimators
            pooled = np.zeros((trees, width))
            for r in replies:
                pooled += np.asarray(r.tree_counts, dtype=np.float64)
        else:
            pooled = np.zeros((1, width))
            for r in replies:
                pooled[0] += np.asarray(r.counts, dtype=np.float64)
        state.deltas.class_weights = balanced_weights(pooled)
        return self.next_phase()
