"""FedForest client handlers: route local rows, then sketch or evaluate.

Stateless by contract: every request carries the forest so far, and a client
recomputes whatever it needs from (its data, the request). In process, a client
keeps a cache per fit (presorted features, bootstrap weights, each row's node in
each tree) so a level costs one routing step instead of a full descent; results
never depend on it (:data:`USE_CACHE` switches it off, tests compare). The cache
holds every client of the :data:`CACHED_FITS` most recent fits (**Decision**: a
per-entry LRU smaller than the federation would evict each client just before
its next turn); :func:`release` frees a fit once it is over.

Randomness is keyed (STYLE habit 8): tree b's bootstrap on a client uses
``default_rng([seed, 0, b, crc32(client id)])`` — independent of order and
transport; held-out rows (diagnostics) use ``[seed, 3, crc32(client id)]``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

import numpy as np

from fedtrees._random import client_key, keyed_rng
from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees.algorithms.fedforest import _kernels as kernels
from fedtrees.algorithms.fedforest._payloads import (
    SCORE_BINS,
    AvgImpReply,
    EvaluateReply,
    EvaluateRequest,
    LeafStatsReply,
    LeafStatsRequest,
    LevelFields,
    RangesReply,
    RangesRequest,
    ScoreReply,
    ScoreRequest,
    SketchReply,
    SketchRequest,
    TopKReply,
    TopKRequest,
)
from fedtrees.exceptions import ValidationError
from fedtrees.federation import ClientData, handler
from fedtrees.stats import split_gains

__all__ = ["CACHED_FITS", "USE_CACHE", "check_structure", "release"]

USE_CACHE = True
CACHED_FITS: Final = 2
_CACHE: OrderedDict[int, dict[str, _Fit]] = OrderedDict()
_LOCK = threading.Lock()
BOOTSTRAP, HOLDOUT = 0, 3


@dataclass
class _Fit:
    """What one client derives for one fit: presorted data, weights, routing."""

    X: FloatArray
    is_cat: BoolArray
    order: IntArray
    pos: IntArray
    sval: FloatArray
    codes: IntArray
    targets: FloatArray
    weight: FloatArray
    node: IntArray
    client_code: int
    held_out: BoolArray


def check_structure(request: LevelFields, n_features: int) -> None:
    """Refuse a malformed forest before any (unchecked) kernel touches it."""
    n = request.node_feature.shape[0]
    trees = request.participation.shape[0]
    arrays = (
        request.node_tree,
        request.node_threshold,
        request.node_left,
        request.node_right,
    )
    if any(a.shape != (n,) for a in arrays) or request.set_ptr.shape != (n + 1,):
        raise ValidationError(
            "FedForest request: node arrays have inconsistent lengths."
        )
    if (
        trees < 1
        or n < trees
        or not np.array_equal(request.node_tree[:trees], np.arange(trees))
    ):
        raise ValidationError(
            "FedForest request: nodes 0..B-1 must be the roots of the B trees."
        )
    feature = request.node_feature
    if np.any(feature < -2) or np.any(feature >= n_features):
        raise ValidationError("FedForest request: a split names an unknown feature.")
    split = np.flatnonzero(feature != kernels.SPLIT_NONE)
    left, right = request.node_left[split], request.node_right[split]
    if (
        np.any(left <= split)
        or np.any(right <= split)
        or np.any(left >= n)
        or np.any(right >= n)
    ):
        raise ValidationError("FedForest request: children must follow their parent.")
    ptr, codes = request.set_ptr, request.set_codes
    if (
        ptr[0] != 0
        or ptr[-1] != codes.shape[0]
        or np.any(np.diff(ptr) < 0)
        or np.any(codes < 0)
    ):
        raise ValidationError("FedForest request: malformed category sets.")
    open_nodes = request.open_nodes
    if open_nodes.size and (
        np.any(open_nodes < 0)
        or np.any(open_nodes >= n)
        or np.any(feature[open_nodes] != kernels.SPLIT_NONE)
        or np.any(np.diff(request.node_tree[open_nodes]) < 0)
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


def _prepare(request: LevelFields, data: ClientData) -> _Fit:
    """Return the cached fit state routed to this request's level (or a new one)."""
    with _LOCK:
        fit = _CACHE.get(request.fit_id, {}).get(data.client_id) if USE_CACHE else None
    if fit is None:
        fit = _build(request, data)
    check_structure(request, fit.X.shape[1])
    _route(fit, request, fit.node, fit.weight, fit.X)
    if USE_CACHE:
        with _LOCK:
            _CACHE.setdefault(request.fit_id, {})[data.client_id] = fit
            _CACHE.move_to_end(request.fit_id)
            while len(_CACHE) > CACHED_FITS:
                _CACHE.popitem(last=False)
    return fit


def release(fit_id: int) -> None:
    """Forget the cached client state of a finished fit (in process)."""
    with _LOCK:
        _CACHE.pop(fit_id, None)


def _route(
    fit: _Fit, request: LevelFields, node: IntArray, weight: FloatArray, X: FloatArray
) -> None:
    """Move the rows of ``X`` down the request's forest (``node`` in place)."""
    kernels.route(
        node,
        weight,
        X,
        fit.client_code,
        request.node_feature,
        request.node_threshold,
        request.node_left,
        request.node_right,
        request.set_ptr,
        request.set_codes,
        fit.is_cat,
    )


def _build(request: LevelFields, data: ClientData) -> _Fit:
    X = np.ascontiguousarray(data.finite_matrix())
    n = X.shape[0]
    is_cat = np.array([k == "categorical" for k in data.feature_kinds], dtype=bool)
    order = np.ascontiguousarray(
        np.argsort(X, axis=0, kind="stable").T.astype(np.int64)
    )
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.arange(n, dtype=np.int64)[None, :], axis=1)
    sval = np.ascontiguousarray(np.take_along_axis(X.T, order, axis=1))
    clients = request.clients.tolist()
    if data.client_id not in clients:
        raise ValidationError(
            f"Client {data.client_id!r} is not in the request's client list."
        )
    code = clients.index(data.client_id)
    codes, targets = _targets(request, data, code)
    rng = keyed_rng(request.seed, HOLDOUT, client_key(data.client_id))
    held_out: BoolArray = np.asarray(rng.random(size=(n,)) < request.holdout)
    weight = _weights(request, data, n, code, held_out)
    trees = request.participation.shape[0]
    node = np.repeat(np.arange(trees, dtype=np.int64)[:, None], n, axis=1)
    return _Fit(
        X, is_cat, order, pos, sval, codes, targets, weight, node, code, held_out
    )


def _targets(
    request: LevelFields, data: ClientData, code: int
) -> tuple[IntArray, FloatArray]:
    n = data.n_rows
    if request.task == "regression":
        return np.zeros(n, dtype=np.int64), data.targets()
    if request.target == "client":
        return np.full(n, code, dtype=np.int64), np.zeros(n)
    return data.label_codes(request.classes), np.zeros(n)


def _weights(
    request: LevelFields, data: ClientData, n: int, code: int, held_out: BoolArray
) -> FloatArray:
    """Client-stratified bootstrap counts (x sample weights), per tree (§1.2)."""
    trees = request.participation.shape[0]
    base = np.where(held_out, 0.0, 1.0)
    if data.weights is not None:
        base = base * data.weights
    weight = np.empty((trees, n))
    key = client_key(data.client_id)
    for b in range(trees):
        if request.bootstrap:
            draws = keyed_rng(request.seed, BOOTSTRAP, b, key).integers(0, n, n)
            weight[b] = np.bincount(draws, minlength=n) * base
        else:
            weight[b] = base
        if not request.participation[b, code]:
            weight[b] = 0.0
    return weight


@dataclass(frozen=True)
class _Slots:
    """Open nodes of a request as kernel inputs."""

    open_slot: IntArray
    ranges: IntArray


def _slots(request: LevelFields) -> _Slots:
    n = request.node_feature.shape[0]
    open_slot = np.full(n, -1, dtype=np.int64)
    open_slot[request.open_nodes] = np.arange(request.n_open, dtype=np.int64)
    trees = request.participation.shape[0]
    tree_of_open = request.node_tree[request.open_nodes]
    lo = np.searchsorted(tree_of_open, np.arange(trees), side="left")
    hi = np.searchsorted(tree_of_open, np.arange(trees), side="right")
    return _Slots(open_slot, np.stack([lo, hi], axis=1).astype(np.int64))


def _node_stats(
    fit: _Fit, request: LevelFields, slots: _Slots
) -> tuple[FloatArray, IntArray]:
    stats, rows = kernels.node_statistics(
        fit.node,
        fit.weight,
        slots.open_slot,
        slots.ranges,
        request.n_open,
        fit.codes,
        fit.targets,
        request.task != "regression",
        request.width,
    )
    return stats, rows


@handler("fedforest.sketch")
def sketch(request: SketchRequest, data: ClientData) -> SketchReply:
    """Quantile sketches (or distinct values) and statistics of every open pair."""
    fit = _prepare(request, data)
    slots = _slots(request)
    stats, rows = _node_stats(fit, request, slots)
    if request.candidates == "quantile":
        points = _points(fit, request, slots, rows, request.q)
    else:  # every present row once: levels l/rows with unit weights enumerate them
        present = np.where(fit.weight > 0, 1.0, 0.0)
        q = max(int(rows.max(initial=1)), 1)
        points = _distinct(_points(fit, request, slots, rows, q, present))
    cat = kernels.category_statistics(
        fit.node,
        fit.weight,
        fit.X,
        slots.open_slot,
        slots.ranges,
        request.pair_feature,
        fit.is_cat,
        fit.codes,
        fit.targets,
        request.task != "regression",
        request.n_open,
        request.max_categories,
        request.width,
    )
    return SketchReply(_counts(stats, request), stats, points, cat)


def _counts(stats: FloatArray, request: LevelFields) -> FloatArray:
    out: FloatArray = stats[:, 0] if request.task == "regression" else stats.sum(axis=1)
    return out


def _points(
    fit: _Fit,
    request: LevelFields,
    slots: _Slots,
    rows: IntArray,
    q: int,
    weight: FloatArray | None = None,
) -> FloatArray:
    """Return padded (n_open, F', q+1) quantile points; NaN where fewer."""
    pairs = request.pair_feature
    numeric = (pairs >= 0) & ~fit.is_cat[np.maximum(pairs, 0)] & (rows[:, None] > 0)
    n_points = np.where(numeric, np.minimum(q, rows)[:, None] + 1, 0)
    out_ptr = np.concatenate([[0], np.cumsum(n_points.ravel())]).astype(np.int64)
    flat = kernels.sketch_points(
        fit.node,
        fit.weight if weight is None else weight,
        fit.order,
        fit.pos,
        fit.sval,
        slots.open_slot,
        slots.ranges,
        pairs,
        fit.is_cat,
        rows,
        q,
        out_ptr,
        int(out_ptr[-1]),
    )
    padded = np.full((*pairs.shape, q + 1), np.nan)
    column = np.arange(q + 1)
    mask = column[None, None, :] < n_points[..., None]
    padded[mask] = flat
    return padded


def _distinct(points: FloatArray) -> FloatArray:
    """Keep each sketch's distinct values (exact mode), NaN-padded to the widest."""
    repeat = np.zeros(points.shape, dtype=bool)
    repeat[..., 1:] = points[..., 1:] == points[..., :-1]
    values = np.where(repeat, np.nan, points)
    values = np.sort(values, axis=-1)  # NaN last
    width = max(int((~np.isnan(values)).sum(axis=-1).max(initial=0)), 1)
    return np.ascontiguousarray(values[..., :width])


@handler("fedforest.evaluate")
def evaluate(request: EvaluateRequest, data: ClientData) -> EvaluateReply | AvgImpReply:
    """Per-bin statistics of the candidates (or the client's own gains, AvgImp)."""
    fit = _prepare(request, data)
    slots = _slots(request)
    bins = _bin_stats(fit, request, slots, request.thresholds)
    if request.mode == "avgimp":
        return AvgImpReply(_local_gains(bins, request.criterion))
    stats, _ = _node_stats(fit, request, slots)
    return EvaluateReply(bins, stats)


def _bin_stats(
    fit: _Fit, request: LevelFields, slots: _Slots, thresholds: FloatArray
) -> FloatArray:
    """Statistics per bin between consecutive (sorted, NaN-padded) thresholds."""
    n_thr = (~np.isnan(thresholds)).sum(axis=-1).astype(np.int64)
    stats: FloatArray = kernels.evaluate_bins(
        fit.node,
        fit.weight,
        fit.X,
        slots.open_slot,
        slots.ranges,
        request.pair_feature,
        fit.is_cat,
        np.ascontiguousarray(thresholds, dtype=np.float64),
        n_thr,
        fit.codes,
        fit.targets,
        request.task != "regression",
        request.width,
    )
    return stats


def _local_gains(bins: FloatArray, criterion: str) -> FloatArray:
    """Return the local gain of every candidate; 0 if all rows fall on one side."""
    left = np.cumsum(bins, axis=-2)[..., :-1, :]
    gains = split_gains(bins.sum(axis=-2), left, criterion, 0.0)  # type: ignore[arg-type]
    return np.where(np.isfinite(gains), gains, 0.0)


@handler("fedforest.ranges")
def ranges(request: RangesRequest, data: ClientData) -> RangesReply:
    """Each feature's (min, max) over the client's rows (Federated Histogram)."""
    X = data.finite_matrix()
    return RangesReply(np.stack([X.min(axis=0), X.max(axis=0)], axis=1))


@handler("fedforest.leaf_stats")
def leaf_stats(request: LeafStatsRequest, data: ClientData) -> LeafStatsReply:
    """Statistics of the open nodes."""
    fit = _prepare(request, data)
    stats, _ = _node_stats(fit, request, _slots(request))
    return LeafStatsReply(stats)


@handler("fedforest.top_k")
def top_k(request: TopKRequest, data: ClientData) -> TopKReply:
    """AvgImp shortlist: best local gain per considered feature (local quantiles)."""
    fit = _prepare(request, data)
    slots = _slots(request)
    _, rows = _node_stats(fit, request, slots)
    points = _points(fit, request, slots, rows, request.q)
    local = points[..., 1:-1]  # interior local quantiles as local candidates
    gains = _local_gains(_bin_stats(fit, request, slots, local), request.criterion)
    best = np.where(request.pair_feature >= 0, gains.max(axis=-1, initial=0.0), -np.inf)
    k = min(request.k, best.shape[1])
    order = np.argsort(-best, axis=1, kind="stable")[:, :k]
    chosen = np.take_along_axis(best, order, axis=1)
    slots_out = np.where(np.isfinite(chosen), order, -1)
    pad = request.k - k
    return TopKReply(
        np.pad(slots_out, ((0, 0), (0, pad)), constant_values=-1).astype(np.int64),
        np.pad(np.where(np.isfinite(chosen), chosen, 0.0), ((0, 0), (0, pad))),
    )


@handler("fedforest.score")
def score(request: ScoreRequest, data: ClientData) -> ScoreReply:
    """Score the forest on this client's held-out rows (diagnostics, §1.4)."""
    fit = _prepare(request, data)
    held = np.flatnonzero(fit.held_out)
    trees = request.participation.shape[0]
    node = np.repeat(np.arange(trees, dtype=np.int64)[:, None], held.shape[0], axis=1)
    _route(fit, request, node, np.ones(node.shape), fit.X[held])
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
