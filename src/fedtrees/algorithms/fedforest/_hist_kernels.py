"""Compiled client part of ``candidates="hist"``: per-node grid histograms.

Why compiled: a level's histograms touch every (present row, considered feature)
pair of every open node once; numpy's ``np.add.at`` over that many keys is an
order of magnitude slower and needs key arrays as large as the data.

Layout (ALGORITHMS.md §1.1, beyond the paper; see :mod:`._hist`): the rows of
open node ``s`` (global id ``g = open_nodes[s]``, tree ``b = node_tree[g]``)
are ``perm[b, start[g]:stop[g]]`` (the row partition of :mod:`._rows`, which
keeps each segment in increasing row order, so accumulation order is fixed).
Pair ``(s, k)`` of a numeric feature ``j = pair_feature[s, k]`` owns the rows
``hist_ptr[s * fp + k] : hist_ptr[s * fp + k + 1]`` of the output, one per grid
bin of ``j``; categorical and padding pairs own none.

numba does not check bounds: :func:`fedtrees.algorithms.fedforest._hist.
client_histograms` validates every array first.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

__all__ = ["node_histograms", "type1_points"]


@nb.njit(parallel=True, cache=True)
def node_histograms(
    perm: Any,
    start: Any,
    stop: Any,
    open_nodes: Any,
    node_tree: Any,
    pair_feature: Any,
    is_cat: Any,
    codes: Any,
    weight: Any,
    classes: Any,
    targets: Any,
    classification: bool,
    width: int,
    hist_ptr: Any,
) -> Any:  # pragma: no cover - compiled
    """Return the ``(hist_ptr[-1], width)`` grid histograms of all numeric pairs.

    Parallel over open nodes: each node writes only its own rows of the output,
    and reads its segment in the order the partition keeps (increasing row
    index), so the result does not depend on the thread count.
    """
    n_open, fp = pair_feature.shape
    hist = np.zeros((hist_ptr[n_open * fp], width))
    for s in nb.prange(n_open):
        g = open_nodes[s]
        b = node_tree[g]
        for p in range(start[g], stop[g]):
            i = perm[b, p]
            w = weight[b, i]
            if w == 0.0:
                continue
            for k in range(fp):
                j = pair_feature[s, k]
                if j < 0 or is_cat[j]:
                    continue
                row = hist_ptr[s * fp + k] + codes[i, j]
                if classification:
                    hist[row, classes[i]] += w
                else:
                    t = targets[i]
                    hist[row, 0] += w
                    hist[row, 1] += w * t
                    hist[row, 2] += w * t * t
    return hist


@nb.njit(cache=True)
def type1_points(
    values: Any, weights: Any, group_start: Any, m: int
) -> Any:  # pragma: no cover - compiled
    """Weighted type-1 quantiles at ``l/m``, ``l = 0..m``, of every group.

    ``values`` are sorted within each group ``group_start[g]:group_start[g+1]``
    (weights > 0). Unlike the quantile mode's sketch, ``m`` is not capped by the
    group's row count: points repeat where a group has fewer rows. An empty
    group gives NaN. Same rule as the client kernels: the first value whose
    cumulative weight ``c`` satisfies ``c * m >= l * total``.
    """
    n_groups = group_start.shape[0] - 1
    out = np.full((n_groups, m + 1), np.nan)
    for g in range(n_groups):
        lo, hi = group_start[g], group_start[g + 1]
        if lo == hi:
            continue
        total = 0.0
        for i in range(lo, hi):
            total += weights[i]
        idx = lo
        cum = weights[lo]
        out[g, 0] = values[lo]
        for level in range(1, m + 1):
            while cum * m < level * total and idx < hi - 1:
                idx += 1
                cum += weights[idx]
            out[g, level] = values[idx]
    return out
