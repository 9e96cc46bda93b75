from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.tree import DecisionTreeClassifier

from fedtrees.exceptions import ValidationError
from fedtrees.stats import (
    QuantileSketch,
    distinct_values,
    exact_candidates,
    feature_ranges,
    mixture_cdf,
    mixture_quantiles,
    quantile_candidates,
    quantile_sketch,
    quantile_sketches,
    uniform_candidates,
)


def _heterogeneous_clients(seed: int, min_rows: int) -> list[np.ndarray]:
    """Clients of very different sizes, locations and shapes; sometimes disjoint."""
    rng = np.random.default_rng(seed)
    clients = []
    for k in range(int(rng.integers(1, 7))):
        n = int(rng.integers(min_rows, min_rows + 300))
        kind = rng.integers(0, 4)
        if kind == 0:
            x = rng.normal(rng.uniform(-50, 50), rng.uniform(0.01, 5), n)
        elif kind == 1:
            x = rng.uniform(10 * k, 10 * k + 1, n)  # disjoint supports
        elif kind == 2:
            x = rng.integers(0, 5, n).astype(float)  # heavy ties
        else:
            x = rng.exponential(rng.uniform(0.1, 10), n)
        clients.append(x)
    return clients


def _sup_rank_error(clients: list[np.ndarray], sketches: list[QuantileSketch]) -> float:
    pooled = np.sort(np.concatenate(clients))
    points = np.unique(np.concatenate([pooled, *[s.points for s in sketches]]))
    right = np.abs(
        mixture_cdf(sketches, points)
        - np.searchsorted(pooled, points, "right") / pooled.size
    )
    left_x = np.nextafter(points, -np.inf)
    left = np.abs(
        mixture_cdf(sketches, left_x)
        - np.searchsorted(pooled, points, "left") / pooled.size
    )
    return float(max(right.max(), left.max()))


@given(seed=st.integers(0, 100_000), q=st.sampled_from([2, 4, 16, 32]))
def test_mixture_rank_error_is_at_most_one_over_q(seed: int, q: int) -> None:
    clients = _heterogeneous_clients(seed, min_rows=q)
    sketches = [quantile_sketch(x, q) for x in clients]
    assert _sup_rank_error(clients, sketches) <= 1.0 / q + 1e-9


@given(seed=st.integers(0, 100_000), q=st.sampled_from([4, 32]))
def test_small_clients_add_at_most_one_over_n_each(seed: int, q: int) -> None:
    rng = np.random.default_rng(seed)
    clients = _heterogeneous_clients(seed, min_rows=1)
    clients += [
        rng.normal(size=int(rng.integers(1, q))) for _ in range(3)
    ]  # fewer than q rows
    sketches = [quantile_sketch(x, q) for x in clients]
    n = sum(x.size for x in clients)
    bound = sum(x.size / n / min(q, x.size) for x in clients)
    assert _sup_rank_error(clients, sketches) <= bound + 1e-9


@given(seed=st.integers(0, 100_000), q=st.sampled_from([3, 8, 32]))
def test_candidates_invert_the_mixture_and_have_bounded_pooled_rank(
    seed: int, q: int
) -> None:
    clients = _heterogeneous_clients(seed, min_rows=q)
    sketches = [quantile_sketch(x, q) for x in clients]
    cands = quantile_candidates(sketches, q)
    assert np.all(np.diff(cands) > 0)
    F = mixture_cdf(sketches, cands)
    F_left = mixture_cdf(sketches, np.nextafter(cands, -np.inf))
    levels = np.arange(1, q) / q
    pooled = np.sort(np.concatenate(clients))
    for c, f, fl in zip(cands, F, F_left, strict=True):
        # Every candidate is F^-1 of some level m/q: F(c-) <= m/q <= F(c).
        hit = levels[(levels <= f + 1e-9) & (levels >= fl - 1e-9)]
        assert hit.size >= 1
        rank_lo = np.searchsorted(pooled, c, "left") / pooled.size
        rank_hi = np.searchsorted(pooled, c, "right") / pooled.size
        assert rank_lo - 1 / q - 1e-9 <= hit.max()
        assert hit.min() <= rank_hi + 1 / q + 1e-9


def test_averaging_client_quantiles_would_be_wrong() -> None:
    # 900 rows near 0 and 100 rows near 100: the pooled median is near 0, the
    # average of the two client medians is near 50, where no data lives at all.
    rng = np.random.default_rng(0)
    clients = [rng.normal(0, 1, 900), rng.normal(100, 1, 100)]
    q = 2
    ours = quantile_candidates([quantile_sketch(x, q) for x in clients], q)
    averaged = np.mean([np.quantile(x, 0.5) for x in clients])
    pooled = np.concatenate(clients)
    assert abs(np.mean(pooled <= ours[0]) - 0.5) <= 1 / q
    assert abs(ours[0]) < 1.0
    assert 40 < averaged < 60
    assert np.mean(pooled <= averaged) == pytest.approx(0.9)


def _type1_reference(x: np.ndarray, m: int) -> np.ndarray:
    """Q(l/m) = x_(k), k = ceil(l n / m), in exact integer arithmetic.

    (numpy's method="inverted_cdf" computes n * p in floating point and is off by
    one row when n * l / m is an integer, e.g. 50 * (14/25).)
    """
    ordered = np.sort(x)
    n = ordered.size
    k = np.array([max(-(-level * n // m), 1) for level in range(m + 1)])
    return ordered[k - 1]


@given(seed=st.integers(0, 10_000), q=st.sampled_from([2, 5, 32]))
def test_sketch_points_are_type1_quantiles(seed: int, q: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 20, int(rng.integers(1, 100))).astype(float)
    sketch = quantile_sketch(x, q)
    np.testing.assert_array_equal(sketch.points, _type1_reference(x, min(q, x.size)))
    assert sketch.count == x.size
    w = rng.integers(0, 4, x.size)
    if w.sum():
        weighted = quantile_sketch(x, q, w.astype(float))
        m = min(q, int(np.count_nonzero(w)))
        np.testing.assert_array_equal(
            weighted.points, _type1_reference(np.repeat(x, w), m)
        )


@given(seed=st.integers(0, 10_000), m=st.sampled_from([2, 5, 32, 255]))
def test_uncapped_type1_points_of_every_group(seed: int, m: int) -> None:
    """The compiled rule at resolution m for whole groups (points repeat in
    groups of fewer rows): the histogram engine's entry point."""
    from fedtrees.stats._quantile_kernel import type1_points

    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 60, 4)
    groups = [rng.integers(0, 20, n).astype(float) for n in sizes]
    weights = [rng.integers(1, 4, n) for n in sizes]
    start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    values = np.concatenate([np.sort(g) for g in groups])
    order = [np.argsort(g, kind="stable") for g in groups]
    w = np.concatenate([wg[o] for wg, o in zip(weights, order, strict=True)])
    out = type1_points(values, w.astype(float), start, m, False)
    for g, (x, wg) in enumerate(zip(groups, weights, strict=True)):
        if x.size == 0:
            assert np.isnan(out[g]).all()
        else:
            np.testing.assert_array_equal(out[g], _type1_reference(np.repeat(x, wg), m))


def test_batched_client_and_server_parts_equal_one_at_a_time(
    rng: np.random.Generator,
) -> None:
    q, n_groups = 6, 9
    values = rng.normal(size=400)
    group = rng.integers(0, n_groups - 1, 400)  # last group is empty
    counts, points = quantile_sketches(values, group, n_groups, q)
    for g in range(n_groups):
        single = quantile_sketch(values[group == g], q)
        assert counts[g] == single.count
        np.testing.assert_array_equal(points[g][~np.isnan(points[g])], single.points)
    assert np.isnan(points[-1]).all()
    # Server: 3 problems x 3 clients at once == each problem separately.
    P, C = points.reshape(3, 3, q + 1), counts.reshape(3, 3)
    batched = mixture_quantiles(P, C, q)
    for b in range(3):
        sketches = [
            QuantileSketch(C[b, k], P[b, k][~np.isnan(P[b, k])]) for k in range(3)
        ]
        row = batched[b][~np.isnan(batched[b])]
        np.testing.assert_allclose(
            row, quantile_candidates(sketches, q), rtol=0, atol=0
        )


def test_problem_without_rows_gives_no_candidates() -> None:
    out = mixture_quantiles(np.full((1, 2, 5), np.nan), np.zeros((1, 2)), 4)
    assert np.isnan(out).all()


def test_a_batch_of_no_problems_gives_an_empty_result() -> None:
    # A level where no open node can split any more asks for zero inversions.
    out = mixture_quantiles(np.zeros((0, 3, 5)), np.zeros((0, 3)), 4)
    assert out.shape == (0, 3)


@pytest.mark.parametrize(
    ("points", "counts", "message"),
    [
        ([[[0.0, np.nan, 1.0]]], [[2.0]], "NaN only as trailing padding"),
        ([[[1.0, 0.0, np.nan]]], [[2.0]], "non-decreasing"),
        ([[[0.0, np.nan, np.nan]]], [[2.0]], ">= 2 points for every client with rows"),
        ([[[0.0, 1.0, 2.0]]], [[-1.0]], "finite counts >= 0"),
    ],
)
def test_malformed_sketches_are_refused(
    points: list, counts: list, message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        mixture_quantiles(points, counts, 2)


def test_q_below_two_is_refused() -> None:
    with pytest.raises(
        ValidationError,
        match=r"'q' parameter of quantile_sketches must be an int in \[2, 4096\]",
    ):
        quantile_sketch([1.0, 2.0], q=1)
    with pytest.raises(ValidationError, match="'q' parameter of uniform_candidates"):
        uniform_candidates(np.zeros((1, 1, 2)), q=1)


def test_exact_candidates_are_sklearn_thresholds(rng: np.random.Generator) -> None:
    # For y = 1{x > a}, sklearn splits exactly between a and the next value.
    x = np.unique(rng.normal(size=60).astype(np.float32)).astype(np.float64)
    clients = [x[::2], x[1::2], x[5:9]]
    cands = exact_candidates([distinct_values(c) for c in clients])
    assert cands.shape[0] == x.shape[0] - 1
    for i in rng.choice(x.shape[0] - 1, size=15, replace=False):
        y = (x > x[i]).astype(int)
        est = DecisionTreeClassifier(max_depth=1).fit(x[:, None], y)
        assert est.tree_.threshold[0] == cands[i]


def test_exact_candidates_skip_gaps_sklearn_cannot_split() -> None:
    base = np.float32(0.001)
    close = np.nextafter(base, np.float32(1), dtype=np.float32)  # gap ~1e-10 < 1e-7
    x = np.array([0.0, base, close, 1.0], dtype=np.float32).astype(np.float64)
    cands = exact_candidates([x])
    assert cands.tolist() == [x[0] / 2 + x[1] / 2, x[2] / 2 + x[3] / 2]
    y = np.array([0, 0, 1, 1])
    est = DecisionTreeClassifier(max_depth=1).fit(x[:, None], y)
    assert est.tree_.threshold[0] in cands  # sklearn cannot separate base and close


def test_uniform_candidates_use_the_global_range() -> None:
    ranges = np.stack(
        [
            feature_ranges([[0.0, 5.0], [1.0, 5.0]]),
            feature_ranges(np.zeros((0, 2))),
            feature_ranges([[4.0, 5.0]]),
        ]
    )
    out = uniform_candidates(ranges, q=4)
    np.testing.assert_allclose(out, [[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])


def test_quantile_candidates_are_exact_quantiles_for_one_client() -> None:
    x = np.arange(100.0)
    cands = quantile_candidates([quantile_sketch(x, 4)], 4)
    np.testing.assert_allclose(cands, [24.0, 49.0, 74.0])
    assert list(itertools.pairwise(cands))


def test_server_parts_need_at_least_one_client_but_accept_empty_ones() -> None:
    with pytest.raises(
        ValidationError, match="'sketches' parameter of quantile_candidates"
    ):
        quantile_candidates([], 4)
    with pytest.raises(
        ValidationError, match="'client_values' parameter of exact_candidates"
    ):
        exact_candidates([])
    with pytest.raises(ValidationError, match=r"shape \(n_clients >= 1"):
        uniform_candidates(np.zeros((0, 3, 2)), 4)
    # A client with no rows at a node is normal: it contributes nothing.
    empty = quantile_sketch(np.zeros(0), 4)
    assert empty.count == 0
    assert empty.points.size == 0
    full = quantile_sketch(np.arange(10.0), 4)
    np.testing.assert_array_equal(
        quantile_candidates([empty, full], 4), quantile_candidates([full], 4)
    )
    np.testing.assert_array_equal(exact_candidates([[], [1.0, 2.0]]), [1.5])
