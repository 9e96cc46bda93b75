"""Server side of a ``candidates="hist"`` level: pool, subtract, search.

One level of every tree at once (the engine's steps 4 and 5,
:mod:`fedtrees.algorithms.histogram`):

1. **What to ask** (:func:`plan_level`). Where every feature of a node is
   considered (``max_features`` = all: FedForestRegressor's default, or a
   single CART) and both children of a split are open, the clients send the
   histograms of the child with fewer pooled rows only; the other child's come
   from the parent's pooled histograms, kept from the level before, minus its
   sibling's (**histogram subtraction**). A node derived that way is asked with
   no features (its statistics only).
2. **Pooled histograms** (:func:`level_histograms`): every client's non-zero
   bins summed pair by pair (exact for whole counts), and the derived ones.
3. **Split search** (:func:`grid_splits`): the best threshold of every numeric
   pair (with the direction of missing values) and the best Fisher grouping of
   every categorical pair, for every open node of every tree at once; then the
   best of each node by its pooled impurity decrease.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedforest._hist_payloads import HistogramReply
from fedtrees.algorithms.histogram import (
    Bins,
    Grid,
    Histograms,
    pool,
    search,
    subtract,
)
from fedtrees.stats import split_gains
from fedtrees.stats._impurity import Criterion
from fedtrees.stats._splits import CATEGORICAL, NUMERIC, Best

__all__ = [
    "Bins",
    "Kept",
    "LevelPlan",
    "grid_splits",
    "keep_split",
    "level_histograms",
    "plan_level",
]


@dataclass(frozen=True, eq=False)
class Kept:
    """Pooled histograms kept from the last level: split nodes, F' pairs each."""

    nodes: IntArray  # sorted node ids
    bins: Bins

    @classmethod
    def none(cls, width: int) -> Kept:
        """Nothing kept."""
        empty = np.zeros(0, np.int64)
        return cls(
            empty, Bins(np.zeros(0, np.uint8), np.zeros((0, width)), empty, empty)
        )


@dataclass(frozen=True, eq=False)
class LevelPlan:
    """What a level asks: features per open node (-1 rows: derived), derivations.

    ``derived[i]`` (an open-node position) gets parent ``Kept.nodes[parent[i]]``
    minus the histograms of its sibling at position ``sibling[i]``.
    """

    pairs: IntArray
    derived: IntArray
    parent: IntArray
    sibling: IntArray


def plan_level(
    open_nodes: IntArray,
    pairs: IntArray,
    parents: IntArray,
    weights: FloatArray,
    kept: Kept,
) -> LevelPlan:
    """Ask the smaller child of every kept parent whose children are both open.

    ``parents[i]``: open node i's parent (-1 for a root); ``weights[i]``: its
    pooled weight (known from its parent's split). Ties: the left child (the
    smaller id) is asked.
    """
    n = open_nodes.shape[0]
    at = np.searchsorted(kept.nodes, parents)
    at = np.minimum(at, max(kept.nodes.shape[0] - 1, 0))
    has = (kept.nodes.shape[0] > 0) & (parents >= 0)
    has &= kept.nodes[at] == parents if kept.nodes.size else has
    # both children open: the parent appears twice among the open nodes
    key = np.where(has, parents, -1)
    order = np.argsort(key, kind="stable")
    pair_up = np.zeros(n, dtype=bool)
    same = (key[order][1:] == key[order][:-1]) & (key[order][1:] >= 0)
    first, second = order[:-1][same], order[1:][same]
    pair_up[first] = pair_up[second] = True
    larger = np.where(weights[second] > weights[first], second, first)
    smaller = np.where(larger == second, first, second)
    asked = pairs.copy()
    asked[larger] = -1
    return LevelPlan(asked, larger, at[larger], smaller)


def _client_parts(
    replies: Sequence[tuple[IntArray, HistogramReply]], fp: int
) -> list[tuple[IntArray, Histograms]]:
    """Return each client's bins as histograms, with the level's pair of each."""
    parts = []
    for asked, reply in replies:
        count = np.asarray(reply.bin_count, dtype=np.int64).ravel()
        pairs = (asked[:, None] * fp + np.arange(fp)[None, :]).ravel()
        # whole counts stay in their small dtype: the pooling reads any
        parts.append((pairs, Histograms(count, reply.bin_code, reply.bin_stats)))
    return parts


def level_histograms(
    replies: Sequence[tuple[IntArray, HistogramReply]],
    plan: LevelPlan,
    kept: Kept,
    width: int,
    count_col: int,
) -> Bins:
    """Return the level's histograms of every pair: pooled, or derived."""
    n_pairs = plan.pairs.size
    fp = plan.pairs.shape[1]
    pooled = Bins.of(pool(_client_parts(replies, fp), n_pairs, width))
    if plan.derived.size == 0:
        return pooled
    slots = np.arange(fp)
    parent = kept.bins.take((plan.parent[:, None] * fp + slots).ravel())
    sibling = pooled.take((plan.sibling[:, None] * fp + slots).ravel())
    derived = subtract(parent, sibling, count_col)
    return pooled.with_pairs((plan.derived[:, None] * fp + slots).ravel(), derived)


def keep_split(bins: Bins, nodes: IntArray, positions: IntArray, fp: int) -> Kept:
    """Return the histograms of the split ``nodes`` (at level ``positions``)."""
    order = np.argsort(nodes, kind="stable")
    pairs = (positions[order][:, None] * fp + np.arange(fp)).ravel()
    return Kept(nodes[order], bins.take(pairs))


def grid_splits(
    bins: Bins,
    pairs: IntArray,
    todo: IntArray,
    grid: Grid,
    parent: FloatArray,
    min_leaf: FloatArray,
    criterion: Criterion,
) -> tuple[Best, Best]:
    """Return the best numeric and best categorical split of the ``todo`` nodes.

    ``pairs`` are the level's features per open node; ``parent`` and
    ``min_leaf`` are the todo nodes'. Gains are pooled impurity decreases; the
    numeric splits carry their learned direction of missing values.
    """
    fp = pairs.shape[1]
    view = bins.take((todo[:, None] * fp + np.arange(fp)).ravel())
    found = search(view, pairs[todo], grid.is_categorical, parent, min_leaf, criterion)
    rows = np.arange(todo.shape[0])
    num_feature = pairs[todo][rows, np.maximum(found.num_slot, 0)]
    numeric = Best(
        _gains(parent, found.num_left, found.num_score, criterion),
        np.full(todo.shape[0], NUMERIC),
        np.where(found.num_slot >= 0, num_feature, -1),
        np.where(
            found.num_slot >= 0, grid.threshold(num_feature, found.num_bin), np.nan
        ),
        found.num_left,
        [np.zeros(0, np.int64)] * todo.shape[0],
        found.num_missing,
    )
    cat_feature = pairs[todo][rows, np.maximum(found.cat_slot, 0)]
    categorical = Best(
        _gains(parent, found.cat_left, found.cat_score, criterion),
        np.full(todo.shape[0], CATEGORICAL),
        np.where(found.cat_slot >= 0, cat_feature, -1),
        np.full(todo.shape[0], np.nan),
        found.cat_left,
        _category_sets(found.cat_set, found.cat_slot, cat_feature, grid),
        np.full(todo.shape[0], -1, dtype=np.int8),
    )
    return numeric, categorical


def _gains(
    parent: FloatArray, left: FloatArray, score: FloatArray, criterion: Criterion
) -> FloatArray:
    """Return the pooled impurity decrease of each chosen split (-inf: none)."""
    gain = split_gains(parent, left[:, None, :], criterion, 0.0)[:, 0]
    out: FloatArray = np.where(np.isfinite(score), gain, -np.inf)
    return out


def _category_sets(
    masks: np.ndarray, slot: IntArray, feature: IntArray, grid: Grid
) -> list[IntArray]:
    """Return each node's left categories as tree codes (missing: code ``K``)."""
    if masks.shape[0] == 0:
        return [np.zeros(0, np.int64)] * slot.shape[0]
    rows, codes = np.nonzero(masks & (slot >= 0)[:, None])
    k = grid.n_bins[feature[rows]]
    tree_codes = np.where(codes >= k, k, codes).astype(np.int64)
    ptr = np.searchsorted(rows, np.arange(slot.shape[0] + 1))
    return [tree_codes[ptr[r] : ptr[r + 1]] for r in range(slot.shape[0])]
