"""FedForest client handlers: keep the forest, route local rows, sketch, evaluate.

Protocol v2 (DESIGN.md, "Per-run client state"): a client keeps in its per-run
state the forest it has been told (:class:`ForestState`, kept: it survives
between Flower messages) and, in its memo, what it derived from it and its data
(presorted features, bootstrap weights, each row's node in each tree). A request
carries only the splits since the version the server believes the client holds;
a client whose kept version differs answers :class:`Resync`. Results never
depend on the state: a client that lost it is resent the whole forest and
computes the same replies (tests drop it at random rounds).

Randomness is keyed (STYLE habit 8): tree b's bootstrap on a client uses
``default_rng([seed, 0, b, crc32(client id)])`` — independent of order and
transport; held-out rows (diagnostics) use ``[seed, 3, crc32(client id)]``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from fedtrees._random import client_key, keyed_rng
from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees.algorithms._params import MAX_GRID, MAX_N_ESTIMATORS
from fedtrees.algorithms._requests import (
    check_reply_cells,
    check_request_size,
    local_category_counts,
    request_error,
)
from fedtrees.algorithms.fedforest import _kernels as kernels
from fedtrees.algorithms.fedforest._forest import (
    SplitBatch,
    apply_batch,
    next_version,
    start_state,
)
from fedtrees.algorithms.fedforest._layout import compact
from fedtrees.algorithms.fedforest._payloads import (
    SCORE_BINS,
    AvgImpReply,
    EvaluateReply,
    EvaluateRequest,
    ForestState,
    LeafStatsReply,
    LeafStatsRequest,
    LevelFields,
    RangesReply,
    RangesRequest,
    ScoreReply,
    ScoreRequest,
    SketchEvaluateReply,
    SketchEvaluateRequest,
    SketchReply,
    SketchRequest,
    TopKReply,
    TopKRequest,
)
from fedtrees.algorithms.fedforest._rows import (
    ClientRows,
    padded_bins,
    ragged_thresholds,
)
from fedtrees.exceptions import ValidationError
from fedtrees.federation import ClientData, ClientState, Payload, Resync, handler
from fedtrees.stats import split_gains

__all__ = [
    "STATE_KEY",
    "check_open",
    "check_sizes",
    "forest_handler",
]

STATE_KEY: Final = "fedforest"
BOOTSTRAP, HOLDOUT = 0, 3


@dataclass
class _Fit:
    """What one client derives for one fit: presorted data, weights, routing."""

    fit_id: int
    X: FloatArray
    is_cat: BoolArray
    pos: IntArray
    sval: FloatArray
    codes: IntArray
    targets: FloatArray
    weight: FloatArray
    rows: ClientRows
    client_code: int
    held_out: BoolArray


def check_open(request: LevelFields, forest: ForestState, n_features: int) -> None:
    """Refuse open nodes or feature lists that do not fit the kept forest."""
    n = forest.node_feature.shape[0]
    open_nodes = np.asarray(request.open_nodes, dtype=np.int64)
    if open_nodes.size and (
        np.any(open_nodes < 0)
        or np.any(open_nodes >= n)
        or np.any(forest.node_feature[open_nodes] != kernels.SPLIT_NONE)
        or np.any(np.diff(forest.node_tree[open_nodes]) < 0)
    ):
        raise ValidationError(
            "FedForest request: open nodes must be unsplit, sorted by tree."
        )
    pairs = request.pair_feature
    if pairs.ndim != 2 or pairs.shape[0] != open_nodes.shape[0]:
        raise ValidationError(
            "FedForest request: one feature list per open node expected."
        )
    if np.any(pairs < -1) or np.any(pairs >= n_features):
        raise ValidationError("FedForest request: a node considers an unknown feature.")


def _forest(
    request: LevelFields, state: ClientState, n_features: int
) -> ForestState | None:
    """Move the kept forest to the request's version; None if it cannot be."""
    kept = state.get(STATE_KEY, ForestState)
    batch = SplitBatch.of(request)
    if request.full:
        forest = apply_batch(start_state(request), batch, request.digest, n_features)
    elif (
        kept is None
        or kept.fit_id != request.fit_id
        or kept.digest != request.base
        or next_version(request.base, batch) != request.digest
    ):
        return None
    else:
        forest = apply_batch(kept, batch, request.digest, n_features)
    state.put(STATE_KEY, forest)
    return forest


def _keep_forest(request: LevelFields, data: ClientData, state: ClientState) -> None:
    """Keep the request's forest for later rounds (a first request needs no rows)."""
    check_sizes(request, data)
    _forest(request, state, len(data.feature_kinds))


def check_sizes(request: Any, data: ClientData) -> None:
    """Refuse a request whose size fields do not fit this client, before allocating.

    At most :data:`MAX_N_ESTIMATORS` trees; each feature at most once per open
    node (``pair_feature``); ``q``, ``k`` within the grid limit (the server
    validates both);
    ``max_categories`` 0 or this client's largest number of categories; the
    statistics asked (nodes and categorical pairs x categories x classes) fit
    one reply.

    Raises
    ------
    ValidationError
        Naming the request kind and the field (:mod:`fedtrees.algorithms._requests`).
    """
    kind = request.kind
    trees = int(request.participation.size)
    check_request_size(
        kind, "participation", trees, MAX_N_ESTIMATORS, "one flag per tree"
    )
    for name in ("q", "k"):
        if hasattr(request, name):
            value = getattr(request, name)
            check_request_size(kind, name, value, MAX_GRID, "the grid limit", low=1)
    _check_pairs(request, len(data.feature_kinds))
    width = request.width
    check_reply_cells(kind, "classes", (request.n_open, width), "node_stats")
    if hasattr(request, "max_categories"):
        _check_categories(request, data, width)


def _check_pairs(request: Any, n_features: int) -> None:
    """Refuse a node that considers a feature twice or more than F (-1: padding)."""
    pairs = np.asarray(request.pair_feature)
    if pairs.ndim != 2 or pairs.shape[1] > n_features:
        raise request_error(
            request.kind,
            "pair_feature",
            f"a matrix of at most {n_features} features per open node",
            f"shape {pairs.shape}",
        )
    ordered = np.sort(pairs, axis=1)
    if np.any((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)):
        raise request_error(
            request.kind,
            "pair_feature",
            "each feature at most once per open node",
            "a repeated feature",
        )


def _check_categories(request: Any, data: ClientData, width: int) -> None:
    """``max_categories``: 0 or this client's most categories; a reply that fits."""
    kind, counts = request.kind, local_category_counts(data)
    most = int(counts.max(initial=0))
    if request.max_categories not in (0, most):
        raise request_error(
            kind,
            "max_categories",
            f"0 or {most} (this client's largest number of categories)",
            request.max_categories,
        )
    pairs = np.asarray(request.pair_feature)
    if counts.size and pairs.size:
        asked = pairs[pairs >= 0]
        n_pairs = int((counts[np.clip(asked, 0, counts.size - 1)] > 0).sum())
        shape = (n_pairs, most, width)
        check_reply_cells(kind, "max_categories", shape, "cat_stats")


def _prepare(
    request: LevelFields, data: ClientData, state: ClientState
) -> tuple[_Fit, ForestState] | Resync:
    """Return the client's fit state routed to the request's forest, or a resync."""
    check_sizes(request, data)
    n_features = len(data.feature_kinds)
    forest = _forest(request, state, n_features)
    if forest is None:
        return Resync("the kept forest is not the request's base version")
    check_open(request, forest, n_features)
    fit = state.memo.get(STATE_KEY)
    if not isinstance(fit, _Fit) or fit.fit_id != request.fit_id:
        fit = _build(forest, data)
        state.memo[STATE_KEY] = fit
    _split_rows(fit, forest)
    return fit, forest


Body = Callable[[Any, _Fit, ForestState, ClientState], Payload]


def forest_handler(kind: str) -> Callable[[Body], Callable[..., Payload]]:
    """Register a FedForest handler that answers from the prepared fit and forest.

    The registered handler moves the kept forest to the request's version and
    partitions the rows (:func:`_prepare`), or answers :class:`Resync` when it
    cannot; the body then sees ``(request, fit, forest, state)``.
    """

    def register(body: Body) -> Callable[..., Payload]:
        @handler(kind, stateful=True)
        @functools.wraps(body)
        def answer(request: Any, data: ClientData, state: ClientState) -> Payload:
            prepared = _prepare(request, data, state)
            if isinstance(prepared, Resync):
                return prepared
            return body(request, *prepared, state)

        return answer

    return register


def _split_rows(fit: _Fit, forest: ForestState) -> None:
    """Partition the rows of the nodes split since the last request (no routing)."""
    rows = fit.rows
    rows.split(
        fit.X,
        fit.is_cat,
        fit.client_code,
        rows.pending(forest.node_feature, forest.node_left, forest.node_right),
        forest.node_feature,
        forest.node_threshold,
        forest.node_left,
        forest.node_right,
        forest.set_ptr,
        forest.set_codes,
    )


def _route(
    fit: _Fit, forest: ForestState, node: IntArray, weight: FloatArray, X: FloatArray
) -> None:
    """Move the rows of ``X`` down the kept forest (``node`` in place; scoring)."""
    kernels.route(
        node,
        weight,
        X,
        fit.client_code,
        forest.node_feature,
        forest.node_threshold,
        forest.node_left,
        forest.node_right,
        forest.set_ptr,
        forest.set_codes,
        fit.is_cat,
    )


def _build(forest: ForestState, data: ClientData) -> _Fit:
    X = np.ascontiguousarray(data.finite_matrix())
    n = X.shape[0]
    is_cat = np.array([k == "categorical" for k in data.feature_kinds], dtype=bool)
    order = np.ascontiguousarray(
        np.argsort(X, axis=0, kind="stable").T.astype(np.int64)
    )
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.arange(n, dtype=np.int64)[None, :], axis=1)
    sval = np.ascontiguousarray(np.take_along_axis(X.T, order, axis=1))
    code = forest.client_code
    codes, targets = _targets(forest, data, code)
    rng = keyed_rng(forest.seed, HOLDOUT, client_key(data.client_id))
    held_out: BoolArray = np.asarray(rng.random(size=(n,)) < forest.holdout)
    weight = _weights(forest, data, n, held_out)
    return _Fit(
        forest.fit_id,
        X,
        is_cat,
        pos,
        sval,
        codes,
        targets,
        weight,
        ClientRows.build(weight),
        code,
        held_out,
    )


def _targets(
    forest: ForestState, data: ClientData, code: int
) -> tuple[IntArray, FloatArray]:
    n = data.n_rows
    if forest.task == "regression":
        return np.zeros(n, dtype=np.int64), data.targets()
    if forest.target == "client":
        return np.full(n, code, dtype=np.int64), np.zeros(n)
    return data.label_codes(forest.classes), np.zeros(n)


def _weights(
    forest: ForestState, data: ClientData, n: int, held_out: BoolArray
) -> FloatArray:
    """Client-stratified bootstrap counts (x sample weights), per tree (§1.2)."""
    trees = forest.participation.shape[0]
    base = np.where(held_out, 0.0, 1.0)
    if data.weights is not None:
        base = base * data.weights
    weight = np.empty((trees, n))
    key = client_key(data.client_id)
    for b in range(trees):
        if forest.bootstrap:
            draws = keyed_rng(forest.seed, BOOTSTRAP, b, key).integers(0, n, n)
            weight[b] = np.bincount(draws, minlength=n) * base
        else:
            weight[b] = base
        if not forest.participation[b]:
            weight[b] = 0.0
    return weight


def _node_stats(
    fit: _Fit, request: LevelFields, open_nodes: IntArray
) -> tuple[FloatArray, IntArray]:
    return fit.rows.node_statistics(
        open_nodes,
        fit.weight,
        fit.codes,
        fit.targets,
        request.task != "regression",
        request.width,
    )


def _request_nodes(request: LevelFields) -> tuple[IntArray, IntArray]:
    """Return the request's open nodes and their considered features (int64)."""
    return (
        np.ascontiguousarray(request.open_nodes, dtype=np.int64),
        np.ascontiguousarray(request.pair_feature, dtype=np.int64),
    )


def _lean_stats(stats: FloatArray, request: LevelFields) -> np.ndarray:
    """Class counts in their smallest exact dtype; regression moments as floats."""
    return stats if request.task == "regression" else compact(stats)


@forest_handler("fedforest.sketch")
def sketch(
    request: SketchRequest, fit: _Fit, forest: ForestState, state: ClientState
) -> SketchReply:
    """Ragged quantile sketches (or distinct values) and statistics of every pair."""
    return _sketch(request, fit, forest)


def _sketch(request: SketchRequest, fit: _Fit, forest: ForestState) -> SketchReply:
    nodes, pairs = _request_nodes(request)
    stats, rows = _node_stats(fit, request, nodes)
    if request.candidates == "quantile":
        n_points, points = _points(fit, nodes, pairs, rows, request.q)
    else:  # every present row once: levels l/rows with unit weights enumerate them
        present = np.where(fit.weight > 0, 1.0, 0.0)
        q = max(int(rows.max(initial=1)), 1)
        n_points, points = _distinct(*_points(fit, nodes, pairs, rows, q, present))
    return SketchReply(
        compact(_counts(stats, request)),
        _lean_stats(stats, request),
        compact(n_points),
        points,
        _lean_stats(_category_stats(fit, request, nodes, pairs), request),
    )


@forest_handler("fedforest.sketch_evaluate")
def sketch_evaluate(
    request: SketchEvaluateRequest,
    fit: _Fit,
    forest: ForestState,
    state: ClientState,
) -> SketchEvaluateReply:
    """Sketch, then the bins of the candidates the server would derive from it.

    The server asks this only where every asked node may hold rows of this
    client alone (the strategy's **Decision**): the candidates are then the
    client's own (:func:`._candidates.own_candidates`).
    """
    sketched = _sketch(request, fit, forest)
    count, thresholds = request.own_layout(sketched)
    nodes, pairs = _request_nodes(request)
    index, bins = _sparse_bins(fit, request, nodes, pairs, count, thresholds)
    kept = {f.name: getattr(sketched, f.name) for f in dataclasses.fields(sketched)}
    return SketchEvaluateReply(**kept, bin_index=index, bin_stats=bins)


def _counts(stats: FloatArray, request: LevelFields) -> FloatArray:
    out: FloatArray = stats[:, 0] if request.task == "regression" else stats.sum(axis=1)
    return out


def _category_stats(
    fit: _Fit,
    request: SketchRequest,
    nodes: IntArray,
    pairs: IntArray,
) -> FloatArray:
    """Per-category statistics of the categorical pairs only, in row-major order."""
    categorical = (pairs >= 0) & fit.is_cat[np.maximum(pairs, 0)]
    shape = (int(categorical.sum()), request.max_categories, request.width)
    if shape[0] == 0:
        return np.zeros(shape)
    dense = fit.rows.category_statistics(
        nodes,
        fit.X,
        pairs,
        fit.is_cat,
        fit.weight,
        fit.codes,
        fit.targets,
        request.task != "regression",
        request.max_categories,
        request.width,
    )
    out: FloatArray = dense[categorical]
    return out


def _points(
    fit: _Fit,
    nodes: IntArray,
    pairs: IntArray,
    rows: IntArray,
    q: int,
    weight: FloatArray | None = None,
) -> tuple[IntArray, FloatArray]:
    """Return points per pair ``(n_open, F')`` and the flat ragged points."""
    numeric = (pairs >= 0) & ~fit.is_cat[np.maximum(pairs, 0)] & (rows[:, None] > 0)
    n_points = np.where(numeric, np.minimum(q, rows)[:, None] + 1, 0)
    out_ptr = np.concatenate([[0], np.cumsum(n_points.ravel())]).astype(np.int64)
    flat = fit.rows.sketch_points(
        nodes,
        pairs,
        fit.is_cat,
        fit.pos,
        fit.sval,
        fit.weight if weight is None else weight,
        rows,
        q,
        out_ptr,
        int(out_ptr[-1]),
    )
    return n_points.astype(np.int64), flat


def _distinct(n_points: IntArray, points: FloatArray) -> tuple[IntArray, FloatArray]:
    """Keep each pair's distinct values (exact mode), still ragged."""
    flat = n_points.ravel()
    first = np.zeros(points.shape[0], dtype=bool)
    first[(np.cumsum(flat) - flat)[flat > 0]] = True
    keep = first.copy()
    keep[1:] |= points[1:] != points[:-1]
    pair = np.repeat(np.arange(flat.shape[0]), flat)
    counts = np.bincount(pair[keep], minlength=flat.shape[0]).reshape(n_points.shape)
    return counts.astype(np.int64), np.ascontiguousarray(points[keep])


@forest_handler("fedforest.evaluate")
def evaluate(
    request: EvaluateRequest, fit: _Fit, _forest: ForestState, state: ClientState
) -> EvaluateReply | AvgImpReply:
    """Non-zero per-bin statistics of the candidates (or own gains, AvgImp)."""
    nodes, pairs = _request_nodes(request)
    count = np.asarray(request.thr_count, dtype=np.int64)
    if count.shape != pairs.shape or int(count.sum()) != request.thresholds.shape[0]:
        raise ValidationError("FedForest request: thr_count does not match thresholds.")
    thresholds = np.ascontiguousarray(request.thresholds, dtype=np.float64)
    _check_finite(thresholds)
    if request.mode == "avgimp":
        thr_ptr = np.concatenate([[0], np.cumsum(count.ravel())]).astype(np.int64)
        bins = _bin_stats(fit, request, nodes, pairs, thr_ptr, thresholds)
        width = max(int(count.max(initial=0)), 1)
        padded = padded_bins(bins, thr_ptr, (*count.shape, width))
        gains = _local_gains(padded, request.criterion)
        present = np.arange(width)[None, None, :] < count[..., None]
        return AvgImpReply(np.ascontiguousarray(gains[present]))
    index, bins = _sparse_bins(fit, request, nodes, pairs, count, thresholds)
    node_stats = (
        _node_stats(fit, request, nodes)[0]
        if request.with_stats
        else np.zeros((0, request.width))
    )
    return EvaluateReply(index, bins, _lean_stats(node_stats, request))


def _sparse_bins(
    fit: _Fit,
    request: LevelFields,
    nodes: IntArray,
    pairs: IntArray,
    count: IntArray,
    thresholds: FloatArray,
) -> tuple[np.ndarray, np.ndarray]:
    """Return the non-zero bins between ``count`` candidates per pair (index, stats)."""
    thr_ptr = np.concatenate([[0], np.cumsum(count.ravel())]).astype(np.int64)
    bins = _bin_stats(fit, request, nodes, pairs, thr_ptr, thresholds)
    index = np.flatnonzero(np.any(bins != 0, axis=1))
    return compact(index), _lean_stats(bins[index], request)


def _check_finite(thresholds: FloatArray) -> None:
    """Refuse candidates that are NaN or infinite before the compiled bin search.

    Candidates come sorted from the mixture inversion, which can leave two
    neighbours one rounding step out of order; that is not refused here.
    """
    if not np.all(np.isfinite(thresholds)):
        raise ValidationError("FedForest request: thresholds must be finite.")


def _bin_stats(
    fit: _Fit,
    request: LevelFields,
    nodes: IntArray,
    pairs: IntArray,
    thr_ptr: IntArray,
    thresholds: FloatArray,
) -> FloatArray:
    """Statistics per bin between consecutive candidates, ragged (rows = bins)."""
    return fit.rows.evaluate_bins(
        nodes,
        fit.X,
        pairs,
        fit.is_cat,
        thr_ptr,
        thresholds,
        fit.weight,
        fit.codes,
        fit.targets,
        request.task != "regression",
        request.width,
    )


def _local_gains(bins: FloatArray, criterion: str) -> FloatArray:
    """Return the local gain of every candidate; 0 if all rows fall on one side."""
    left = np.cumsum(bins, axis=-2)[..., :-1, :]
    gains = split_gains(bins.sum(axis=-2), left, criterion, 0.0)  # type: ignore[arg-type]
    return np.where(np.isfinite(gains), gains, 0.0)


@handler("fedforest.ranges", stateful=True)
def ranges(request: RangesRequest, data: ClientData, state: ClientState) -> RangesReply:
    """Each feature's (min, max) over the client's rows (Federated Histogram)."""
    _keep_forest(request, data, state)
    X = data.finite_matrix()
    return RangesReply(np.stack([X.min(axis=0), X.max(axis=0)], axis=1))


@forest_handler("fedforest.leaf_stats")
def leaf_stats(
    request: LeafStatsRequest, fit: _Fit, _forest: ForestState, state: ClientState
) -> LeafStatsReply:
    """Statistics of the open nodes."""
    stats, _ = _node_stats(fit, request, _request_nodes(request)[0])
    return LeafStatsReply(_lean_stats(stats, request))


@forest_handler("fedforest.top_k")
def top_k(
    request: TopKRequest, fit: _Fit, _forest: ForestState, state: ClientState
) -> TopKReply:
    """AvgImp shortlist: best local gain per considered feature (local quantiles)."""
    nodes, pairs = _request_nodes(request)
    _, rows = _node_stats(fit, request, nodes)
    n_points, flat = _points(fit, nodes, pairs, rows, request.q)
    points = np.full((*pairs.shape, request.q + 1), np.nan)
    points[np.arange(request.q + 1)[None, None, :] < n_points[..., None]] = flat
    local = points[..., 1:-1]  # interior local quantiles as local candidates
    thr_ptr, thr = ragged_thresholds(local)
    bins = _bin_stats(fit, request, nodes, pairs, thr_ptr, thr)
    padded = padded_bins(bins, thr_ptr, local.shape)
    gains = _local_gains(padded, request.criterion)
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
    request: ScoreRequest, fit: _Fit, forest: ForestState, state: ClientState
) -> ScoreReply:
    """Score the forest on this client's held-out rows (diagnostics, §1.4)."""
    _check_node_values(request, forest)
    held = np.flatnonzero(fit.held_out)
    trees = forest.participation.shape[0]
    node = np.repeat(np.arange(trees, dtype=np.int64)[:, None], held.shape[0], axis=1)
    _route(fit, forest, node, np.ones(node.shape), fit.X[held])
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
