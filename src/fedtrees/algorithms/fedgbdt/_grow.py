"""The server grows one iteration's trees: level by level, from pooled sums.

One iteration of FedGBDT is one tree per output (one for logloss and squared
error, one per class for softmax), all grown at once, one level per round:

1. the open nodes' ``(G, H, W)`` are the sums of the clients' replies;
2. every threshold of every considered feature is scored by XGBoost's
   second-order gain (the engine's search, criterion ``"second_order"``):
   ``loss_chg = G_L²/(H_L+λ) + G_R²/(H_R+λ) − G²/(H+λ)``, a side admissible
   only with ``H >= min_child_weight``; both directions of missing values;
3. a node splits when its best ``loss_chg`` exceeds 1e-6 (XGBoost's
   ``kRtEps``); its children's sums are the left sums and the rest; children
   at ``max_depth`` are leaves at once;
4. when no node is open, splits whose children are both leaves and whose
   ``loss_chg`` is below ``gamma`` are pruned bottom-up (XGBoost's
   ``min_split_loss``), and every leaf gets ``−η·G/(H+λ)`` (0 where
   ``H < min_child_weight``), from the last level's sums: no extra round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees.algorithms.fedgbdt._config import BoostConfig
from fedtrees.algorithms.fedgbdt._decisions import (
    KIND_CATEGORICAL,
    KIND_LEAF,
    KIND_NUMERIC,
    Decisions,
)
from fedtrees.algorithms.histogram import MISSING, Bins, Grid, search

__all__ = [
    "Iteration",
    "Split",
    "best_splits",
    "decide_level",
    "leaf_weights",
    "root_gain",
]

K_RT_EPS: Final = 1e-6
OPEN, SPLIT, LEAF = 0, 1, 2


def root_gain(stats: FloatArray, config: BoostConfig) -> FloatArray:
    """``G²/(H+λ)`` per node (0 where ``H < min_child_weight`` or ``H <= 0``)."""
    g, h = stats[..., 0], stats[..., 1]
    ok = (h >= config.min_child_weight) & (h > 0)
    out: FloatArray = np.where(
        ok, g * g / np.where(ok, h + config.reg_lambda, 1.0), 0.0
    )
    return out


def leaf_weights(stats: FloatArray, config: BoostConfig) -> FloatArray:
    """``−η·G/(H+λ)`` per node (0 where ``H < min_child_weight`` or ``H <= 0``)."""
    g, h = stats[..., 0], stats[..., 1]
    ok = (h >= config.min_child_weight) & (h > 0)
    weight = np.where(ok, -g / np.where(ok, h + config.reg_lambda, 1.0), 0.0)
    out: FloatArray = config.learning_rate * weight
    return out


@dataclass(frozen=True, eq=False)
class Split:
    """The chosen split of each searched node (``loss_chg`` -inf: none)."""

    loss_chg: FloatArray
    kind: npt.NDArray[np.int8]
    feature: IntArray
    bin: IntArray
    missing_left: BoolArray
    left: FloatArray
    sets: list[npt.NDArray[np.uint8]]

    def take(self, rows: IntArray) -> Split:
        """Return the splits of ``rows`` (in that order)."""
        return Split(
            self.loss_chg[rows],
            self.kind[rows],
            self.feature[rows],
            self.bin[rows],
            self.missing_left[rows],
            self.left[rows],
            [self.sets[i] for i in rows],
        )


def best_splits(
    bins: Bins,
    pairs: IntArray,
    parent: FloatArray,
    grid: Grid,
    config: BoostConfig,
) -> Split:
    """Search every node's pairs; return each node's best numeric or set split.

    ``pairs`` (n, F') are the nodes' features, ``bins`` their pairs' pooled
    histograms in the same order, ``parent`` their ``(G, H, W)``. A numeric
    split wins ties; missing values with no learned direction follow the
    child with more weight (right on a tie).
    """
    n = pairs.shape[0]
    found = search(
        bins, pairs, grid.is_categorical, parent,
        np.full(n, config.min_child_weight), "second_order", config.reg_lambda,
    )  # fmt: skip
    base = root_gain(parent, config)
    num = np.where(np.isfinite(found.num_score), found.num_score - base, -np.inf)
    cat = np.where(np.isfinite(found.cat_score), found.cat_score - base, -np.inf)
    use_cat = cat > num
    rows = np.arange(n)
    slot = np.where(use_cat, found.cat_slot, found.num_slot)
    feature = np.where(slot >= 0, pairs[rows, np.maximum(slot, 0)], -1)
    left = np.where(use_cat[:, None], found.cat_left, found.num_left)
    w_left, w_right = left[:, 2], parent[:, 2] - left[:, 2]
    missing_left = (found.num_missing == 1) | (
        (found.num_missing == -1) & (w_left > w_right)
    )
    sets = [
        np.flatnonzero(found.cat_set[i]).astype(np.uint8)
        if use_cat[i]
        else np.zeros(0, np.uint8)
        for i in range(n)
    ]
    return Split(
        np.maximum(num, cat),
        np.where(use_cat, KIND_CATEGORICAL, KIND_NUMERIC).astype(np.int8),
        feature,
        np.where(use_cat, -1, found.num_bin),
        np.where(use_cat, np.array([MISSING in s for s in sets]), missing_left),
        left,
        sets,
    )


@dataclass
class Iteration:
    """One iteration's trees on the server (node ids local; roots ``0..K-1``)."""

    number: int
    n_trees: int
    max_depth: int
    tree: IntArray
    depth: IntArray
    parent: IntArray
    stats: FloatArray
    status: npt.NDArray[np.int8]
    kind: npt.NDArray[np.int8]
    feature: IntArray
    bin: IntArray
    missing_left: BoolArray
    left: IntArray
    right: IntArray
    loss_chg: FloatArray
    sets: dict[int, npt.NDArray[np.uint8]] = field(default_factory=dict)
    value: FloatArray = field(default_factory=lambda: np.zeros(0))

    @classmethod
    def start(cls, number: int, n_trees: int, max_depth: int) -> Iteration:
        """Start iteration ``number``: its roots, open, with unknown sums."""
        z = np.zeros(n_trees, np.int64)
        return cls(
            number, n_trees, max_depth, np.arange(n_trees, dtype=np.int64), z.copy(),
            np.full(n_trees, -1, np.int64), np.zeros((n_trees, 3)),
            np.full(n_trees, OPEN, np.int8), np.full(n_trees, KIND_LEAF, np.int8),
            np.full(n_trees, -1, np.int64), np.full(n_trees, -1, np.int64),
            np.zeros(n_trees, bool), np.full(n_trees, -1, np.int64),
            np.full(n_trees, -1, np.int64), np.zeros(n_trees),
        )  # fmt: skip

    @classmethod
    def from_decisions(
        cls, table: Decisions, cover: FloatArray, n_trees: int, max_depth: int
    ) -> Iteration:
        """Rebuild a finished iteration from its decisions and node weights.

        ``table`` holds one iteration's decisions (a leaf after a split of the
        same node wins, as when pruning); ``cover[i]`` is decision i's node
        weight. For trees grown elsewhere (the baselines' clients).
        """
        number = int(table.iteration[0]) if len(table) else 0
        size = 1 + int(
            max(table.node.max(initial=0), table.left.max(initial=0),
                table.right.max(initial=0), n_trees - 1)
        )  # fmt: skip
        it = cls.start(number, n_trees, max_depth)
        extra = size - n_trees
        it._append(
            np.zeros(extra, np.int64), np.zeros(extra, np.int64),
            np.full(extra, -1, np.int64), np.zeros((extra, 3)),
        )  # fmt: skip
        it.status[:] = LEAF
        it.value = np.zeros(size)
        it.stats[table.node, 2] = cover
        split = np.flatnonzero(table.kind != KIND_LEAF)
        g = table.node[split]
        it.status[g] = SPLIT
        it.kind[g] = table.kind[split]
        it.feature[g], it.bin[g] = table.feature[split], table.bin[split]
        it.missing_left[g] = table.missing_left[split]
        it.left[g], it.right[g] = table.left[split], table.right[split]
        for i in split[table.kind[split] == KIND_CATEGORICAL]:
            it.sets[int(table.node[i])] = table.set_codes[
                table.set_ptr[i] : table.set_ptr[i + 1]
            ]
        leaves = np.flatnonzero(table.kind == KIND_LEAF)  # last: they win
        it.status[table.node[leaves]] = LEAF
        it.kind[table.node[leaves]] = KIND_LEAF
        it.value[table.node[leaves]] = table.value[leaves]
        return it

    @property
    def n_nodes(self) -> int:
        """Nodes so far."""
        return int(self.tree.shape[0])

    def open_nodes(self) -> IntArray:
        """Return the open nodes, sorted by tree then id."""
        nodes = np.flatnonzero(self.status == OPEN)
        return nodes[np.lexsort((nodes, self.tree[nodes]))].astype(np.int64)

    def close(self, nodes: IntArray) -> None:
        """Make ``nodes`` leaves."""
        self.status[nodes] = LEAF

    def split(self, nodes: IntArray, chosen: Split) -> Decisions:
        """Split ``nodes`` as ``chosen`` (aligned); return their decisions.

        Children get the next ids, two per split in node order; a child at
        ``max_depth`` is a leaf at once.
        """
        k = nodes.shape[0]
        first = self.n_nodes
        left = first + 2 * np.arange(k, dtype=np.int64)
        right = left + 1
        self.status[nodes] = SPLIT
        self.kind[nodes] = chosen.kind
        self.feature[nodes], self.bin[nodes] = chosen.feature, chosen.bin
        self.missing_left[nodes] = chosen.missing_left
        self.left[nodes], self.right[nodes] = left, right
        self.loss_chg[nodes] = chosen.loss_chg
        for i, node in enumerate(nodes.tolist()):
            if chosen.kind[i] == KIND_CATEGORICAL:
                self.sets[node] = chosen.sets[i]
        child_stats = np.empty((2 * k, 3))
        child_stats[0::2] = chosen.left
        child_stats[1::2] = self.stats[nodes] - chosen.left
        depth = np.repeat(self.depth[nodes] + 1, 2)
        self._append(np.repeat(self.tree[nodes], 2), depth, np.repeat(nodes, 2),
                     child_stats)  # fmt: skip
        return self._decisions(nodes)

    def _append(
        self, tree: IntArray, depth: IntArray, parent: IntArray, stats: FloatArray
    ) -> None:
        m = tree.shape[0]
        self.tree = np.concatenate([self.tree, tree])
        self.depth = np.concatenate([self.depth, depth])
        self.parent = np.concatenate([self.parent, parent])
        self.stats = np.concatenate([self.stats, stats])
        status = np.where(depth >= self.max_depth, LEAF, OPEN).astype(np.int8)
        self.status = np.concatenate([self.status, status])
        self.kind = np.concatenate([self.kind, np.full(m, KIND_LEAF, np.int8)])
        for name in ("feature", "bin", "left", "right"):
            setattr(self, name, np.concatenate([getattr(self, name), np.full(m, -1)]))
        self.missing_left = np.concatenate([self.missing_left, np.zeros(m, bool)])
        self.loss_chg = np.concatenate([self.loss_chg, np.zeros(m)])

    def _decisions(self, nodes: IntArray) -> Decisions:
        sets = [self.sets.get(int(g), np.zeros(0, np.uint8)) for g in nodes]
        ptr = np.zeros(nodes.shape[0] + 1, np.int64)
        np.cumsum([s.shape[0] for s in sets], out=ptr[1:])
        return Decisions(
            iteration=np.full(nodes.shape[0], self.number, np.int64),
            node=nodes.copy(),
            kind=self.kind[nodes],
            feature=self.feature[nodes],
            bin=self.bin[nodes],
            missing_left=self.missing_left[nodes],
            left=self.left[nodes],
            right=self.right[nodes],
            value=np.zeros(nodes.shape[0]),
            set_ptr=ptr,
            set_codes=np.concatenate([np.zeros(0, np.uint8), *sets]),
        )

    def finish(self, config: BoostConfig) -> Decisions:
        """Prune by ``gamma``, give every leaf its weight; return the leaf decisions."""
        if config.gamma > 0:
            for g in range(self.n_nodes - 1, -1, -1):  # children before parents
                if (
                    self.status[g] == SPLIT
                    and self.status[self.left[g]] == LEAF
                    and self.status[self.right[g]] == LEAF
                    and self.loss_chg[g] < config.gamma
                ):
                    self.status[g] = LEAF
                    self.kind[g] = KIND_LEAF
        self.value = leaf_weights(self.stats, config)
        leaves = np.flatnonzero(self.status == LEAF)
        reachable = self._reachable()
        leaves = leaves[reachable[leaves]]
        z = np.zeros(leaves.shape[0], np.int64)
        return Decisions(
            iteration=z + self.number,
            node=leaves,
            kind=np.full(leaves.shape[0], KIND_LEAF, np.int8),
            feature=z - 1,
            bin=z - 1,
            missing_left=np.zeros(leaves.shape[0], bool),
            left=z - 1,
            right=z - 1,
            value=self.value[leaves],
            set_ptr=np.zeros(leaves.shape[0] + 1, np.int64),
            set_codes=np.zeros(0, np.uint8),
        )

    def _reachable(self) -> BoolArray:
        """Nodes under no pruned (leaf) ancestor."""
        ok = np.zeros(self.n_nodes, bool)
        ok[: self.n_trees] = True
        for g in range(self.n_nodes):  # parents before children
            if ok[g] and self.status[g] == SPLIT:
                ok[self.left[g]] = ok[self.right[g]] = True
        return ok

    def gains_by_feature(self, n_features: int) -> FloatArray:
        """Total ``loss_chg`` of the kept splits per feature."""
        kept = (self.status == SPLIT) & self._reachable()
        out = np.zeros(n_features)
        np.add.at(out, self.feature[kept], self.loss_chg[kept])
        return out


def decide_level(
    it: Iteration,
    nodes: IntArray,
    pairs: IntArray,
    stats: FloatArray,
    bins: Bins,
    grid: Grid,
    config: BoostConfig,
) -> tuple[Decisions, IntArray, IntArray]:
    """Split or close every open node of a level (steps 1 to 3 of the module).

    ``nodes`` are the level's open nodes, ``pairs`` their features, ``stats``
    their pooled ``(G, H, W)`` and ``bins`` their pairs' histograms in the same
    order. Returns the split decisions, the split nodes (increasing ids) and
    their positions among ``nodes``.
    """
    it.stats[nodes] = stats
    todo = np.flatnonzero(stats[:, 2] > 0)
    fp = pairs.shape[1]
    chosen = best_splits(
        bins.take((todo[:, None] * fp + np.arange(fp)).ravel()),
        pairs[todo],
        stats[todo],
        grid,
        config,
    )
    splits = chosen.loss_chg > K_RT_EPS
    it.close(nodes[np.setdiff1d(np.arange(nodes.shape[0]), todo[splits])])
    split_nodes = nodes[todo[splits]]
    order = np.argsort(split_nodes, kind="stable")
    decisions = it.split(split_nodes[order], chosen.take(np.flatnonzero(splits)[order]))
    return decisions, split_nodes[order], todo[splits][order]
