"""Votes of many trees: the compiled path for numeric trees equals routing each tree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtrees.exceptions import ValidationError
from fedtrees.learners import fit_cart
from fedtrees.tree import Tree, vote_shares


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
    with pytest.raises(ValidationError, match="NaN"):
        vote_shares(trees, np.full((2, 4), np.nan))
    with pytest.raises(ValidationError, match="4 columns"):
        vote_shares(trees, np.zeros((2, 3)))
