"""FedForest client handlers: one per request kind, registered on import.

Each handler turns a request into its reply from the client's prepared fit
(:func:`._client.forest_handler` moves the kept forest to the request's version
and partitions the rows, or answers a resync) with the statistics of
:mod:`._answers`. :data:`HANDLERS` lists them by kind; the package imports it,
which registers them with :func:`fedtrees.federation.handler`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

import numpy as np

from fedtrees.algorithms._requests import check_reply_cells, request_error
from fedtrees.algorithms.fedforest import _hist_handlers as hist_handlers
from fedtrees.algorithms.fedforest._answers import (
    bin_stats,
    category_stats,
    check_finite,
    distinct_values,
    lean_stats,
    local_gains,
    node_stats,
    node_weights,
    request_nodes,
    route_rows,
    sketch_points,
    sparse_bins,
)
from fedtrees.algorithms.fedforest._class_counts import class_counts
from fedtrees.algorithms.fedforest._client import ClientFit, forest_handler
from fedtrees.algorithms.fedforest._layout import compact
from fedtrees.algorithms.fedforest._oob import oob
from fedtrees.algorithms.fedforest._payloads import (
    SCORE_BINS,
    ForestState,
    LeafStatsReply,
    LeafStatsRequest,
    ScoreReply,
    ScoreRequest,
)
from fedtrees.algorithms.fedforest._rows import padded_bins, ragged_thresholds
from fedtrees.algorithms.fedforest._sketch_payloads import (
    AvgImpReply,
    EvaluateReply,
    EvaluateRequest,
    SketchEvaluateReply,
    SketchEvaluateRequest,
    SketchReply,
    SketchRequest,
    TopKReply,
    TopKRequest,
)
from fedtrees.exceptions import ValidationError
from fedtrees.federation import ClientState, Payload

__all__ = [
    "HANDLERS",
    "evaluate",
    "leaf_stats",
    "score",
    "sketch",
    "sketch_evaluate",
    "top_k",
]


@forest_handler("fedforest.sketch")
def sketch(
    request: SketchRequest, fit: ClientFit, forest: ForestState, state: ClientState
) -> SketchReply:
    """Ragged quantile sketches (or distinct values) and statistics of every pair."""
    return _sketch(request, fit)


def _sketch(request: SketchRequest, fit: ClientFit) -> SketchReply:
    """Node weights and statistics, points of the numeric pairs, categories."""
    nodes, pairs = request_nodes(request)
    stats, rows = node_stats(fit, request, nodes)
    if request.candidates == "quantile":
        n_points, points = sketch_points(fit, nodes, pairs, rows, request.q)
    else:  # every present row once: levels l/rows with unit weights enumerate them
        present = np.where(fit.weight > 0, 1.0, 0.0)
        q = max(int(rows.max(initial=1)), 1)
        n_points, points = distinct_values(
            *sketch_points(fit, nodes, pairs, rows, q, present)
        )
    return SketchReply(
        compact(node_weights(stats, request)),
        lean_stats(stats, request),
        compact(n_points),
        points,
        lean_stats(category_stats(fit, request, nodes, pairs), request),
    )


@forest_handler("fedforest.sketch_evaluate")
def sketch_evaluate(
    request: SketchEvaluateRequest,
    fit: ClientFit,
    forest: ForestState,
    state: ClientState,
) -> SketchEvaluateReply:
    """Sketch, then the bins of the candidates the server would derive from it.

    The server asks this only where every asked node may hold rows of this
    client alone (**Decision**, :mod:`._fold`): the candidates are then the
    client's own (:func:`._candidates.own_candidates`).
    """
    sketched = _sketch(request, fit)
    count, thresholds = request.own_layout(sketched)
    nodes, pairs = request_nodes(request)
    index, bins = sparse_bins(fit, request, nodes, pairs, count, thresholds)
    return SketchEvaluateReply(
        counts=sketched.counts,
        node_stats=sketched.node_stats,
        n_points=sketched.n_points,
        points=sketched.points,
        cat_stats=sketched.cat_stats,
        bin_index=index,
        bin_stats=bins,
    )


@forest_handler("fedforest.evaluate")
def evaluate(
    request: EvaluateRequest, fit: ClientFit, _forest: ForestState, state: ClientState
) -> EvaluateReply | AvgImpReply:
    """Non-zero per-bin statistics of the candidates (or own gains, AvgImp)."""
    nodes, pairs = request_nodes(request)
    count = np.asarray(request.thr_count, dtype=np.int64)
    if count.shape != pairs.shape or int(count.sum()) != request.thresholds.shape[0]:
        raise ValidationError("FedForest request: thr_count does not match thresholds.")
    thresholds = np.ascontiguousarray(request.thresholds, dtype=np.float64)
    check_finite(thresholds)
    if request.mode == "avgimp":
        thr_ptr = np.concatenate([[0], np.cumsum(count.ravel())]).astype(np.int64)
        bins = bin_stats(fit, request, nodes, pairs, thr_ptr, thresholds)
        width = max(int(count.max(initial=0)), 1)
        padded = padded_bins(bins, thr_ptr, (*count.shape, width))
        gains = local_gains(padded, request.criterion)
        present = np.arange(width)[None, None, :] < count[..., None]
        return AvgImpReply(np.ascontiguousarray(gains[present]))
    index, bins = sparse_bins(fit, request, nodes, pairs, count, thresholds)
    stats = (
        node_stats(fit, request, nodes)[0]
        if request.with_stats
        else np.zeros((0, request.width))
    )
    return EvaluateReply(index, bins, lean_stats(stats, request))


@forest_handler("fedforest.leaf_stats")
def leaf_stats(
    request: LeafStatsRequest, fit: ClientFit, _forest: ForestState, state: ClientState
) -> LeafStatsReply:
    """Statistics of the open nodes."""
    stats, _ = node_stats(fit, request, request_nodes(request)[0])
    return LeafStatsReply(lean_stats(stats, request))


@forest_handler("fedforest.top_k")
def top_k(
    request: TopKRequest, fit: ClientFit, _forest: ForestState, state: ClientState
) -> TopKReply:
    """AvgImp shortlist: best local gain per considered feature (local quantiles)."""
    nodes, pairs = request_nodes(request)
    _, rows = node_stats(fit, request, nodes)
    n_points, flat = sketch_points(fit, nodes, pairs, rows, request.q)
    points = np.full((*pairs.shape, request.q + 1), np.nan)
    points[np.arange(request.q + 1)[None, None, :] < n_points[..., None]] = flat
    local = points[..., 1:-1]  # interior local quantiles as local candidates
    thr_ptr, thr = ragged_thresholds(local)
    bins = bin_stats(fit, request, nodes, pairs, thr_ptr, thr)
    padded = padded_bins(bins, thr_ptr, local.shape)
    gains = local_gains(padded, request.criterion)
    best = np.where(pairs >= 0, gains.max(axis=-1, initial=0.0), -np.inf)
    k = min(request.k, best.shape[1])
    order = np.argsort(-best, axis=1, kind="stable")[:, :k]
    chosen = np.take_along_axis(best, order, axis=1)
    slots_out = np.where(np.isfinite(chosen), order, -1)
    pad = request.k - k
    return TopKReply(
        np.pad(slots_out, ((0, 0), (0, pad)), constant_values=-1).astype(np.int64),
        np.pad(np.where(np.isfinite(chosen), chosen, 0.0), ((0, 0), (0, pad))),
    )


@forest_handler("fedforest.score")
def score(
    request: ScoreRequest, fit: ClientFit, forest: ForestState, state: ClientState
) -> ScoreReply:
    """Score the forest on this client's held-out rows (docs/fedforest.md)."""
    _check_node_values(request, forest)
    held = np.flatnonzero(fit.held_out)
    trees = forest.participation.shape[0]
    node = np.repeat(np.arange(trees, dtype=np.int64)[:, None], held.shape[0], axis=1)
    route_rows(fit, forest, node, np.ones(node.shape), fit.X[held])
    values = request.node_values[node].mean(axis=0)  # (held, V): averaged over trees
    if request.task == "regression":
        y = fit.targets[held]
        err = float(((values[:, 0] - y) ** 2).sum())
        sums = np.array([held.shape[0], 0.0, err, y.sum(), (y * y).sum()])
        return ScoreReply(np.zeros((0, 0, SCORE_BINS)), sums)
    truth = fit.codes[held]
    c = values.shape[1]
    bins = np.minimum((values * SCORE_BINS).astype(np.int64), SCORE_BINS - 1)
    flat = (truth[:, None] * c + np.arange(c)[None, :]) * SCORE_BINS + bins
    hist = np.bincount(flat.ravel(), minlength=c * c * SCORE_BINS).reshape(
        c, c, SCORE_BINS
    )
    correct = float((values.argmax(axis=1) == truth).sum())
    return ScoreReply(
        hist.astype(np.float64), np.array([held.shape[0], correct, 0.0, 0.0, 0.0])
    )


def _check_node_values(request: ScoreRequest, forest: ForestState) -> None:
    """One row of values per node of the forest; a histogram that fits a reply."""
    values, n_nodes = request.node_values, forest.node_feature.shape[0]
    if values.ndim != 2 or values.shape[0] != n_nodes or values.shape[1] < 1:
        raise request_error(
            request.kind,
            "node_values",
            f"one row of values per node of the kept forest ({n_nodes})",
            f"shape {values.shape}",
        )
    c = values.shape[1]
    check_reply_cells(request.kind, "node_values", (c, c, SCORE_BINS), "hist")


HANDLERS: Final[Mapping[str, Callable[..., Payload]]] = {
    "fedforest.class_counts": class_counts,
    "fedforest.grid": hist_handlers.grid,
    "fedforest.histogram": hist_handlers.histogram,
    "fedforest.sketch": sketch,
    "fedforest.sketch_evaluate": sketch_evaluate,
    "fedforest.evaluate": evaluate,
    "fedforest.leaf_stats": leaf_stats,
    "fedforest.top_k": top_k,
    "fedforest.score": score,
    "fedforest.oob": oob,
}
"""The client handler of every FedForest request kind (registered on import)."""
