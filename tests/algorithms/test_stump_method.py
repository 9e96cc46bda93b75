"""A new histogram method is small: the toy stump (``stump_method.py``) on the engine.

It runs in process and under secure aggregation (through the Flower ClientApp:
``tests/federation/flower/test_client_app_stump.py``), and its split is checked against independent references: a brute-force numpy
search of the pooled rows over the same agreed grid, and scikit-learn's
``DecisionTreeClassifier(max_depth=1)`` where the grid is exact (issue 38).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeClassifier

from fedtrees.audit import find_client_values
from fedtrees.federation import Federation, Ledger
from tests.algorithms.stump_method import Stump, StumpStrategy

EXACT_SKETCH = {"stump.grid_reply": ["points"]}
SITES = np.array(["a", "b", "c", "d"])
RANGES = {f"x{j}": (-5.0, 5.0) for j in range(3)}
EDGES = {f"x{j}": [-1.0, -0.5, -0.2, 0.0, 0.3, 0.6, 1.0] for j in range(3)}


def sites_data(
    n: int = 400, seed: int = 0
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Three numeric columns; the label follows x1 (noisy); four sites."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["x0", "x1", "x2"])
    y = np.where(X["x1"] + 0.5 * X["x0"] * rng.normal(size=n) > 0.2, "sick", "well")
    return X, y, SITES[rng.integers(0, SITES.size, n)]


def _fit(
    X: Any, y: Any, groups: Any, **params: Any
) -> tuple[Stump, Ledger, Federation]:
    federation = Federation.from_groups(X, y, groups)
    ledger = Ledger(keep_messages=True)
    run = federation.run(StumpStrategy(**params), task="classification", ledger=ledger)
    assert isinstance(run.result, Stump)
    return run.result, ledger, federation


def _impurity(counts: np.ndarray, criterion: str) -> np.ndarray:
    p = counts / counts.sum(axis=-1, keepdims=True)
    if criterion == "gini":
        return 1.0 - (p**2).sum(axis=-1)
    return -(np.where(p > 0, p * np.log2(np.where(p > 0, p, 1)), 0.0)).sum(axis=-1)


def brute_force(X: np.ndarray, y: np.ndarray, grid: Any, criterion: str) -> tuple:
    """The best root split of the pooled rows over ``grid``'s edges, by hand.

    Returns the feature, the edge, the left and right class counts (sorted
    classes) and the margin to the next best candidate.
    """
    onehot = (y[:, None] == np.unique(y)[None, :]).astype(float)
    candidates = []
    for j in range(X.shape[1]):
        for edge in grid.feature_edges(j):
            go_left = X[:, j] <= edge
            left, right = onehot[go_left].sum(0), onehot[~go_left].sum(0)
            if left.sum() and right.sum():
                cost = left.sum() * _impurity(left, criterion)
                cost += right.sum() * _impurity(right, criterion)
                candidates.append((cost, j, float(edge), left, right))
    candidates.sort(key=lambda c: c[0])
    (cost, j, edge, left, right), runner_up = candidates[0], candidates[1]
    return j, edge, left, right, runner_up[0] - cost


def assert_same_stump(a: Stump, b: Stump) -> None:
    assert (a.feature, a.threshold) == (b.feature, b.threshold)
    np.testing.assert_array_equal(a.left, b.left)
    np.testing.assert_array_equal(a.right, b.right)


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
@pytest.mark.parametrize("max_bins", [8, 255])
def test_the_stump_is_the_best_split_of_the_pooled_rows_on_the_grid(
    criterion: str, max_bins: int
) -> None:
    X, y, groups = sites_data()
    stump, ledger, federation = _fit(
        X, y, groups, criterion=criterion, max_bins=max_bins
    )

    feature, edge, left, right, margin = brute_force(
        X.to_numpy(), y, stump.grid, criterion
    )
    assert margin > 1e-9  # one best split: the comparison decides
    assert (stump.feature, stump.threshold) == (feature, edge)
    np.testing.assert_array_equal(stump.left, left)
    np.testing.assert_array_equal(stump.right, right)
    assert ledger.rounds == 3  # the agreement, the grid, the root
    # A client with at most max_bins values sends each of them (docs/histogram.md).
    find_client_values(ledger, federation, per_row=EXACT_SKETCH)


def test_on_an_exact_grid_the_stump_is_scikit_learns() -> None:
    rng = np.random.default_rng(3)
    X = rng.integers(0, 6, size=(300, 3)).astype(float)
    y = np.where(X[:, 2] + rng.integers(0, 3, 300) > 4, "sick", "well")
    groups = SITES[rng.integers(0, 3, 300)]
    stump, _, _ = _fit(X, y, groups)

    tree = DecisionTreeClassifier(max_depth=1, random_state=0).fit(X, y).tree_
    assert stump.feature == tree.feature[0]
    left = X[:, stump.feature] <= stump.threshold
    np.testing.assert_array_equal(left, X[:, tree.feature[0]] <= tree.threshold[0])
    sick = y == "sick"
    assert stump.left.tolist() == [np.sum(left & sick), np.sum(left & ~sick)]
    assert stump.right.tolist() == [np.sum(~left & sick), np.sum(~left & ~sick)]


def test_secure_aggregation_gives_the_plain_stump() -> None:
    X, y, groups = sites_data(seed=1)
    plain, _, _ = _fit(X, y, groups, bin_edges=EDGES)
    secure, ledger, federation = _fit(X, y, groups, bin_edges=EDGES, secure=True)

    assert_same_stump(secure, plain)
    assert ledger.masked_rounds == {1}  # declared edges: the root round alone
    find_client_values(ledger, federation)


def test_a_secure_grid_from_declared_ranges_gives_the_best_split_on_it() -> None:
    X, y, groups = sites_data(seed=2)
    stump, ledger, federation = _fit(
        X, y, groups, feature_ranges=RANGES, max_bins=16, secure=True
    )

    feature, edge, left, right, margin = brute_force(
        X.to_numpy(), y, stump.grid, "gini"
    )
    assert margin > 1e-9
    assert (stump.feature, stump.threshold) == (feature, edge)
    np.testing.assert_array_equal(stump.left, left)
    np.testing.assert_array_equal(stump.right, right)
    assert ledger.masked_rounds == {1, 2}  # the fine histograms, the root
    find_client_values(ledger, federation)
