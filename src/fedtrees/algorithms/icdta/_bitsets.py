"""Bitsets over one client tree's rules: the compatibility search of ICDTA4FL.

The Cartesian product of step 4 (docs/icdta.md) pairs the rules ``a`` so far
(up to ``max_rules`` of them) with the rules ``b`` of one client tree. For every
feature that ``b`` constrains, a table holds, for each condition an ``a`` rule can
have there, the packed words (64 rules of ``b`` per uint64) of the ``b`` rules it
is compatible with:

- ID3: one row per code of ``b`` (its rules with that code or -1), one for an
  ``a`` rule without a condition (all rules) and one for a code ``b`` never
  uses (the rules with -1); ``a``'s code picks the row.
- CART: ``low_a < high_b`` holds for a suffix of ``b``'s distinct highs in sorted
  order and ``low_b < high_a`` for a prefix of its distinct lows, so row ``k``
  of the first table holds the rules whose high has rank ``>= k`` and
  ``searchsorted`` of ``low_a`` picks the row (likewise for the lows with
  ``high_a``). The rows are built in ``b``'s own rule order, so the AND of the
  two tables needs no mapping back.

The compatible rules of an ``a`` rule are the AND of its rows over the features,
O(F × len(b) / 64) word operations instead of O(F × len(b)) comparisons, and a
popcount of the words counts them. Tables cover ``b`` in slices of
``SLICE_RULES`` rules, so their memory is O(len(b) × SLICE_RULES / 64) words
per feature at worst (one tree's rules hold few distinct thresholds), whatever
``len(b)`` is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees.algorithms.icdta._ruleset import RuleSet

__all__ = [
    "SLICE_RULES",
    "Words",
    "bit_counts",
    "block_words",
    "n_words",
    "pack",
    "popcount",
    "set_bits",
    "slices",
    "take_rows",
]

Words: TypeAlias = npt.NDArray[np.uint64]
SLICE_RULES = 2048  # rules of b per set of tables, a multiple of 64 (tests shrink it)
_WORD: Final = np.dtype("<u8")  # little-endian: bit k of word w is rule 64 w + k
HAS_BITWISE_COUNT = hasattr(np, "bitwise_count")  # numpy >= 2 (tests switch it)
_BYTE_COUNTS: Final = np.array([bin(i).count("1") for i in range(256)], np.uint8)


def popcount(words: Words) -> int:
    """Return the number of set bits of ``words``."""
    return int(bit_counts(words).sum(dtype=np.int64))


def bit_counts(words: Words) -> npt.NDArray[np.uint8]:
    """Return the set bits of each word (a byte table before numpy 2)."""
    counts: npt.NDArray[np.uint8]
    if HAS_BITWISE_COUNT:
        counts = np.bitwise_count(words)
    else:
        per_byte = _BYTE_COUNTS[words.view(np.uint8)]
        counts = per_byte.reshape(*words.shape, 8).sum(axis=-1, dtype=np.uint8)
    return counts


def set_bits(words: Words) -> tuple[IntArray, IntArray]:
    """Return (row, bit) of every set bit of ``words``, row-major then by bit.

    Each round peels the lowest set bit of every non-zero word (``w & -w``, a
    power of two whose float exponent is its index) into the word's next output
    slot: O(words + set bits) work in at most 64 rounds.
    """
    row, word = np.nonzero(words)
    left = words[row, word]
    counts = bit_counts(left).astype(np.int64)
    slot = np.cumsum(counts) - counts  # where each word's lowest bit goes
    base = 64 * word
    rows = np.empty(int(counts.sum()), dtype=np.int64)
    bits = np.empty_like(rows)
    while left.size:
        lowest = left & (~left + np.uint64(1))
        rows[slot] = row
        bits[slot] = base + np.frexp(lowest.astype(np.float64))[1] - 1
        left ^= lowest
        keep = left != 0
        left, row, base, slot = left[keep], row[keep], base[keep], slot[keep] + 1
    return rows, bits


# -- bit tables of b -------------------------------------------------------------------
@dataclass(frozen=True)
class _Table:
    """One feature's test of ``b``'s rules against a column of ``a``.

    An ``a`` rule whose value in ``column`` is ``x`` is compatible with the rules
    of the slice of ``b`` packed in ``words[searchsorted(keys, x, side)]``.
    """

    column: Literal["values", "low", "high"]  # the array of a that picks the row
    feature: int
    keys: npt.NDArray[Any]  # sorted boundaries: codes (ID3) or bounds (CART) of b
    side: Literal["left", "right"]
    words: Words  # shape (len(keys) + 1, words of the slice)

    def lookup(self, a: RuleSet, rows: slice) -> IntArray:
        """Return the table row of each rule ``a[rows]``."""
        x: npt.NDArray[Any] = getattr(a, self.column)[rows, self.feature]
        return np.searchsorted(self.keys, x, side=self.side)


@dataclass(frozen=True)
class _Slice:
    """The tables of ``b[64 × words.start :]``, up to ``SLICE_RULES`` rules."""

    words: slice  # its columns in a block's word matrix
    full: Words  # shape (words of the slice,): all of its rules
    tables: tuple[_Table, ...]  # one per test that some of its rules impose


def slices(b: RuleSet) -> list[_Slice]:
    """Return the bit tables of ``b``, slice by slice of its rules."""
    slices = []
    for j in range(0, b.n_rules, SLICE_RULES):
        part = slice(j, min(j + SLICE_RULES, b.n_rules))
        full = pack(np.ones((1, part.stop - j), dtype=bool))[0]
        tables = [_tables(b, part, f) for f in range(b.n_features)]
        kept = tuple(t for pair in tables for t in pair if t is not None)
        slices.append(_Slice(slice(j // 64, j // 64 + full.size), full, kept))
    return slices


def _tables(b: RuleSet, part: slice, f: int) -> tuple[_Table | None, ...]:
    """Return the tables of feature ``f`` for the rules ``b[part]``."""
    if b.base == "id3":
        return (_code_table(b.values[part, f], f),)
    # (la, ha] and (lb, hb] intersect iff la < hb and lb < ha (both non-empty).
    above_low_a = _bound_table(b.high[part, f], f, "low")
    below_high_a = _bound_table(b.low[part, f], f, "high")
    return above_low_a, below_high_a


def _code_table(codes: IntArray, f: int) -> _Table | None:
    """Return the ID3 table of one feature (None if ``b`` leaves it free).

    ``a``'s code -1 picks row 0 (all rules), a code ``c`` that ``b`` uses a row of
    the rules with ``c`` or -1, any other code a row of the rules with -1. The
    keys ``[0, c0, c0 + 1, c1, c1 + 1, ...]`` (``side="right"``) put -1 in
    row 0, ``c_i`` in row ``2 i + 2`` and the codes between in the odd rows.
    """
    free = codes < 0
    if free.all():
        return None
    used = np.unique(codes[~free])
    keys = np.concatenate([[0], np.stack([used, used + 1], axis=1).ravel()])
    rows = np.repeat((codes == used[:, None]) | free, 2, axis=0)
    rows[1::2] = free
    mask = np.vstack([np.ones_like(free), free, rows])
    return _Table("values", f, keys, "right", pack(mask))


def _bound_table(
    bounds: FloatArray, f: int, column: Literal["low", "high"]
) -> _Table | None:
    """Return a CART table of one side of one feature (None if unbounded).

    Row ``k`` packs the rules whose bound has rank ``>= k`` among the distinct
    highs (looked up by ``low_a``: ``low_a < high_b``) or ``< k`` among the
    distinct lows (looked up by ``high_a``: ``low_b < high_a``).
    """
    if np.isinf(bounds).all():  # highs all +inf or lows all -inf: no test
        return None
    keys, rank = np.unique(bounds, return_inverse=True)
    k = np.arange(keys.size + 1)[:, None]
    if column == "low":
        return _Table("low", f, keys, "right", pack(rank >= k))
    return _Table("high", f, keys, "left", pack(rank < k))


def block_words(a: RuleSet, rows: slice, slices: list[_Slice], n_words: int) -> Words:
    """Return the packed compatible rules of ``b`` for each rule ``a[rows]``.

    Shape (len(a[rows]), n_words); the padding bits past len(b) are 0.
    """
    words = np.empty((rows.stop - rows.start, n_words), dtype=_WORD)
    for piece in slices:
        part = words[:, piece.words]
        part[...] = piece.full
        for table in piece.tables:
            part &= take_rows(table.words, table.lookup(a, rows))
    return words


def pack(mask: BoolArray) -> Words:
    """Pack the rows of a (k, n) boolean matrix into (k, ceil(n / 64)) words."""
    padded = np.zeros((mask.shape[0], 64 * n_words(mask.shape[1])), dtype=bool)
    padded[:, : mask.shape[1]] = mask
    packed = np.packbits(padded, axis=1, bitorder="little")
    return packed.view(_WORD)


def n_words(n_rules: int) -> int:
    return -(-n_rules // 64)


def take_rows(array: npt.NDArray[Any], index: IntArray) -> npt.NDArray[Any]:
    # np.take is several times faster than fancy indexing on short rows.
    return np.take(array, index, axis=0)
