"""Compiled pooling: the clients' sparse bins summed pair by pair, client by client.

Why this shape: at a deep level the clients send millions of bins, so the
server must not gather them into one array (measured: concatenating them and
their float statistics cost more than the sums) nor sort them. Each client's
reply is read twice, in order: once to mark which codes every pair holds (a
set of 256 bits per pair, :func:`mark_codes`), and once, after the pooled
layout is known (:func:`lay_out`), to add its statistics at their slots
(:func:`add_stats`). The second pass goes by blocks of pairs, every client
in turn within a block, so the block's pooled bins stay in cache; within a
bin the clients always add in the same order, whatever the reply dtypes
(whole counts arrive as small unsigned integers).

numba does not check bounds: the callers validate every array first.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedtrees._compiling import f64, i64, kernel, ro, rw, u8, u16, u32, u64

__all__ = ["add_stats", "lay_out", "mark_codes"]

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_ONE = np.uint64(1)


@kernel()
def _popcount(x: Any) -> Any:  # pragma: no cover - compiled
    """Set bits of a uint64 (the classic SWAR count)."""
    x = x - ((x >> _ONE) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return (x * _H01) >> np.uint64(56)


@kernel((rw(u64, 2), ro(i64), ro(i64), ro(u8)))
def mark_codes(bits: Any, pairs: Any, counts: Any, codes: Any) -> None:
    """Mark every code of a client's pairs in ``bits`` (n_pairs, 4) uint64.

    The client's pair ``i`` is the level's pair ``pairs[i]`` and holds the next
    ``counts[i]`` codes.
    """  # pragma: no cover - compiled
    e = 0
    for i in range(counts.shape[0]):
        p = pairs[i]
        for _ in range(counts[i]):
            c = np.uint64(codes[e])
            bits[p, c >> np.uint64(6)] |= _ONE << (c & np.uint64(63))
            e += 1


@kernel((ro(u64, 2),))
def lay_out(bits: Any) -> tuple[Any, Any, Any]:  # pragma: no cover - compiled
    """Return the pooled layout: bins per pair, each word's first slot, codes.

    Pair ``p``'s bins are its marked codes in ascending order; code ``c`` sits
    at slot ``below[p, c >> 6] + (set bits of word c >> 6 below c)``.
    """
    n_pairs = bits.shape[0]
    counts = np.zeros(n_pairs, dtype=np.int64)
    below = np.zeros((n_pairs, 4), dtype=np.int64)
    total = np.int64(0)
    for p in range(n_pairs):
        start = total
        for w in range(4):
            below[p, w] = total
            total += np.int64(_popcount(bits[p, w]))
        counts[p] = total - start
    codes = np.empty(total, dtype=np.uint8)
    at = 0
    for p in range(n_pairs):
        for w in range(4):
            word = bits[p, w]
            while word:  # set bits, lowest first
                low = word & (~word + _ONE)
                codes[at] = w * 64 + np.int64(_popcount(low - _ONE))
                at += 1
                word ^= low
    return counts, below, codes


@kernel(
    *(
        (rw(f64, 2), ro(i64, 2), ro(u64, 2), ro(i64), ro(i64), ro(u8), ro(stat, 2), i64,
         i64, i64)
        for stat in (f64, u32, u16, u8)  # whole counts arrive as small unsigned ints
    )
)  # fmt: skip
def add_stats(
    out: Any,
    below: Any,
    bits: Any,
    pairs: Any,
    counts: Any,
    codes: Any,
    stats: Any,
    first: int,
    stop: int,
    entry: int,
) -> None:  # pragma: no cover - compiled
    """Add a client's pairs ``first:stop`` at their pooled slots in ``out``.

    The client's bins of those pairs start at its bin ``entry``.
    """
    e = entry
    width = out.shape[1]
    for i in range(first, stop):
        p = pairs[i]
        for _ in range(counts[i]):
            c = np.uint64(codes[e])
            w = c >> np.uint64(6)
            mask = (_ONE << (c & np.uint64(63))) - _ONE
            slot = below[p, w] + np.int64(_popcount(bits[p, w] & mask))
            for s in range(width):
                out[slot, s] += stats[e, s]
            e += 1
