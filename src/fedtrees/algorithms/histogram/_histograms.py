"""Sparse histograms: what a client computes, the server sums, subtracts, searches.

Steps 3 and 4 of the engine. A set of histograms covers many (node, feature)
pairs in a fixed order; pair ``p`` holds ``counts[p]`` non-zero bins, whose
codes (``uint8``, ascending, the missing code 255 last) and statistics (one
row of width S each) follow the previous pair's. Only non-zero bins exist, so
sizes follow the rows of the nodes, never nodes x features x 256.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final

import numba
import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.histogram import _check_kernels as checks
from fedtrees.algorithms.histogram import _client_kernels as client
from fedtrees.algorithms.histogram import _pool_kernels as pooling
from fedtrees.algorithms.histogram import _server_kernels as server
from fedtrees.algorithms.histogram._rows import NodeRows
from fedtrees.exceptions import ValidationError
from fedtrees.federation import InvalidField

__all__ = [
    "Bins",
    "Histograms",
    "RowStats",
    "client_histograms",
    "pool",
    "subtract",
]

CODES: Final = 256
_KERNEL_STATS: Final = tuple(
    np.dtype(t) for t in (np.float64, np.uint32, np.uint16, np.uint8)
)  # the statistics dtypes the pooling and check kernels are declared for


@dataclass(frozen=True, eq=False)
class Histograms:
    """Sparse histograms of pairs in order (see the module docstring).

    Attributes
    ----------
    counts : int64 array of shape (n_pairs,)
    codes : uint8 array of shape (n_bins,)
    stats : float64 array of shape (n_bins, S)
    """

    counts: IntArray
    codes: npt.NDArray[np.uint8]
    stats: FloatArray

    def __post_init__(self) -> None:
        """Hold the kernels' dtypes, in C order (no copy when they already are).

        A reply may carry the same values in other integer or float dtypes (its
        fields allow them; the codes' range is checked before): counts become
        int64, codes uint8, and statistics float64 unless they are whole counts
        as small unsigned integers, which the kernels read as they come.
        """
        set_ = object.__setattr__  # a frozen dataclass
        set_(self, "counts", np.ascontiguousarray(self.counts, dtype=np.int64))
        set_(self, "codes", np.ascontiguousarray(self.codes, dtype=np.uint8))
        stats = (
            self.stats
            if self.stats.dtype in _KERNEL_STATS
            else self.stats.astype(np.float64)
        )
        set_(self, "stats", np.ascontiguousarray(stats))

    @classmethod
    def empty(cls, n_pairs: int, width: int) -> Histograms:
        """No bins in ``n_pairs`` pairs."""
        return cls(
            np.zeros(n_pairs, np.int64), np.zeros(0, np.uint8), np.zeros((0, width))
        )

    @property
    def ptr(self) -> IntArray:
        """Pair ``p``'s bins are ``ptr[p]:ptr[p + 1]``."""
        return np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)

    @property
    def n_pairs(self) -> int:
        """Number of pairs."""
        return int(self.counts.shape[0])

    def checked_sums(
        self, pair_feature: IntArray, feature_bins: IntArray
    ) -> FloatArray:
        """Check the bins against their pairs' features; return every pair's sum.

        Pair ``p`` is of feature ``pair_feature.ravel()[p]`` (-1: no pair). Its
        codes must rise strictly, each below the feature's ``feature_bins`` or
        the missing code; an absent pair holds no bins.

        Raises
        ------
        fedtrees.federation.InvalidField
            Naming ``bin_count`` or ``bin_code`` and what is wrong.
        """
        pairs = np.ascontiguousarray(pair_feature, dtype=np.int64).ravel()
        if (
            pairs.shape[0] != self.n_pairs
            or int(self.counts.sum()) != self.codes.shape[0]
        ):
            raise InvalidField("bin_count", "does not match the pairs and the bins")
        status, at, sums = checks.scan_bins(
            self.counts, pairs, np.ascontiguousarray(feature_bins, np.int64),
            self.codes, self.stats,
        )  # fmt: skip
        if status == checks.UNASKED_PAIR:
            raise InvalidField("bin_count", f"gives bins to pair {at}, not asked")
        if status == checks.OUTSIDE_GRID:
            raise InvalidField("bin_code", f"holds a code outside its grid (bin {at})")
        if status == checks.UNORDERED:
            raise InvalidField(
                "bin_code", f"must rise strictly in each pair (bin {at})"
            )
        out: FloatArray = sums
        return out

    def pair_sums(self) -> FloatArray:
        """Sum of every pair's bins, shape (n_pairs, S)."""
        out = np.zeros((self.n_pairs, self.stats.shape[1]))
        pair = np.repeat(np.arange(self.n_pairs), self.counts)
        np.add.at(out, pair, self.stats)
        return out


@dataclass(frozen=True, eq=False)
class Bins:
    """Histograms addressed by range: pair ``p`` owns bins ``lo[p]:hi[p]``.

    A view: several sets (pooled, derived) share their bins without copies.
    """

    codes: npt.NDArray[np.uint8]
    stats: FloatArray
    lo: IntArray
    hi: IntArray

    @classmethod
    def of(cls, h: Histograms) -> Bins:
        """Address a set of histograms by range."""
        ptr = h.ptr
        return cls(h.codes, h.stats, ptr[:-1], ptr[1:])

    def take(self, pairs: IntArray) -> Bins:
        """Return the same bins addressed for ``pairs`` (in that order)."""
        return Bins(self.codes, self.stats, self.lo[pairs], self.hi[pairs])

    def with_pairs(self, pairs: IntArray, other: Histograms) -> Bins:
        """Return these bins with ``pairs`` replaced by ``other``'s (in order)."""
        offset = self.codes.shape[0]
        ptr = other.ptr + offset
        lo, hi = self.lo.copy(), self.hi.copy()
        lo[pairs], hi[pairs] = ptr[:-1], ptr[1:]
        return Bins(
            np.concatenate([self.codes, other.codes]),
            np.concatenate([self.stats, other.stats]),
            lo,
            hi,
        )


def _trimmed(
    counts: IntArray, codes: npt.NDArray[np.uint8], stats: FloatArray
) -> Histograms:
    """Return a kernel's written prefix (copied, so its capacity is freed)."""
    n = int(counts.sum())
    return Histograms(counts, codes[:n].copy(), stats[:n].copy())


# -- what a row contributes ---------------------------------------------------------
@dataclass(frozen=True, eq=False)
class RowStats:
    """What each row adds to a bin, times its weight: ``values[i, :]``, (n, S)."""

    values: FloatArray

    @classmethod
    def classes(cls, labels: IntArray, n_classes: int) -> RowStats:
        """One-hot class vectors: bins hold (weighted) class counts."""
        values = np.zeros((np.shape(labels)[0], n_classes))
        values[np.arange(values.shape[0]), labels] = 1.0
        return cls(values)

    @classmethod
    def moments(cls, y: FloatArray) -> RowStats:
        """``(1, y, y²)``: bins hold the weight, Σw·y and Σw·y² (regression)."""
        target = np.asarray(y, dtype=np.float64)
        return cls(np.stack([np.ones_like(target), target, target * target], axis=1))

    @classmethod
    def vectors(cls, values: FloatArray) -> RowStats:
        """Any per-row vectors (e.g. gradient, hessian, count)."""
        return cls(np.ascontiguousarray(values, dtype=np.float64))

    @property
    def width(self) -> int:
        """Size S of a bin's statistics."""
        return int(self.values.shape[1])


# -- client ---------------------------------------------------------------------------
def client_histograms(
    rows: NodeRows,
    open_nodes: IntArray,
    pair_feature: IntArray,
    columns: npt.NDArray[np.uint8],
    weight: FloatArray,
    row_stats: RowStats,
) -> tuple[FloatArray, Histograms]:
    """Every open node's statistics, and the non-zero bins of its pairs.

    ``pair_feature[s, k]`` is the k-th feature of open node s (-1: none: the
    node's statistics only); ``columns`` the codes by feature, (F, n_rows)
    (:func:`bin_codes`, transposed). Returns ``(n_open, S)`` statistics and
    the histograms of the pairs in row-major order.

    Examples
    --------
    >>> rows = NodeRows.build(np.ones((1, 3)))
    >>> columns = np.array([[0, 2, 2]], dtype=np.uint8)
    >>> stats, h = client_histograms(rows, np.array([0]), np.array([[0]]), columns,
    ...                              np.ones((1, 3)),
    ...                              RowStats.classes(np.array([0, 1, 1]), 2))
    >>> stats.tolist(), h.counts.tolist(), h.codes.tolist(), h.stats.tolist()
    ([[1.0, 2.0]], [2], [0, 2], [[1.0, 0.0], [0.0, 2.0]])
    """
    nodes = np.ascontiguousarray(open_nodes, dtype=np.int64)
    pairs = np.ascontiguousarray(pair_feature, dtype=np.int64)
    if pairs.shape[0] != nodes.shape[0] or np.any(pairs >= columns.shape[0]):
        raise ValidationError("client_histograms: one feature row per open node.")
    capacity = np.minimum(rows.sizes(nodes), CODES) @ (pairs >= 0).sum(axis=1)
    totals, counts, out_codes, out_stats = client.node_histograms(
        rows.perm, rows.start, rows.stop, nodes, rows.open_tree(nodes), pairs,
        columns, weight, row_stats.values, int(capacity),
    )  # fmt: skip
    n = int(counts.sum())
    return totals, Histograms(counts, out_codes[:n], out_stats[:n])


# -- server ---------------------------------------------------------------------------
def pool(
    parts: Sequence[tuple[IntArray, Histograms]], n_pairs: int, width: int
) -> Histograms:
    """Sum the clients' histograms pair by pair (clients in the order given).

    ``parts[k] = (pairs_k, h_k)``: client k's local pair ``i`` is global pair
    ``pairs_k[i]``. Only non-zero bins are summed: whole counts exactly. Each
    reply is read in place, twice (:mod:`._pool_kernels`).

    Examples
    --------
    >>> a = Histograms(np.array([1]), np.array([3], np.uint8), np.array([[1.0]]))
    >>> b = Histograms(np.array([2]), np.array([1, 3], np.uint8),
    ...                np.array([[2.0], [5.0]]))
    >>> p = pool([(np.array([0]), a), (np.array([0]), b)], 1, 1)
    >>> p.codes.tolist(), p.stats.ravel().tolist()
    ([1, 3], [2.0, 6.0])
    """
    bits = np.zeros((n_pairs, 4), dtype=np.uint64)
    inputs = [(np.ascontiguousarray(p, np.int64), h) for p, h in parts]
    for pairs, h in inputs:
        pooling.mark_codes(bits, pairs, h.counts, h.codes)
    counts, below, codes = pooling.lay_out(bits)
    stats = np.zeros((codes.shape[0], width))
    blocks = _blocks(counts, stats.itemsize * width, len(inputs))
    bounds = [(pairs, h, np.searchsorted(pairs, blocks), h.ptr) for pairs, h in inputs]

    def add_blocks(first: int, stop: int) -> None:
        """Add every client's bins of blocks ``first:stop`` (disjoint slots)."""
        for b in range(first, stop):
            for pairs, h, at, ptr in bounds:
                pooling.add_stats(
                    stats, below, bits, pairs, h.counts, h.codes, h.stats,
                    int(at[b]), int(at[b + 1]), int(ptr[at[b]]),
                )  # fmt: skip

    _on_threads(add_blocks, blocks.shape[0] - 1)
    return Histograms(counts, codes, stats)


def _on_threads(work: Callable[[int, int], None], n: int) -> None:
    """Run ``work(first, stop)`` over ``range(n)`` in contiguous parts, one per thread.

    The compiled kernels release the GIL, so the parts run side by side; each
    writes its own slots, so the result does not depend on the threads.
    """
    threads = min(numba.get_num_threads(), n)
    if threads <= 1:
        work(0, n)
        return
    cuts = np.linspace(0, n, threads + 1).astype(np.int64)
    with ThreadPoolExecutor(threads, thread_name_prefix="fedtrees-pool") as pool:
        for done in [
            pool.submit(work, int(a), int(b)) for a, b in itertools.pairwise(cuts)
        ]:
            done.result()


_BLOCK_BYTES: Final = 1 << 21  # pooled statistics per block: about L2 size
_MOST_CALLS: Final = 1024  # per level, blocks x clients (a call costs ~20 us)


def _blocks(counts: IntArray, row_bytes: int, n_clients: int) -> IntArray:
    """Return the pair boundaries of the blocks the clients' bins are added by."""
    total = int(counts.sum()) * row_bytes
    n = max(1, min(total // _BLOCK_BYTES, _MOST_CALLS // max(n_clients, 1)))
    first = np.cumsum(counts) - counts  # each pair's first pooled bin
    end = first[-1] if first.size else 0
    cuts = np.searchsorted(first, np.linspace(0, end, n + 1)[1:-1])
    return np.unique(np.r_[0, cuts, counts.shape[0]]).astype(np.int64)


def subtract(parent: Bins, smaller: Bins, count_col: int) -> Histograms:
    """Derive the larger children's histograms: parent minus smaller child.

    Pair ``q`` of the result is ``parent``'s pair ``q`` minus ``smaller``'s
    pair ``q``. ``count_col``: the column holding a bin's weight (-1: the sum of
    the columns, class counts). Whole-number counts subtract exactly; a bin
    left with (almost) no weight is dropped.
    """
    capacity = int((parent.hi - parent.lo).sum())
    counts, codes, stats = server.subtract_bins(
        parent.lo, parent.hi, parent.codes, parent.stats, smaller.lo, smaller.hi,
        smaller.codes, smaller.stats, capacity, count_col, True,
    )  # fmt: skip
    return _trimmed(counts, codes, stats)
