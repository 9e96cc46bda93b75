from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedtrees.exceptions import ValidationError
from fedtrees.stats import fisher_order, fisher_splits, split_gains


def _best_partition_gain(stats: np.ndarray, criterion: str) -> float:
    present = [
        i
        for i in range(stats.shape[0])
        if (stats[i, 0] if criterion == "squared_error" else stats[i].sum()) > 0
    ]
    parent = stats.sum(axis=0)
    best = -np.inf
    for r in range(1, len(present)):
        for subset in itertools.combinations(present, r):
            left = stats[list(subset)].sum(axis=0)
            best = max(best, float(split_gains(parent, left[None], criterion, 0.0)[0]))
    return best


@given(
    seed=st.integers(0, 10_000),
    criterion=st.sampled_from(["gini", "entropy", "squared_error"]),
)
def test_fisher_ordering_finds_the_optimal_binary_partition(
    seed: int, criterion: str
) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 8))
    if criterion == "squared_error":
        n = rng.integers(0, 6, k).astype(float)
        mean = rng.normal(size=k)
        stats = np.stack([n, n * mean, n * (mean**2 + rng.random(k))], axis=1)
    else:
        stats = rng.integers(0, 8, size=(k, 2)).astype(float)
    if (
        np.count_nonzero(stats[:, 0] if criterion == "squared_error" else stats.sum(1))
        < 2
    ):
        return
    _, left = fisher_splits(stats, criterion)
    parent = stats.sum(axis=0)
    fisher_best = split_gains(parent, left, criterion, 0.0).max()
    brute = _best_partition_gain(stats, criterion)
    if criterion == "entropy":
        assert fisher_best <= brute + 1e-12  # optimal for gini and squared error only
    else:
        assert fisher_best == pytest.approx(brute, abs=1e-12)


def test_absent_categories_are_left_out_and_ties_keep_code_order() -> None:
    stats = np.array([[1.0, 1.0], [0.0, 0.0], [2.0, 2.0], [0.0, 3.0]])
    assert fisher_order(stats, "gini").tolist() == [0, 2, 3]


def test_more_than_two_classes_order_by_majority_class_share() -> None:
    # Majority class overall is class 2; order by its share in each category.
    stats = np.array([[5.0, 0.0, 5.0], [0.0, 1.0, 9.0], [3.0, 3.0, 0.0]])
    assert fisher_order(stats, "gini").tolist() == [2, 0, 1]


def test_bad_input() -> None:
    with pytest.raises(ValidationError, match="'stats' parameter of fisher_order"):
        fisher_order([1.0, 2.0], "gini")
