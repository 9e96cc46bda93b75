"""The client kernel of ID3-style learners: (value, class) counts per open node.

A level's :class:`Layout` says which features every open node considers and where
each (node, feature) table sits in one flat array; :func:`value_class_counts`
fills all tables with one ``bincount``. The local learner (:func:`fit_id3`) and
every Federated-ID3 client run it; the server sums the arrays (docs/icdta.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from fedtrees._typing import BoolArray, FloatArray, IntArray

__all__ = ["Layout", "value_class_counts"]


@dataclass(frozen=True, eq=False)
class Layout:
    """Where each (open node, feature) table sits in a level's flat count array.

    ``allowed[s, f]``: open node s considers feature f. Pair (s, f)'s table is
    ``arity[f] × n_classes`` counts (value-major) starting at ``offsets[s, f]``.
    """

    open_nodes: IntArray
    allowed: BoolArray
    arity: IntArray
    n_classes: int

    @cached_property
    def offsets(self) -> IntArray:
        """Start of every pair's table (-1 where the pair is not considered)."""
        sizes = (self.allowed * (self.arity * self.n_classes)[None, :]).ravel()
        starts = (np.cumsum(sizes) - sizes).reshape(self.allowed.shape)
        out: IntArray = np.where(self.allowed, starts, -1).astype(np.int64)
        return out

    @property
    def size(self) -> int:
        """Length of the flat count array."""
        return int((self.allowed * (self.arity * self.n_classes)[None, :]).sum())

    def slots(self, nodes: IntArray, n_nodes: int) -> IntArray:
        """Open-node index of every row's node (-1: not an open node)."""
        lookup = np.full(n_nodes, -1, dtype=np.int64)
        lookup[self.open_nodes] = np.arange(self.open_nodes.shape[0])
        result: IntArray = lookup[nodes]
        return result

    def dense(self, flat: npt.ArrayLike) -> FloatArray:
        """Return the flat counts as ``(n_open, F, max arity, C)`` (zeros elsewhere)."""
        counts = np.asarray(flat, dtype=np.float64)
        s, f = self.allowed.shape
        a, c = int(self.arity.max(initial=1)), self.n_classes
        value = np.arange(a)[None, None, :, None]
        where = self.offsets[:, :, None, None] + value * c + np.arange(c)
        valid = self.allowed[:, :, None, None] & (
            value < self.arity[None, :, None, None]
        )
        out = np.zeros((s, f, a, c))
        out[np.broadcast_to(valid, out.shape)] = counts[
            where[np.broadcast_to(valid, where.shape)]
        ]
        return out


def value_class_counts(
    codes: IntArray,
    y: IntArray,
    slot: IntArray,
    layout: Layout,
    sample_weight: FloatArray | None = None,
) -> FloatArray:
    """Count rows per (value, class) for every pair of ``layout``, in one bincount.

    Parameters
    ----------
    codes : int array of shape (n_rows, F)
        Category (or bin) codes, ``0 <= codes[:, f] < arity[f]``.
    y : int array of shape (n_rows,)
        Class codes.
    slot : int array of shape (n_rows,)
        Open node of every row (-1: none).

    Returns
    -------
    float array of shape (layout.size,)
    """
    rows = np.flatnonzero(slot >= 0)
    start = layout.offsets[slot[rows]]  # (rows, F)
    cell = start + codes[rows] * layout.n_classes + y[rows, None]
    keep = start >= 0
    weights = (
        None
        if sample_weight is None
        else np.broadcast_to(sample_weight[rows, None], cell.shape)[keep]
    )
    counts = np.bincount(cell[keep], weights=weights, minlength=layout.size)
    return counts.astype(np.float64)
