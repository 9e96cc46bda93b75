"""Dense histograms and a grid from fine histograms: the engine, secure.

A masked sum needs the same layout at every site (docs/security.md, "Secure
aggregation"), so the sparse bins of step 3 become one dense vector over the
bins the server names (:class:`DenseLayout`): every open node's statistics,
then for every asked (node, feature) pair one slot per bin of the feature's
grid and one for missing values. The server reads the summed vector back as
the pooled node statistics and the pooled sparse histograms (a bin is present
when its statistics are not all zero), which the engine's level, subtraction
and search take as they are.

The grid of step 1 cannot come from per-site sketches (they are a site's
values); under secure aggregation it comes from declared edges, or from the
sum of fine, equal-width histograms over declared ranges
(:func:`fine_histograms`, :func:`fine_grid`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Final

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.histogram._grid import MISSING
from fedtrees.algorithms.histogram._histograms import Histograms
from fedtrees.federation import InvalidField

__all__ = ["FINE_BINS", "DenseLayout", "fine_edges", "fine_grid", "fine_histograms"]

FINE_BINS: Final = 1024
"""Equal-width fine bins per numeric column of the secure root grid."""


@dataclass(frozen=True, eq=False)
class DenseLayout:
    """Where every statistic sits in a level's dense vector (module docstring).

    ``pair_feature[s, k]``: the k-th feature of open node s (-1: none);
    ``feature_bins[j]``: feature j's codes (bins or categories); ``width``:
    statistics per bin; ``extra``: values after the bins (e.g. losses).

    Examples
    --------
    >>> layout = DenseLayout(np.array([[0]]), np.array([2]), 1)
    >>> h = Histograms(np.array([2]), np.array([1, 255], np.uint8),
    ...                np.array([[3.0], [1.0]]))
    >>> v = layout.dense(np.array([[4.0]]), h)
    >>> v.tolist()
    [4.0, 0.0, 3.0, 1.0]
    >>> stats, back = layout.sparse(v)
    >>> back.codes.tolist(), back.stats.ravel().tolist()
    ([1, 255], [3.0, 1.0])
    """

    pair_feature: IntArray
    feature_bins: IntArray
    width: int
    extra: int = 0

    @property
    def n_open(self) -> int:
        """Open nodes of the level."""
        return int(self.pair_feature.shape[0])

    @cached_property
    def slots(self) -> IntArray:
        """Bins of every pair (grid bins + the missing bin; 0 for no feature)."""
        f = self.pair_feature.ravel()
        out: IntArray = np.where(
            f >= 0, self.feature_bins[np.maximum(f, 0)] + 1, 0
        ).astype(np.int64)
        return out

    @property
    def n_bins(self) -> int:
        """Bins of the whole level."""
        return int(self.slots.sum())

    @property
    def length(self) -> int:
        """Entries of the vector."""
        return (self.n_open + self.n_bins) * self.width + self.extra

    def _bin_index(self, pair: IntArray, codes: np.ndarray) -> IntArray:
        """Each (pair, code)'s bin in the level; the missing code is the last."""
        slots = self.slots
        first = np.cumsum(slots) - slots
        code = codes.astype(np.int64)
        last = slots[pair] - 1
        out: IntArray = first[pair] + np.where(code == MISSING, last, code)
        return out

    def dense(
        self, node_stats: FloatArray, h: Histograms, extra: FloatArray | None = None
    ) -> FloatArray:
        """Return one site's vector: node statistics, every bin, the extra values."""
        head = self.n_open * self.width
        out = np.zeros(self.length)
        out[:head] = np.asarray(node_stats, dtype=np.float64).ravel()
        pair = np.repeat(np.arange(h.n_pairs), h.counts)
        bins = out[head : head + self.n_bins * self.width].reshape(-1, self.width)
        bins[self._bin_index(pair, h.codes)] = h.stats
        if self.extra:
            out[head + self.n_bins * self.width :] = np.asarray(extra).ravel()
        return out

    def sparse(self, vector: FloatArray) -> tuple[FloatArray, Histograms]:
        """Read a (summed) vector back: node statistics and the non-zero bins."""
        head = self.n_open * self.width
        stats = vector[:head].reshape(self.n_open, self.width)
        bins = vector[head : head + self.n_bins * self.width].reshape(-1, self.width)
        slots = self.slots
        pair = np.repeat(np.arange(slots.shape[0]), slots)
        offset = np.arange(pair.shape[0]) - np.repeat(np.cumsum(slots) - slots, slots)
        code = np.where(offset == slots[pair] - 1, MISSING, offset)
        present = np.any(bins != 0.0, axis=1)
        counts = np.bincount(pair[present], minlength=slots.shape[0])
        return stats, Histograms(
            counts.astype(np.int64),
            code[present].astype(np.uint8),
            np.ascontiguousarray(bins[present]),
        )

    def tail(self, vector: FloatArray) -> FloatArray:
        """Return the extra values at the end of a vector."""
        out: FloatArray = vector[self.length - self.extra :]
        return out


def fine_histograms(
    X: FloatArray, ranges: npt.ArrayLike, columns: np.ndarray, weight: FloatArray
) -> FloatArray:
    """Return a site's weighted counts over the fine bins of the ``columns``.

    ``ranges[j] = (low, high)`` of column j (declared, as the request gives
    them); values outside fall in the end bins; missing values are left out.
    Shape ``(n_columns, FINE_BINS)``.

    Raises
    ------
    fedtrees.federation.InvalidField
        Field ``ranges``: not one finite ``(low, high)``, ``low < high``, per
        column of ``X`` where a column is counted.

    Examples
    --------
    >>> fine_histograms(np.array([[0.0], [0.99], [5.0], [np.nan]]),
    ...                 np.array([[0.0, 1.0]]), np.array([True]),
    ...                 np.ones(4))[0, [0, 1013, 1023]].tolist()
    [1.0, 1.0, 1.0]
    """
    picked = np.flatnonzero(columns)
    ranges = _checked_ranges(ranges, X.shape[1], picked)
    out = np.zeros((picked.shape[0], FINE_BINS))
    for c, j in enumerate(picked):
        x = X[:, j]
        keep = ~np.isnan(x) & (weight != 0.0)
        low, high = ranges[j]
        scaled = (x[keep] - low) / (high - low) * FINE_BINS
        code = np.clip(np.floor(scaled), 0, FINE_BINS - 1).astype(np.int64)
        out[c] = np.bincount(code, weights=weight[keep], minlength=FINE_BINS)
    return out


def _checked_ranges(
    ranges: npt.ArrayLike, n_features: int, picked: IntArray
) -> FloatArray:
    """Return the request's ranges as ``(n_features, 2)`` floats, refused by name."""
    given = np.asarray(ranges)
    if given.dtype.kind not in "fiu" or given.shape != (n_features, 2):
        raise InvalidField(
            "ranges", f"must give one numeric (low, high) per feature ({n_features})"
        )
    out = given.astype(np.float64)
    low, high = out[picked, 0], out[picked, 1]
    if not (np.all(np.isfinite(out[picked])) and np.all(low < high)):
        raise InvalidField("ranges", "must be finite with low < high where counted")
    return out


def fine_grid(
    pooled: FloatArray, ranges: FloatArray, max_bins: int
) -> list[FloatArray]:
    """Cut each column's pooled fine histogram into at most ``max_bins`` bins.

    A column with at most ``max_bins`` non-empty fine bins gets an edge after
    each of them but the last (each its own bin); otherwise the edges are the
    fine-bin boundaries where the pooled weight first reaches ``l/max_bins``
    of the total, ``l = 1..max_bins-1`` (rank error at most ``1/max_bins``
    plus one fine bin's weight). ``ranges`` are the columns' own rows.

    Examples
    --------
    >>> pooled = np.zeros((1, FINE_BINS)); pooled[0, [0, 512]] = 1.0
    >>> fine_grid(pooled, np.array([[0.0, 1024.0]]), 4)[0].tolist()
    [1.0]
    """
    out = []
    for c in range(pooled.shape[0]):
        low, high = ranges[c]
        right = low + (np.arange(FINE_BINS) + 1) * ((high - low) / FINE_BINS)
        w = np.maximum(pooled[c], 0.0)
        filled = np.flatnonzero(w > 0)
        if filled.shape[0] <= max_bins:
            out.append(right[filled[:-1]])
            continue
        cumulative = np.cumsum(w)
        targets = cumulative[-1] * np.arange(1, max_bins) / max_bins
        at = np.searchsorted(cumulative, targets, side="left")
        at = np.unique(np.minimum(at, filled[-1] - 1))
        out.append(right[at[at >= 0]])
    return out


def fine_edges(
    summed: FloatArray, sketched: np.ndarray, ranges: FloatArray, max_bins: int
) -> dict[int, FloatArray]:
    """Return the agreed edges of the ``sketched`` columns, by column.

    ``summed`` starts with the pooled fine histograms of those columns, in
    order (:func:`fine_histograms` at every site, summed); ``ranges`` are every
    column's declared ranges.
    """
    columns = np.flatnonzero(sketched)
    pooled = summed[: columns.shape[0] * FINE_BINS].reshape(-1, FINE_BINS)
    cut = fine_grid(pooled, ranges[columns], max_bins)
    return dict(zip(columns.tolist(), cut, strict=True))
