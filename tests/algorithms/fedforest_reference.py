"""Node-scan FedForest client kernels: the reference the row partition is checked against.

Before protocol v2 a client answered by scanning all n rows of every tree at
every level, routing each one from its last node (``route`` in
:mod:`fedtrees.algorithms.fedforest._kernels`). The client now answers from rows
kept partitioned by node (:mod:`fedtrees.algorithms.fedforest._rows`), which
visits each node's rows in the order these scans do, so its results must be the
same bit for bit: ``tests/algorithms/test_fedforest_rows.py`` compares them, and
``benchmarks/bench_fedforest_rows.py`` times both.

Conventions: ``node[b, i]`` is the global id of the open node (or leaf) that row
i reaches in tree b; ``weight[b, i]`` its bootstrap (x sample) weight, 0 =
absent; ``open_slot[g]`` the position of node g among the open nodes (-1 if not
open); ``slot_ranges[b]`` the slice of open nodes of tree b; ``pos[j, i]`` is row
i's position in the client's feature-j order (``order[j]``), ``sval[j]`` the
sorted values. The type-1 rule of :func:`_quantiles` is written out here on its
own, an independent copy of :mod:`fedtrees.stats._quantile_kernel`'s.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

__all__ = [
    "category_statistics",
    "evaluate_bins",
    "node_statistics",
    "sketch_points",
]


@nb.njit(parallel=True, cache=True)
def node_statistics(
    node: Any,
    weight: Any,
    open_slot: Any,
    slot_ranges: Any,
    n_open: int,
    codes: Any,
    targets: Any,
    classification: bool,
    width: int,
) -> tuple[Any, Any]:  # pragma: no cover - compiled
    """Statistics (class counts or moments) and present-row counts of open nodes."""
    stats = np.zeros((n_open, width))
    rows = np.zeros(n_open, dtype=np.int64)
    n_trees, n = node.shape
    for b in nb.prange(n_trees):
        if slot_ranges[b, 0] == slot_ranges[b, 1]:
            continue
        for i in range(n):
            w = weight[b, i]
            if w == 0.0:
                continue
            s = open_slot[node[b, i]]
            if s < 0:
                continue
            rows[s] += 1
            if classification:
                stats[s, codes[i]] += w
            else:
                t = targets[i]
                stats[s, 0] += w
                stats[s, 1] += w * t
                stats[s, 2] += w * t * t
    return stats, rows


@nb.njit(cache=True, nogil=True)
def _quantiles(
    sorted_pos: Any,
    sorted_w: Any,
    count: int,
    q: int,
    sval_j: Any,
    out: Any,
    start: int,
) -> None:  # pragma: no cover - compiled
    """Type-1 weighted quantiles at levels l/m, m = min(q, count), into out[start:]."""
    m = min(q, count)
    total = 0.0
    for k in range(count):
        total += sorted_w[k]
    idx = 0
    cum = sorted_w[0]
    out[start] = sval_j[sorted_pos[0]]
    for level in range(1, m + 1):
        # first element with cum >= level/m * total  <=>  cum * m >= level * total
        while cum * m < level * total and idx < count - 1:
            idx += 1
            cum += sorted_w[idx]
        out[start + level] = sval_j[sorted_pos[idx]]


@nb.njit(parallel=True, cache=True)
def sketch_points(
    node: Any,
    weight: Any,
    order: Any,
    pos: Any,
    sval: Any,
    open_slot: Any,
    slot_ranges: Any,
    pair_feature: Any,
    is_cat: Any,
    rows_per_slot: Any,
    q: int,
    out_ptr: Any,
    n_points_total: int,
) -> Any:  # pragma: no cover - compiled
    """Weighted type-1 quantile points of every numeric (open node, feature) pair.

    Per tree and feature, the rows of all nodes considering the feature are put
    in feature order either by one scan of the presorted order (large nodes) or
    by sorting each node's positions (small nodes), whichever is cheaper.
    """
    points = np.empty(n_points_total)
    n_trees, n = node.shape
    n_features = order.shape[0]
    fp = pair_feature.shape[1]
    for b in nb.prange(n_trees):
        lo, hi = slot_ranges[b, 0], slot_ranges[b, 1]
        if lo == hi:
            continue
        largest = 1
        for s in range(lo, hi):
            largest = max(largest, rows_per_slot[s])
        # rows of each slot of this tree, grouped (counting sort by slot)
        start = np.zeros(hi - lo + 1, dtype=np.int64)
        for s in range(lo, hi):
            start[s - lo + 1] = start[s - lo] + rows_per_slot[s]
        grouped = np.empty(start[hi - lo], dtype=np.int64)
        fill = start[:-1].copy()
        for i in range(n):
            if weight[b, i] == 0.0:
                continue
            s = open_slot[node[b, i]]
            if s >= lo and s < hi:
                grouped[fill[s - lo]] = i
                fill[s - lo] += 1
        for j in range(n_features):
            if is_cat[j]:
                continue
            pair_of_slot = np.full(hi - lo, -1, dtype=np.int64)
            needed = 0
            for s in range(lo, hi):
                for k in range(fp):
                    if pair_feature[s, k] == j and rows_per_slot[s] > 0:
                        pair_of_slot[s - lo] = k
                        needed += rows_per_slot[s]
            if needed == 0:
                continue
            buf_pos = np.empty(needed, dtype=np.int64)
            buf_w = np.empty(needed)
            offset = np.zeros(hi - lo, dtype=np.int64)
            acc = 0
            for s in range(lo, hi):
                offset[s - lo] = acc
                if pair_of_slot[s - lo] >= 0:
                    acc += rows_per_slot[s]
            if needed * np.log2(largest + 1.0) > n:
                cursor = offset.copy()
                for p in range(n):
                    i = order[j, p]
                    w = weight[b, i]
                    if w == 0.0:
                        continue
                    s = open_slot[node[b, i]]
                    if s < lo or s >= hi or pair_of_slot[s - lo] < 0:
                        continue
                    c = cursor[s - lo]
                    buf_pos[c] = p
                    buf_w[c] = w
                    cursor[s - lo] = c + 1
            else:
                for s in range(lo, hi):
                    if pair_of_slot[s - lo] < 0:
                        continue
                    rows = grouped[start[s - lo] : start[s - lo + 1]]
                    keys = np.empty(rows.shape[0], dtype=np.int64)
                    for r in range(rows.shape[0]):
                        keys[r] = pos[j, rows[r]]
                    perm = np.argsort(keys)
                    base = offset[s - lo]
                    for r in range(rows.shape[0]):
                        buf_pos[base + r] = keys[perm[r]]
                        buf_w[base + r] = weight[b, rows[perm[r]]]
            for s in range(lo, hi):
                k = pair_of_slot[s - lo]
                if k < 0:
                    continue
                base = offset[s - lo]
                c = rows_per_slot[s]
                _quantiles(
                    buf_pos[base : base + c],
                    buf_w[base : base + c],
                    c,
                    q,
                    sval[j],
                    points,
                    out_ptr[s * fp + k],
                )
    return points


@nb.njit(parallel=True, cache=True)
def category_statistics(
    node: Any,
    weight: Any,
    X: Any,
    open_slot: Any,
    slot_ranges: Any,
    pair_feature: Any,
    is_cat: Any,
    codes: Any,
    targets: Any,
    classification: bool,
    n_open: int,
    max_categories: int,
    width: int,
) -> Any:  # pragma: no cover - compiled
    """Per-category statistics of every categorical (open node, feature) pair."""
    fp = pair_feature.shape[1]
    stats = np.zeros((n_open, fp, max_categories, width))
    n_trees, n = node.shape
    for b in nb.prange(n_trees):
        if slot_ranges[b, 0] == slot_ranges[b, 1]:
            continue
        for i in range(n):
            w = weight[b, i]
            if w == 0.0:
                continue
            s = open_slot[node[b, i]]
            if s < 0:
                continue
            for k in range(fp):
                j = pair_feature[s, k]
                if j < 0 or not is_cat[j]:
                    continue
                c = int(X[i, j])
                if classification:
                    stats[s, k, c, codes[i]] += w
                else:
                    t = targets[i]
                    stats[s, k, c, 0] += w
                    stats[s, k, c, 1] += w * t
                    stats[s, k, c, 2] += w * t * t
    return stats


@nb.njit(parallel=True, cache=True)
def evaluate_bins(
    node: Any,
    weight: Any,
    X: Any,
    open_slot: Any,
    slot_ranges: Any,
    pair_feature: Any,
    is_cat: Any,
    thresholds: Any,
    n_thr: Any,
    codes: Any,
    targets: Any,
    classification: bool,
    width: int,
) -> Any:  # pragma: no cover - compiled
    """Per-bin statistics of every numeric pair for its candidate thresholds.

    ``thresholds[s, k, :n_thr[s, k]]`` are sorted; a row with value x is left of
    candidate m iff ``x <= c_m``, so its bin is the number of candidates below x
    (bins 0..m are left of c_m). One binary search per (row, considered feature).
    """
    n_open, fp, n_cand = thresholds.shape
    stats = np.zeros((n_open, fp, n_cand + 1, width))
    n_trees, n = node.shape
    for b in nb.prange(n_trees):
        if slot_ranges[b, 0] == slot_ranges[b, 1]:
            continue
        for i in range(n):
            w = weight[b, i]
            if w == 0.0:
                continue
            s = open_slot[node[b, i]]
            if s < 0:
                continue
            for k in range(fp):
                j = pair_feature[s, k]
                if j < 0 or is_cat[j]:
                    continue
                x = X[i, j]
                lo, hi = 0, n_thr[s, k]
                while lo < hi:
                    mid = (lo + hi) // 2
                    if thresholds[s, k, mid] < x:
                        lo = mid + 1
                    else:
                        hi = mid
                if classification:
                    stats[s, k, lo, codes[i]] += w
                else:
                    t = targets[i]
                    stats[s, k, lo, 0] += w
                    stats[s, k, lo, 1] += w * t
                    stats[s, k, lo, 2] += w * t * t
    return stats
