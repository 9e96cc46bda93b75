"""Vectorised split scores for many candidates at once (docs/runtime.md).

A client sends per-bin statistics (the rows between consecutive candidate
thresholds); :func:`left_cumulative` turns them into the left-child statistics of
every threshold, and :func:`split_gains` scores all thresholds of all (node,
feature) pairs in one call. As in scikit-learn, a cheap :func:`proxy_gains` ranks
candidates and :func:`split_gains` gives the exact improvement that is reported.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import check_choice, check_float, invalid
from fedtrees.stats._impurity import CRITERIA, Criterion, impurity, node_count

__all__ = ["best_split", "left_cumulative", "proxy_gains", "split_gains"]


def left_cumulative(bin_stats: npt.ArrayLike) -> FloatArray:
    """Left-child statistics of every threshold from per-bin statistics.

    Parameters
    ----------
    bin_stats : array of shape (..., n_bins, S)
        Statistics of the rows in bin ``b`` (between threshold ``b-1`` and ``b``).

    Returns
    -------
    array of shape (..., n_bins - 1, S)
        Entry ``m`` sums bins ``0..m``: the rows with ``x <= threshold_m``.

    Examples
    --------
    >>> left_cumulative([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]).tolist()
    [[1.0, 0.0], [1.0, 2.0]]
    """
    stats = np.asarray(bin_stats, dtype=np.float64)
    if stats.ndim < 2:
        raise invalid(
            "bin_stats", "left_cumulative", "an array (..., n_bins, S)", stats.shape
        )
    return np.cumsum(stats, axis=-2)[..., :-1, :]


def _children(
    parent: npt.ArrayLike, left: npt.ArrayLike, criterion: Criterion, owner: str
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    check_choice(criterion, "criterion", owner, CRITERIA)
    p = np.asarray(parent, dtype=np.float64)
    lft = np.asarray(left, dtype=np.float64)
    if lft.shape[:-2] != p.shape[:-1] or lft.shape[-1] != p.shape[-1]:
        raise invalid(
            "left",
            owner,
            f"shape (..., m, {p.shape[-1]}) matching parent {p.shape}",
            lft.shape,
        )
    right = p[..., None, :] - lft
    n = node_count(p, criterion)[..., None]
    return p, lft, right, n, node_count(lft, criterion)


def _admissible(
    n_left: FloatArray, n_right: FloatArray, min_samples_leaf: float
) -> npt.NDArray[np.bool_]:
    # Both children must be non-empty and hold at least min_samples_leaf rows.
    # A tiny relative slack absorbs floating-point error in n_parent - n_left.
    slack = 1e-9 * np.maximum(n_left + n_right, 1.0)
    return (
        (n_left > slack)
        & (n_right > slack)
        & (n_left >= min_samples_leaf - slack)
        & (n_right >= min_samples_leaf - slack)
    )


def split_gains(
    parent: npt.ArrayLike,
    left: npt.ArrayLike,
    criterion: Criterion,
    min_samples_leaf: float = 1.0,
) -> FloatArray:
    """Impurity decrease ``Δ = I(t) − n_L/n_t·I(L) − n_R/n_t·I(R)`` of every candidate.

    Parameters
    ----------
    parent : array of shape (..., S)
        Statistics of the node.
    left : array of shape (..., m, S)
        Left-child statistics of the node's m candidates (right = parent − left).
    criterion : {"gini", "entropy", "squared_error"}
    min_samples_leaf : float
        Minimum (weighted) rows in each child; other candidates score ``-inf``.

    Returns
    -------
    array of shape (..., m)

    Examples
    --------
    >>> split_gains([2.0, 2.0], [[2.0, 0.0], [1.0, 1.0]], "gini").tolist()
    [0.5, 0.0]
    """
    msl = check_float(
        min_samples_leaf, "min_samples_leaf", "split_gains", min_value=0.0
    )
    p, lft, right, n, n_left = _children(parent, left, criterion, "split_gains")
    n_right = n - n_left
    safe_n = np.where(n > 0, n, 1.0)
    gain = (
        impurity(p, criterion)[..., None]
        - n_left / safe_n * impurity(lft, criterion)
        - n_right / safe_n * impurity(right, criterion)
    )
    return np.where(_admissible(n_left, n_right, msl), gain, -np.inf)


def proxy_gains(
    parent: npt.ArrayLike,
    left: npt.ArrayLike,
    criterion: Criterion,
    min_samples_leaf: float = 1.0,
) -> FloatArray:
    """scikit-learn's proxy improvement: same argmax as :func:`split_gains`, cheaper.

    ``−(n_L·I(L) + n_R·I(R))`` for Gini and entropy; ``(Σy_L)²/n_L + (Σy_R)²/n_R``
    for squared error (sklearn's ``proxy_impurity_improvement``). Only the order
    of candidates within one node is meaningful.

    Examples
    --------
    >>> proxy_gains([2.0, 2.0], [[2.0, 0.0], [1.0, 1.0]], "gini").tolist()
    [-0.0, -2.0]
    """
    msl = check_float(
        min_samples_leaf, "min_samples_leaf", "proxy_gains", min_value=0.0
    )
    _, lft, right, n, n_left = _children(parent, left, criterion, "proxy_gains")
    n_right = n - n_left
    if criterion == "squared_error":
        safe_l = np.where(n_left > 0, n_left, 1.0)
        safe_r = np.where(n_right > 0, n_right, 1.0)
        score = lft[..., 1] ** 2 / safe_l + right[..., 1] ** 2 / safe_r
    else:
        score = -n_right * impurity(right, criterion) - n_left * impurity(
            lft, criterion
        )
    return np.where(_admissible(n_left, n_right, msl), score, -np.inf)


def best_split(scores: npt.ArrayLike) -> tuple[IntArray, FloatArray]:
    """Index of the best candidate along the last axis (first on ties; -1 if none).

    Examples
    --------
    >>> idx, score = best_split([[0.1, 0.3, 0.3], [-np.inf, -np.inf, -np.inf]])
    >>> idx.tolist(), score.tolist()
    ([1, -1], [0.3, -inf])
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.shape[-1] == 0:
        return np.full(s.shape[:-1], -1, dtype=np.int64), np.full(s.shape[:-1], -np.inf)
    index = np.argmax(s, axis=-1)
    best = np.take_along_axis(s, index[..., None], axis=-1)[..., 0]
    return np.where(np.isfinite(best), index, -1).astype(np.int64), best
