"""One table, one tree: a binned CART grown by the engine, with no federation.

The engine's steps on rows the caller holds itself (the synthetic-data server's
own rows, docs/synthetic.md): no message, no wire, no client.

1. **Grid** (:func:`sketch_columns`, :func:`agree_grid` with the one table as
   its only summary): a column with at most ``max_bins`` distinct values gets
   an edge midway between every two of them (an exact grid: scikit-learn's
   thresholds); a longer one at most ``max_bins - 1`` edges at its (weighted)
   rows' type-1 quantiles ``l/max_bins``.
2. **Codes** (:func:`bin_codes`) and the rows partitioned by node
   (:class:`NodeRows`, :func:`partition`).
3. **One pass per level**: every open node's histograms of every feature
   (:func:`client_histograms`); where both children of a split are open, the
   larger one's come from its parent's minus its sibling's (**histogram
   subtraction**, :func:`plan_level`, :func:`derive_level`).
4. **Split search** (:func:`search`) with scikit-learn's impurities: the best
   threshold of every open node at once. The split sends the node's codes up
   to a bin left; its threshold lies midway between the largest value the left
   side may hold and the least the right side may (:class:`_BinBounds`): on
   an exact column, midway between the node's two values (scikit-learn's
   rule); on a quantile column, the grid edge between two adjacent bins.

Stopping follows scikit-learn's ``DecisionTreeClassifier``: a node is a leaf at
``max_depth``, below ``min_samples_split`` or ``2 * min_samples_leaf`` rows,
when pure (impurity at most machine epsilon), or without an admissible split
(both children at least ``min_samples_leaf`` rows); an admissible split is made
even with no improvement. With an exact grid on every column the tree is
scikit-learn's (up to its random choice between features of equal gain).

**Decision** (weighted rows): the row limits bound the *weighted* rows of a
node (``sample_weight``, e.g. class weights), as FedForest's do
(docs/fedforest.md); scikit-learn counts unweighted rows. Equal with unit
weights.

The cost is rows x features per level (about halved by subtraction), against
scikit-learn's sort of every column at every node (docs/synthetic.md: the
global tree of 361,400 rows x 104 columns, measured both ways).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import invalid
from fedtrees.algorithms.histogram._grid import (
    MAX_BINS,
    Grid,
    GridSketch,
    agree_grid,
    bin_codes,
    sketch_columns,
)
from fedtrees.algorithms.histogram._histograms import (
    Bins,
    RowStats,
    client_histograms,
)
from fedtrees.algorithms.histogram._level import (
    Kept,
    derive_level,
    keep_split,
    plan_level,
)
from fedtrees.algorithms.histogram._rows import CodeSplits, NodeRows, partition
from fedtrees.algorithms.histogram._search import search
from fedtrees.stats import impurity, midpoint_candidates
from fedtrees.tree import Missing, NodeStats, Tree, TreeBuilder

__all__ = ["fit_binned_cart"]

EPSILON: Final = float(np.finfo(np.float64).eps)
"""scikit-learn's purity threshold: a node at most this impure is a leaf."""
_NUMERIC: Final = 1  # CodeSplits.kind of a numeric split


def fit_binned_cart(
    X: FloatArray,
    y: IntArray,
    *,
    n_classes: int,
    max_depth: int | None,
    criterion: Literal["gini", "entropy"] = "entropy",
    min_samples_split: int = 2,
    min_samples_leaf: int = 1,
    sample_weight: FloatArray | None = None,
    max_bins: int = MAX_BINS,
) -> Tree:
    """Fit one classification tree on binned ``X``; thresholds in ``X``'s values.

    Parameters
    ----------
    X : array of shape (n_rows, n_features)
        Finite features, split as numbers.
    y : int array of shape (n_rows,)
        Label codes in ``[0, n_classes)``; value columns follow them.
    n_classes : int
    max_depth : int or None
        None: grow until no node may split.
    criterion : {"gini", "entropy"}
    min_samples_split, min_samples_leaf : int
        In weighted rows (module docstring).
    sample_weight : array of shape (n_rows,), optional
        Non-negative; rows of weight 0 take no part.
    max_bins : int in [2, 255]
        Most bins per column: at most ``max_bins - 1`` thresholds.

    Returns
    -------
    Tree
        Numeric splits ``x_f <= t`` (``t`` a grid edge), ``classes`` the codes
        ``0..n_classes-1``; leaves hold class distributions and weighted counts.

    Raises
    ------
    ValidationError
        Naming ``X``: not finite.

    Examples
    --------
    >>> tree = fit_binned_cart(np.arange(4.0)[:, None], np.array([0, 0, 2, 2]),
    ...                        n_classes=3, max_depth=2)
    >>> tree.classes.tolist(), float(tree.threshold[0])
    ([0, 1, 2], 1.5)
    """
    if not np.all(np.isfinite(X)):
        raise invalid("X", "fit_binned_cart", "finite values", "NaN or infinity")
    n, n_features = X.shape
    numeric = np.zeros(n_features, dtype=bool)
    sketch = sketch_columns(X, numeric, max_bins, sample_weight)
    grid = agree_grid([sketch], numeric, np.zeros(n_features, np.int64), max_bins)
    bounds = _BinBounds.of(grid, sketch)
    columns = np.ascontiguousarray(bin_codes(X, grid).T)  # (F, n): read by column
    weight = np.ones(n) if sample_weight is None else np.asarray(sample_weight, float)
    growth = _Growth(
        n_classes, n_features, max_depth, criterion, min_samples_split, min_samples_leaf
    )
    rows = NodeRows.build(weight[None, :])
    row_stats = RowStats.classes(np.asarray(y, np.int64), n_classes)
    kept = Kept.none(n_classes)
    open_nodes = np.zeros(1, np.int64)
    while open_nodes.size:
        pairs = np.tile(np.arange(n_features, dtype=np.int64), (open_nodes.size, 1))
        plan = plan_level(
            open_nodes,
            pairs,
            growth.parent[open_nodes],
            growth.weight(open_nodes),
            kept,
        )
        totals, asked = client_histograms(
            rows, open_nodes, plan.pairs, columns, weight[None, :], row_stats
        )
        growth.stats[open_nodes] = totals
        bins = derive_level(asked, plan, kept, count_col=-1)
        todo = np.flatnonzero(growth.splittable(open_nodes))
        nodes = open_nodes[todo]
        view = bins.take((todo[:, None] * n_features + np.arange(n_features)).ravel())
        found = search(
            view,
            pairs[todo],
            numeric,
            growth.stats[nodes],
            np.full(todo.size, float(min_samples_leaf)),
            criterion,
        )
        split = np.flatnonzero(np.isfinite(found.num_score))
        feature = pairs[todo[split], found.num_slot[split]]
        bin_limit = found.num_bin[split]
        pair = split * n_features + found.num_slot[split]
        left, right = growth.split(
            nodes[split],
            feature,
            bounds.thresholds(view, pair, feature, bin_limit),
            found.num_left[split],
        )
        partition(
            rows,
            columns,
            _numeric_splits(nodes[split], feature, bin_limit, left, right),
        )
        kept = keep_split(bins, nodes[split], todo[split], n_features)
        children = np.concatenate([left, right])
        open_nodes = np.sort(children[growth.splittable(children)])
    return growth.tree()


def _numeric_splits(
    nodes: IntArray,
    feature: IntArray,
    bin_limit: IntArray,
    left: IntArray,
    right: IntArray,
) -> CodeSplits:
    """Numeric splits for :func:`partition`: codes ``<=`` the bin go left."""
    m = nodes.shape[0]
    return CodeSplits(
        nodes=nodes,
        kind=np.full(m, _NUMERIC, np.int8),
        feature=feature,
        bin_limit=bin_limit,
        missing_left=np.zeros(m, bool),  # finite X: no missing code
        set_index=np.full(m, -1, np.int64),
        left_sets=np.zeros((0, 256), np.bool_),
        client_left=np.zeros(m, bool),
        left=left,
        right=right,
    )


@dataclass(frozen=True)
class _BinBounds:
    """The least and largest value each bin of each feature may hold.

    A bin of an exact column holds one value (the sketch's); a bin of a
    quantile column lies between its grid edges.
    """

    low: list[FloatArray]
    high: list[FloatArray]

    @classmethod
    def of(cls, grid: Grid, sketch: GridSketch) -> _BinBounds:
        """Bounds from the grid and the one table's summary it was cut from."""
        low, high = [], []
        for j in range(grid.n_features):
            if sketch.complete[j]:  # one summary: complete iff exact
                values = sketch.points[j][~np.isnan(sketch.points[j])]
                low.append(values)
                high.append(values)
            else:
                edges = grid.feature_edges(j)
                low.append(np.r_[-np.inf, edges])
                high.append(np.r_[edges, np.inf])
        return cls(low, high)

    def thresholds(
        self, bins: Bins, pair: IntArray, feature: IntArray, bin_limit: IntArray
    ) -> FloatArray:
        """Thresholds midway between each split's two sides at its node.

        Split ``i`` sends codes ``<= bin_limit[i]`` of its pair ``pair[i]`` left;
        the node's next code holding rows starts the right side. The threshold
        lies midway between the largest value the left side may hold and the
        least the right side may (scikit-learn's rule, between the node's two
        values, on an exact column; the grid edge between two adjacent bins of a
        quantile column).
        """
        out = np.empty(pair.shape[0])
        for i, (p, j, c) in enumerate(zip(pair, feature, bin_limit, strict=True)):
            codes = bins.codes[bins.lo[p] : bins.hi[p]]
            after = int(codes[np.searchsorted(codes, c, side="right")])
            a, b = float(self.high[j][c]), float(self.low[j][after])
            out[i] = a if a >= b else float(midpoint_candidates([[a, b]])[0])
        return out


class _Growth:
    """The node table of one tree: statistics, splits, scikit-learn's stopping."""

    def __init__(
        self,
        n_classes: int,
        n_features: int,
        max_depth: int | None,
        criterion: Literal["gini", "entropy"],
        min_samples_split: int,
        min_samples_leaf: int,
    ) -> None:
        self.n_classes, self.n_features = n_classes, n_features
        self.max_depth = np.inf if max_depth is None else max_depth
        self.criterion = criterion
        self.min_rows = float(max(min_samples_split, 2 * min_samples_leaf))
        self.stats = np.zeros((1, n_classes))
        self.depth = np.zeros(1, np.int64)
        self.parent = np.full(1, -1, np.int64)
        self.feature = np.full(1, -1, np.int64)
        self.threshold = np.full(1, np.nan)
        self.left = np.full(1, -1, np.int64)
        self.right = np.full(1, -1, np.int64)

    def weight(self, nodes: IntArray) -> FloatArray:
        """Weighted rows of each node."""
        out: FloatArray = self.stats[nodes].sum(axis=1)
        return out

    def splittable(self, nodes: IntArray) -> np.ndarray:
        """Nodes that may still split (scikit-learn's rules before the search)."""
        stats = self.stats[nodes]
        pure = impurity(stats, self.criterion) <= EPSILON
        small = stats.sum(axis=1) < self.min_rows
        out: np.ndarray = ~(pure | small | (self.depth[nodes] >= self.max_depth))
        return out

    def split(
        self,
        nodes: IntArray,
        feature: IntArray,
        threshold: FloatArray,
        left: FloatArray,
    ) -> tuple[IntArray, IntArray]:
        """Split ``nodes`` (left statistics ``left``); return the new children's ids."""
        m, start = nodes.shape[0], self.stats.shape[0]
        kids_left = np.arange(start, start + m, dtype=np.int64)
        kids_right = kids_left + m
        right = np.maximum(self.stats[nodes] - left, 0.0)  # counts: no -1e-16
        self.stats = np.concatenate([self.stats, left, right])
        self.depth = np.concatenate([self.depth, np.tile(self.depth[nodes] + 1, 2)])
        self.parent = np.concatenate([self.parent, np.tile(nodes, 2)])
        self.feature[nodes], self.threshold[nodes] = feature, threshold
        self.left[nodes], self.right[nodes] = kids_left, kids_right
        grow = 2 * m
        self.feature = np.concatenate([self.feature, np.full(grow, -1, np.int64)])
        self.threshold = np.concatenate([self.threshold, np.full(grow, np.nan)])
        self.left = np.concatenate([self.left, np.full(grow, -1, np.int64)])
        self.right = np.concatenate([self.right, np.full(grow, -1, np.int64)])
        return kids_left, kids_right

    def tree(self) -> Tree:
        """Return the grown tree (nodes numbered as the builder appends them)."""
        builder = TreeBuilder(
            n_features=self.n_features, classes=np.arange(self.n_classes)
        )
        builder.add_root(self._node_stats(0))
        todo = [(0, 0)]  # (our id, the builder's id)
        while todo:
            ours, theirs = todo.pop()
            if self.feature[ours] < 0:
                continue
            a, b = int(self.left[ours]), int(self.right[ours])
            left, right = builder.split_numeric(
                theirs,
                int(self.feature[ours]),
                float(self.threshold[ours]),
                self._node_stats(a),
                self._node_stats(b),
                missing=Missing.LARGER,
            )
            todo.extend([(b, right), (a, left)])
        return builder.build()

    def _node_stats(self, node: int) -> NodeStats:
        counts = self.stats[node]
        return NodeStats.from_class_counts(
            counts, float(impurity(counts[None, :], self.criterion)[0])
        )
