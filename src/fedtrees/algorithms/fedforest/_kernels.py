"""Client-side FedForest kernels, compiled with numba.

Why compiled: one client's quantile sketches for one level of a 50-tree forest at
1M pooled rows sort about 12.6M (node, feature, row) keys; ``np.sort`` alone takes
0.9 s for that on our 2-core machine, so numpy cannot reach the benchmark targets.
These kernels touch every (tree, row, considered feature) a constant number of
times per level, parallel over trees (each tree writes only its own nodes).

Conventions: ``node[b, i]`` is the global id of the open node (or leaf) that row i
reaches in tree b; ``weight[b, i]`` its bootstrap (x sample) weight, 0 = absent.
A node's ``feature`` is ``SPLIT_NONE`` (not split), ``SPLIT_CLIENT`` or a feature
index; categorical and client splits send the codes listed in
``set_codes[set_ptr[g]:set_ptr[g+1]]`` left. ``pos[j, i]`` is row i's position in
the client's feature-j order (``order[j]``), ``sval[j]`` the sorted values.

numba does not check bounds: callers validate every array first
(:func:`fedtrees.algorithms.fedforest._forest.apply_batch` and
:func:`fedtrees.algorithms.fedforest._client.check_open`).

Since protocol v2 the client answers from rows kept partitioned by node
(:mod:`._rows`, bit-identical); ``route`` still scores held-out rows, and the
node-scan kernels here are the reference its bit-identity test compares with.
"""

from __future__ import annotations

from typing import Any, Final

import numba as nb
import numpy as np

SPLIT_NONE: Final = -1
SPLIT_CLIENT: Final = -2

__all__ = [
    "SPLIT_CLIENT",
    "SPLIT_NONE",
    "category_statistics",
    "evaluate_bins",
    "node_statistics",
    "route",
    "sketch_points",
]


@nb.njit(cache=True, nogil=True)
def _member(code: int, start: int, stop: int, set_codes: Any) -> bool:
    # An explicit loop: numba's nopython mode cannot compile any(<generator>).
    found = False
    for k in range(start, stop):
        found = found or set_codes[k] == code
    return found


@nb.njit(parallel=True, cache=True)
def route(
    node: Any,
    weight: Any,
    X: Any,
    client_code: int,
    feature: Any,
    threshold: Any,
    left: Any,
    right: Any,
    set_ptr: Any,
    set_codes: Any,
    is_cat: Any,
) -> None:  # pragma: no cover - compiled
    """Move every present row down the splits decided so far (in place)."""
    n_trees, n = node.shape
    for b in nb.prange(n_trees):
        for i in range(n):
            if weight[b, i] == 0.0:
                continue
            g = node[b, i]
            while feature[g] != SPLIT_NONE:
                f = feature[g]
                if f == SPLIT_CLIENT:
                    go_left = _member(
                        client_code, set_ptr[g], set_ptr[g + 1], set_codes
                    )
                elif is_cat[f]:
                    go_left = _member(
                        int(X[i, f]), set_ptr[g], set_ptr[g + 1], set_codes
                    )
                else:
                    go_left = X[i, f] <= threshold[g]
                g = left[g] if go_left else right[g]
            node[b, i] = g


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
