"""Compiled server side of the engine: pooled bins, subtraction, split search.

Why compiled: at a deep level of a 50-tree forest the clients send millions of
non-zero bins; summing them by key with numpy needs a sort of all of them
(0.5 s a level at 100k rows, measured), and scoring every threshold of every
(node, feature) pair in padded numpy arrays needs nodes x features x 256 cells.
Here every pair is one small problem on a 256-entry buffer (chunks of nodes run
on threads: the kernels release the GIL).

A **histogram** is sparse: pair ``p`` owns entries ``lo[p]:hi[p]`` of ``codes``
(``uint8``, strictly increasing, :data:`MISSING` = 255 last) and ``stats``
(float64, one row of width S per entry). Criteria (``criterion``): 0 Gini, 1
entropy, 2 squared error (moments ``w, Σwy, Σwy²``) — scikit-learn's proxy
improvements, as :func:`fedtrees.stats.proxy_gains` computes them.

numba does not check bounds: the callers validate every array first.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedtrees._compiling import boolean, f64, i8, i64, kernel, ro, rw, u8

__all__ = ["CODES", "LARGER", "scan_nodes", "subtract_bins"]

CODES = 256
MISSING = 255
LN2 = math.log(2.0)
GINI, ENTROPY, SQUARED_ERROR, SECOND_ORDER = 0, 1, 2, 3
LARGER, RIGHT, LEFT = -1, 0, 1


@kernel()
def _weight(row: Any, count_col: int) -> Any:  # pragma: no cover - compiled
    """Return a bin's weight: its count column, or its class counts' sum (-1)."""
    if count_col >= 0:
        return row[count_col]
    total = 0.0
    for c in range(row.shape[0]):
        total += row[c]
    return total


@kernel(
    (ro(i64), ro(i64), ro(u8), ro(f64, 2), ro(i64), ro(i64), ro(u8), ro(f64, 2), i64,
     i64, boolean),
)  # fmt: skip
def subtract_bins(
    parent_lo: Any,
    parent_hi: Any,
    parent_codes: Any,
    parent_stats: Any,
    small_lo: Any,
    small_hi: Any,
    small_codes: Any,
    small_stats: Any,
    capacity: int,
    count_col: int,
    clip: bool,
) -> tuple[Any, Any, Any]:  # pragma: no cover - compiled
    """Derive the larger child's bins of every pair: parent minus smaller child.

    Derived pair ``q`` takes parent entries ``parent_lo[q]:parent_hi[q]`` and
    smaller-child entries ``small_lo[q]:small_hi[q]`` (both in code order; the
    child's codes are among the parent's). A bin whose weight is at most
    ``1e-12`` of the parent bin's is dropped (exactly 0 for whole counts);
    with ``clip`` (class counts, moments' weight) tiny negatives become 0.
    """
    n = parent_lo.shape[0]
    width = parent_stats.shape[1]
    counts = np.zeros(n, dtype=np.int64)
    codes_out = np.empty(capacity, dtype=np.uint8)
    stats_out = np.empty((capacity, width))
    at = 0
    for q in range(n):
        e = small_lo[q]
        m = 0
        for a in range(parent_lo[q], parent_hi[q]):
            c = parent_codes[a]
            for s in range(width):
                stats_out[at + m, s] = parent_stats[a, s]
            if e < small_hi[q] and small_codes[e] == c:
                for s in range(width):
                    stats_out[at + m, s] -= small_stats[e, s]
                e += 1
            if clip:
                for s in range(width):
                    if count_col < 0 or s == count_col:
                        stats_out[at + m, s] = max(stats_out[at + m, s], 0.0)
            whole = _weight(parent_stats[a], count_col)
            if _weight(stats_out[at + m], count_col) > 1e-12 * whole:
                codes_out[at + m] = c
                m += 1
        counts[q] = m
        at += m
    return counts, codes_out, stats_out


@kernel()
def _size(v: Any, criterion: int) -> Any:  # pragma: no cover - compiled
    """Return the weighted rows of statistics.

    The moment w, the weight column of (G, H, W), or the sum of class counts.
    """
    if criterion == SQUARED_ERROR:
        return v[0]
    if criterion == SECOND_ORDER:
        return v[2]
    total = 0.0
    for c in range(v.shape[0]):
        total += v[c]
    return total


@kernel()
def _impurity(v: Any, n: float, criterion: int) -> Any:  # pragma: no cover
    """Gini, entropy (bits) or variance of statistics (0 for an empty node)."""
    if n <= 0:
        return 0.0
    if criterion == GINI:
        sq = 0.0
        for c in range(v.shape[0]):
            sq += v[c] * v[c]
        return 1.0 - sq / (n * n)
    if criterion == ENTROPY:
        h = 0.0
        for c in range(v.shape[0]):
            p = v[c] / n
            if p > 0:
                h -= p * (math.log(p) / LN2)
        return h
    mean = v[1] / n
    return max(v[2] / n - mean * mean, 0.0)


@kernel()
def _second_order(g: float, h: float, lam: float) -> Any:  # pragma: no cover
    """XGBoost's ``G²/(H+λ)`` (0 for ``H <= 0``)."""
    return g * g / (h + lam) if h > 0 else 0.0


@kernel()
def _proxy(
    left: Any, parent: Any, right: Any, n_parent: float, min_leaf: float, crit: int,
    lam: float,
) -> Any:  # fmt: skip  # pragma: no cover - compiled
    """Return a split's proxy improvement (scikit-learn's order); -inf if inadmissible.

    Gini: ``Σ_c l_c²/n_L + Σ_c r_c²/n_R``, which is scikit-learn's
    ``−n_L·I(L) − n_R·I(R)`` plus the node's constant ``n``; entropy:
    scikit-learn's; squared error: ``(Σy_L)²/n_L + (Σy_R)²/n_R``; second
    order (statistics ``(G, H, W)``, boosting): XGBoost's
    ``G_L²/(H_L+λ) + G_R²/(H_R+λ)``, a side admissible only with
    ``H >= min_leaf`` (``min_child_weight``). ``right`` is scratch space (it
    receives ``parent - left`` for entropy).
    """
    n_left = _size(left, crit)
    n_right = n_parent - n_left
    slack = 1e-9 * max(n_left + n_right, 1.0)
    if n_left <= slack or n_right <= slack:
        return -np.inf
    if crit == SECOND_ORDER:
        h_right = parent[1] - left[1]
        if left[1] < min_leaf or h_right < min_leaf:
            return -np.inf
        return _second_order(left[0], left[1], lam) + _second_order(
            parent[0] - left[0], h_right, lam
        )
    limit = min_leaf - 1e-9 * max(n_parent, 1.0)
    if n_left < limit or n_right < limit:
        return -np.inf
    if crit == SQUARED_ERROR:
        r = parent[1] - left[1]
        return left[1] * left[1] / n_left + r * r / n_right
    if crit == GINI:
        sq_left, sq_right = 0.0, 0.0
        for c in range(parent.shape[0]):
            r = parent[c] - left[c]
            sq_left += left[c] * left[c]
            sq_right += r * r
        return sq_left / n_left + sq_right / n_right
    for c in range(parent.shape[0]):
        right[c] = parent[c] - left[c]
    return -n_right * _impurity(right, n_right, crit) - n_left * _impurity(
        left, n_left, crit
    )


@kernel()
def _scan_numeric(
    codes: Any, stats: Any, lo: int, hi: int, parent: Any, n_parent: float,
    min_leaf: float, crit: int, lam: float, cum: Any, trial: Any, right: Any,
) -> tuple[float, int, int]:  # fmt: skip  # pragma: no cover - compiled
    """Best threshold of one numeric pair: (score, bin, missing direction).

    Thresholds lie after each non-empty bin but the last (rows ``<=`` the
    bin's closing edge go left). With missing rows at the node, both
    directions are scored, right first (ties: right), plus "every non-missing
    row left, missing right"; without, missing follows the larger child.
    """
    has_missing = hi > lo and codes[hi - 1] == MISSING
    n_regular = hi - lo - (1 if has_missing else 0)
    best, best_bin, best_dir = -np.inf, -1, LARGER
    cum[:] = 0.0
    for t in range(n_regular):
        for c in range(cum.shape[0]):
            cum[c] += stats[lo + t, c]
        if t == n_regular - 1 and not has_missing:
            break
        score = _proxy(cum, parent, right, n_parent, min_leaf, crit, lam)
        if score > best:
            best, best_bin = score, codes[lo + t]
            best_dir = RIGHT if has_missing else LARGER
        if has_missing and t < n_regular - 1:
            for c in range(cum.shape[0]):
                trial[c] = cum[c] + stats[hi - 1, c]
            score = _proxy(trial, parent, right, n_parent, min_leaf, crit, lam)
            if score > best:
                best, best_bin, best_dir = score, codes[lo + t], LEFT
    return best, best_bin, best_dir


@kernel()
def _stable_order(key: Any, m: int, order: Any) -> None:  # pragma: no cover - compiled
    """Write into ``order[:m]`` the positions of ``key[:m]`` sorted, ties in place.

    An insertion sort: at most 256 categories, and it compiles in a fraction of
    the time of numba's ``argsort(kind="mergesort")`` (same order: both stable).
    """
    for i in range(m):
        j = i
        while j > 0 and key[order[j - 1]] > key[i]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = i


@kernel()
def _scan_categorical(
    codes: Any, stats: Any, lo: int, hi: int, parent: Any, n_parent: float,
    min_leaf: float, crit: int, lam: float, cum: Any, right: Any, order: Any,
    key: Any,
) -> tuple[float, int]:  # fmt: skip  # pragma: no cover - compiled
    """Best contiguous Fisher grouping of one categorical pair: (score, cut).

    Categories present at the node (the missing one included) are ordered by
    mean, class-1 share, (more classes) the share of the pair's majority
    class, or (second order) ``G/(H+λ)``; ties by code. ``order[:cut + 1]``
    (entries) go left.
    """
    m = hi - lo
    if m < 2:
        return -np.inf, -1
    width = stats.shape[1]
    major = 0
    if crit != SQUARED_ERROR and crit != SECOND_ORDER and width > 2:
        cum[:] = 0.0
        for e in range(lo, hi):
            for c in range(width):
                cum[c] += stats[e, c]
        for c in range(width):
            if cum[c] > cum[major]:
                major = c
    for e in range(m):
        if crit == SECOND_ORDER:
            h = stats[lo + e, 1] + lam
            key[e] = stats[lo + e, 0] / h if h > 0 else 0.0
            continue
        n = _size(stats[lo + e], crit)
        column = 1 if crit == SQUARED_ERROR or width == 2 else major
        key[e] = stats[lo + e, column] / n if n > 0 else np.inf
    _stable_order(key, m, order)
    best, best_cut = -np.inf, -1
    cum[:] = 0.0
    for t in range(m - 1):
        for c in range(width):
            cum[c] += stats[lo + order[t], c]
        score = _proxy(cum, parent, right, n_parent, min_leaf, crit, lam)
        if score > best:
            best, best_cut = score, t
    return best, best_cut


@kernel(
    (i64, i64, ro(i64), ro(i64), ro(u8), ro(f64, 2), ro(i64, 2), ro(boolean),
     ro(f64, 2), ro(f64), i64, f64, rw(f64), rw(i64), rw(i64), rw(i8), rw(f64, 2),
     rw(f64), rw(i64), rw(f64, 2), rw(boolean, 2)),
)  # fmt: skip
def scan_nodes(
    first: int, stop: int, pair_lo: Any, pair_hi: Any, codes: Any, stats: Any,
    pair_feature: Any, is_categorical: Any, parent: Any, min_leaf: Any,
    criterion: int, lam: float, num_score: Any, num_slot: Any, num_bin: Any,
    num_dir: Any, num_left: Any, cat_score: Any, cat_slot: Any, cat_left: Any,
    cat_set: Any,
) -> None:  # fmt: skip  # pragma: no cover - compiled
    """Write the best numeric and categorical candidates of nodes ``first:stop``.

    Only those nodes' rows of the result arrays are written.

    Node ``s``'s pair ``k`` (feature ``pair_feature[s, k]``, -1: none) owns
    entries ``pair_lo[s * fp + k]:pair_hi[s * fp + k]``. Candidates are ranked
    by the proxy within each source; the first maximum wins (pairs in order,
    thresholds ascending). The results, numeric: score, slot, bin, missing
    direction, left statistics; categorical: score, slot, left statistics and
    the left set as a (node, code) mask. They start as no candidate (score -inf,
    :class:`fedtrees.algorithms.histogram.Found`), allocated by the caller: a
    compiled allocation of nine arrays cost a second of compiling on the first
    run (measured).

    One thread, with one set of scratch arrays; it releases the GIL, so callers
    scan disjoint chunks of nodes on threads of their own
    (:func:`fedtrees.algorithms.histogram.search`).
    """
    width = parent.shape[1]
    cum, trial, right = np.zeros(width), np.zeros(width), np.zeros(width)
    order = np.empty(CODES, dtype=np.int64)
    key = np.empty(CODES)
    for s in range(first, stop):
        _best_of_node(
            s, pair_lo, pair_hi, codes, stats, pair_feature, is_categorical,
            parent, min_leaf, criterion, lam, cum, trial, right, order, key,
            num_score, num_slot, num_bin, num_dir, num_left, cat_score, cat_slot,
            cat_left, cat_set,
        )  # fmt: skip


@kernel()
def _best_of_node(
    s: int, pair_lo: Any, pair_hi: Any, codes: Any, stats: Any, pair_feature: Any,
    is_categorical: Any, parent: Any, min_leaf: Any, criterion: int, lam: float,
    cum: Any, trial: Any, right: Any, order: Any, key: Any, num_score: Any,
    num_slot: Any, num_bin: Any, num_dir: Any, num_left: Any, cat_score: Any,
    cat_slot: Any, cat_left: Any, cat_set: Any,
) -> None:  # fmt: skip  # pragma: no cover - compiled
    """Scan node s's pairs; write its best candidates (see scan_nodes)."""
    fp, width = pair_feature.shape[1], parent.shape[1]
    n_parent = _size(parent[s], criterion)
    for k in range(fp):
        j = pair_feature[s, k]
        p = s * fp + k
        if j < 0:
            continue
        lo, hi = pair_lo[p], pair_hi[p]
        if is_categorical[j]:
            score, cut = _scan_categorical(
                codes, stats, lo, hi, parent[s], n_parent, min_leaf[s],
                criterion, lam, cum, right, order, key,
            )  # fmt: skip
            if score > cat_score[s]:
                cat_score[s], cat_slot[s] = score, k
                cat_set[s, :] = False
                cat_left[s, :] = 0.0
                for t in range(cut + 1):
                    e = lo + order[t]
                    cat_set[s, codes[e]] = True
                    for c in range(width):
                        cat_left[s, c] += stats[e, c]
        else:
            score, b, d = _scan_numeric(
                codes, stats, lo, hi, parent[s], n_parent, min_leaf[s],
                criterion, lam, cum, trial, right,
            )  # fmt: skip
            if score > num_score[s]:
                num_score[s], num_slot[s], num_bin[s], num_dir[s] = score, k, b, d
                num_left[s, :] = 0.0
                for e in range(lo, hi):
                    if codes[e] <= b or (codes[e] == MISSING and d == LEFT):
                        for c in range(width):
                            num_left[s, c] += stats[e, c]
