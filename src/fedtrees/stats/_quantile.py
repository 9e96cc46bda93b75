"""The ``"quantile"`` candidate generator of FedForest (ALGORITHMS.md §1.1).

Client part: :func:`quantile_sketches` — the node count and the type-1 empirical
quantiles ``Q(l/m)``, ``l = 0..m``, ``m = min(q, rows)`` (**Decision**: a client with
fewer than q rows sends ``min(q, n_k(t)) + 1`` points). Server part:
:func:`mixture_quantiles` — the piecewise-linear client CDFs are mixed with weights
``n_k/n`` and the mixture is inverted at ``m/q``. Client quantiles are never
averaged. Rank error (Thm 3.1): ``sup|F − F̂| <= Σ_k w_k/m_k``, i.e. ``<= 1/q`` when
every client has at least q rows (a client with ``m_k < q`` rows adds at most
``1/n`` instead of ``w_k/q``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import check_int, invalid

__all__ = [
    "QuantileSketch",
    "mixture_cdf",
    "mixture_quantiles",
    "quantile_candidates",
    "quantile_sketch",
    "quantile_sketches",
]


@dataclass(frozen=True, eq=False)
class QuantileSketch:
    """A client's summary of one feature at one node: count and quantile points.

    ``points[l]`` is the type-1 empirical quantile at level ``l/m`` with
    ``m = len(points) - 1``; empty when the client has no rows there.
    """

    count: float
    points: FloatArray


# -- quantile: client part --------------------------------------------------
def quantile_sketch(
    values: npt.ArrayLike, q: int, sample_weight: npt.ArrayLike | None = None
) -> QuantileSketch:
    """Sketch of one feature's node sample (client side).

    Examples
    --------
    >>> s = quantile_sketch([4.0, 1.0, 3.0, 2.0], q=2)
    >>> s.count, s.points.tolist()
    (4.0, [1.0, 2.0, 4.0])
    """
    v = np.asarray(values, dtype=np.float64)
    counts, points = quantile_sketches(
        v, np.zeros(v.shape[0], np.int64), 1, q, sample_weight
    )
    return QuantileSketch(float(counts[0]), points[0][~np.isnan(points[0])])


def quantile_sketches(
    values: npt.ArrayLike,
    group: npt.ArrayLike,
    n_groups: int,
    q: int,
    sample_weight: npt.ArrayLike | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Sketches of many groups (e.g. node × feature) at once (client side).

    Parameters
    ----------
    values : float array of shape (n,)
    group : int array of shape (n,)
        Group of each value in ``[0, n_groups)``.
    q : int >= 2
    sample_weight : array of shape (n,), optional
        Non-negative weights (bootstrap counts); rows of weight 0 are absent.

    Returns
    -------
    counts : array of shape (n_groups,)
        Weighted count of each group.
    points : array of shape (n_groups, q + 1)
        Quantile points, NaN-padded after the first ``min(q, rows) + 1``.
    """
    q = check_int(q, "q", "quantile_sketches", min_value=2)
    n_groups = check_int(n_groups, "n_groups", "quantile_sketches", min_value=1)
    v, g, w = _sketch_inputs(values, group, n_groups, sample_weight)
    order = np.lexsort((v, g))
    v, g, w = v[order], g[order], w[order]
    totals = np.bincount(g, weights=w, minlength=n_groups).astype(np.float64)
    rows = np.bincount(g, minlength=n_groups)
    start = np.concatenate([[0], np.cumsum(rows)[:-1]])
    cumulative = np.cumsum(w)
    before = np.concatenate([[0.0], cumulative])[start]
    level = (cumulative - np.repeat(before, rows)) / np.repeat(
        np.where(totals > 0, totals, 1), rows
    )
    m = np.minimum(q, rows)
    target_group = np.repeat(np.arange(n_groups), np.where(m > 0, m + 1, 0))
    target_l = _ranks_within(target_group)
    target = target_l / np.maximum(m[target_group], 1)
    first = _first_at_least(g, level, target_group, target)
    last = start + rows - 1
    points = np.full((n_groups, q + 1), np.nan)
    points[target_group, target_l] = v[np.minimum(first, last[target_group])]
    return totals, points


def _sketch_inputs(
    values: npt.ArrayLike,
    group: npt.ArrayLike,
    n_groups: int,
    sample_weight: npt.ArrayLike | None,
) -> tuple[FloatArray, IntArray, FloatArray]:
    owner = "quantile_sketches"
    v = np.asarray(values, dtype=np.float64)
    g = np.asarray(group, dtype=np.int64)
    if v.ndim != 1 or g.shape != v.shape:
        raise invalid(
            "group", owner, f"a 1-D array matching 'values' {v.shape}", g.shape
        )
    if not np.all(np.isfinite(v)):
        raise invalid("values", owner, "finite", "NaN or inf")
    if g.size and (g.min() < 0 or g.max() >= n_groups):
        raise invalid("group", owner, f"indices in [0, {n_groups})", "other indices")
    w = (
        np.ones(v.shape[0])
        if sample_weight is None
        else np.asarray(sample_weight, np.float64)
    )
    if w.shape != v.shape or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise invalid(
            "sample_weight", owner, f"finite weights >= 0 of shape {v.shape}", "other"
        )
    keep = w > 0
    return v[keep], g[keep], w[keep]


def _ranks_within(sorted_group: IntArray) -> IntArray:
    """0, 1, 2, ... restarting at every new value of a sorted group array."""
    n = sorted_group.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    new = np.ones(n, dtype=bool)
    new[1:] = sorted_group[1:] != sorted_group[:-1]
    starts = np.flatnonzero(new)
    return np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))


def _first_at_least(
    data_group: IntArray,
    data_value: FloatArray,
    query_group: IntArray,
    query: FloatArray,
) -> IntArray:
    """Return, per query, the first data index of its group with value >= query.

    Data must be sorted by (group, value). One merge sort, no per-group loop:
    queries sort before equal data values, so the number of data items before a
    query in the merged order is the answer.
    """
    n = data_group.shape[0]
    kind = np.concatenate([np.ones(n, np.int8), np.zeros(query.shape[0], np.int8)])
    value = np.concatenate([data_value, query])
    group = np.concatenate([data_group, query_group])
    order = np.lexsort((kind, value, group))
    is_data = kind[order] == 1
    data_before = np.cumsum(is_data) - is_data
    answer = np.empty(query.shape[0], dtype=np.int64)
    answer[order[~is_data] - n] = data_before[~is_data]
    return answer


# -- quantile: server part --------------------------------------------------
def mixture_quantiles(
    points: npt.ArrayLike, counts: npt.ArrayLike, q: int
) -> FloatArray:
    """Invert the count-weighted mixture of client CDFs at ``m/q`` (server side).

    Parameters
    ----------
    points : array of shape (n_problems, n_clients, L)
        Each client's quantile points (NaN-padded), as :func:`quantile_sketches`.
    counts : array of shape (n_problems, n_clients)
        Each client's node count (0: the client has no rows there).
    q : int >= 2

    Returns
    -------
    array of shape (n_problems, q - 1)
        Sorted distinct candidates ``F⁻¹(m/q)``, NaN-padded at the end (all NaN
        for a problem without rows). Each problem is computed in its own row with
        the same arithmetic, so its result does not depend on the other problems
        of the batch (bit for bit).
    """
    q = check_int(q, "q", "mixture_quantiles", min_value=2)
    pts, w, m = _mixture_inputs(points, counts)
    if pts.shape[0] == 0:  # e.g. a level where no node can split any more
        return np.full((0, q - 1), np.nan)
    ux, F, F_left = _mixture_breakpoints(pts, w, m)
    valid = np.isfinite(ux)
    rows = np.broadcast_to(np.arange(ux.shape[0])[:, None], ux.shape)[valid]
    problems = np.flatnonzero(w.sum(axis=1) > 0)
    tb = np.repeat(problems, q - 1)
    tp = np.tile(np.arange(1, q) / q, problems.shape[0])
    out = np.full((pts.shape[0], q - 1), np.nan)
    if tb.size:
        x = _invert(rows, ux[valid], F[valid], F_left[valid], tb, tp)
        out[tb, np.tile(np.arange(q - 1), problems.shape[0])] = x
    return _distinct_rows(out)


def _mixture_inputs(
    points: npt.ArrayLike, counts: npt.ArrayLike
) -> tuple[FloatArray, FloatArray, IntArray]:
    owner = "mixture_quantiles"
    pts = np.asarray(points, dtype=np.float64)
    c = np.asarray(counts, dtype=np.float64)
    if pts.ndim != 3 or pts.shape[2] < 2 or c.shape != pts.shape[:2]:
        raise invalid(
            "points",
            owner,
            "shape (n_problems, n_clients, L >= 2) matching counts",
            pts.shape,
        )
    if not np.all(np.isfinite(c)) or np.any(c < 0):
        raise invalid("counts", owner, "finite counts >= 0", "other values")
    valid = ~np.isnan(pts)
    n_points = valid.sum(axis=2)
    if np.any(valid[..., 1:] & ~valid[..., :-1]):
        raise invalid(
            "points", owner, "NaN only as trailing padding", "NaN inside a sketch"
        )
    if np.any(np.isinf(pts)) or np.any(np.diff(pts, axis=2) < 0):
        raise invalid("points", owner, "finite, non-decreasing points", "other values")
    if np.any((c > 0) & (n_points < 2)) or np.any((c == 0) & (n_points > 0)):
        raise invalid(
            "points", owner, ">= 2 points for every client with rows", "other"
        )
    total = c.sum(axis=1, keepdims=True)
    return pts, c / np.where(total > 0, total, 1.0), n_points - 1


def _mixture_breakpoints(
    pts: FloatArray, w: FloatArray, m: IntArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Breakpoints of every problem (one row each, +inf-padded), F and F's left limit.

    Each client segment from ``(p_j, j/m)`` to ``(p_{j+1}, (j+1)/m)`` adds a ramp of
    slope ``w/m/(p_{j+1}-p_j)``, or a jump of ``w/m`` when the points coincide.
    Between consecutive breakpoints F is linear, so F at every breakpoint follows
    from cumulative sums of jumps and of slope × gap — along each row only.
    """
    n_problems = pts.shape[0]
    x0, x1 = pts[..., :-1], pts[..., 1:]
    seg = (np.arange(pts.shape[2] - 1) < m[..., None]) & (w[..., None] > 0)
    dF = np.where(seg, w[..., None] / np.maximum(m, 1)[..., None], 0.0)
    jump, ramp = seg & (x1 == x0), seg & (x1 > x0)
    slope = np.where(ramp, dF / np.where(ramp, x1 - x0, 1.0), 0.0)

    def rows(a: FloatArray) -> FloatArray:
        return a.reshape(n_problems, -1)

    ev_x = np.concatenate(
        [rows(np.where(seg, x0, np.inf)), rows(np.where(ramp, x1, np.inf))], 1
    )
    ev_jump = np.concatenate(
        [rows(np.where(jump, dF, 0.0)), rows(np.zeros_like(dF))], 1
    )
    ev_slope = np.concatenate([rows(slope), rows(-slope)], 1)
    order = np.argsort(ev_x, axis=1, kind="stable")
    ev_x = np.take_along_axis(ev_x, order, 1)
    valid = np.isfinite(ev_x)
    new = valid.copy()
    new[:, 1:] &= ev_x[:, 1:] != ev_x[:, :-1]
    width = ev_x.shape[1]
    flat = (np.arange(n_problems)[:, None] * width + np.cumsum(new, axis=1) - 1)[valid]
    size = n_problems * width

    def per_point(values: FloatArray) -> FloatArray:
        sorted_values = np.take_along_axis(values, order, 1)[valid]
        total = np.bincount(flat, sorted_values, minlength=size)  # int64 if empty
        result: FloatArray = total.astype(np.float64).reshape(n_problems, width)
        return result

    J, dS = per_point(ev_jump), per_point(ev_slope)
    ux = np.full((n_problems, width), np.inf)
    ux[np.nonzero(new)[0], (np.cumsum(new, axis=1) - 1)[new]] = ev_x[new]
    slope_after = np.maximum(np.cumsum(dS, axis=1), 0.0)
    both = np.isfinite(ux[:, 1:])
    gap = np.where(both, ux[:, 1:] - np.where(both, ux[:, :-1], 0.0), 0.0)
    step = J.copy()
    step[:, 1:] += np.where(both, slope_after[:, :-1] * gap, 0.0)
    F = np.cumsum(step, axis=1)
    return ux, F, F - J


def _invert(
    ub: IntArray,
    ux: FloatArray,
    F: FloatArray,
    F_left: FloatArray,
    tb: IntArray,
    tp: FloatArray,
) -> FloatArray:
    """``inf{x : F(x) >= p}`` for every (problem, level) query."""
    i = _first_at_least(ub, F, tb, tp)
    i = np.minimum(i, ub.shape[0] - 1)
    prev = np.maximum(i - 1, 0)
    inside = (F_left[i] >= tp) & (i > 0) & (ub[prev] == tb)
    span = np.where(inside, F_left[i] - F[prev], 1.0)
    frac = np.clip((tp - F[prev]) / np.where(span > 0, span, 1.0), 0.0, 1.0)
    result: FloatArray = np.where(inside, ux[prev] + frac * (ux[i] - ux[prev]), ux[i])
    return result


def _distinct_rows(candidates: FloatArray) -> FloatArray:
    """Sorted rows with repeated values replaced by NaN padding at the end."""
    out = np.sort(candidates, axis=1)
    dup = np.zeros(out.shape, dtype=bool)
    dup[:, 1:] = out[:, 1:] == out[:, :-1]
    out[dup] = np.nan
    result: FloatArray = np.sort(out, axis=1)
    return result


def quantile_candidates(sketches: Sequence[QuantileSketch], q: int) -> FloatArray:
    """Distinct candidates of one node and feature from the clients' sketches.

    Examples
    --------
    >>> a = quantile_sketch([0.0, 1.0, 2.0, 3.0], q=4)
    >>> b = quantile_sketch([10.0, 11.0, 12.0, 13.0], q=4)
    >>> quantile_candidates([a, b], q=4).tolist()
    [1.0, 3.0, 11.0]
    """
    q = check_int(q, "q", "quantile_candidates", min_value=2)
    if len(sketches) == 0:
        raise invalid("sketches", "quantile_candidates", "at least one client", [])
    points, counts = _stack_sketches(sketches, q)
    row: FloatArray = mixture_quantiles(points[None], counts[None], q)[0]
    return row[~np.isnan(row)]


def _stack_sketches(
    sketches: Sequence[QuantileSketch], q: int
) -> tuple[FloatArray, FloatArray]:
    # Always q + 1 columns: the layout of the batched client reply, so a single
    # problem is computed exactly as it would be inside a batch.
    points = np.full((len(sketches), q + 1), np.nan)
    for k, sketch in enumerate(sketches):
        if sketch.points.shape[0] > q + 1:
            raise invalid(
                "sketches",
                "quantile_candidates",
                f"at most q + 1 = {q + 1} points",
                f"{sketch.points.shape[0]} points",
            )
        points[k, : sketch.points.shape[0]] = sketch.points
    return points, np.array([s.count for s in sketches], dtype=np.float64)


def mixture_cdf(sketches: Sequence[QuantileSketch], x: npt.ArrayLike) -> FloatArray:
    """Evaluate the mixture CDF ``F(x) = Σ_k w_k F_k(x)`` (right-continuous).

    Examples
    --------
    >>> s = quantile_sketch([0.0, 1.0, 2.0], q=2)
    >>> mixture_cdf([s], [-1.0, 0.5, 2.0]).tolist()
    [0.0, 0.25, 1.0]
    """
    xs = np.asarray(x, dtype=np.float64)
    total = sum(s.count for s in sketches)
    result = np.zeros(xs.shape)
    for sketch in sketches:
        if sketch.count <= 0:
            continue
        result += sketch.count / total * _client_cdf(sketch.points, xs)
    return result


def _client_cdf(points: FloatArray, xs: FloatArray) -> FloatArray:
    m = points.shape[0] - 1
    j = np.searchsorted(points, xs, side="right") - 1
    inner = (j >= 0) & (j < m)
    jj = np.clip(j, 0, max(m - 1, 0))
    gap = points[np.minimum(jj + 1, m)] - points[jj]
    frac = np.where(
        inner & (gap > 0), (xs - points[jj]) / np.where(gap > 0, gap, 1.0), 0.0
    )
    return np.where(j >= m, 1.0, np.where(j < 0, 0.0, (jj + frac) / m))
