"""The forest being grown by the server: one global node table, one level at a time.

Nodes of all trees live in flat arrays with global ids (roots are 0..B-1); each
level appends the children of the nodes it splits, so children always follow
their parent. Stopping follows scikit-learn (docs/fedforest.md): a node is a leaf
at ``max_depth``, below ``min_samples_split`` or ``2 * min_samples_leaf`` rows,
when pure (impurity <= machine epsilon), without an admissible split, or when its
weighted improvement ``n_t/N * Δ`` is below ``min_impurity_decrease``. Counts are
weighted (bootstrap counts x sample weights).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from fedtrees._random import keyed_rng
from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees.algorithms._params import Amount
from fedtrees.algorithms.fedforest._config import ForestConfig, resolve_max_features
from fedtrees.algorithms.fedforest._kernels import SPLIT_CLIENT, SPLIT_NONE
from fedtrees.federation import FederationInfo
from fedtrees.stats import CLIENT, Best, impurity, node_count
from fedtrees.tree import LEAF, NodeKind, Tree

__all__ = ["ForestGrowth"]

EPSILON: Final = float(np.finfo(np.float64).eps)  # scikit-learn's purity threshold
FEATURES, PARTICIPATION = 1, 2


@dataclass
class _Table:
    """Growable node arrays (global ids)."""

    tree: IntArray
    depth: IntArray
    feature: IntArray
    threshold: FloatArray
    left: IntArray
    right: IntArray
    stats: FloatArray
    improvement: FloatArray
    missing: npt.NDArray[np.int8]
    """Where a numeric split learned to send missing values (tree.Missing)."""
    missing_left: BoolArray
    """Whether a split routes missing values left (the larger child if unlearned)."""

    def append(self, tree: IntArray, depth: IntArray, stats: FloatArray) -> IntArray:
        m = tree.shape[0]
        start = self.tree.shape[0]
        self.tree = np.concatenate([self.tree, tree])
        self.depth = np.concatenate([self.depth, depth])
        self.feature = np.concatenate([self.feature, np.full(m, SPLIT_NONE)])
        self.threshold = np.concatenate([self.threshold, np.full(m, np.nan)])
        self.left = np.concatenate([self.left, np.full(m, -1)])
        self.right = np.concatenate([self.right, np.full(m, -1)])
        self.stats = np.concatenate([self.stats, stats])
        self.improvement = np.concatenate([self.improvement, np.zeros(m)])
        self.missing = np.concatenate([self.missing, np.full(m, -1, np.int8)])
        self.missing_left = np.concatenate([self.missing_left, np.zeros(m, bool)])
        return np.arange(start, start + m, dtype=np.int64)


def _missing_goes_left(
    learned: npt.NDArray[np.int8], n_left: FloatArray, n_right: FloatArray
) -> BoolArray:
    """Route missing values left where learned so, or to the larger child (ties right).

    The rule of :class:`fedtrees.tree.Missing` (``LARGER``): a client routes by
    it, so it must not depend on where the split was learned.
    """
    out: BoolArray = (learned == 1) | ((learned == -1) & (n_left > n_right))
    return out


def _participation(config: ForestConfig, clients: int, trees: int) -> np.ndarray:
    """Client subsampling per tree (``client_fraction``; docs/fedforest.md)."""
    k = clients
    chosen = np.ones((trees, k), dtype=bool)
    if config.client_fraction < 1.0:
        size = max(1, round(config.client_fraction * k))
        for b in range(trees):
            rng = keyed_rng(config.seed, PARTICIPATION, b)
            chosen[b] = False
            chosen[b, rng.choice(k, size=size, replace=False)] = True
    return chosen


def _values(config: ForestConfig, stats: FloatArray) -> FloatArray:
    """Each node's value from its statistics: class shares, or the mean."""
    n = node_count(stats, config.criterion)
    if config.task == "regression":
        return (stats[:, 1] / np.where(n > 0, n, 1.0))[:, None]
    out: FloatArray = np.where(
        n[:, None] > 0,
        stats / np.where(n > 0, n, 1.0)[:, None],
        1.0 / stats.shape[1],
    )
    return out


class ForestGrowth:
    """Node table, open nodes and stopping rules of a FedForest fit."""

    def __init__(self, config: ForestConfig, info: FederationInfo) -> None:
        schema = info.schema
        self.config = config
        self.clients = np.asarray(info.clients, dtype=str)
        self.classes = np.asarray(
            info.clients if config.target == "client" else schema.classes, dtype=str
        )
        self.width = 3 if config.task == "regression" else int(self.classes.shape[0])
        self.n_features = schema.n_features
        self.is_categorical = np.array(
            [k == "categorical" for k in schema.feature_kinds]
        )
        self.n_categories = np.array(
            [len(c or ()) for c in schema.categories], dtype=np.int64
        )
        self.max_features = resolve_max_features(config.max_features, self.n_features)
        trees = config.n_estimators
        self.table = _Table(
            np.arange(trees, dtype=np.int64),
            np.zeros(trees, np.int64),
            np.full(trees, SPLIT_NONE),
            np.full(trees, np.nan),
            np.full(trees, -1),
            np.full(trees, -1),
            np.full((trees, self.width), np.nan),
            np.zeros(trees),
            np.full(trees, -1, np.int8),
            np.zeros(trees, bool),
        )
        self.sets: dict[int, IntArray] = {}
        self.open = np.arange(trees, dtype=np.int64)
        self.level = 0
        self.participation = _participation(config, self.clients.shape[0], trees)
        self._root_total = np.full(trees, np.nan)

    # -- who takes part, what each node considers --------------------------------
    def pair_features(self) -> IntArray:
        """Features each open node considers: all, or ``max_features`` keyed draws.

        One generator per (seed, tree, level) draws a random permutation per open
        node of that tree, in node order, and keeps its first ``max_features``
        entries: independent of the other trees and of how they are batched.
        """
        n_open, f, fp = self.open.shape[0], self.n_features, self.max_features
        if fp >= f:
            return np.tile(np.arange(f, dtype=np.int64), (n_open, 1))
        out = np.empty((n_open, fp), dtype=np.int64)
        if n_open == 0:
            return out
        trees = self.table.tree[self.open]
        cuts = np.flatnonzero(np.diff(trees)) + 1
        for start, stop in zip(np.r_[0, cuts], np.r_[cuts, n_open], strict=True):
            rng = keyed_rng(self.config.seed, FEATURES, int(trees[start]), self.level)
            keys = rng.random((stop - start, f))
            out[start:stop] = np.sort(np.argsort(keys, axis=1)[:, :fp], axis=1)
        return out

    def parents(self, nodes: IntArray) -> IntArray:
        """Return the parent id of each node (-1 for a root)."""
        t = self.table
        parent = np.full(t.tree.shape[0], -1, dtype=np.int64)
        split = np.flatnonzero(t.feature != SPLIT_NONE)
        parent[t.left[split]] = split
        parent[t.right[split]] = split
        out: IntArray = parent[nodes]
        return out

    # -- statistics and stopping --------------------------------------------
    def set_stats(self, nodes: IntArray, stats: FloatArray) -> None:
        """Record pooled statistics of nodes (roots, or AvgImp children)."""
        self.table.stats[nodes] = stats
        is_root = nodes < self._root_total.shape[0]
        self._root_total[nodes[is_root]] = node_count(
            stats[is_root], self.config.criterion
        )

    def _rows(self, amount: Amount, nodes: IntArray) -> FloatArray:
        """``amount`` in rows for each node's tree (vectorised ``Amount.rows``)."""
        total = self._root_total[self.table.tree[nodes]]
        if amount.fraction:
            rows: FloatArray = np.ceil(amount.value * total)
            return rows
        return np.full(total.shape, float(amount.value))

    def min_leaf(self, nodes: IntArray) -> FloatArray:
        """``min_samples_leaf`` in rows for each node's tree."""
        return self._rows(self.config.min_samples_leaf, nodes)

    def splittable(self, nodes: IntArray) -> np.ndarray:
        """Nodes that may still split (scikit-learn's pre-split stopping rules)."""
        stats = self.table.stats[nodes]
        n = node_count(stats, self.config.criterion)
        pure = impurity(stats, self.config.criterion) <= EPSILON
        too_small = (n < self._rows(self.config.min_samples_split, nodes)) | (
            n < 2 * self.min_leaf(nodes)
        )
        deep = self.table.depth[nodes] >= self.config.max_depth
        return ~(pure | too_small | deep | np.isnan(n))

    # -- applying the level's decisions -----------------------------------------
    def apply(self, nodes: IntArray, best: Best) -> None:
        """Split the nodes whose best candidate passes; append their children.

        As scikit-learn, an admissible split is made even with zero improvement,
        unless its weighted improvement ``n_t/N * Δ`` is below
        ``min_impurity_decrease``. Children's statistics are the pooled left and
        right statistics, or unknown (NaN) after an AvgImp numeric split.
        """
        t, c = self.table, self.config
        parent = t.stats[nodes]
        n_parent = node_count(parent, c.criterion)
        weighted = n_parent / self._root_total[t.tree[nodes]] * best.gain
        chosen = np.flatnonzero(
            np.isfinite(best.gain) & (weighted + EPSILON >= c.min_impurity_decrease)
        )
        g = nodes[chosen]
        t.feature[g] = np.where(
            best.kind[chosen] == CLIENT, SPLIT_CLIENT, best.feature[chosen]
        )
        t.threshold[g] = best.threshold[chosen]
        t.improvement[g] = weighted[chosen]
        for r in chosen:
            if best.codes[r].size:
                self.sets[int(nodes[r])] = best.codes[r].astype(np.int64)
        stats = np.empty((2 * g.shape[0], self.width))
        stats[0::2] = best.left[chosen]
        right = parent[chosen] - best.left[chosen]
        # parent - left can round to -1e-16 for counts that are 0: clip counts.
        if c.task == "regression":
            right[:, 0] = np.maximum(right[:, 0], 0.0)
        else:
            right = np.maximum(right, 0.0)
        stats[1::2] = right
        t.missing[g] = best.missing[chosen]
        t.missing_left[g] = _missing_goes_left(
            best.missing[chosen],
            node_count(best.left[chosen], c.criterion),
            node_count(right, c.criterion),
        )
        kids = t.append(np.repeat(t.tree[g], 2), np.repeat(t.depth[g] + 1, 2), stats)
        t.left[g], t.right[g] = kids[0::2], kids[1::2]
        self.open = kids[self.splittable(kids) | np.isnan(stats[:, 0])]
        self.open = self.open[t.depth[self.open] < c.max_depth]
        self.level += 1

    def unknown_leaves(self) -> IntArray:
        """Leaves whose statistics are still unknown (AvgImp children at the end)."""
        return np.flatnonzero(np.isnan(self.table.stats[:, 0]))

    # -- the result ----------------------------------------------------------
    def trees(self, meta: dict[str, Any]) -> list[Tree]:
        """One :class:`fedtrees.tree.Tree` per tree of the forest."""
        return [self._tree(b, meta) for b in range(self.config.n_estimators)]

    def _tree(self, b: int, meta: dict[str, Any]) -> Tree:
        t = self.table
        ids = np.flatnonzero(t.tree == b)
        local = np.full(t.tree.shape[0], LEAF, dtype=np.int64)
        local[ids] = np.arange(ids.shape[0])
        feature = t.feature[ids]
        is_cat = (feature >= 0) & self.is_categorical[np.maximum(feature, 0)]
        kind = np.select(
            [feature == SPLIT_NONE, feature == SPLIT_CLIENT, is_cat],
            [NodeKind.LEAF, NodeKind.CLIENT, NodeKind.CATEGORICAL],
            NodeKind.NUMERIC,
        ).astype(np.int8)
        tabled = (kind == NodeKind.CATEGORICAL) | (kind == NodeKind.CLIENT)
        left, right = (
            local[np.maximum(t.left[ids], 0)],
            local[np.maximum(t.right[ids], 0)],
        )
        empty = np.zeros(0, np.int64)
        codes = [self.sets.get(int(g), empty) for g in ids[tabled]]
        n_codes = np.zeros(ids.shape[0], dtype=np.int64)
        n_codes[tabled] = [c.shape[0] for c in codes]
        ptr = np.concatenate([[0], np.cumsum(n_codes)]).astype(np.int64)
        stats = t.stats[ids]
        return Tree(
            kind=kind,
            feature=np.where(
                kind == NodeKind.CLIENT,
                LEAF,
                np.where(kind == NodeKind.LEAF, LEAF, feature),
            ),
            threshold=np.where(kind == NodeKind.NUMERIC, t.threshold[ids], np.nan),
            left=np.where(kind == NodeKind.NUMERIC, left, LEAF),
            right=np.where(kind == NodeKind.LEAF, LEAF, right),
            branch_ptr=ptr,
            branch_code=np.concatenate([empty, *codes]).astype(np.int64),
            branch_child=np.repeat(np.where(tabled, left, LEAF), np.diff(ptr)),
            value=_values(self.config, stats),
            count=node_count(stats, self.config.criterion),
            impurity=impurity(stats, self.config.criterion),
            missing=np.where(kind == NodeKind.NUMERIC, t.missing[ids], -1),
            **meta,
        )

    def feature_importances(self) -> FloatArray:
        """Mean decrease in impurity per feature, as scikit-learn computes it.

        Per tree, the weighted improvements ``n_t/N * Δ`` of each feature's splits
        are summed and normalised; trees are averaged; client splits are left out.
        """
        t = self.table
        per_tree = np.zeros((self.config.n_estimators, self.n_features))
        split = t.feature >= 0
        np.add.at(per_tree, (t.tree[split], t.feature[split]), t.improvement[split])
        totals = per_tree.sum(axis=1, keepdims=True)
        normalised = np.divide(
            per_tree, totals, out=np.zeros_like(per_tree), where=totals > 0
        )
        mean = normalised.mean(axis=0)
        out: FloatArray = mean / mean.sum() if mean.sum() > 0 else mean
        return out

    def node_values(self) -> FloatArray:
        """Values of every node (for scoring requests)."""
        return _values(self.config, np.nan_to_num(self.table.stats))
