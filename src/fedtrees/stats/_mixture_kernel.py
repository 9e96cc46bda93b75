"""Compiled server part of the quantile generator: invert the client mixture.

Why compiled: at 100k pooled rows a 10-tree FedForest level sends up to ~40k
(node, feature) problems of 10 clients × 33 points. The vectorised numpy version
(a row-wise argsort of all breakpoints, cumulative sums and a merged search) took
12 s of a 21 s fit, most of it sorting and moving padded rows; a loop per problem
that merges at most ``2·K·q`` events takes a fraction of a second.

Per problem (docs/fedforest.md, server part): every client segment from
``(p_j, j/m)`` to ``(p_{j+1}, (j+1)/m)`` adds a ramp of slope ``w/m/(p_{j+1}-p_j)``,
or a jump of ``w/m`` where the points coincide. Sorting the events gives the
breakpoints; F is linear between them, so F at each breakpoint follows from a
running sum of jumps and of slope × gap. Each level ``l/q`` is then inverted by
one sweep (levels and F both increase): ``inf{x : F(x) >= l/q}``, interpolated
on the ramp that reaches it.

**Scale.** A problem whose largest point lies outside ``[2^-256, 2^256]`` is
computed on its points times ``2^-e`` (``e`` the exponent of the largest; exact,
except that points over 2^1074 times smaller than the largest become 0), and
its candidates are scaled back, rounded down so that ``x <= t`` routes every
float as the unrounded candidate would. Else gaps of subnormal points make the
slopes infinite (the mixture collapses to one candidate), and gaps of points
near the largest float overflow. Inside that range nothing is scaled: results
are unchanged.

Inputs are validated by :func:`fedtrees.stats.mixture_quantiles` (numba does
not check bounds).
"""

from __future__ import annotations

import math
from typing import Any

import numba as nb
import numpy as np

from fedtrees._compiling import f64, i64, kernel, ro

__all__ = [
    "NAN_INSIDE",
    "NOT_SORTED",
    "OK",
    "POINTS_VS_COUNT",
    "invert_mixtures",
    "invert_ragged",
]


OK, NAN_INSIDE, NOT_SORTED, POINTS_VS_COUNT = 0, 1, 2, 3
_SAFE_HIGH, _SAFE_LOW = 2.0**256, 2.0**-256


@kernel((ro(f64, 3), ro(f64, 2), i64), parallel=True)
def invert_mixtures(pts: Any, counts: Any, q: int) -> Any:  # pragma: no cover
    """Return ``(n_problems, q - 1)`` sorted distinct candidates and a status.

    ``pts[k, b]`` are client k's points in problem b (NaN-padded), ``counts[k, b]``
    its node count (0: no rows; counts are checked finite and >= 0 by the
    caller). A problem without rows gives all NaN. ``status[b]`` is ``OK`` or
    why the problem's sketches are malformed (its candidates are then NaN).
    """
    n_clients, n_problems = pts.shape[0], pts.shape[1]
    out = np.full((n_problems, q - 1), np.nan)
    status = np.zeros(n_problems, dtype=np.int8)
    for b in nb.prange(n_problems):
        m = np.zeros(n_clients, dtype=np.int64)
        w = np.zeros(n_clients)
        total = 0.0
        for k in range(n_clients):
            n_points, bad = _check_sketch(pts[k, b], counts[k, b])
            if bad != OK:
                status[b] = bad
            m[k] = max(n_points - 1, 0)
            total += counts[k, b]
        if status[b] != OK or total <= 0:
            continue
        for k in range(n_clients):
            w[k] = counts[k, b] / total
        shift = _scale_exponent(pts[:, b])
        ux, F, F_left = _breakpoints(pts[:, b], w, m, shift)
        if ux.shape[0] > 0:
            _invert_levels(ux, F, F_left, q, shift, out[b])
    return out, status


@kernel()
def _check_sketch(points: Any, count: float) -> Any:  # pragma: no cover
    """Return the number of points and ``OK`` or the sketch's first defect."""
    n = 0
    while n < points.shape[0] and not np.isnan(points[n]):
        if np.isinf(points[n]) or (n > 0 and points[n] < points[n - 1]):
            return n, NOT_SORTED
        n += 1
    for i in range(n, points.shape[0]):
        if not np.isnan(points[i]):
            return n, NAN_INSIDE
    if (count > 0 and n < 2) or (count == 0 and n > 0):
        return n, POINTS_VS_COUNT
    return n, OK


@kernel()
def _scale_exponent(pts: Any) -> int:  # pragma: no cover
    """Return ``e``: a problem is computed on its points times ``2^-e`` (see top).

    0 when the largest ``|point|`` lies in ``[2^-256, 2^256]`` (or is 0), else
    its exponent, so the scaled points lie in ``(-1, 1)``; NaN padding is skipped.
    """
    biggest = 0.0
    for k in range(pts.shape[0]):
        for j in range(pts.shape[1]):
            size = abs(pts[k, j])
            if size > biggest:  # False for NaN
                biggest = size
    if biggest == 0.0 or _SAFE_LOW <= biggest <= _SAFE_HIGH:
        return 0
    return math.frexp(biggest)[1]


@kernel()
def _breakpoints(pts: Any, w: Any, m: Any, shift: int) -> Any:  # pragma: no cover
    """Breakpoints of one mixture (times ``2^-shift``), F there and F's left limit."""
    n_clients, n_events = pts.shape[0], 0
    for k in range(n_clients):
        if w[k] > 0:
            n_events += 2 * m[k]
    # Start events first, end events after them, each in (client, segment)
    # order: ties are summed in the same order whatever the batch.
    half = n_events // 2
    x = np.full(n_events, np.inf)
    jump = np.zeros(n_events)
    slope = np.zeros(n_events)
    e = 0
    for k in range(n_clients):
        if w[k] <= 0:
            continue
        step = w[k] / max(m[k], 1)
        for j in range(m[k]):
            x0 = math.ldexp(pts[k, j], -shift)
            x1 = math.ldexp(pts[k, j + 1], -shift)
            x[e] = x0
            if x1 == x0:
                jump[e] = step
            else:  # a ramp; a jump has no end event
                slope[e] = step / (x1 - x0)
                x[half + e] = x1
                slope[half + e] = -slope[e]
            e += 1
    order = np.argsort(x, kind="mergesort")
    ux = np.empty(n_events)
    J = np.zeros(n_events)
    dS = np.zeros(n_events)
    u = -1
    for i in order:
        if not np.isfinite(x[i]):
            break
        if u < 0 or x[i] != ux[u]:
            u += 1
            ux[u] = x[i]
        J[u] += jump[i]
        dS[u] += slope[i]
    n = u + 1
    F = np.empty(n)
    F_left = np.empty(n)
    summed_slope, total = 0.0, 0.0
    for i in range(n):
        rise = J[i]
        if i > 0:  # the slope after the previous breakpoint, never below 0
            rise += max(summed_slope, 0.0) * (ux[i] - ux[i - 1])
        total += rise
        F[i] = total
        F_left[i] = total - J[i]
        summed_slope += dS[i]
    return ux[:n], F, F_left


@kernel()
def _invert_levels(
    ux: Any, F: Any, F_left: Any, q: int, shift: int, out: Any
) -> None:  # pragma: no cover
    """Write the distinct values of ``F⁻¹(l/q)``, ``l = 1..q-1``, into ``out``.

    ``ux`` are the breakpoints times ``2^-shift``; the values are scaled back.
    """
    n, i, filled = ux.shape[0], 0, 0
    for level in range(1, q):
        p = level / q
        while i < n - 1 and F[i] < p:
            i += 1
        value = ux[i]
        if i > 0 and F_left[i] >= p:
            span = F_left[i] - F[i - 1]
            frac = (p - F[i - 1]) / span if span > 0 else 1.0
            frac = min(max(frac, 0.0), 1.0)
            value = ux[i - 1] + frac * (ux[i] - ux[i - 1])
        value = _scale_back(value, shift)
        if filled == 0 or value != out[filled - 1]:
            out[filled] = value
            filled += 1


@kernel()
def _scale_back(value: float, shift: int) -> float:  # pragma: no cover
    """Return the largest float ``<= value·2^shift``.

    Rounding down keeps every split: a float ``x`` lies at or below the exact
    candidate iff it lies at or below the rounded one (scaling back into the
    subnormals is the only inexact case).
    """
    out = math.ldexp(value, shift)
    if shift < 0 and math.ldexp(out, -shift) > value:
        out = np.nextafter(out, -np.inf)
    return out


@kernel((ro(i64), ro(i64), ro(i64), ro(f64), ro(f64), i64), parallel=True)
def invert_ragged(
    seg_ptr: Any, start: Any, length: Any, weight: Any, points: Any, q: int
) -> Any:  # pragma: no cover - compiled
    """:func:`invert_mixtures` on ragged sketches: only the clients present.

    Problem b's sketches are segments ``seg_ptr[b]:seg_ptr[b + 1]`` (in client
    order); segment s is ``points[start[s]:start[s] + length[s]]`` with node
    count ``weight[s]``. A client absent from a problem contributes nothing in
    the dense version either (zero weight adds 0.0 to the total and no events),
    so each problem's result is bit for bit the dense one.
    """
    n_problems = seg_ptr.shape[0] - 1
    out = np.full((n_problems, q - 1), np.nan)
    status = np.zeros(n_problems, dtype=np.int8)
    for b in nb.prange(n_problems):
        lo, n = seg_ptr[b], seg_ptr[b + 1] - seg_ptr[b]
        if n == 0:
            continue
        width = 1
        for i in range(n):
            width = max(width, length[lo + i])
        pts = np.full((n, width), np.nan)
        m = np.zeros(n, dtype=np.int64)
        w = np.zeros(n)
        total = 0.0
        for i in range(n):
            s = lo + i
            for j in range(length[s]):
                pts[i, j] = points[start[s] + j]
            n_points, bad = _check_sketch(pts[i], weight[s])
            if bad != OK:
                status[b] = bad
            m[i] = max(n_points - 1, 0)
            total += weight[s]
        if status[b] != OK or total <= 0:
            continue
        for i in range(n):
            w[i] = weight[lo + i] / total
        shift = _scale_exponent(pts)
        ux, F, F_left = _breakpoints(pts, w, m, shift)
        if ux.shape[0] > 0:
            _invert_levels(ux, F, F_left, q, shift, out[b])
    return out, status
