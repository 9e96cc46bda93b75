"""Server side of a ``candidates="hist"`` level: FedForest's split search.

One level of every tree at once. The engine
(:mod:`fedtrees.algorithms.histogram`) plans what to ask — the smaller child
only where every feature of a node is considered (``max_features`` = all:
FedForestRegressor's default, or a single CART) and its parent's histograms
are kept (**histogram subtraction**) — and pools the clients' bins. Here
(:func:`grid_splits`): the best threshold of every numeric pair (with the
direction of missing values) and the best Fisher grouping of every
categorical pair, for every open node of every tree at once; then the best of
each node by its pooled impurity decrease.
"""

from __future__ import annotations

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.histogram import Bins, Grid, search
from fedtrees.stats import CATEGORICAL, NUMERIC, Best, Criterion, split_gains

__all__ = ["grid_splits"]


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
