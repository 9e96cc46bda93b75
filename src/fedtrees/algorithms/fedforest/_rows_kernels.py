"""Compiled kernels over node segments of a client's rows (see :mod:`._rows`).

Layout: the present rows of global node g (tree b) are ``perm[b, start[g]:stop[g]]``
in increasing row order. Looping over a segment therefore visits a node's rows in
the order the node-scan kernels visit them (i = 0..n-1;
``tests/algorithms/fedforest_reference.py``), so every float sum is
accumulated in the same order and the outputs are bit-identical — but rows of
closed leaves are never touched and no row is routed twice.

``open_tree[s]`` is the tree of open node ``open_nodes[s]``; ``ranges[b]`` the
slice of ``open_nodes`` (sorted by tree) that belongs to tree b. numba does not
check bounds: :class:`._rows.ClientRows` validates its inputs first.

``sketch_quantiles`` comes from its kernel module, not the face ``fedtrees.stats``:
the install step compiles kernel modules without their packages' ``__init__``
(:mod:`fedtrees._compiling`).
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from fedtrees._compiling import boolean, f64, i64, kernel, ro, rw
from fedtrees.algorithms.fedforest._kernels import SPLIT_CLIENT, _member
from fedtrees.stats._quantile_kernel import sketch_quantiles as _quantiles

__all__ = [
    "category_statistics",
    "evaluate_bins",
    "node_statistics",
    "partition",
    "sketch_points",
]


@kernel()
def _left_first(
    seg: Any, spill: Any, g: int, X: Any, is_cat: Any, client_code: int, *table: Any
) -> int:  # pragma: no cover - compiled
    """Stably move the rows going left at g to the front; return how many.

    The test is ``_kernels.route``'s: a client split sends every row the same
    way; a categorical one sends the codes of ``set_codes[set_ptr[g]:...]`` left;
    a numeric one sends ``X[i, f] <= threshold[g]`` left.
    """
    feature, threshold, set_ptr, set_codes = table
    f, m = feature[g], seg.shape[0]
    if f == SPLIT_CLIENT:
        return m if _member(client_code, set_ptr[g], set_ptr[g + 1], set_codes) else 0
    n_left, n_right = 0, 0
    for r in range(m):
        i = seg[r]
        if is_cat[f]:
            go_left = _member(int(X[i, f]), set_ptr[g], set_ptr[g + 1], set_codes)
        else:
            go_left = X[i, f] <= threshold[g]
        if go_left:
            seg[n_left] = i  # n_left <= r: never overwrites an unread row
            n_left += 1
        else:
            spill[n_right] = i
            n_right += 1
    for r in range(n_right):  # a loop: see histogram._client_kernels._move
        seg[n_left + r] = spill[r]
    return n_left


@kernel(
    (rw(i64, 2), rw(i64), rw(i64), ro(i64), ro(i64, 2), ro(f64, 2), ro(boolean),
     i64, ro(i64), ro(f64), ro(i64), ro(i64), ro(i64), ro(i64)),
    parallel=True,
)  # fmt: skip
def partition(
    perm: Any,
    start: Any,
    stop: Any,
    split_nodes: Any,
    ranges: Any,
    X: Any,
    is_cat: Any,
    client_code: int,
    feature: Any,
    threshold: Any,
    left: Any,
    right: Any,
    set_ptr: Any,
    set_codes: Any,
) -> None:  # pragma: no cover - compiled
    """Stably split each node's segment into its children's (in place).

    ``split_nodes[ranges[b, 0]:ranges[b, 1]]`` are tree b's nodes, ascending, so a
    node split in the same call as its parent is partitioned after it.
    """
    for b in nb.prange(ranges.shape[0]):
        if ranges[b, 0] == ranges[b, 1]:
            continue
        spill = np.empty(perm.shape[1], dtype=np.int64)
        for t in range(ranges[b, 0], ranges[b, 1]):
            g = split_nodes[t]
            lo, hi = start[g], stop[g]
            n_left = _left_first(
                perm[b, lo:hi], spill, g, X, is_cat, client_code,
                feature, threshold, set_ptr, set_codes,
            )  # fmt: skip
            start[left[g]], stop[left[g]] = lo, lo + n_left
            start[right[g]], stop[right[g]] = lo + n_left, hi


@kernel()
def _add(
    out: Any, i: int, w: float, codes: Any, targets: Any, classification: bool
) -> None:  # pragma: no cover - compiled
    """Add row i (weight w) to the statistics row ``out`` (counts or moments)."""
    if classification:
        out[codes[i]] += w
    else:
        t = targets[i]
        out[0] += w
        out[1] += w * t
        out[2] += w * t * t


@kernel(
    (ro(i64, 2), ro(i64), ro(i64), ro(i64), ro(i64), ro(f64, 2), ro(i64), ro(f64),
     boolean, i64),
    parallel=True,
)  # fmt: skip
def node_statistics(
    perm: Any,
    start: Any,
    stop: Any,
    open_nodes: Any,
    open_tree: Any,
    weight: Any,
    codes: Any,
    targets: Any,
    classification: bool,
    width: int,
) -> tuple[Any, Any]:  # pragma: no cover - compiled
    """Statistics and present-row counts of open nodes (the node-scan layout)."""
    n_open = open_nodes.shape[0]
    stats = np.zeros((n_open, width))
    rows = np.zeros(n_open, dtype=np.int64)
    for s in nb.prange(n_open):
        g, b = open_nodes[s], open_tree[s]
        rows[s] = stop[g] - start[g]
        for r in range(start[g], stop[g]):
            i = perm[b, r]
            _add(stats[s], i, weight[b, i], codes, targets, classification)
    return stats, rows


@kernel()
def _sort_segment(
    seg: Any, pos_j: Any, weight_b: Any, w_at: Any, buf_pos: Any, buf_w: Any
) -> None:  # pragma: no cover - compiled
    """Write a segment's ranks, sorted, and their weights into the buffers.

    Ranks are distinct, so sorting them alone suffices; weights travel through
    the rank-indexed scratch ``w_at``.
    """
    m = seg.shape[0]
    for r in range(m):
        i = seg[r]
        p = pos_j[i]
        buf_pos[r] = p
        w_at[p] = weight_b[i]
    buf_pos.sort()
    for r in range(m):
        buf_w[r] = w_at[buf_pos[r]]


@kernel()
def _scan_segments(
    perm_b: Any,
    start: Any,
    stop: Any,
    nodes: Any,
    offset: Any,
    pos_j: Any,
    weight_b: Any,
    slot_at: Any,
    w_at: Any,
    buf_pos: Any,
    buf_w: Any,
) -> None:  # pragma: no cover - compiled
    """Bucket several segments' rows by rank, then read them out in rank order.

    ``slot_at`` (one entry per rank, -1 = unused) is left all -1 again.
    """
    low, high = slot_at.shape[0], 0
    for t in range(nodes.shape[0]):
        g = nodes[t]
        for r in range(start[g], stop[g]):
            i = perm_b[r]
            p = pos_j[i]
            slot_at[p] = t
            w_at[p] = weight_b[i]
            low, high = min(low, p), max(high, p + 1)
    cursor = offset.copy()
    for p in range(low, high):
        t = slot_at[p]
        if t < 0:
            continue
        c = cursor[t]
        buf_pos[c] = p
        buf_w[c] = w_at[p]
        cursor[t] = c + 1
        slot_at[p] = -1


@kernel(
    (ro(i64, 2), ro(i64), ro(i64), ro(i64), ro(i64, 2), ro(i64, 2), ro(boolean),
     ro(i64, 2), ro(f64, 2), ro(f64, 2), i64, ro(i64), i64),
    parallel=True,
)  # fmt: skip
def sketch_points(
    perm: Any,
    start: Any,
    stop: Any,
    open_nodes: Any,
    ranges: Any,
    pair_feature: Any,
    is_cat: Any,
    pos: Any,
    sval: Any,
    weight: Any,
    q: int,
    out_ptr: Any,
    n_points_total: int,
) -> Any:  # pragma: no cover - compiled
    """Weighted type-1 quantile points of every numeric (open node, feature) pair.

    Per tree and feature, the ranks ``pos[j, i]`` of the considering nodes' rows
    are put in order either by bucketing them in rank space (many rows) or by
    sorting each node's ranks (few rows); ranks are distinct, so both give the
    order the node-scan ``sketch_points`` uses.
    """
    points = np.empty(n_points_total)
    n_features, n = pos.shape
    fp = pair_feature.shape[1]
    for b in nb.prange(ranges.shape[0]):
        lo, hi = ranges[b, 0], ranges[b, 1]
        if lo == hi:
            continue
        slot_at = np.full(n, -1, dtype=np.int64)
        w_at = np.empty(n)
        for j in range(n_features):
            if is_cat[j]:
                continue
            slot, pair = np.empty(hi - lo, np.int64), np.empty(hi - lo, np.int64)
            used, needed, largest = 0, 0, 1
            for s in range(lo, hi):
                m = stop[open_nodes[s]] - start[open_nodes[s]]
                last = -1  # the last pair naming j, as the node scan does
                for k in range(fp):
                    if pair_feature[s, k] == j:
                        last = k
                if last >= 0 and m > 0:
                    slot[used], pair[used] = s, last
                    used += 1
                    needed += m
                    largest = max(largest, m)
            if used == 0:
                continue
            nodes = open_nodes[slot[:used]]
            offset = np.zeros(used + 1, dtype=np.int64)
            for t in range(used):
                offset[t + 1] = offset[t] + stop[nodes[t]] - start[nodes[t]]
            buf_pos, buf_w = np.empty(needed, np.int64), np.empty(needed)
            if needed * np.log2(largest + 1.0) > n:
                _scan_segments(
                    perm[b], start, stop, nodes, offset, pos[j], weight[b],
                    slot_at, w_at, buf_pos, buf_w,
                )  # fmt: skip
            else:
                for t in range(used):
                    a, z = offset[t], offset[t + 1]
                    seg = perm[b, start[nodes[t]] : stop[nodes[t]]]
                    _sort_segment(
                        seg, pos[j], weight[b], w_at, buf_pos[a:z], buf_w[a:z]
                    )
            for t in range(used):
                a, z = offset[t], offset[t + 1]
                s, k = slot[t], pair[t]
                _quantiles(
                    buf_pos[a:z], buf_w[a:z], z - a, q, sval[j], points,
                    out_ptr[s * fp + k],
                )  # fmt: skip
    return points


@kernel(
    (ro(i64, 2), ro(i64), ro(i64), ro(i64), ro(i64), ro(f64, 2), ro(i64, 2),
     ro(boolean), ro(f64, 2), ro(i64), ro(f64), boolean, i64, i64),
    parallel=True,
)  # fmt: skip
def category_statistics(
    perm: Any,
    start: Any,
    stop: Any,
    open_nodes: Any,
    open_tree: Any,
    X: Any,
    pair_feature: Any,
    is_cat: Any,
    weight: Any,
    codes: Any,
    targets: Any,
    classification: bool,
    max_categories: int,
    width: int,
) -> Any:  # pragma: no cover - compiled
    """Per-category statistics of every categorical (open node, feature) pair."""
    n_open, fp = pair_feature.shape
    stats = np.zeros((n_open, fp, max_categories, width))
    for s in nb.prange(n_open):
        g, b = open_nodes[s], open_tree[s]
        for k in range(fp):
            j = pair_feature[s, k]
            if j < 0 or not is_cat[j]:
                continue
            for r in range(start[g], stop[g]):
                i = perm[b, r]
                c = int(X[i, j])
                _add(stats[s, k, c], i, weight[b, i], codes, targets, classification)
    return stats


@kernel()
def _count_below(thr: Any, lo: int, hi: int, x: float) -> int:  # pragma: no cover
    """Return lo + #(thr[lo:hi] < x) for sorted ``thr[lo:hi]`` (branch-free search).

    Same result as the node-scan ``evaluate_bins``'s binary search; the loop runs a
    fixed log2(hi - lo) steps and the comparison becomes a conditional move.
    """
    n = hi - lo
    if n == 0:
        return lo
    while n > 1:
        half = n // 2
        lo = lo + half if thr[lo + half - 1] < x else lo
        n -= half
    return lo + 1 if thr[lo] < x else lo


@kernel(
    (ro(i64, 2), ro(i64), ro(i64), ro(i64), ro(i64), ro(f64, 2), ro(i64, 2),
     ro(boolean), ro(i64), ro(f64), ro(f64, 2), ro(i64), ro(f64), boolean, i64),
    parallel=True,
)  # fmt: skip
def evaluate_bins(
    perm: Any,
    start: Any,
    stop: Any,
    open_nodes: Any,
    open_tree: Any,
    X: Any,
    pair_feature: Any,
    is_cat: Any,
    thr_ptr: Any,
    thr: Any,
    weight: Any,
    codes: Any,
    targets: Any,
    classification: bool,
    width: int,
) -> Any:  # pragma: no cover - compiled
    """Per-bin statistics of every numeric pair for its ragged sorted candidates.

    Pair p = s * fp + k owns bins ``thr_ptr[p] + p .. thr_ptr[p + 1] + p`` (one
    more than its candidates); a value x falls in bin #(candidates < x).
    """
    n_open, fp = pair_feature.shape
    stats = np.zeros((thr_ptr[-1] + n_open * fp, width))
    for s in nb.prange(n_open):
        g, b = open_nodes[s], open_tree[s]
        for r in range(start[g], stop[g]):
            i = perm[b, r]
            w = weight[b, i]
            for k in range(fp):
                j = pair_feature[s, k]
                if j < 0 or is_cat[j]:
                    continue
                p = s * fp + k
                lo = _count_below(thr, thr_ptr[p], thr_ptr[p + 1], X[i, j])
                if classification:  # inline: a row view per add costs ~30 %
                    stats[lo + p, codes[i]] += w
                else:
                    t = targets[i]
                    stats[lo + p, 0] += w
                    stats[lo + p, 1] += w * t
                    stats[lo + p, 2] += w * t * t
    return stats
