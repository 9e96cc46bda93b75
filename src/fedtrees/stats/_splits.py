"""Best split of every open node of a level, from aggregated statistics.

The one home of split search over pooled statistics: FedForest (docs/fedforest.md) and
the binary Federated-ID3 "IBM tree" (docs/fedga.md) use it. Three sources of candidates,
each vectorised over all open nodes of all trees:

- numeric features: pooled per-bin statistics -> left statistics by cumulative
  sums -> scikit-learn's proxy improvement (docs/fedforest.md, gain="exact");
- categorical features: per-category statistics in Fisher order, contiguous
  groupings (docs/fedforest.md, categorical features);
- the client indicator: per-client node statistics in Fisher order (docs/fedforest.md,
  ``split_on_client``), at no extra communication.

Within one source, candidates are ranked by scikit-learn's proxy (same argmax as
the gain); the first maximum wins: features in ascending index, thresholds
ascending. Across sources they are ranked by their impurity decrease Δ; ties go
to numeric features, then categorical ones, then the client indicator. AvgImp
ranks numeric candidates by the averaged local gains instead (docs/fedforest.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees.stats._fisher import fisher_sort
from fedtrees.stats._gain import left_cumulative, proxy_gains, split_gains
from fedtrees.stats._impurity import Criterion

__all__ = [
    "Best",
    "best_avgimp",
    "best_categorical",
    "best_client",
    "best_numeric",
    "combine",
]

NUMERIC, CATEGORICAL, CLIENT = 0, 1, 2


@dataclass
class Best:
    """The best candidate of every open node from one source (gain -inf: none).

    ``gain`` is the impurity decrease Δ (AvgImp: the averaged local gain); ``left``
    the pooled left statistics, NaN where unknown (AvgImp numeric splits);
    ``missing`` where a numeric split sends missing values
    (:class:`fedtrees.tree.Missing`: 1 left, 0 right, -1 the larger child —
    every source but the histogram engine's learns no direction).
    """

    gain: FloatArray
    kind: IntArray
    feature: IntArray
    threshold: FloatArray
    left: FloatArray
    codes: list[IntArray]
    missing: npt.NDArray[np.int8]

    @classmethod
    def none(cls, n_open: int, width: int) -> Best:
        """No candidate anywhere."""
        return cls(
            np.full(n_open, -np.inf),
            np.zeros(n_open, np.int64),
            np.full(n_open, -1),
            np.full(n_open, np.nan),
            np.zeros((n_open, width)),
            [np.zeros(0, np.int64)] * n_open,
            _larger(n_open),
        )


def _larger(n: int) -> npt.NDArray[np.int8]:
    """No learned direction for missing values: the larger child, at every node."""
    return np.full(n, -1, dtype=np.int8)


def _gain_of(
    parent: FloatArray, left: FloatArray, criterion: Criterion, found: np.ndarray
) -> FloatArray:
    gain = split_gains(parent, left[:, None, :], criterion, 0.0)[:, 0]
    return np.where(found, gain, -np.inf)


def _argmax_candidate(
    score: FloatArray, thresholds: FloatArray, pair_feature: IntArray
) -> tuple[IntArray, IntArray, IntArray, FloatArray]:
    """Each node's best (slot, candidate) by score; padding never wins.

    Returns the node rows, the chosen slot and candidate, and the best score
    (``-inf`` where a node has no candidate). First maximum on ties.
    """
    n_open, fp, n_cand = thresholds.shape
    masked = np.where(
        np.isnan(thresholds) | (pair_feature[..., None] < 0), -np.inf, score
    )
    flat = masked.reshape(n_open, fp * n_cand)
    index = np.argmax(flat, axis=1)
    rows = np.arange(n_open)
    slot, cand = np.divmod(index, n_cand)
    return rows, slot, cand, flat[rows, index]


def best_numeric(
    parent: FloatArray,
    bins: FloatArray,
    thresholds: FloatArray,
    pair_feature: IntArray,
    criterion: Criterion,
    min_leaf: FloatArray,
) -> Best:
    """Best threshold over all numeric pairs of each node.

    ``bins``: (n_open, F', T+1, S) pooled per-bin statistics for the NaN-padded
    ``thresholds`` (n_open, F', T); ``min_leaf``: (n_open,) rows per child.
    """
    n_open, fp, n_cand = thresholds.shape
    width = parent.shape[1]
    if n_cand == 0 or fp == 0:
        return Best.none(n_open, width)
    left = left_cumulative(bins)  # (n_open, F', T, S)
    score = _proxy(parent[:, None, :].repeat(fp, axis=1), left, criterion, min_leaf)
    rows, slot, cand, best = _argmax_candidate(score, thresholds, pair_feature)
    chosen = left[rows, slot, cand]
    gain = _gain_of(parent, chosen, criterion, np.isfinite(best))
    return Best(
        gain,
        np.full(n_open, NUMERIC),
        pair_feature[rows, slot],
        thresholds[rows, slot, cand],
        chosen,
        [np.zeros(0, np.int64)] * n_open,
        _larger(n_open),
    )


def best_avgimp(
    avg_gains: FloatArray, thresholds: FloatArray, pair_feature: IntArray, width: int
) -> Best:
    """AvgImp: the candidate with the largest averaged local gain (children unknown)."""
    n_open, fp, n_cand = thresholds.shape
    if n_cand == 0 or fp == 0:
        return Best.none(n_open, width)
    rows, slot, cand, best = _argmax_candidate(avg_gains, thresholds, pair_feature)
    return Best(
        best,
        np.full(n_open, NUMERIC),
        pair_feature[rows, slot],
        thresholds[rows, slot, cand],
        np.full((n_open, width), np.nan),
        [np.zeros(0, np.int64)] * n_open,
        _larger(n_open),
    )


def best_categorical(
    parent: FloatArray,
    cat_stats: FloatArray,
    pair_feature: IntArray,
    is_categorical: BoolArray,
    criterion: Criterion,
    min_leaf: FloatArray,
) -> Best:
    """Best Fisher grouping over all categorical pairs of each node.

    ``cat_stats``: (n_open, F', K, S) pooled per-category statistics.
    """
    n_open, fp, n_cat, width = cat_stats.shape
    usable = (pair_feature >= 0) & is_categorical[np.maximum(pair_feature, 0)]
    if n_cat < 2 or not usable.any():
        return Best.none(n_open, width)
    score, left, order, _ = _fisher_scores(
        parent[:, None, :].repeat(fp, axis=1), cat_stats, criterion, min_leaf
    )
    score = np.where(usable[..., None], score, -np.inf)
    flat = score.reshape(n_open, fp * (n_cat - 1))
    index = np.argmax(flat, axis=1)
    rows = np.arange(n_open)
    slot, cut = np.divmod(index, n_cat - 1)
    codes = [order[r, slot[r], : cut[r] + 1].copy() for r in range(n_open)]
    chosen = left[rows, slot, cut]
    gain = _gain_of(parent, chosen, criterion, np.isfinite(flat[rows, index]))
    return Best(
        gain,
        np.full(n_open, CATEGORICAL),
        pair_feature[rows, slot],
        np.full(n_open, np.nan),
        chosen,
        codes,
        _larger(n_open),
    )


def best_client(
    parent: FloatArray,
    client_stats: FloatArray,
    criterion: Criterion,
    min_leaf: FloatArray,
) -> Best:
    """Best Fisher grouping of the clients present at each node (docs/fedforest.md).

    ``client_stats``: (n_open, K, S) node statistics of every client.
    """
    n_open, n_clients, width = client_stats.shape
    if n_clients < 2:
        return Best.none(n_open, width)
    score, left, order, _ = _fisher_scores(parent, client_stats, criterion, min_leaf)
    index = np.argmax(score, axis=1)
    rows = np.arange(n_open)
    codes = [order[r, : index[r] + 1].copy() for r in range(n_open)]
    chosen = left[rows, index]
    gain = _gain_of(parent, chosen, criterion, np.isfinite(score[rows, index]))
    return Best(
        gain,
        np.full(n_open, CLIENT),
        np.full(n_open, -2),
        np.full(n_open, np.nan),
        chosen,
        codes,
        _larger(n_open),
    )


def _fisher_scores(
    parent: FloatArray, stats: FloatArray, criterion: Criterion, min_leaf: FloatArray
) -> tuple[FloatArray, FloatArray, IntArray, IntArray]:
    """Proxy of every contiguous Fisher grouping: (..., K-1) scores and lefts."""
    order, n_present = fisher_sort(stats, criterion)
    ordered = np.take_along_axis(stats, order[..., None], axis=-2)
    left = left_cumulative(ordered)  # (..., K-1, S)
    score = _proxy(parent, left, criterion, min_leaf)
    cut = np.arange(left.shape[-2])
    score = np.where(cut < (n_present[..., None] - 1), score, -np.inf)
    return score, left, order, n_present


def _proxy(
    parent: FloatArray, left: FloatArray, criterion: Criterion, min_leaf: FloatArray
) -> FloatArray:
    extra = (1,) * (left.ndim - 1 - min_leaf.ndim)
    limit = min_leaf.reshape(min_leaf.shape + extra)
    score = proxy_gains(parent, left, criterion, 0.0)
    n_left = left.sum(axis=-1) if criterion != "squared_error" else left[..., 0]
    n_parent = parent.sum(axis=-1) if criterion != "squared_error" else parent[..., 0]
    n_right = n_parent[..., None] - n_left
    slack = 1e-9 * np.maximum(n_parent[..., None], 1.0)
    ok = (n_left >= limit - slack) & (n_right >= limit - slack)
    return np.where(ok, score, -np.inf)


def combine(*sources: Best) -> Best:
    """Per node, the candidate with the largest gain (earlier sources win ties)."""
    best = sources[0]
    for other in sources[1:]:
        better = other.gain > best.gain
        best = Best(
            np.where(better, other.gain, best.gain),
            np.where(better, other.kind, best.kind),
            np.where(better, other.feature, best.feature),
            np.where(better, other.threshold, best.threshold),
            np.where(better[:, None], other.left, best.left),
            [
                o if b else c
                for o, c, b in zip(other.codes, best.codes, better, strict=True)
            ],
            np.where(better, other.missing, best.missing).astype(np.int8),
        )
    return best
