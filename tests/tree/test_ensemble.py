"""Votes of many trees: the compiled path for numeric trees equals routing each tree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtrees.exceptions import ValidationError
from fedtrees.learners import fit_cart
from fedtrees.tree import Missing, Tree, vote_shares
from tests.tree.helpers import random_tree, random_X


def _forest(seed: int, n_trees: int, n_classes: int) -> list[Tree]:
    rng = np.random.default_rng(seed)
    trees = []
    for t in range(n_trees):
        X = rng.normal(size=(200, 4))
        y = rng.integers(0, n_classes, 200)
        depth = int(rng.integers(1, 6))
        trees.append(fit_cart(X, y, n_classes=n_classes, max_depth=depth, seed=t))
    return trees


def _routed_one_by_one(trees: list[Tree], X: np.ndarray) -> np.ndarray:
    votes = np.zeros((X.shape[0], trees[0].value.shape[1]))
    for tree in trees:
        votes[np.arange(X.shape[0]), np.argmax(tree.predict_value(X), axis=1)] += 1
    return votes / len(trees)


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 1000), n_trees=st.integers(1, 12), n_classes=st.integers(2, 4)
)
def test_compiled_votes_equal_routing_every_tree(
    seed: int, n_trees: int, n_classes: int
) -> None:
    trees = _forest(seed, n_trees, n_classes)
    X = np.random.default_rng(seed + 1).normal(size=(300, 4))
    X[:5] = trees[0].threshold[0] if trees[0].n_nodes > 1 else 0.0  # on a threshold
    np.testing.assert_array_equal(vote_shares(trees, X), _routed_one_by_one(trees, X))


def test_votes_refuse_bad_rows() -> None:
    trees = _forest(0, 3, 2)
    with pytest.raises(
        ValidationError, match=r"holds inf at row 1; finite values or NaN"
    ):
        vote_shares(trees, np.array([[np.nan] * 4, [0.0, np.inf, 0.0, 0.0]]))
    with pytest.raises(ValidationError, match="4 columns"):
        vote_shares(trees, np.zeros((2, 3)))


DIRECTIONS = (Missing.LEFT, Missing.RIGHT, Missing.LARGER)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 1000), n_trees=st.integers(1, 12))
def test_compiled_votes_route_nan_like_every_tree(seed: int, n_trees: int) -> None:
    trees = [
        random_tree(seed * 100 + t, categorical=(), n_classes=3, missing=DIRECTIONS)
        for t in range(n_trees)
    ]
    X = random_X(seed, trees[0], 300, nan_fraction=0.3)
    np.testing.assert_array_equal(vote_shares(trees, X), _routed_one_by_one(trees, X))


def test_mixed_kind_votes_route_nan_like_every_tree() -> None:
    # A categorical split takes the routing of every tree, not the compiled vote.
    trees = [random_tree(s, n_classes=3, missing=DIRECTIONS) for s in range(8)]
    X = random_X(1, trees[0], 300, nan_fraction=0.3)
    np.testing.assert_array_equal(vote_shares(trees, X), _routed_one_by_one(trees, X))
