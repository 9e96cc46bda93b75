"""FedForest client handlers of ``candidates="hist"``: the grid and the level round.

What a client keeps for the run (per-run client state,
:mod:`fedtrees.federation._state`): the forest it has been told and the agreed grid
(payloads, kept), and what it derives from them and its rows (memo): every row's codes
(``uint8``, computed once per fit), its bootstrap weights per tree, and its rows
partitioned by node (:class:`~fedtrees.algorithms.histogram.NodeRows`). A request moves
the kept forest to its version; the rows of the nodes split since the last request are
partitioned by their codes (a numeric split at a grid edge sends codes up to that edge's
bin left, and missing values by the split's direction; a categorical split sends the
codes of its set, the missing category included). Then the client answers from the
partitioned rows: every open node's statistics and every asked pair's non-zero bins.
Results never depend on the memo: a client that lost it rebuilds it from the kept state
and its data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees.algorithms.fedforest._client import (
    bootstrap_weights,
    check_open,
    check_sizes,
    keep_forest,
    kept_forest,
)
from fedtrees.algorithms.fedforest._hist_payloads import (
    GridReply,
    GridRequest,
    HistogramReply,
    HistogramRequest,
)
from fedtrees.algorithms.fedforest._kernels import SPLIT_CLIENT, SPLIT_NONE
from fedtrees.algorithms.fedforest._layout import compact
from fedtrees.algorithms.fedforest._payloads import ForestState
from fedtrees.algorithms.histogram import (
    MISSING,
    CodeSplits,
    Grid,
    GridSketch,
    NodeRows,
    RowStats,
    bin_codes,
    client_histograms,
    keep_grid,
    matrix_with_missing,
    partition,
    skipped_columns,
    summarise_columns,
)
from fedtrees.federation import (
    ClientData,
    ClientState,
    MaskedReply,
    MaskFields,
    Resync,
    handler,
    masked_reply,
    require_key,
)

__all__ = ["grid", "histogram"]

GRID_KEY: Final = "fedforest.grid"
MEMO_KEY: Final = "fedforest.hist"


@handler("fedforest.grid", stateful=True)
def grid(
    request: GridRequest, data: ClientData, state: ClientState
) -> GridReply | MaskedReply:
    """Summarise every numeric column of the client's rows for the agreed grid.

    Masked (secure aggregation): the weighted counts of its values over the fine
    bins of the declared ranges instead, masked.
    """
    check_sizes(request, data)
    skipped = skipped_columns(request, data)
    keep_forest(request, data, state)
    masked = MaskFields.of(request) is not None
    X = matrix_with_missing(data)
    sketch = summarise_columns(request, X, skipped, data.weights, masked)
    if not isinstance(sketch, GridSketch):
        return masked_reply(request, data, state, sketch)
    return GridReply(
        sketch.points, sketch.weights, compact(sketch.counts), sketch.complete
    )


@dataclass
class _HistFit:
    """What one client derives for one fit: codes, weights, rows by node."""

    fit_id: int
    columns: npt.NDArray[np.uint8]
    """Every row's codes, feature by feature (F, n_rows)."""
    weight: FloatArray
    row_stats: RowStats
    rows: NodeRows


@handler("fedforest.histogram", stateful=True)
def histogram(
    request: HistogramRequest, data: ClientData, state: ClientState
) -> HistogramReply | MaskedReply | Resync:
    """Statistics of every open node and the non-zero bins of every asked pair.

    Masked (secure aggregation): the same, dense over every bin of the grid
    (:meth:`HistogramRequest.dense_layout`), in fixed point and masked.
    """
    check_sizes(request, data)
    require_key(request, data, state)  # a lost key is not recovered by a resync
    n_features = len(data.feature_kinds)
    forest = kept_forest(request, state, n_features)
    if forest is None:
        return Resync("the kept forest is not the request's base version")
    agreed = keep_grid(request, data, state, GRID_KEY)
    if agreed is None:
        return Resync("the agreed grid is not kept")
    check_open(request, forest, n_features)
    fit = _fit(forest, agreed, data, state)
    partition(fit.rows, fit.columns, _code_splits(forest, agreed, fit.rows))
    nodes = np.ascontiguousarray(request.open_nodes, dtype=np.int64)
    pairs = np.ascontiguousarray(request.pair_feature, dtype=np.int64)
    stats, found = client_histograms(
        fit.rows, nodes, pairs, fit.columns, fit.weight, fit.row_stats
    )
    if MaskFields.of(request) is not None:
        dense = request.dense_layout().dense(stats, found)
        return masked_reply(request, data, state, dense, wide=request.wide_mask)
    lean = request.task != "regression"
    return HistogramReply(
        compact(stats) if lean else stats,
        compact(found.counts.reshape(pairs.shape)),
        found.codes,
        compact(found.stats) if lean else found.stats,
    )


def _fit(
    forest: ForestState, agreed: Grid, data: ClientData, state: ClientState
) -> _HistFit:
    """Return the memo of this fit, or build it (codes, weights, rows)."""

    def build() -> _HistFit:
        X = matrix_with_missing(data)
        n = X.shape[0]
        weight = bootstrap_weights(forest, data, n, np.zeros(n, dtype=bool))
        return _HistFit(
            forest.fit_id,
            np.ascontiguousarray(bin_codes(X, agreed).T),
            weight,
            _row_stats(forest, data),
            NodeRows.build(weight),
        )

    return state.memo_of(MEMO_KEY, _HistFit, forest.fit_id, build)


def _row_stats(forest: ForestState, data: ClientData) -> RowStats:
    """One-hot labels (or the client, for the diagnostics), or regression moments."""
    if forest.task == "regression":
        return RowStats.moments(data.targets())
    classes = np.asarray(forest.classes)
    if forest.target == "client":
        labels = np.full(data.n_rows, forest.client_code, dtype=np.int64)
    else:
        labels = data.label_codes(classes)
    return RowStats.classes(labels, int(classes.shape[0]))


# -- how the forest's splits route codes ------------------------------------------
def _code_splits(forest: ForestState, agreed: Grid, rows: NodeRows) -> CodeSplits:
    """Return the kept forest's splits in codes (see the module docstring).

    Only the splits whose rows are not partitioned yet are described (the
    others are never read again), so the work follows the new splits, not the
    forest's size.
    """
    feature = forest.node_feature
    split = feature != SPLIT_NONE
    pending = rows.pending(split, forest.node_left, forest.node_right)
    f = feature[pending]
    client = f == SPLIT_CLIENT
    categorical = ~client & agreed.is_categorical[np.maximum(f, 0)]
    numeric = ~client & ~categorical
    limit = np.zeros(pending.shape[0], dtype=np.int64)
    limit[numeric] = agreed.bin_of(f[numeric], forest.node_threshold[pending[numeric]])
    set_index, left_sets = _left_sets(forest, agreed, pending, categorical)
    client_left = np.zeros(pending.shape[0], dtype=bool)
    for i in np.flatnonzero(client):  # few: splits on the client indicator
        g = pending[i]
        members = forest.set_codes[forest.set_ptr[g] : forest.set_ptr[g + 1]]
        client_left[i] = bool(np.any(members == forest.client_code))
    return CodeSplits(
        pending, np.where(client, 3, np.where(categorical, 2, 1)).astype(np.int8),
        np.maximum(f, 0), limit, np.asarray(forest.node_missing[pending], np.bool_),
        set_index, left_sets, client_left, forest.node_left[pending],
        forest.node_right[pending],
    )  # fmt: skip


def _left_sets(
    forest: ForestState, agreed: Grid, pending: IntArray, categorical: BoolArray
) -> tuple[IntArray, npt.NDArray[np.bool_]]:
    """One row of 256 codes per categorical split (the missing code 255 for K).

    ``set_index[i]``: the row of pending split i (-1: not categorical).
    """
    nodes = pending[categorical]
    set_index = np.full(pending.shape[0], -1, dtype=np.int64)
    set_index[categorical] = np.arange(nodes.shape[0])
    sets = np.zeros((nodes.shape[0], 256), dtype=bool)
    for r, g in enumerate(nodes):  # the new categorical splits only
        codes = forest.set_codes[forest.set_ptr[g] : forest.set_ptr[g + 1]]
        k = int(agreed.n_bins[forest.node_feature[g]])
        sets[r, np.where(codes >= k, MISSING, codes)] = True
    return set_index, sets
