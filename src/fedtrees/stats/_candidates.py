"""The ``"exact"`` and ``"uniform"`` candidate generators (docs/fedforest.md).

The ``"quantile"`` generator lives in :mod:`fedtrees.stats._quantile`. Each generator
is split into the part a client runs and the part the server runs:

- ``"exact"`` (Appendix C). Client: :func:`distinct_values`; server:
  :func:`exact_candidates` — scikit-learn's midpoints ``a/2 + b/2`` of consecutive
  distinct pooled values, skipping gaps ``<= 1e-7`` in float32 as sklearn's
  ``FEATURE_THRESHOLD`` does (identical to sklearn for float32-representable data).
  :func:`midpoint_candidates` skips no gap: a threshold between every two
  distinct float64 values, at any scale (the histogram engine's exact grid).
- ``"uniform"`` (Federated Histogram). Client: :func:`feature_ranges`; server:
  :func:`uniform_candidates` — ``q − 1`` equally spaced interior thresholds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray
from fedtrees._validation import MAX_GRID, check_matrix, check_size, invalid

__all__ = [
    "distinct_values",
    "exact_candidates",
    "feature_ranges",
    "midpoint_candidates",
    "spaced_points",
    "uniform_candidates",
]

FEATURE_THRESHOLD: Final = np.float32(1e-7)


# -- exact ------------------------------------------------------------
def distinct_values(
    values: npt.ArrayLike, sample_weight: npt.ArrayLike | None = None
) -> FloatArray:
    """Sorted distinct values with positive weight (client side of ``"exact"``)."""
    v = np.asarray(values, dtype=np.float64)
    if sample_weight is not None:
        v = v[np.asarray(sample_weight, dtype=np.float64) > 0]
    return np.unique(v)


def exact_candidates(client_values: Sequence[npt.ArrayLike]) -> FloatArray:
    """scikit-learn's candidate thresholds on the pooled distinct values (server side).

    The midpoints of :func:`midpoint_candidates` whose gap exceeds 1e-7 in
    float32 arithmetic, as scikit-learn's splitter keeps them: on values closer
    than that (data scaled below 1e-7, subnormals, values beyond float32's range)
    it finds no threshold, as scikit-learn does.

    Examples
    --------
    >>> exact_candidates([[1.0, 3.0], [2.0, 3.0]]).tolist()
    [1.5, 2.5]
    >>> exact_candidates([[1e-9, 2e-9]]).tolist()
    []
    >>> exact_candidates([[1e300, 3e300]]).tolist()  # beyond float32: still split
    [2e+300]
    """
    merged = _pooled(client_values, "exact_candidates")
    a, b = merged[:-1], merged[1:]
    # sklearn skips gaps <= FEATURE_THRESHOLD, compared in float32 arithmetic.
    with np.errstate(over="ignore"):  # beyond float32: ±inf, handled below
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
    # Two values beyond float32 on the same side are both ±inf there, but
    # distinct: no gap of theirs is small, so their midpoint stays a candidate
    # (scikit-learn refuses such values; float32-representable data is unchanged).
    keep = (b32 > a32 + FEATURE_THRESHOLD) | (np.isinf(a32) & (a32 == b32))
    return _midpoints(a[keep], b[keep])


def midpoint_candidates(client_values: Sequence[npt.ArrayLike]) -> FloatArray:
    """Return a threshold between every two consecutive pooled values (server side).

    The midpoint ``a/2 + b/2`` (scikit-learn's), or ``a`` where the midpoint
    rounds to ``b`` (adjacent floats, subnormals): ``x <= t`` separates ``a``
    from ``b`` for any finite float64 values, whatever their scale.

    Examples
    --------
    >>> midpoint_candidates([[1e-9], [3e-9]]).tolist()  # exact_candidates: none
    [2e-09]
    >>> midpoint_candidates([[5e-324, 1e-323]]).tolist()
    [5e-324]
    """
    merged = _pooled(client_values, "midpoint_candidates")
    return _midpoints(merged[:-1], merged[1:])


def _pooled(client_values: Sequence[npt.ArrayLike], owner: str) -> FloatArray:
    """Sorted distinct values of every client."""
    arrays = [np.asarray(v, dtype=np.float64).ravel() for v in client_values]
    if not arrays:
        raise invalid("client_values", owner, "at least one client", [])
    return np.unique(np.concatenate(arrays))


def _midpoints(a: FloatArray, b: FloatArray) -> FloatArray:
    """``a/2 + b/2``, or ``a`` where that is not in ``[a, b)`` (scikit-learn's rule)."""
    middle = a / 2.0 + b / 2.0
    out: FloatArray = np.where((middle >= a) & (middle < b), middle, a)
    return out


# -- uniform ------------------------------------------------------------
def feature_ranges(X: npt.ArrayLike) -> FloatArray:
    """Return each feature's (min, max) over a client's rows, shape (n_features, 2).

    NaN rows for a client without rows.
    """
    matrix = check_matrix(X, "X", "feature_ranges", allow_empty=True)
    if matrix.shape[0] == 0:
        return np.full((matrix.shape[1], 2), np.nan)
    return np.stack([matrix.min(axis=0), matrix.max(axis=0)], axis=1)


def uniform_candidates(ranges: npt.ArrayLike, q: int) -> FloatArray:
    """``q − 1`` equally spaced interior thresholds of each feature's global range.

    Parameters
    ----------
    ranges : array of shape (n_clients, n_features, 2)
        Every client's :func:`feature_ranges` (NaN rows for empty clients).

    Returns
    -------
    array of shape (n_features, q - 1)

    Examples
    --------
    >>> uniform_candidates([[[0.0, 1.0]], [[2.0, 4.0]]], q=4).tolist()
    [[1.0, 2.0, 3.0]]

    A range whose width is beyond float64 still gives finite thresholds:

    >>> uniform_candidates([[[-1.5e308, 1.5e308]]], q=4).tolist()
    [[-7.5e+307, 0.0, 7.5e+307]]
    """
    q = check_size(q, "q", "uniform_candidates", 2, MAX_GRID)
    r = np.asarray(ranges, dtype=np.float64)
    if r.ndim != 3 or r.shape[2] != 2 or r.shape[0] == 0:
        raise invalid(
            "ranges",
            "uniform_candidates",
            "shape (n_clients >= 1, n_features, 2)",
            r.shape,
        )
    lo = np.fmin.reduce(r[..., 0], axis=0)[:, None]
    hi = np.fmax.reduce(r[..., 1], axis=0)[:, None]
    return spaced_points(lo, hi, np.arange(1, q)[None, :] / q)


def spaced_points(
    low: npt.ArrayLike, high: npt.ArrayLike, steps: npt.ArrayLike
) -> FloatArray:
    """``low + (high - low) * steps``, finite even where ``high - low`` is not.

    A range wider than float64 (e.g. -1.7e308 to 1.7e308) is cut on its
    halves, clipped to ``[low, high]``; any other range as written.

    Examples
    --------
    >>> spaced_points(0.0, 4.0, [0.0, 0.5, 1.0]).tolist()
    [0.0, 2.0, 4.0]
    >>> spaced_points(-1.5e308, 1.5e308, [0.25, 0.5]).tolist()
    [-7.5e+307, 0.0]
    """
    lo, hi = np.asarray(low, np.float64), np.asarray(high, np.float64)
    t = np.asarray(steps, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        width = hi - lo
        result = lo + width * t
        halves = np.clip(2.0 * (lo / 2 + (hi / 2 - lo / 2) * t), lo, hi)
    out: FloatArray = np.where(np.isfinite(width), result, halves)
    return out
