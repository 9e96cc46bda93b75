"""Scoring a level's candidates from pooled statistics (docs/fedforest.md).

The split search itself is :mod:`fedtrees.stats._splits` (numeric bins by
cumulative sums, Fisher groupings, the weighted average of AvgImp); this module
gathers, for one level of the forest, what FedForest adds to it:

- :func:`other_candidates` — categorical features and the client indicator,
  both scored on pooled statistics (exact, whatever the gain rule);
- :func:`averaged_gains` — AvgImp: the count-weighted average of the clients'
  own gains of every shared candidate (``gain="avgimp"``; it can miss the
  pooled best split under covariate shift, docs/fedforest.md);
- :func:`node_weights` — a node's weight from its statistics.

Which candidate wins, and whether the node splits, is :meth:`._growth.
ForestGrowth.apply` (scikit-learn's stopping rules).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.histogram import node_weights as engine_node_weights
from fedtrees.stats import (
    Best,
    Criterion,
    best_avgimp,
    best_categorical,
    best_client,
    combine,
)

__all__ = ["averaged_gains", "node_weights", "other_candidates", "weight_column"]


def other_candidates(
    parent: FloatArray,
    cat: FloatArray,
    pairs: IntArray,
    is_categorical: np.ndarray,
    criterion: Criterion,
    min_leaf: FloatArray,
    client_stats: FloatArray | None,
) -> Best:
    """Categorical Fisher groupings and client-indicator splits (pooled, exact).

    ``parent`` holds the nodes' pooled statistics ``(n, S)``, ``cat`` their
    pooled per-category statistics ``(n, F', categories, S)``; ``client_stats``
    each active client's node statistics ``(K, n, S)``, or None without
    ``split_on_client``.
    """
    best = best_categorical(parent, cat, pairs, is_categorical, criterion, min_leaf)
    if client_stats is None:
        return best
    per_client = client_stats.transpose(1, 0, 2)  # (n, K, S)
    return combine(best, best_client(parent, per_client, criterion, min_leaf))


def averaged_gains(
    gains: Sequence[tuple[int, IntArray, FloatArray]],
    counts: FloatArray,
    thresholds: FloatArray,
    pairs: IntArray,
    width: int,
) -> Best:
    """AvgImp: the best candidate by the count-weighted average of the clients' gains.

    ``gains`` holds, per client (index, asked positions), its own gain of every
    candidate it was sent — all the level's candidates at its positions, in
    order; ``counts`` is ``(K, n)``: each client's node weights.
    """
    present = ~np.isnan(thresholds)
    weights = counts / np.maximum(counts.sum(axis=0, keepdims=True), 1e-300)
    average = np.zeros(thresholds.shape)
    for k, asked, sent in gains:
        local = np.zeros((asked.shape[0], *thresholds.shape[1:]))
        local[present[asked]] = sent  # all sent
        average[asked] += weights[k, asked][:, None, None] * local
    return best_avgimp(average, thresholds, pairs, width)


def weight_column(task: str) -> int:
    """Return the statistics' weight column: the moment w (0), or -1 (Σ counts)."""
    return 0 if task == "regression" else -1


def node_weights(stats: np.ndarray, task: str) -> FloatArray:
    """Node weights from node statistics (as floats): the engine's rule.

    :func:`fedtrees.algorithms.histogram.node_weights`: Σ class counts, or
    the moment w.
    """
    values = np.asarray(stats, dtype=np.float64)
    return engine_node_weights(values, weight_column(task))
