from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from fedtrees.exceptions import ValidationError
from fedtrees.stats import (
    ClassCounts,
    Moments,
    best_split,
    class_counts_by_group,
    distinct_values,
    exact_candidates,
    impurity,
    left_cumulative,
    moments_by_group,
    proxy_gains,
    split_gains,
)


def _brute_gain(
    x: np.ndarray, y: np.ndarray, t: float, criterion: str, n_classes: int
) -> float:
    def stat(mask: np.ndarray) -> np.ndarray:
        if criterion == "squared_error":
            return Moments.from_targets(y[mask]).data
        return ClassCounts.from_labels(y[mask], n_classes).data

    left, right = x <= t, x > t
    if left.sum() == 0 or right.sum() == 0:
        return -np.inf
    n = x.shape[0]
    return float(
        impurity(stat(np.ones(n, bool)), criterion)
        - left.sum() / n * impurity(stat(left), criterion)
        - right.sum() / n * impurity(stat(right), criterion)
    )


@given(
    seed=st.integers(0, 10_000),
    criterion=st.sampled_from(["gini", "entropy", "squared_error"]),
)
def test_binned_gains_match_brute_force(seed: int, criterion: str) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    x = rng.integers(0, 8, n).astype(float)
    y = rng.normal(size=n) if criterion == "squared_error" else rng.integers(0, 3, n)
    thresholds = np.sort(rng.uniform(-1, 9, size=int(rng.integers(1, 6))))
    bins = np.searchsorted(thresholds, x, side="left")  # x <= t_m  <=>  bin <= m
    n_bins = thresholds.shape[0] + 1
    if criterion == "squared_error":
        per_bin = moments_by_group(bins, y, n_bins)
    else:
        per_bin = class_counts_by_group(bins, y, n_bins, 3)
    gains = split_gains(per_bin.sum(axis=0), left_cumulative(per_bin), criterion, 0.0)
    expected = [_brute_gain(x, y, t, criterion, 3) for t in thresholds]
    np.testing.assert_allclose(gains, expected, atol=1e-9)


@given(
    seed=st.integers(0, 10_000),
    criterion=st.sampled_from(["gini", "entropy", "squared_error"]),
)
def test_proxy_ranks_candidates_like_the_gain(seed: int, criterion: str) -> None:
    rng = np.random.default_rng(seed)
    shape = (4, 9)
    if criterion == "squared_error":
        y = rng.normal(size=(*shape, 10))
        per_bin = np.stack([np.full(shape, 10.0), y.sum(-1), (y * y).sum(-1)], axis=-1)
    else:
        per_bin = rng.integers(0, 6, size=(*shape, 3)).astype(float)
    left = left_cumulative(per_bin)
    parent = per_bin.sum(axis=-2)
    gains = split_gains(parent, left, criterion, 1.0)
    proxies = proxy_gains(parent, left, criterion, 1.0)
    gi, gv = best_split(gains)
    pi, _ = best_split(proxies)
    rows = np.arange(shape[0])
    # Same best split, or an exact tie in gain.
    assert np.all((gi == pi) | np.isclose(gains[rows, pi], gv, rtol=0, atol=1e-12))


def test_min_samples_leaf_masks_small_children() -> None:
    parent = np.array([3.0, 3.0])
    left = np.array([[1.0, 0.0], [3.0, 0.0], [3.0, 2.0], [3.0, 3.0], [0.0, 0.0]])
    gains = split_gains(parent, left, "gini", min_samples_leaf=2)
    assert np.isneginf(gains[[0, 2, 3, 4]]).all()
    assert np.isfinite(gains[1])


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_best_exact_split_matches_sklearn_stump(
    rng: np.random.Generator, criterion: str
) -> None:
    for _ in range(20):
        x = rng.normal(size=200).astype(np.float32).astype(np.float64)
        y = (x + rng.normal(scale=0.8, size=200) > 0.3).astype(int)
        est = DecisionTreeClassifier(criterion=criterion, max_depth=1).fit(
            x[:, None], y
        )
        cands = exact_candidates([distinct_values(x)])
        bins = np.searchsorted(cands, x, side="left")
        per_bin = class_counts_by_group(bins, y, cands.shape[0] + 1, 2)
        gains = split_gains(per_bin.sum(axis=0), left_cumulative(per_bin), criterion)
        index, _ = best_split(
            proxy_gains(per_bin.sum(axis=0), left_cumulative(per_bin), criterion)
        )
        assert cands[index] == est.tree_.threshold[0]
        tr = est.tree_
        sk_gain = (
            tr.impurity[0]
            - (
                tr.weighted_n_node_samples[1] * tr.impurity[1]
                + tr.weighted_n_node_samples[2] * tr.impurity[2]
            )
            / 200
        )
        assert gains[index] == pytest.approx(sk_gain, rel=1e-12)


def test_best_exact_split_matches_sklearn_regression_stump(
    rng: np.random.Generator,
) -> None:
    for _ in range(20):
        x = rng.normal(size=150).astype(np.float32).astype(np.float64)
        t = np.sin(2 * x) + rng.normal(scale=0.3, size=150)
        est = DecisionTreeRegressor(max_depth=1).fit(x[:, None], t)
        cands = exact_candidates([distinct_values(x)])
        per_bin = moments_by_group(
            np.searchsorted(cands, x, side="left"), t, cands.shape[0] + 1
        )
        index, _ = best_split(
            proxy_gains(per_bin.sum(axis=0), left_cumulative(per_bin), "squared_error")
        )
        assert cands[index] == est.tree_.threshold[0]


def test_best_split_edge_cases_and_errors() -> None:
    idx, val = best_split(np.zeros((2, 0)))
    assert idx.tolist() == [-1, -1]
    assert np.isneginf(val).all()
    with pytest.raises(ValidationError, match="'left' parameter of split_gains"):
        split_gains([1.0, 1.0], [[1.0, 0.0, 0.0]], "gini")
    with pytest.raises(
        ValidationError, match="'min_samples_leaf' parameter of split_gains"
    ):
        split_gains([1.0, 1.0], [[1.0, 0.0]], "gini", min_samples_leaf=-1)
