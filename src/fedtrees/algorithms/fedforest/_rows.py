"""A client's rows kept partitioned by node: the index behind the fast kernels.

The node-scan kernels (``tests/algorithms/fedforest_reference.py``) scan all n
rows of every tree at every level, routing each one from its last node.
:class:`ClientRows` instead keeps, per tree, a permutation of the rows in which
every node owns a contiguous segment:

* ``perm[b]`` (int64, (B, n)) — rows of tree b; rows of weight 0 (absent from
  the tree's bootstrap) belong to no segment;
* ``start[g]``, ``stop[g]`` (int64, indexed by global node id) — the present
  rows of node g are ``perm[tree[g], start[g]:stop[g]]``, in increasing row
  order (roots hold all present rows; a split partitions its node's segment
  stably into its children's, so the order is kept);
* ``tree[g]`` — g's tree, -1 while no segment is known for g.

A split touches only the rows of the split node, and a closed leaf's rows are
never read again. Because a segment lists a node's rows in the order the old
kernels visit them, every method is bit-identical to its node-scan
counterpart on the same request state.

Typical use on a client, once per request::

    pending = rows.pending(feature != SPLIT_NONE, left, right)
    rows.split(X, is_cat, code, pending, feature, threshold, left, right, set_ptr,
               set_codes)
    stats, n_rows = rows.node_statistics(open_nodes, weight, codes, targets, cls, w)
"""

from __future__ import annotations

import numpy as np

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees.algorithms.fedforest import _rows_kernels as kernels
from fedtrees.algorithms.fedforest._kernels import SPLIT_NONE
from fedtrees.algorithms.histogram import NodeRows
from fedtrees.exceptions import ValidationError

__all__ = ["ClientRows", "padded_bins", "ragged_thresholds"]


class ClientRows(NodeRows):
    """Per-tree row permutations with one contiguous segment per node.

    The segments' bookkeeping (:meth:`build`, :meth:`pending`, the checks of a
    split, the trees of the open nodes) is the histogram engine's
    :class:`~fedtrees.algorithms.histogram.NodeRows`; this class adds the
    kernels of the sketch modes, which read the rows' values rather than codes.
    """

    def split(
        self,
        X: FloatArray,
        is_cat: BoolArray,
        client_code: int,
        split_nodes: IntArray,
        feature: IntArray,
        threshold: FloatArray,
        left: IntArray,
        right: IntArray,
        set_ptr: IntArray,
        set_codes: IntArray,
    ) -> None:
        """Partition the segments of ``split_nodes`` into their children's.

        Parameters
        ----------
        X, is_cat, client_code
            The client's (finite) matrix, categorical mask and client code.
        split_nodes : ndarray of int64
            Nodes split since the last call (any order; a child may be split
            in the same call as its parent).
        feature, threshold, left, right, set_ptr, set_codes
            The full global node table, as passed to ``_kernels.route``.
        """
        nodes = np.unique(np.asarray(split_nodes, dtype=np.int64))
        if np.any(feature[nodes] == SPLIT_NONE):
            raise ValidationError("ClientRows: split nodes do not extend the forest.")
        order, ranges = self.prepare_split(nodes, left[nodes], right[nodes])
        kernels.partition(
            self.perm,
            self.start,
            self.stop,
            nodes[order],
            ranges,
            X,
            is_cat,
            client_code,
            feature,
            threshold,
            left,
            right,
            set_ptr,
            set_codes,
        )
        self.done(nodes)

    def node_statistics(
        self,
        open_nodes: IntArray,
        weight: FloatArray,
        codes: IntArray,
        targets: FloatArray,
        classification: bool,
        width: int,
    ) -> tuple[FloatArray, IntArray]:
        """Statistics and present-row counts of the open nodes.

        Bit-identical to the node-scan ``node_statistics``.

        Returns
        -------
        stats : ndarray of float64, shape (n_open, width)
            Weighted class counts, or (Σw, Σw·y, Σw·y²) for regression.
        rows : ndarray of int64, shape (n_open,)
            Present rows of each open node.
        """
        stats, rows = kernels.node_statistics(
            self.perm,
            self.start,
            self.stop,
            open_nodes,
            self.open_tree(open_nodes),
            weight,
            codes,
            targets,
            classification,
            width,
        )
        return stats, rows

    def sketch_points(
        self,
        open_nodes: IntArray,
        pair_feature: IntArray,
        is_cat: BoolArray,
        pos: IntArray,
        sval: FloatArray,
        weight: FloatArray,
        rows_per_open: IntArray,
        q: int,
        out_ptr: IntArray,
        n_points_total: int,
    ) -> FloatArray:
        """Flat weighted type-1 quantile points of every numeric pair.

        Bit-identical to the node-scan ``sketch_points``: pair (s, k) with feature j
        numeric and rows in node s writes ``min(q, rows) + 1`` points at
        ``out_ptr[s * fp + k]``. ``weight`` may differ from the build weights
        (exact mode passes 0/1) but must be nonzero on the same rows.
        """
        tree = self.open_tree(open_nodes)
        sizes = self.stop[open_nodes] - self.start[open_nodes]
        if not np.array_equal(sizes, rows_per_open):
            raise ValidationError("ClientRows: rows_per_open does not match.")
        points: FloatArray = kernels.sketch_points(
            self.perm,
            self.start,
            self.stop,
            open_nodes,
            self.ranges(tree),
            pair_feature,
            is_cat,
            pos,
            sval,
            weight,
            q,
            out_ptr,
            n_points_total,
        )
        return points

    def category_statistics(
        self,
        open_nodes: IntArray,
        X: FloatArray,
        pair_feature: IntArray,
        is_cat: BoolArray,
        weight: FloatArray,
        codes: IntArray,
        targets: FloatArray,
        classification: bool,
        max_categories: int,
        width: int,
    ) -> FloatArray:
        """Per-category statistics, shape (n_open, fp, max_categories, width).

        Bit-identical to the node-scan ``category_statistics``; reads no row when no
        pair is categorical.
        """
        shape = (*pair_feature.shape, max_categories, width)
        if not np.any(is_cat[pair_feature[pair_feature >= 0]]):
            return np.zeros(shape)
        stats: FloatArray = kernels.category_statistics(
            self.perm,
            self.start,
            self.stop,
            open_nodes,
            self.open_tree(open_nodes),
            X,
            pair_feature,
            is_cat,
            weight,
            codes,
            targets,
            classification,
            max_categories,
            width,
        )
        return stats

    def evaluate_bins(
        self,
        open_nodes: IntArray,
        X: FloatArray,
        pair_feature: IntArray,
        is_cat: BoolArray,
        thr_ptr: IntArray,
        thr: FloatArray,
        weight: FloatArray,
        codes: IntArray,
        targets: FloatArray,
        classification: bool,
        width: int,
    ) -> FloatArray:
        """Per-bin statistics of every numeric pair for ragged candidates.

        Parameters
        ----------
        thr_ptr : ndarray of int64, shape (n_open * fp + 1,)
            Pair p = s * fp + k has the sorted candidates ``thr[thr_ptr[p]:
            thr_ptr[p + 1]]`` (give categorical and unused pairs none).
        thr : ndarray of float64
            All candidates, pair after pair.

        Returns
        -------
        ndarray of float64, shape (thr_ptr[-1] + n_open * fp, width)
            Pair p owns rows ``thr_ptr[p] + p`` to ``thr_ptr[p + 1] + p``
            inclusive: bin m holds the rows with m candidates below their value.
            Equal, pair by pair, to the node-scan ``evaluate_bins`` (see
            :func:`padded_bins`).
        """
        n_pairs = pair_feature.shape[0] * pair_feature.shape[1]
        if (
            thr_ptr.shape != (n_pairs + 1,)
            or thr_ptr[0] != 0
            or thr_ptr[-1] != thr.shape[0]
            or np.any(np.diff(thr_ptr) < 0)
        ):
            raise ValidationError("ClientRows: malformed ragged thresholds.")
        stats: FloatArray = kernels.evaluate_bins(
            self.perm,
            self.start,
            self.stop,
            open_nodes,
            self.open_tree(open_nodes),
            X,
            pair_feature,
            is_cat,
            thr_ptr,
            thr,
            weight,
            codes,
            targets,
            classification,
            width,
        )
        return stats


def ragged_thresholds(thresholds: FloatArray) -> tuple[IntArray, FloatArray]:
    """Turn today's NaN-padded (n_open, fp, n_cand) candidates into ragged form.

    Returns
    -------
    thr_ptr : ndarray of int64, shape (n_open * fp + 1,)
    thr : ndarray of float64
        The non-NaN candidates (a prefix of each pair's row), pair after pair.
    """
    flat = thresholds.reshape(-1, thresholds.shape[-1])
    valid = ~np.isnan(flat)
    counts = valid.sum(axis=1)
    thr_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return thr_ptr, np.ascontiguousarray(flat[valid], dtype=np.float64)


def padded_bins(
    bins: FloatArray, thr_ptr: IntArray, shape: tuple[int, int, int]
) -> FloatArray:
    """Lay ragged bins out as the node-scan ``evaluate_bins`` does, zero-padded.

    Parameters
    ----------
    bins : ndarray of float64, shape (total_bins, width)
        Output of :meth:`ClientRows.evaluate_bins`.
    thr_ptr : ndarray of int64
        Its candidate offsets.
    shape : (n_open, fp, n_cand)
        The padded candidates' shape.

    Returns
    -------
    ndarray of float64, shape (n_open, fp, n_cand + 1, width)
    """
    n_open, fp, n_cand = shape
    out = np.zeros((n_open * fp, n_cand + 1, bins.shape[1]))
    pair = np.repeat(np.arange(n_open * fp), np.diff(thr_ptr) + 1)
    first = thr_ptr[:-1] + np.arange(n_open * fp)
    out[pair, np.arange(bins.shape[0]) - first[pair]] = bins
    return out.reshape(n_open, fp, n_cand + 1, bins.shape[1])
