"""FedGBDT client handlers: the start round and the level round.

What a client keeps for the run (per-run client state,
:mod:`fedtrees.federation._state`): the decisions it has been told (:mod:`._decisions`)
and the agreed grid (payloads, kept), and what it derives from them and its rows (memo):
its codes (``uint8``, once per fit), its validation rows (keyed by the seed and the
client), its running raw predictions (the starting margin plus every finished
iteration's leaf values, routed in code space), and the current iteration's rows
partitioned by node. g and h of its own rows come from its own raw predictions; only
their sums leave. Results never depend on the memo: a client that lost it rebuilds it
from the kept decisions and its data.

Size: one module past ~400 lines, by choice: the three handlers share the client's kept
decisions, their checks and the memo's catch-up, which is the part a hostile request
reaches first; splitting them would put that one path in several files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeVar

import numpy as np
import numpy.typing as npt

from fedtrees._random import client_key, keyed_rng
from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees._validation import is_real
from fedtrees.algorithms._requests import check_request_size, request_error
from fedtrees.algorithms.fedgbdt._config import (
    MAX_BOOSTING_DEPTH,
    MAX_OUTPUTS,
    MAX_SCALE_POS_WEIGHT,
    METRICS,
    BoostConfig,
    Objective,
    metric_objectives,
)
from fedtrees.algorithms.fedgbdt._decisions import (
    KIND_LEAF,
    DecisionLog,
    Decisions,
    route,
)
from fedtrees.algorithms.fedgbdt._learner import (
    boost_locally,
    code_splits,
    row_values,
    tree_histograms,
)
from fedtrees.algorithms.fedgbdt._loss import LOSSES, Loss
from fedtrees.algorithms.fedgbdt._payloads import (
    BoostState,
    LevelReply,
    LevelRequest,
    LocalReply,
    LocalRequest,
    StartReply,
    StartRequest,
)
from fedtrees.algorithms.histogram import (
    MAX_BINS,
    Grid,
    GridSketch,
    Histograms,
    NodeRows,
    bin_codes,
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

__all__ = ["level", "local", "start"]

GRID_KEY: Final = "fedgbdt.grid"
STATE_KEY: Final = "fedgbdt.state"
MEMO_KEY: Final = "fedgbdt.fit"
LOG_KEY: Final = "fedgbdt.log"
_HOLDOUT, _SUBSAMPLE = 1, 2  # generator keys
MAX_LOCAL_TREES: Final = 1000
R = TypeVar("R", LevelRequest, LocalRequest)
T = TypeVar("T")


def loss_objective(name: str) -> Objective:
    """Return ``name`` as an objective (checked by :func:`_objective` first)."""
    return LOSSES[name].objective


def _objective(request: StartRequest | LevelRequest | LocalRequest) -> Loss:
    loss = LOSSES.get(request.objective)
    if loss is None:
        raise request_error(
            request.kind,
            "objective",
            f"one of {sorted(LOSSES)}",
            repr(request.objective),
        )
    return loss


def _gradient_loss(request: LevelRequest | LocalRequest) -> Loss:
    """Return the request's objective with its positive-row factor and metric.

    ``scale_pos_weight`` is a finite factor > 0, other than 1 for binary
    logloss only; ``metric`` one of XGBoost's names the objective serves.
    """
    loss = _objective(request)
    scale = request.scale_pos_weight
    if not (
        is_real(scale)
        and 0.0 < scale <= MAX_SCALE_POS_WEIGHT
        and (scale == 1.0 or loss.objective == "binary")
    ):
        raise request_error(
            request.kind, "scale_pos_weight", f"in (0, {MAX_SCALE_POS_WEIGHT:g}], and "
            "1 unless the objective is binary", repr(scale),
        )  # fmt: skip
    metric = request.metric
    if metric and loss.objective not in metric_objectives(metric):
        raise request_error(
            request.kind, "metric", f"'' or a metric of {loss.objective!r} ("
            f"{[m for m in METRICS if loss.objective in METRICS[m]]})", repr(metric),
        )  # fmt: skip
    return loss.scaled(float(scale), metric)


def validation_rows(seed: int, client_id: str, n: int, holdout: float) -> BoolArray:
    """Return the client's validation rows: a keyed random ``holdout`` share."""
    held = np.zeros(n, dtype=bool)
    if holdout > 0:
        order = keyed_rng(seed, _HOLDOUT, client_key(client_id)).permutation(n)
        held[order[: round(holdout * n)]] = True
    return held


def _target(
    loss: Loss, request: StartRequest | LevelRequest | LocalRequest, data: ClientData
) -> FloatArray | IntArray:
    if loss.objective == "squared_error":
        return data.targets()
    return data.label_codes(np.asarray(request.classes))


def _weights_except(data: ClientData, left_out: BoolArray) -> FloatArray:
    """Return the rows' weights, 0 for the rows ``left_out``."""
    base = np.where(left_out, 0.0, 1.0)
    return base * data.weights if data.weights is not None else base


@handler("fedgbdt.start", stateful=True)
def start(
    request: StartRequest, data: ClientData, state: ClientState
) -> StartReply | MaskedReply:
    """Summarise the numeric columns of the training rows; the rows' prior sums.

    The prior of the training rows, and apart that of the validation rows
    (held out for early stopping). Masked (secure aggregation): the fine
    histograms of the columns over the declared ranges and both priors, as
    one masked vector.
    """
    skipped = skipped_columns(request, data)
    loss = _objective(request)
    X = matrix_with_missing(data)
    held = validation_rows(request.seed, data.client_id, X.shape[0], request.holdout)
    weight = _weights_except(data, held)
    target = _target(loss, request, data)
    prior = _prior(loss, request, target, weight)
    held_prior = _prior(loss, request, target, _weights_except(data, ~held))
    masked = MaskFields.of(request) is not None
    sketch = summarise_columns(request, X, skipped, weight, masked)
    if not isinstance(sketch, GridSketch):
        values = np.concatenate([sketch, prior, held_prior])
        return masked_reply(request, data, state, values, wide=request.wide_mask)
    return StartReply(
        sketch.points, sketch.weights, sketch.counts, sketch.complete, prior,
        held_prior,
    )  # fmt: skip


def _prior(
    loss: Loss, request: StartRequest, target: FloatArray | IntArray, weight: FloatArray
) -> FloatArray:
    """Return the rows' moments ``(Σw, Σw·y, Σw·y²)``, or their class counts."""
    if loss.objective == "squared_error":
        y = np.asarray(target, np.float64)
        return np.array([weight.sum(), weight @ y, weight @ (y * y)])
    counts: FloatArray = np.bincount(
        np.asarray(target, np.int64), weights=weight,
        minlength=int(request.classes.shape[0]),
    ).astype(np.float64)  # fmt: skip
    return counts


@dataclass
class _BoostFit:
    """What one client derives for one fit (the memo)."""

    fit_id: int
    columns: npt.NDArray[np.uint8]
    """Every row's codes, feature by feature (F, n_rows)."""
    target: FloatArray | IntArray
    held: BoolArray
    weight: FloatArray
    raw: FloatArray
    applied: int
    """Finished iterations added to ``raw``."""
    iteration: int = -1
    rows: NodeRows | None = None
    weights: FloatArray | None = None
    """The current iteration's row weights per tree (0: held out or not drawn)."""
    values: list[FloatArray] | None = None
    """What each row adds to its bins per tree (``row_values``), this iteration."""


@handler("fedgbdt.level", stateful=True)
def level(
    request: LevelRequest, data: ClientData, state: ClientState
) -> LevelReply | MaskedReply | Resync:
    """Answer every open node's sums and the non-zero bins of every asked pair.

    Masked (secure aggregation): the same, dense over every bin of the grid,
    with the losses, in fixed point and masked (:meth:`LevelRequest.dense_layout`).
    """
    loss = _gradient_loss(request)
    require_key(request, data, state)  # a lost key is not recovered by a resync
    ready = _caught_up(request, loss, data, state, _check_level)
    if isinstance(ready, Resync):
        return ready
    table, fit, _ = ready
    report = _losses(loss, fit) if request.report else np.zeros(4)
    nodes = np.ascontiguousarray(request.open_nodes, dtype=np.int64)
    pairs = np.ascontiguousarray(request.pair_feature, dtype=np.int64)
    masked = MaskFields.of(request) is not None
    if nodes.shape[0] == 0:
        empty = Histograms.empty(0, 3)
        if masked:
            dense = request.dense_layout().dense(np.zeros((0, 3)), empty, report)
            return masked_reply(request, data, state, dense, wide=request.wide_mask)
        return LevelReply(
            np.zeros((0, 2)), np.zeros(0), np.zeros((0, pairs.shape[1]), np.uint8),
            empty.codes, empty.stats, report,
        )  # fmt: skip
    rows = _iteration_rows(fit, table, request, data)
    if fit.values is None:
        g, h = loss.gradients(fit.raw, fit.target, np.ones(fit.raw.shape[0]))
        fit.values = row_values(g, h)
    assert fit.weights is not None  # set with the rows
    stats, found = tree_histograms(
        rows, nodes, pairs, fit.columns, fit.weights, fit.values
    )
    if masked:
        dense = request.dense_layout().dense(stats, found, report)
        return masked_reply(request, data, state, dense, wide=request.wide_mask)
    return LevelReply(
        stats[:, :2], stats[:, 2], found.counts.reshape(pairs.shape).astype(np.uint16),
        found.codes, found.stats, report,
    )  # fmt: skip


def _caught_up(
    request: R,
    loss: Loss,
    data: ClientData,
    state: ClientState,
    check: Callable[[R, Grid], T],
) -> tuple[Decisions, _BoostFit, T] | Resync:
    """Keep the request's grid and decisions; bring the raw predictions up to date.

    ``check`` refuses the request's sizes before anything is allocated; what it
    returns (the checked settings) comes back with the decisions and the memo. A
    client missing its kept grid or decisions answers :class:`Resync`.
    """
    grid = keep_grid(request, data, state, GRID_KEY)
    if grid is None:
        return Resync("the agreed grid is not kept")
    table = _kept_decisions(request, state, grid)
    if table is None:
        return Resync("the kept decisions are not the request's base version")
    checked = check(request, grid)
    fit = _fit(request, loss, grid, data, state)
    _catch_up(fit, table, request)
    return table, fit, checked


def _check_level(request: LevelRequest, grid: Grid) -> None:
    """Refuse sizes and ids that do not fit the fit (before any allocation)."""
    if request.margin.shape != (request.n_trees,):
        raise request_error(
            request.kind, "margin", f"{request.n_trees} values (one per tree)",
            f"shape {request.margin.shape}",
        )  # fmt: skip
    pairs = np.asarray(request.pair_feature)
    n_features = grid.n_bins.shape[0]
    if (
        pairs.ndim != 2
        or pairs.shape[0] != request.n_open
        or pairs.shape[1] > n_features
    ):
        raise request_error(
            request.kind, "pair_feature", f"one row per open node of at most "
            f"{n_features} features", f"shape {pairs.shape}",
        )  # fmt: skip
    if np.any(pairs >= n_features) or np.any(pairs < -1):
        raise request_error(
            request.kind, "pair_feature", f"features in [-1, {n_features})", "others"
        )
    if not 0.0 < request.subsample <= 1.0 or not 0.0 <= request.holdout < 1.0:
        raise request_error(
            request.kind, "subsample", "in (0, 1] (holdout in [0, 1))",
            f"{request.subsample} ({request.holdout})",
        )  # fmt: skip


# -- the decisions the client keeps ---------------------------------------------------
def _kept_decisions(
    request: LevelRequest | LocalRequest, state: ClientState, grid: Grid
) -> Decisions | None:
    """Append the request's decisions to the kept ones; None if versions differ.

    The kept table is the state's; the memo holds it as a :class:`DecisionLog`
    so that appending costs the new rows only.
    """
    found = state.get(STATE_KEY, BoostState)
    log = state.memo.get(LOG_KEY)
    if request.full or request.base == 0:
        log = DecisionLog(request.fit_id, Decisions.empty())  # all come with it
    elif found is None or found.fit_id != request.fit_id:
        return None
    elif not (
        isinstance(log, DecisionLog)
        and log.fit_id == request.fit_id
        and len(log) == found.d_node.shape[0]
    ):
        log = DecisionLog(request.fit_id, Decisions.from_fields(found))
    if len(log) != request.base:
        return None
    more = Decisions.from_fields(request)
    since = int(log.table.iteration[-1]) if len(log) else 0
    _check_decisions(request, more, grid, since)
    table = log.append(more)
    state.memo[LOG_KEY] = log
    state.put(STATE_KEY, BoostState(fit_id=request.fit_id, **table.as_fields()))
    return table


def _check_decisions(
    request: LevelRequest | LocalRequest, table: Decisions, grid: Grid, since: int
) -> None:
    """Require new decisions in iteration order, with set pointers that add up.

    Their iterations run from ``since`` (the last kept one) to the request's.
    Node ids stay below what ``n_trees`` trees of the deepest depth hold, and a
    split names a feature of the grid: nothing is sized by a hostile id. The
    kept decisions were checked when they came.
    """
    check_request_size(
        request.kind, "n_trees", request.n_trees, MAX_OUTPUTS, "one tree per class",
        low=1,
    )  # fmt: skip
    most_nodes = request.n_trees * 2 ** (MAX_BOOSTING_DEPTH + 1)
    split = table.kind != KIND_LEAF
    ids = np.concatenate([table.node, table.left[split], table.right[split]])
    if np.any(ids >= most_nodes) or np.any(
        (table.feature[split] < 0) | (table.feature[split] >= grid.n_bins.shape[0])
    ):
        raise request_error(
            request.kind, "d_node", f"node ids below {most_nodes} and split "
            f"features in [0, {grid.n_bins.shape[0]})", "others",
        )  # fmt: skip
    ptr = table.set_ptr
    if (
        np.any(np.diff(table.iteration) < 0)
        or (len(table) and table.iteration[0] < since)
        or (len(table) and table.iteration[-1] > request.iteration)
        or ptr.shape != (len(table) + 1,)
        or ptr[0] != 0
        or np.any(np.diff(ptr) < 0)
        or ptr[-1] != table.set_codes.shape[0]
        or np.any(table.node < 0)
        or np.any((table.kind != KIND_LEAF) & ((table.left < 0) | (table.right < 0)))
    ):
        raise request_error(
            request.kind, "d_iteration", "decisions in iteration order with valid "
            "nodes and set pointers", "others",
        )  # fmt: skip


# -- the memo: codes, raw predictions, this iteration's rows -------------------------
def _fit(
    request: LevelRequest | LocalRequest,
    loss: Loss,
    grid: Grid,
    data: ClientData,
    state: ClientState,
) -> _BoostFit:
    """Return the memo of this fit, or build it (codes, target, weights, scores)."""

    def build() -> _BoostFit:
        X = matrix_with_missing(data)
        n = X.shape[0]
        margin = np.asarray(request.margin, dtype=np.float64)
        return _BoostFit(
            request.fit_id,
            np.ascontiguousarray(bin_codes(X, grid).T),
            _target(loss, request, data),
            validation_rows(request.seed, data.client_id, n, request.holdout),
            data.weights if data.weights is not None else np.ones(n),
            np.repeat(margin[None, :], n, axis=0),
            0,
        )

    return state.memo_of(MEMO_KEY, _BoostFit, request.fit_id, build)


def _catch_up(
    fit: _BoostFit, table: Decisions, request: LevelRequest | LocalRequest
) -> None:
    """Add every finished iteration's leaf values to the raw predictions."""
    while fit.applied < request.iteration:
        routed = route(
            table.of_iteration(fit.applied), request.n_trees, fit.columns,
            MAX_BOOSTING_DEPTH,
        )  # fmt: skip
        if routed is None:
            raise request_error(
                request.kind, "d_left", f"trees at most {MAX_BOOSTING_DEPTH} deep",
                f"a path of iteration {fit.applied} deeper (children pointing back)",
            )  # fmt: skip
        fit.raw += routed[1].T
        fit.applied += 1


def _losses(loss: Loss, fit: _BoostFit) -> FloatArray:
    """Σ loss and Σ weight of the training and the validation rows."""
    per_row = loss.row_loss(fit.raw, fit.target) * fit.weight
    train, held = ~fit.held, fit.held
    return np.array([
        per_row[train].sum(), fit.weight[train].sum(),
        per_row[held].sum(), fit.weight[held].sum(),
    ])  # fmt: skip


def _iteration_rows(
    fit: _BoostFit, table: Decisions, request: LevelRequest, data: ClientData
) -> NodeRows:
    """Return the iteration's rows by node: drawn (``subsample``), partitioned."""
    t = request.iteration
    if fit.iteration != t or fit.rows is None:
        weight = np.where(fit.held, 0.0, fit.weight)
        if request.subsample < 1.0:
            rng = keyed_rng(request.seed, _SUBSAMPLE, t, client_key(data.client_id))
            weight = weight * (rng.random(weight.shape[0]) < request.subsample)
        fit.weights = np.repeat(weight[None, :], request.n_trees, axis=0)
        fit.rows = NodeRows.build(fit.weights)
        fit.iteration = t
        fit.values = None
    partition(fit.rows, fit.columns, code_splits(table.of_iteration(t), fit.rows))
    return fit.rows


@handler("fedgbdt.local", stateful=True)
def local(
    request: LocalRequest, data: ClientData, state: ClientState
) -> LocalReply | Resync:
    """Boost trees on the client's own rows from the global model (baselines)."""
    loss = _gradient_loss(request)
    ready = _caught_up(request, loss, data, state, _check_local)
    if isinstance(ready, Resync):
        return ready
    _, fit, (grid, config) = ready
    report = _losses(loss, fit)
    grown, cover = boost_locally(
        fit.columns, fit.target, np.where(fit.held, 0.0, fit.weight), fit.raw, loss,
        grid, config, np.asarray(request.features, np.int64), request.first,
    )  # fmt: skip
    return LocalReply(**grown.as_fields(), cover=cover, loss=report)


def _check_local(request: LocalRequest, grid: Grid) -> tuple[Grid, BoostConfig]:
    """Refuse a baseline request's sizes and settings before any work.

    Returns the grid and the learner's settings, checked once.
    """
    return grid, _learner_config(request, grid)


def _learner_config(request: LocalRequest, grid: Grid) -> BoostConfig:
    """Return the learner's settings from the request, checked before any work."""
    check_request_size(
        request.kind, "max_depth", request.max_depth, MAX_BOOSTING_DEPTH,
        "the deepest tree", low=1,
    )  # fmt: skip
    features = np.asarray(request.features)
    n_features = grid.n_bins.shape[0]
    if (
        features.ndim != 3
        or features.shape[1] != request.n_trees
        or features.shape[0] > MAX_LOCAL_TREES
        or np.any(features < 0)
        or np.any(features >= n_features)
    ):
        raise request_error(
            request.kind, "features", f"(trees <= {MAX_LOCAL_TREES}, "
            f"{request.n_trees}, F') features in [0, {n_features})",
            f"shape {features.shape}",
        )  # fmt: skip
    values = (request.learning_rate, request.reg_lambda, request.gamma,
              request.min_child_weight)  # fmt: skip
    if not all(np.isfinite(values)) or request.learning_rate <= 0 or min(values) < 0:
        raise request_error(
            request.kind, "learning_rate", "finite learner settings (learning_rate "
            "> 0; reg_lambda, gamma, min_child_weight >= 0)", values,
        )  # fmt: skip
    return BoostConfig(
        objective=loss_objective(request.objective),
        n_classes=int(request.classes.shape[0]),
        n_estimators=1,
        max_depth=request.max_depth,
        learning_rate=request.learning_rate,
        reg_lambda=request.reg_lambda,
        gamma=request.gamma,
        min_child_weight=request.min_child_weight,
        subsample=1.0,
        colsample_bytree=1.0,
        max_bins=MAX_BINS,
        base_score=None,
        early_stopping_rounds=None,
        validation_fraction=0.1,
        protocol="histogram",
        trees_per_round=1,
        on_dropout="fail",
        seed=request.seed,
    )
