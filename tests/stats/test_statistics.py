from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fedtrees.exceptions import ValidationError
from fedtrees.stats import (
    ClassCounts,
    Moments,
    class_counts_by_group,
    moments_by_group,
    sum_stats,
)

labels = hnp.arrays(np.int64, st.integers(1, 80), elements=st.integers(0, 3))
targets = hnp.arrays(np.float64, st.integers(1, 80), elements=st.floats(-1e3, 1e3))


def _split_points(n: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 8))  # 1 to 7 clients, some possibly empty
    return sorted(rng.integers(0, n + 1, size=k - 1).tolist())


@given(y=labels, seed=st.integers(0, 1000))
def test_class_counts_of_concatenation_equal_sum_over_clients(
    y: np.ndarray, seed: int
) -> None:
    w = np.random.default_rng(seed).integers(0, 4, size=y.shape[0]).astype(float)
    parts = np.split(np.arange(y.shape[0]), _split_points(y.shape[0], seed))
    clients = [ClassCounts.from_labels(y[p], 4, w[p]) for p in parts]
    pooled = ClassCounts.from_labels(y, 4, w)
    np.testing.assert_array_equal(sum_stats(clients).data, pooled.data)


@given(y=targets, seed=st.integers(0, 1000))
def test_moments_of_concatenation_equal_sum_over_clients(
    y: np.ndarray, seed: int
) -> None:
    parts = np.split(np.arange(y.shape[0]), _split_points(y.shape[0], seed))
    total = sum_stats([Moments.from_targets(y[p]) for p in parts])
    np.testing.assert_allclose(
        total.data, Moments.from_targets(y).data, rtol=1e-12, atol=1e-6
    )
    assert total.data[0] == y.shape[0]


@given(y=labels, seed=st.integers(0, 1000))
def test_sample_weights_equal_duplicated_rows(y: np.ndarray, seed: int) -> None:
    w = np.random.default_rng(seed).integers(0, 4, size=y.shape[0])
    weighted = ClassCounts.from_labels(y, 4, w.astype(float))
    duplicated = ClassCounts.from_labels(np.repeat(y, w), 4)
    np.testing.assert_array_equal(weighted.data, duplicated.data)
    t = y.astype(float) * 1.5
    np.testing.assert_allclose(
        Moments.from_targets(t, w.astype(float)).data,
        Moments.from_targets(np.repeat(t, w)).data,
    )


def test_grouped_kernels_match_brute_force(rng: np.random.Generator) -> None:
    n, groups, classes = 500, 17, 3
    g, y, w = rng.integers(0, groups, n), rng.integers(0, classes, n), rng.random(n)
    t = rng.normal(size=n)
    counts = class_counts_by_group(g, y, groups, classes, w)
    moments = moments_by_group(g, t, groups, w)
    for group in range(groups):
        mask = g == group
        expected = [w[mask & (y == c)].sum() for c in range(classes)]
        np.testing.assert_allclose(counts[group], expected)
        m = [w[mask].sum(), (w * t)[mask].sum(), (w * t * t)[mask].sum()]
        np.testing.assert_allclose(moments[group], m, atol=1e-12)


def test_zero_is_the_neutral_element() -> None:
    a = ClassCounts.from_labels([0, 2], 3)
    assert np.array_equal((a + ClassCounts.zeros(3)).data, a.data)
    b = Moments.from_targets([1.0, 2.0])
    assert np.array_equal((b + Moments.zeros()).data, b.data)


def test_shape_mismatch_is_refused() -> None:
    with pytest.raises(ValidationError, match="same shape"):
        ClassCounts.from_labels([0], 2) + ClassCounts.from_labels([0], 3)


def test_invalid_statistics_are_refused() -> None:
    with pytest.raises(ValidationError, match="non-negative counts"):
        ClassCounts(np.array([1.0, -1.0]))
    with pytest.raises(ValidationError, match="finite"):
        Moments(np.array([1.0, np.nan, 1.0]))
    with pytest.raises(ValidationError, match="last axis of length 3"):
        Moments(np.array([1.0, 2.0]))
    with pytest.raises(ValidationError, match="at least one statistic"):
        sum_stats([])
    with pytest.raises(ValidationError, match=r"codes in \[0, 2\)"):
        ClassCounts.from_labels([0, 2], 2)
    with pytest.raises(ValidationError, match="sample_weight"):
        ClassCounts.from_labels([0, 1], 2, [1.0, -1.0])
