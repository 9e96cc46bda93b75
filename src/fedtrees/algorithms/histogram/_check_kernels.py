"""Compiled check of a sparse histogram reply: one pass over its bins.

Why compiled: a deep level's reply holds a million bins per client; checking
their order, their codes and their sums with numpy took several passes and
temporary arrays as large as the reply (measured: 0.9 s of a 5 s fit).

numba does not check bounds: the caller checks the arrays' shapes first.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedtrees._compiling import f64, i64, kernel, ro, u8, u16, u32

__all__ = ["OK", "OUTSIDE_GRID", "UNASKED_PAIR", "UNORDERED", "scan_bins", "whole_max"]

OK, UNASKED_PAIR, OUTSIDE_GRID, UNORDERED = 0, 1, 2, 3


@kernel(
    *((ro(i64), ro(i64), ro(i64), ro(u8), ro(stat, 2)) for stat in (f64, u32, u16, u8))
)
def scan_bins(
    counts: Any, pair_feature: Any, feature_bins: Any, codes: Any, stats: Any
) -> tuple[int, int, Any]:  # pragma: no cover - compiled
    """Check every pair's bins; sum them. Returns (status, where, sums).

    Pair ``p`` holds ``counts[p]`` bins of feature ``pair_feature[p]`` (-1: no
    pair): none for -1, codes strictly increasing, each below its feature's
    ``feature_bins`` or the missing code 255. ``where`` is the pair (status
    UNASKED_PAIR) or the bin (OUTSIDE_GRID, UNORDERED) at fault; ``sums`` is
    (n_pairs, S), complete only when the status is OK.
    """
    n_pairs = counts.shape[0]
    width = stats.shape[1]
    sums = np.zeros((n_pairs, width))
    e = 0
    for p in range(n_pairs):
        j = pair_feature[p]
        m = counts[p]
        if m > 0 and j < 0:
            return UNASKED_PAIR, p, sums
        previous = np.int64(-1)
        for _ in range(m):
            c = np.int64(codes[e])
            if c != 255 and c >= feature_bins[j]:
                return OUTSIDE_GRID, e, sums
            if c <= previous:
                return UNORDERED, e, sums
            previous = c
            for s in range(width):
                sums[p, s] += stats[e, s]
            e += 1
    return OK, -1, sums


@kernel((ro(f64),))
def whole_max(values: Any) -> float:  # pragma: no cover - compiled
    """Return the largest value if all are whole in [0, 2**32), else -1 (one pass)."""
    top = 0.0
    flat = values.ravel()
    for i in range(flat.shape[0]):
        x = flat[i]
        if not (x >= 0.0 and x < 4294967296.0 and x == np.floor(x)):
            return -1.0
        top = max(top, x)
    return top
