"""Packing trees into flat arrays: exact round trip, hostile arrays refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedtrees.exceptions import ValidationError
from fedtrees.tree import PACKED_FIELDS, Missing, pack_trees, unpack_trees
from tests.tree.helpers import random_tree

CLIENTS = ("a", "b", "c")


@given(
    seeds=st.lists(st.integers(0, 10_000), min_size=1, max_size=6),
    n_classes=st.sampled_from([0, 2, 3]),
)
def test_unpack_inverts_pack(seeds: list[int], n_classes: int) -> None:
    trees = [random_tree(s, n_classes=n_classes, clients=CLIENTS) for s in seeds]
    arrays = pack_trees(trees)

    back = unpack_trees(
        arrays,
        n_features=3,
        classes=trees[0].classes,
        categories=trees[0].categories,
        clients=CLIENTS,
    )

    assert back == trees
    assert set(arrays) == set(PACKED_FIELDS)
    assert arrays["node_ptr"][-1] == sum(t.n_nodes for t in trees)


def _packed() -> dict[str, np.ndarray]:
    return pack_trees([random_tree(s, clients=CLIENTS) for s in (1, 2)])


def _unpack(arrays: dict[str, np.ndarray]) -> None:
    categories = random_tree(1, clients=CLIENTS).categories
    unpack_trees(
        arrays,
        n_features=3,
        classes=np.arange(3),
        categories=categories,
        clients=CLIENTS,
    )


@pytest.mark.parametrize(
    ("field", "edit", "message"),
    [
        ("node_ptr", lambda a: a[:1], "node_ptr"),
        ("node_ptr", lambda a: a[::-1], "node_ptr"),
        ("branch_ptr", lambda a: a[:-1], "branch_ptr"),
        ("left", lambda a: np.zeros_like(a), "Packed tree 0"),
        ("value", lambda a: a * 2.0, "Packed tree 0"),
        ("branch_code", lambda a: np.concatenate([a, [0]]), "branch_code"),
    ],
)
def test_malformed_arrays_are_refused_naming_the_problem(
    field: str, edit: object, message: str
) -> None:
    arrays = _packed()
    arrays[field] = edit(arrays[field])  # type: ignore[operator]

    with pytest.raises(ValidationError, match=message):
        _unpack(arrays)


def test_packing_nothing_is_an_error() -> None:
    with pytest.raises(ValidationError, match="at least one tree"):
        pack_trees([])


def test_the_packed_fields_carry_no_missing_directions() -> None:
    assert PACKED_FIELDS == (
        "node_ptr",
        "node_kind",
        "feature",
        "threshold",
        "left",
        "right",
        "value",
        "count",
        "impurity",
        "branch_ptr",
        "branch_code",
        "branch_child",
    )


def test_a_learned_direction_cannot_be_packed() -> None:
    plain = random_tree(1, clients=CLIENTS)
    learned = random_tree(
        4, categorical=(), p_split=1.0, missing=(Missing.LEFT, Missing.RIGHT)
    )
    with pytest.raises(
        ValidationError,
        match=r"pack_trees: tree 1 has a learned missing-value direction \(field "
        r"'missing' at node 0\)",
    ):
        pack_trees([plain, learned])


def test_unpacked_trees_route_nan_to_the_larger_child() -> None:
    trees = [random_tree(s, clients=CLIENTS) for s in (1, 2)]
    back = unpack_trees(
        pack_trees(trees),
        n_features=3,
        classes=np.arange(3),
        categories=trees[0].categories,
        clients=CLIENTS,
    )
    assert all(np.all(t.missing == Missing.LARGER) for t in back)
