"""The engine's local binned CART against scikit-learn's exact CART.

On columns of at most ``max_bins`` distinct values the grid is exact (an edge
midway between every two values, scikit-learn's thresholds), so the binned tree
must be scikit-learn's ``DecisionTreeClassifier`` with the same limits: same
structure, thresholds, counts and predictions. scikit-learn breaks ties between
features of equal gain at random; each data set here is checked tie-free first
(scikit-learn grows the same tree for several ``random_state``). On longer
columns the grid has at most ``max_bins`` bins per column, and the tree is
scikit-learn's on the codes, with a code threshold ``c + 0.5`` read as the
grid's edge ``c``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.tree import DecisionTreeClassifier

from fedtrees.algorithms.histogram import (
    agree_grid,
    bin_codes,
    fit_binned_cart,
    sketch_columns,
)
from fedtrees.exceptions import ValidationError
from fedtrees.tree import NodeKind, Tree


def _preorder(tree: Tree, thresholds: bool = True) -> Iterator[tuple[Any, ...]]:
    """Every node, left subtree first: (feature, threshold, count, value)."""
    todo = [0]
    while todo:
        node = todo.pop()
        split = tree.kind[node] == NodeKind.NUMERIC
        yield (
            int(tree.feature[node]),
            float(tree.threshold[node]) if split and thresholds else None,
            float(tree.count[node]),
            tuple(np.round(tree.value[node], 12)),
        )
        if tree.kind[node] == NodeKind.NUMERIC:
            todo.extend([int(tree.right[node]), int(tree.left[node])])


def _from_sklearn(estimator: DecisionTreeClassifier) -> Tree:
    """The Tree of a fitted scikit-learn tree, with its thresholds as it holds them.

    :meth:`Tree.from_sklearn` moves each threshold to where float64 values split
    as scikit-learn's float32 copies do; the data here are float32 values, so
    the thresholds compare as they are.
    """
    tree = Tree.from_sklearn(estimator)
    split = tree.kind == NodeKind.NUMERIC
    raw = np.where(split, estimator.tree_.threshold, np.nan)
    return dataclasses.replace(tree, threshold=raw)


def _sklearn(X: np.ndarray, y: np.ndarray, seeds: int = 3, **params: Any) -> Tree:
    """scikit-learn's tree, after checking that its random tie-breaks do not matter."""
    trees = [
        _from_sklearn(DecisionTreeClassifier(random_state=s, **params).fit(X, y))
        for s in range(seeds)
    ]
    first = list(_preorder(trees[0]))
    for other in trees[1:]:
        assert list(_preorder(other)) == first, "the data has equal-gain features"
    return trees[0]


def _data(seed: int, n: int = 4000, values: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Six columns of at most ``values`` half-integers; three noisy classes."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, values, size=(n, 6)).astype(float) / 2
    score = X[:, 0] - 0.7 * X[:, 1] + 0.4 * X[:, 2] * (X[:, 3] > 5)
    score += rng.normal(0, 30, n)
    y = np.digitize(score, np.quantile(score, [0.4, 0.75]))
    return X, y


@pytest.mark.parametrize(
    ("criterion", "max_depth", "min_samples_split", "min_samples_leaf"),
    [
        ("entropy", 4, 2, 1),
        ("entropy", 7, 2, 15),
        ("entropy", None, 50, 10),
        ("gini", 6, 30, 5),
    ],
)
def test_an_exact_grid_grows_scikit_learns_tree(
    criterion: str, max_depth: int | None, min_samples_split: int, min_samples_leaf: int
) -> None:
    X, y = _data(0)
    limits = {
        "max_depth": max_depth,
        "min_samples_split": min_samples_split,
        "min_samples_leaf": min_samples_leaf,
    }
    reference = _sklearn(X, y, criterion=criterion, **limits)
    tree = fit_binned_cart(X, y, n_classes=3, criterion=criterion, **limits)  # type: ignore[arg-type]
    assert tree.n_nodes > 15
    assert list(_preorder(tree)) == list(_preorder(reference))
    test, _ = _data(1, n=2000, values=220)  # values between and beyond the grid's
    np.testing.assert_array_equal(tree.predict(test), reference.predict(test))
    np.testing.assert_allclose(tree.predict_proba(test), reference.predict_proba(test))


def test_class_weights_weigh_the_counts_as_scikit_learns() -> None:
    # Weights >= 1 and the default limits: a node's weighted rows are at least its
    # rows, so the limits bind where scikit-learn's do (module docstring).
    X, y = _data(2)
    weights = np.array([1.0, 2.5, 1.5])[y]
    reference = _sklearn(
        X, y, criterion="entropy", max_depth=5, class_weight={0: 1.0, 1: 2.5, 2: 1.5}
    )
    tree = fit_binned_cart(X, y, n_classes=3, max_depth=5, sample_weight=weights)
    assert list(_preorder(tree)) == list(_preorder(reference))


def test_a_long_column_is_split_at_its_quantiles_as_scikit_learn_splits_codes() -> None:
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.normal(size=4000), rng.exponential(size=4000) * 1e6])
    y = ((X[:, 0] + rng.normal(0, 0.5, 4000) > 0) ^ (X[:, 1] > 2e6)).astype(np.int64)
    max_bins = 16
    tree = fit_binned_cart(X, y, n_classes=2, max_depth=6, max_bins=max_bins)
    numeric = np.zeros(2, bool)
    grid = agree_grid(
        [sketch_columns(X, numeric, max_bins)], numeric, np.zeros(2, np.int64), max_bins
    )
    for j in range(2):  # the rows' type-1 quantiles at l/max_bins
        edges = grid.feature_edges(j)
        assert 1 < edges.shape[0] <= max_bins - 1
        levels = np.arange(1, max_bins) / max_bins
        expected = np.unique(np.quantile(X[:, j], levels, method="inverted_cdf"))
        np.testing.assert_allclose(edges, expected, rtol=1e-12)
    codes = bin_codes(X, grid).astype(float)
    reference = _sklearn(codes, y, criterion="entropy", max_depth=6)
    assert tree.n_nodes > 15
    assert list(_preorder(tree, thresholds=False)) == list(
        _preorder(reference, thresholds=False)
    )
    # Each split sends the node's rows where scikit-learn sends their codes.
    np.testing.assert_array_equal(tree.predict_proba(X), reference.predict_proba(codes))


def test_rows_of_weight_zero_take_no_part() -> None:
    X, y = _data(4)
    keep = np.arange(X.shape[0]) % 3 > 0
    weights = keep.astype(float)
    a = fit_binned_cart(X, y, n_classes=3, max_depth=5, sample_weight=weights)
    b = fit_binned_cart(X[keep], y[keep], n_classes=3, max_depth=5)
    # Grid and growth alike: the same tree as without those rows.
    assert list(_preorder(a)) == list(_preorder(b))


def test_a_non_finite_value_is_refused_by_name() -> None:
    X, y = _data(5, n=50)
    X[3, 2] = np.nan
    with pytest.raises(ValidationError, match="'X'"):
        fit_binned_cart(X, y, n_classes=3, max_depth=3)


# -- the one table's grid: sketch_columns without weights ---------------------------
@settings(max_examples=60, deadline=None)
@given(
    column=st.lists(
        st.sampled_from([-np.inf, -2.5, 0.0, 1.0, 1.0 + 2**-52, 3.0, np.inf, np.nan])
        | st.floats(-1e3, 1e3),
        min_size=0,
        max_size=60,
    ),
    max_bins=st.integers(2, 12),
)
def test_unit_weights_sketch_a_column_as_weights_of_one(
    column: list[float], max_bins: int
) -> None:
    # No weights: the column is sorted as it is (NaN cut off, no mask); the
    # summary is the general path's with every weight 1, and a complete column
    # lists the first value of every run (-inf never: the sketch's rule).
    X = np.asarray(column, dtype=float).reshape(-1, 1)
    numeric = np.zeros(1, bool)
    fast = sketch_columns(X, numeric, max_bins)
    weighted = sketch_columns(X, numeric, max_bins, np.ones(X.shape[0]))
    for name in ("points", "weights", "counts", "complete"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(weighted, name))
    values = np.sort(X[~np.isnan(X[:, 0]), 0])
    with np.errstate(invalid="ignore"):  # -inf - -inf
        first = values[np.diff(values, prepend=-np.inf) > 0]
    assert fast.counts[0] == values.shape[0]
    if first.shape[0] <= max_bins:
        assert fast.complete[0]
        np.testing.assert_array_equal(fast.points[0, : first.shape[0]], first)
    else:
        assert not fast.complete[0]
