"""One client's side of growing trees: histograms of its rows, routing by splits.

Shared by FedGBDT's level handler (one level per request) and by the
baselines' local learner (:func:`boost_locally`: whole trees on the client's
own rows, with the same grid, the same histograms and the same split search
as the pooled model, so that only the protocol differs).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedgbdt._config import BoostConfig
from fedtrees.algorithms.fedgbdt._decisions import KIND_LEAF, Decisions, route
from fedtrees.algorithms.fedgbdt._grow import Iteration, decide_level
from fedtrees.algorithms.fedgbdt._loss import Loss
from fedtrees.algorithms.histogram import (
    Bins,
    CodeSplits,
    Grid,
    Histograms,
    NodeRows,
    RowStats,
    client_histograms,
    partition,
)

__all__ = ["boost_locally", "code_splits", "tree_histograms"]


def code_splits(current: Decisions, rows: NodeRows) -> CodeSplits:
    """Return an iteration's splits whose rows are not partitioned yet."""
    is_split = current.kind != KIND_LEAF
    size = 1 + int(
        max(
            current.node.max(initial=0),
            current.left.max(initial=0),
            current.right.max(initial=0),
        )
    )
    split = np.zeros(size, bool)
    left = np.full(size, -1, np.int64)
    right = np.full(size, -1, np.int64)
    at = np.full(size, -1, np.int64)
    nodes = current.node[is_split]
    split[nodes] = True
    left[nodes], right[nodes] = current.left[is_split], current.right[is_split]
    at[nodes] = np.flatnonzero(is_split)
    pending = rows.pending(split, left, right)
    i = at[pending]
    set_index, sets = current.left_sets()
    return CodeSplits(
        pending,
        current.kind[i].astype(np.int8),
        np.maximum(current.feature[i], 0),
        current.bin[i],
        current.missing_left[i],
        set_index[i],
        sets,
        np.zeros(pending.shape[0], bool),
        left[pending],
        right[pending],
    )


def row_values(g: FloatArray, h: FloatArray) -> list[FloatArray]:
    """Return what every row adds to its bins in each tree: ``(g_k, h_k, 1)``.

    ``g`` and ``h`` are (n, trees); one (n, 3) array per tree, built once per
    iteration (the gradients do not change within it).
    """
    values = np.ones((g.shape[1], g.shape[0], 3))
    values[:, :, 0], values[:, :, 1] = g.T, h.T
    return list(values)


def tree_histograms(
    rows: NodeRows,
    nodes: IntArray,
    pairs: IntArray,
    columns: npt.NDArray[np.uint8],
    weights: FloatArray,
    values: list[FloatArray],
) -> tuple[FloatArray, Histograms]:
    """Return each open node's ``(Σg, Σh, Σw)`` and its pairs' bins, trees in order.

    ``weights``: the rows' weight per tree, (trees, n) (0: not in the tree);
    ``values``: :func:`row_values`. Tree k's rows add ``(g_k, h_k, 1)`` times
    their weight.
    """
    tree = rows.open_tree(nodes)
    parts = []
    for k in np.unique(tree):
        mine = tree == k
        parts.append(
            client_histograms(
                rows, nodes[mine], pairs[mine], columns, weights,
                RowStats.vectors(values[k]),
            )
        )  # fmt: skip
    stats = np.concatenate([p[0] for p in parts])
    return stats, Histograms(
        np.concatenate([p[1].counts for p in parts]),
        np.concatenate([p[1].codes for p in parts]),
        np.concatenate([p[1].stats for p in parts]),
    )


def boost_locally(
    columns: npt.NDArray[np.uint8],
    target: FloatArray | IntArray,
    weight: FloatArray,
    raw: FloatArray,
    loss: Loss,
    grid: Grid,
    config: BoostConfig,
    features: IntArray,
    first: int,
) -> tuple[Decisions, FloatArray]:
    """Boost ``features.shape[0]`` iterations on one client's rows, from ``raw``.

    ``features[j, k]``: the features tree k of local iteration j considers.
    Returns the trees' decisions (iterations ``first, first + 1, ...``) and each
    decision's node weight (the client's Σw at that node).
    """
    n_trees = raw.shape[1]
    raw = raw.copy()
    table, cover = Decisions.empty(), np.zeros(0)
    for j in range(features.shape[0]):
        g, h = loss.gradients(raw, target, np.ones(raw.shape[0]))
        values = row_values(g, h)
        it = Iteration.start(first + j, n_trees, config.max_depth)
        weights = np.repeat(weight[None, :], n_trees, axis=0)
        rows = NodeRows.build(weights)
        grown = Decisions.empty()
        while (nodes := it.open_nodes()).size:
            pairs = features[j][it.tree[nodes]]
            stats, found = tree_histograms(rows, nodes, pairs, columns, weights, values)
            decided, _, _ = decide_level(
                it, nodes, pairs, stats, Bins.of(found), grid, config
            )
            grown = grown.then(decided)
            partition(rows, columns, code_splits(grown, rows))
        grown = grown.then(it.finish(config))
        routed = route(grown, n_trees, columns, config.max_depth)
        assert routed is not None  # grown here: no path deeper than max_depth
        raw += routed[1].T
        table = table.then(grown)
        cover = np.concatenate([cover, it.stats[grown.node, 2]])
    return table, cover
