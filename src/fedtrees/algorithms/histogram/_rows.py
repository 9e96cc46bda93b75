"""A client's rows kept partitioned by node: step 2 of the engine.

Per tree, a permutation of the rows in which every node owns a contiguous
segment:

* ``perm[b]`` (int64, (B, n)): the rows of tree b; rows of weight 0 (absent
  from the tree's bootstrap or sample) belong to no segment;
* ``start[g]``, ``stop[g]`` (indexed by global node id): the present rows of
  node g are ``perm[tree[g], start[g]:stop[g]]``, in increasing row order (a
  split partitions its node's segment stably into its children's);
* ``tree[g]``: g's tree, -1 while no segment is known for g.

A split touches only the rows of the split node; a closed leaf's rows are
never read again. Segments list a node's rows in increasing row order, so every
sum over them is accumulated in the same order whatever happened before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self, TypeVar

import numpy as np
import numpy.typing as npt

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees.algorithms.histogram._client_kernels import partition_codes
from fedtrees.exceptions import ValidationError

_T = TypeVar("_T", bound=np.generic)

__all__ = ["CodeSplits", "NodeRows", "partition"]

NUMERIC, CATEGORICAL, CLIENT = 1, 2, 3


@dataclass
class NodeRows:
    """Per-tree row permutations with one contiguous segment per node.

    Attributes
    ----------
    perm : int64 array of shape (B, n)
    start, stop : int64 arrays of shape (n_nodes,)
    tree : int64 array of shape (n_nodes,)
        Tree of each node with a segment; -1 for ids not reached yet.
    partitioned : bool array of shape (n_nodes,)
        Whether the node's segment was already split into its children's.
    """

    perm: IntArray
    start: IntArray
    stop: IntArray
    tree: IntArray
    partitioned: BoolArray

    @classmethod
    def build(cls, weight: FloatArray) -> Self:
        """Put every present row (``weight[b, i] != 0``) of tree b in root b.

        Examples
        --------
        >>> rows = NodeRows.build(np.array([[1.0, 0.0, 2.0]]))
        >>> rows.perm.tolist(), rows.stop.tolist()
        ([[0, 2, 1]], [2])
        """
        present = weight != 0.0
        trees, n = weight.shape
        n_present = present.sum(axis=1).astype(np.int64)
        # Row-major nonzero lists tree b's rows in increasing order: the present
        # ones first, then the absent ones, each at its rank within its tree.
        perm = np.empty((trees, n), dtype=np.int64)
        for rows_of, offset in (
            (present, np.zeros(trees, np.int64)),
            (~present, n_present),
        ):
            b, i = np.nonzero(rows_of)
            first = np.searchsorted(b, np.arange(trees))  # each tree's first entry
            perm[b, np.arange(b.shape[0]) - first[b] + offset[b]] = i
        return cls(
            perm,
            np.zeros(trees, dtype=np.int64),
            n_present,
            np.arange(trees, dtype=np.int64),
            np.zeros(trees, dtype=bool),
        )

    @property
    def n_trees(self) -> int:
        """Number of trees B."""
        return int(self.perm.shape[0])

    def sizes(self, nodes: IntArray) -> IntArray:
        """Present rows of each node."""
        out: IntArray = self.stop[nodes] - self.start[nodes]
        return out

    def pending(self, split: BoolArray, left: IntArray, right: IntArray) -> IntArray:
        """Split nodes whose segments are not partitioned yet, in increasing id order.

        ``split[g]``: whether node g of the forest is split. Includes splits below
        them decided in the same batch, so a partition catches up from any
        earlier state.
        """
        known = min(self.tree.shape[0], split.shape[0])  # the node arrays have room
        frontier = np.flatnonzero(
            (self.tree[:known] >= 0) & ~self.partitioned[:known] & split[:known]
        )
        found = [frontier]
        while frontier.size:
            children = np.concatenate([left[frontier], right[frontier]])
            frontier = children[split[children]]
            found.append(frontier)
        return np.sort(np.concatenate(found)).astype(np.int64)

    def prepare_split(
        self, nodes: IntArray, left: IntArray, right: IntArray
    ) -> tuple[IntArray, IntArray]:
        """Check a batch of splits; give the children their parent's tree.

        ``nodes`` (increasing ids) split into ``left[i]``, ``right[i]``. Returns
        the positions of the nodes sorted by tree (then id) and each tree's
        slice of them, the inputs of a partition kernel; mark the nodes
        partitioned afterwards (:meth:`done`).

        Raises
        ------
        ValidationError
            Splits that would re-partition or orphan a segment.
        """
        if nodes.size == 0:
            return np.zeros(0, np.int64), self.ranges(np.zeros(0, np.int64))
        if left.shape != nodes.shape or right.shape != nodes.shape:
            raise ValidationError("Node rows: one left and right child per split.")
        self._grow(int(max(nodes.max(), left.max(), right.max())) + 1)
        self._check_split(nodes, left, right)
        todo = np.arange(nodes.shape[0])
        while todo.size:  # a batch may split a node and then its children
            known = self.tree[nodes[todo]] >= 0
            i = todo[known]
            self.tree[left[i]] = self.tree[right[i]] = self.tree[nodes[i]]
            todo = todo[~known]
        order = np.argsort(self.tree[nodes], kind="stable")
        return order.astype(np.int64), self.ranges(self.tree[nodes[order]])

    def done(self, nodes: IntArray) -> None:
        """Mark ``nodes`` partitioned."""
        self.partitioned[nodes] = True

    def open_tree(self, open_nodes: IntArray) -> IntArray:
        """Trees of unsplit nodes with segments (sorted by tree), or raise."""
        tree = self.tree[open_nodes]
        if np.any(tree < 0) or np.any(self.partitioned[open_nodes]):
            raise ValidationError("Node rows: an open node has no segment.")
        if np.any(np.diff(tree) < 0):
            raise ValidationError("Node rows: open nodes must be sorted by tree.")
        return tree

    def ranges(self, tree_of: IntArray) -> IntArray:
        """(B, 2) slices of a tree-sorted node list, one per tree."""
        trees = np.arange(self.n_trees)
        lo = np.searchsorted(tree_of, trees, side="left")
        hi = np.searchsorted(tree_of, trees, side="right")
        return np.stack([lo, hi], axis=1).astype(np.int64)

    def _grow(self, n_nodes: int) -> None:
        """Make room for ``n_nodes`` ids (new ids have no segment).

        The capacity at least doubles, so the copies add up to about the final
        size (measured: growing fourfold allocated more than it saved with many
        clients, each holding its own arrays).
        """
        old = self.tree.shape[0]
        if n_nodes <= old:
            return
        size = max(n_nodes, 2 * old)
        self.start = _extended(self.start, size, 0)
        self.stop = _extended(self.stop, size, 0)
        self.tree = _extended(self.tree, size, -1)
        self.partitioned = _extended(self.partitioned, size, False)

    def _check_split(self, nodes: IntArray, left: IntArray, right: IntArray) -> None:
        children = np.sort(np.concatenate([left, right]))
        if (
            np.any(nodes[1:] <= nodes[:-1])
            or np.any(nodes < 0)
            or np.any(nodes >= self.tree.shape[0])
            or np.any(children < 0)
        ):
            raise ValidationError("Node rows: split nodes do not extend the forest.")
        unknown = nodes[self.tree[nodes] < 0]  # must be split nodes' children
        if (
            np.any(self.partitioned[nodes])
            or not np.all(np.isin(unknown, children))
            or np.any(self.tree[children] >= 0)
            or np.any(children[1:] == children[:-1])
        ):
            raise ValidationError("Node rows: split nodes do not extend the forest.")


def _extended(values: npt.NDArray[_T], size: int, fill: object) -> npt.NDArray[_T]:
    """Return ``values`` followed by ``fill`` up to ``size`` entries."""
    out = np.empty(size, dtype=values.dtype)
    out[: values.shape[0]] = values
    out[values.shape[0] :] = fill
    return out


@dataclass(frozen=True, eq=False)
class CodeSplits:
    """How the splits still to partition route codes: split ``i`` is node ``nodes[i]``.

    ``nodes``: increasing ids; every array is aligned with them, so the work
    follows the new splits, not the forest's size. ``kind[i]``: 1 numeric
    (codes ``<= bin_limit[i]`` go left, the missing code by ``missing_left[i]``),
    2 categorical (codes marked in ``left_sets[set_index[i]]`` go left, the
    missing code 255 included), 3 the client indicator (every row goes left iff
    ``client_left[i]``); the children are ``left[i]`` and ``right[i]``.
    """

    nodes: IntArray
    kind: npt.NDArray[np.int8]
    feature: IntArray
    bin_limit: IntArray
    missing_left: BoolArray
    set_index: IntArray
    left_sets: npt.NDArray[np.bool_]
    client_left: BoolArray
    left: IntArray
    right: IntArray


def partition(
    rows: NodeRows, columns: npt.NDArray[np.uint8], splits: CodeSplits
) -> None:
    """Partition the rows of ``splits``' nodes (not partitioned yet), in place.

    ``columns``: the rows' codes by feature, (F, n_rows). The nodes come from
    :meth:`NodeRows.pending`, which catches up from any earlier state.
    """
    if splits.nodes.size == 0:
        return
    order, ranges = rows.prepare_split(splits.nodes, splits.left, splits.right)
    partition_codes(
        rows.perm, rows.start, rows.stop, splits.nodes, order, ranges, columns,
        splits.feature, splits.kind, splits.bin_limit, splits.missing_left,
        splits.set_index, splits.left_sets, splits.client_left, splits.left,
        splits.right,
    )  # fmt: skip
    rows.done(splits.nodes)
