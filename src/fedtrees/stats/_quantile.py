"""The ``"quantile"`` candidate generator of FedForest (docs/fedforest.md).

Client part: :func:`quantile_sketches` — the node count and the type-1 empirical
quantiles ``Q(l/m)``, ``l = 0..m``, ``m = min(q, rows)`` (**Decision**: a client with
fewer than q rows sends ``min(q, n_k(t)) + 1`` points), by the compiled rule every
FedForest client uses (:mod:`fedtrees.stats._quantile_kernel`). Server part:
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
from fedtrees._validation import MAX_GRID, check_int, check_size, invalid
from fedtrees.stats._mixture_kernel import (
    NAN_INSIDE,
    NOT_SORTED,
    OK,
    POINTS_VS_COUNT,
    invert_mixtures,
    invert_ragged,
)
from fedtrees.stats._quantile_kernel import type1_points

__all__ = [
    "QuantileSketch",
    "mixture_cdf",
    "mixture_quantiles",
    "mixtures_by_client",
    "mixtures_ragged",
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
    q = check_size(q, "q", "quantile_sketches", 2, MAX_GRID)
    n_groups = check_int(n_groups, "n_groups", "quantile_sketches", min_value=1)
    v, g, w = _sketch_inputs(values, group, n_groups, sample_weight)
    order = np.lexsort((v, g))
    v, g, w = v[order], g[order], w[order]
    totals = np.bincount(g, weights=w, minlength=n_groups).astype(np.float64)
    rows = np.bincount(g, minlength=n_groups)
    group_start = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
    points: FloatArray = type1_points(v, w, group_start, q, True)
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
    q = check_size(q, "q", "mixture_quantiles", 2, MAX_GRID)
    pts = np.asarray(points, dtype=np.float64)
    c = np.asarray(counts, dtype=np.float64)
    if pts.ndim != 3 or pts.shape[2] < 2 or c.shape != pts.shape[:2]:
        raise invalid(
            "points",
            "mixture_quantiles",
            "shape (n_problems, n_clients, L >= 2) matching counts",
            pts.shape,
        )
    return mixtures_by_client(pts.transpose(1, 0, 2), c.T, q)


def mixtures_by_client(points: FloatArray, counts: FloatArray, q: int) -> FloatArray:
    """:func:`mixture_quantiles` on client-major arrays ``(n_clients, n_problems, L)``.

    The layout in which client replies arrive (stacked), so a level's sketches
    are inverted without reordering hundreds of MB first.
    """
    owner = "mixture_quantiles"
    q = check_size(q, "q", owner, 2, MAX_GRID)
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        raise invalid("counts", owner, "finite counts >= 0", "other values")
    out, status = invert_mixtures(  # the kernel reads C-ordered arrays (no copy if so)
        np.ascontiguousarray(points, np.float64),
        np.ascontiguousarray(counts, np.float64),
        q,
    )
    _raise_status(status)
    result: FloatArray = out
    return result


def mixtures_ragged(
    problem: IntArray,
    start: IntArray,
    length: IntArray,
    counts: FloatArray,
    points: FloatArray,
    n_problems: int,
    q: int,
) -> FloatArray:
    """:func:`mixtures_by_client` on ragged sketches (the clients present only).

    Segment s is one client's sketch of problem ``problem[s]``:
    ``points[start[s]:start[s] + length[s]]`` with node count ``counts[s]``.
    Segments are sorted by problem, then client. Memory and time follow the
    sketches sent, not clients x problems; each problem's result equals the
    dense computation bit for bit.
    """
    owner = "mixture_quantiles"
    q = check_size(q, "q", owner, 2, MAX_GRID)
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        raise invalid("counts", owner, "finite counts >= 0", "other values")
    if np.any(np.diff(problem) < 0) or np.any(start + length > points.shape[0]):
        raise invalid("problem", owner, "segments sorted, inside points", "other")
    seg_ptr = np.searchsorted(problem, np.arange(n_problems + 1)).astype(np.int64)
    out, status = invert_ragged(
        seg_ptr,
        start.astype(np.int64),
        length.astype(np.int64),
        counts.astype(np.float64),
        np.ascontiguousarray(points, np.float64),
        q,
    )
    _raise_status(status)
    result: FloatArray = out
    return result


def _raise_status(status: np.ndarray) -> None:
    owner = "mixture_quantiles"
    defect = int(status.max(initial=OK))
    if defect == NAN_INSIDE:
        raise invalid("points", owner, "NaN only as trailing padding", "NaN inside")
    if defect == NOT_SORTED:
        raise invalid("points", owner, "finite, non-decreasing points", "other values")
    if defect == POINTS_VS_COUNT:
        raise invalid(
            "points", owner, ">= 2 points for every client with rows", "other"
        )


def quantile_candidates(sketches: Sequence[QuantileSketch], q: int) -> FloatArray:
    """Distinct candidates of one node and feature from the clients' sketches.

    Examples
    --------
    >>> a = quantile_sketch([0.0, 1.0, 2.0, 3.0], q=4)
    >>> b = quantile_sketch([10.0, 11.0, 12.0, 13.0], q=4)
    >>> quantile_candidates([a, b], q=4).tolist()
    [1.0, 3.0, 11.0]
    """
    q = check_size(q, "q", "quantile_candidates", 2, MAX_GRID)
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
