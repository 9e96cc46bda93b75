"""The FedGBDT server strategy: the histogram engine, boosting (docs/fedgbdt.md).

Rounds, after the agreement:

1. **start**: every client summarises its numeric columns (the engine's grid)
   and sends its training rows' prior sums; the server agrees the grid and the
   starting raw prediction (``base_score``, or the pooled prior).
2. **levels**: for every iteration, one round per level of its trees
   (:mod:`._grow`): the clients answer the open nodes' ``(Σg, Σh, Σw)`` and
   their bins (the smaller child only where the parent's histograms are kept:
   subtraction); the server splits, and the splits reach the clients in the
   next request (decisions, :mod:`._decisions`). The finished trees' leaves
   reach them in the next iteration's first request, which also asks every
   client for its summed training and validation loss (early stopping).
3. **last report**: the last trees' leaves, and the final losses.

Every reply is held to what the server knows (:mod:`._bounds`): each site's
start reply (its rows' weights and target spread) bounds its later loss
weights, losses and gradient sums, and the trees grown so far bound how far
a prediction has moved; a fit whose pooled targets could overflow the
server's own sums is refused after the start round.

Under secure aggregation (docs/security.md) every round is masked: the start
sends fine histograms over the declared ``feature_ranges`` (or none, with
declared edges) and the priors; a level sends dense histograms, the node sums
and the losses; the server reads the pooled ones back from the masked sum
and holds them to the same bounds (:mod:`._pooled`).

Rounds: ``2 + n_estimators · max_depth`` at most (fewer when trees stop
early or early stopping ends the fit).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fedtrees._random import keyed_rng
from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms._ranges import secure_ranges
from fedtrees.algorithms.fedgbdt._bounds import Prior, leaf_reach
from fedtrees.algorithms.fedgbdt._config import BoostConfig, with_classes
from fedtrees.algorithms.fedgbdt._decisions import Decisions
from fedtrees.algorithms.fedgbdt._grow import Iteration, decide_level
from fedtrees.algorithms.fedgbdt._known import Known
from fedtrees.algorithms.fedgbdt._loss import LOSSES, Loss, metric_name, prior_margin
from fedtrees.algorithms.fedgbdt._payloads import (
    LevelReply,
    LevelRequest,
    StartReply,
    StartRequest,
    level_layout,
    prior_width,
    wide_statistics,
)
from fedtrees.algorithms.fedgbdt._pooled import (
    PooledStart,
    level_sum_check,
    start_sum_check,
)
from fedtrees.algorithms.histogram import (
    FINE_BINS,
    Bins,
    Grid,
    GridSketch,
    Kept,
    LevelPlan,
    agree_grid,
    declared_grid,
    derive_level,
    fine_edges,
    keep_split,
    level_histograms,
    merged_grid,
    plan_level,
)
from fedtrees.exceptions import LocalProtocolError
from fedtrees.federation import (
    FederationInfo,
    MaskedRound,
    MaskedRounds,
    Payload,
    RoundPlan,
    ServerStrategy,
    as_reply,
    check_cohort,
    rounding_bound,
)

__all__ = ["BoostResult", "FedGBDTStrategy"]

_COLUMNS = 3  # feature draws (generator key)


@dataclass
class BoostResult:
    """The fitted model in the server's terms."""

    grid: Grid
    margin: FloatArray
    iterations: list[Iteration]
    evals: dict[str, list[float]]
    best_iteration: int
    info: FederationInfo


@dataclass
class _Level:
    """What one level round asked: the nodes, their features, the plan."""

    nodes: IntArray
    pairs: IntArray
    plan: LevelPlan
    report: bool


@dataclass
class _Progress:
    """Losses reported so far (one entry per finished iteration)."""

    train: list[float] = field(default_factory=list)
    valid: list[float] = field(default_factory=list)


class FedGBDTStrategy(ServerStrategy):
    """Server side of FedGBDT (see the module docstring)."""

    def __init__(self, config: BoostConfig, fit_id: int) -> None:
        self.config = config
        self.fit_id = fit_id
        self.info: FederationInfo | None = None
        self.grid: Grid | None = None
        self.margin = np.zeros(config.n_trees_per_iteration)
        self.decisions = Decisions.empty()
        self.held: dict[str, int] = {}
        self.active: list[str] = []
        self.iterations: list[Iteration] = []
        self.current: Iteration | None = None
        self.kept = Kept.none(3)
        self.level: _Level | None = None
        self.progress = _Progress()
        self.stopped = False
        self.done = False
        self.started = False
        self.best_iteration = 0
        self._declared: dict[int, FloatArray] = {}
        self._sketched = np.zeros(0, bool)
        self._ranges: FloatArray | None = None
        self.masks = MaskedRounds({})
        self.known = Known(config.objective, config.protocol, config.scale_pos_weight)
        """The sites' start priors and the model's reach (:mod:`._bounds`)."""

    @property
    def secure_aggregation(self) -> bool:
        """Whether the run exchanges keys and masks its rounds (docs/security.md)."""
        return self.config.secure_aggregation

    # -- the protocol ------------------------------------------------------------------
    def start(self, info: FederationInfo) -> None:
        """Remember the clients; check the declared edges."""
        self.info = info
        self.active = list(info.clients)
        self.masks = MaskedRounds(info.public_keys)
        schema = info.schema
        self.config = with_classes(self.config, len(schema.classes), "FedGBDT")
        self.known = Known(
            self.config.objective, self.config.protocol, self.config.scale_pos_weight
        )
        self.margin = np.zeros(self.config.n_trees_per_iteration)
        is_cat = np.array([k == "categorical" for k in schema.feature_kinds], bool)
        self._declared = declared_grid(
            self.config.bin_edges or {}, list(schema.feature_names), is_cat,
            self.config.max_bins, "FedGBDT",
        )  # fmt: skip
        self._sketched = ~is_cat & ~np.isin(
            np.arange(schema.n_features), list(self._declared)
        )
        if self.config.secure_aggregation:
            check_cohort(info.clients, "FedGBDT")
            self._ranges = (
                secure_ranges(
                    self.config.feature_ranges, info, self._sketched, "FedGBDT"
                )
                if self._sketched.any()
                else np.zeros((schema.n_features, 2))
            )

    def expected_rounds(self) -> int:
        """Return the rounds: the start, one per level of every iteration, a report."""
        return 2 + self.config.n_estimators * self.config.max_depth

    def plan_round(self, round: int) -> RoundPlan | None:
        """Ask the start, a level, or the last report; None when done."""
        if self.done:
            return None
        if not self.started:
            request = self._start_request()
            fine = int(self._sketched.sum()) * FINE_BINS
            masked = self._mask(fine + 2 * request.prior_width)
            if masked is not None:
                assert self._ranges is not None
                request = replace(request, ranges=self._ranges, **masked.fields())
            return RoundPlan(
                dict.fromkeys(self.active, request),
                self.config.on_dropout,
                check=None if masked is not None else self.known.start_check(),
                masked=masked,
            )
        return self._level_plan()

    def _mask(self, length: int) -> MaskedRound | None:
        """Start a masked round of the active clients (secure aggregation only)."""
        if not self.config.secure_aggregation:
            return None
        wide = wide_statistics(self.config.objective)
        return self.masks.start(self.active, length, wide=wide)

    def aggregate(self, round: int, replies: Mapping[str, Payload]) -> None:
        """Fold the start, or one level (and the losses it reports)."""
        dropped = [c for c in self.active if c not in replies]
        self.active = [c for c in self.active if c in replies]
        if not self.started:
            if self.config.secure_aggregation:
                assert self.info is not None
                check = start_sum_check(
                    int(self._sketched.sum()), self._prior_width, self._objective,
                    self.info.weight_bounds,
                )  # fmt: skip
                self._agree_secure(self.masks.values(replies, check))
            else:
                self._agree({c: as_reply(r, StartReply) for c, r in replies.items()})
            self.started = True
            return
        level = self.level
        if level is None:
            raise LocalProtocolError("FedGBDT: a level reply without a level request.")
        for client in replies:
            self.held[client] = len(self.decisions)
        pooled, bins_of, loss = self._pooled(level, replies)
        if level.report and self._report(loss):
            return
        if dropped and level.plan.derived.size:
            self.kept = Kept.none(3)  # the kept parents hold the dropped rows
            return  # the level again, without subtraction
        if self.current is None:
            self.done = True  # the last report
            return
        self._grow_level(level, pooled, bins_of())

    def finish(self) -> BoostResult:
        """Return the model (trees up to the best iteration when stopping early)."""
        if self.info is None or self.grid is None:
            raise LocalProtocolError("FedGBDT: the fit did not start.")
        keep = self.best_iteration if self.stopped else len(self.iterations)
        name = self._metric
        evals = {f"training_{name}": self.progress.train}
        if self.config.holdout:
            evals[f"validation_{name}"] = self.progress.valid
        return BoostResult(
            self.grid, self.margin, self.iterations[:keep], evals, keep, self.info
        )

    def round_metrics(self, round: int) -> dict[str, float]:
        """Return the latest pooled losses (progress bar and callbacks)."""
        name = self._metric
        out = {"iteration": float(len(self.iterations))}
        if self.progress.train:
            out[f"train_{name}"] = self.progress.train[-1]
        if self.progress.valid and self.config.holdout:
            out[f"valid_{name}"] = self.progress.valid[-1]
        return out

    # -- the start -----------------------------------------------------------------
    def _start_request(self) -> StartRequest:
        assert self.info is not None
        schema = self.info.schema
        return StartRequest(
            self.fit_id, self.config.seed, self.config.objective,
            np.asarray(schema.classes, dtype=str), self.config.holdout,
            schema.n_features, self.config.max_bins, self._sketched.copy(),
        )  # fmt: skip

    def _agree_secure(self, total: FloatArray) -> None:
        """Agree the grid from the summed fine histograms, the margin from the prior."""
        assert self._ranges is not None
        start = PooledStart(total, int(self._sketched.sum()), self._prior_width)
        self._set_grid(
            fine_edges(total, self._sketched, self._ranges, self.config.max_bins)
        )
        self._set_margin(start.prior)
        sites = self.masks.current.summed if self.masks.current else ()
        pooled = Prior.of(
            start.prior, start.held_prior, self._objective, self.margin,
            rounding_bound(len(sites)),
        )  # fmt: skip
        self.known.started(tuple(sites), pooled, {})

    def _agree(self, replies: Mapping[str, StartReply]) -> None:
        """Agree the grid from the pooled summaries, the margin from the prior."""
        assert self.info is not None
        schema = self.info.schema
        n_categories = np.array([len(c or ()) for c in schema.categories], np.int64)
        sketches = [
            GridSketch(r.points, r.weights, r.counts.astype(np.float64), r.complete)
            for r in replies.values()
        ]
        agreed = (
            agree_grid(sketches, ~self._sketched, n_categories, self.config.max_bins)
            if self._sketched.any() and sketches
            else None
        )
        self._set_grid(
            {}
            if agreed is None
            else {
                int(j): agreed.feature_edges(int(j))
                for j in np.flatnonzero(self._sketched)
            }
        )
        self._set_margin(
            np.sum([np.asarray(r.prior, np.float64) for r in replies.values()], axis=0)
        )
        priors = {
            c: Prior.of(r.prior, r.held_prior, self._objective, self.margin)
            for c, r in replies.items()
        }
        pooled = sum(priors.values(), Prior(0.0, 0.0))
        self.known.started(tuple(sorted(replies)), pooled, priors)

    @property
    def _metric(self) -> str:
        """XGBoost's name of the recorded metric."""
        return self.config.eval_metric or metric_name(self.config.objective)

    @property
    def _objective(self) -> str:
        return str(self.config.objective)

    @property
    def _prior_width(self) -> int:
        """Entries of one prior (:func:`._payloads.prior_width`)."""
        assert self.info is not None
        return prior_width(self._objective, len(self.info.schema.classes))

    def _set_grid(self, agreed: Mapping[int, FloatArray]) -> None:
        """Set the grid: declared edges, the agreed ones, categories as agreed."""
        assert self.info is not None
        schema = self.info.schema
        is_cat = np.array([k == "categorical" for k in schema.feature_kinds], bool)
        n_categories = [len(c or ()) for c in schema.categories]
        self.grid = merged_grid(self._declared, agreed, is_cat, n_categories)
        self.grid.check_categories(
            "FedGBDT",
            list(schema.feature_names),
            "use FedForestClassifier/FedForestRegressor(candidates='quantile'), "
            "which has no such limit",
        )

    def _set_margin(self, pooled: FloatArray) -> None:
        """Set the starting margin from the pooled prior; start the first iteration."""
        self.margin = prior_margin(
            self.config.objective, pooled, self.config.base_score,
            self.config.scale_pos_weight,
        )  # fmt: skip
        self.current = Iteration.start(
            0, self.config.n_trees_per_iteration, self.config.max_depth
        )

    @property
    def _loss(self) -> Loss:
        """The objective with the fit's positive-row factor and metric."""
        c = self.config
        return LOSSES[c.objective].scaled(c.scale_pos_weight, c.eval_metric or "")

    # -- a level --------------------------------------------------------------------
    def _features(self, iteration: int) -> IntArray:
        """Each tree's features (``colsample_bytree``), drawn by the server."""
        assert self.grid is not None
        n_features = self.grid.n_bins.shape[0]
        k = self.config.n_trees_per_iteration
        take = max(1, int(self.config.colsample_bytree * n_features))
        if take >= n_features:
            return np.tile(np.arange(n_features), (k, 1))
        return np.stack([
            np.sort(keyed_rng(self.config.seed, _COLUMNS, iteration, tree).choice(
                n_features, take, replace=False))
            for tree in range(k)
        ]).astype(np.int64)  # fmt: skip

    def _level_plan(self) -> RoundPlan:
        it = self.current
        report = it is None or it.n_nodes == it.n_trees  # an iteration's first level
        if it is None:
            nodes = np.zeros(0, np.int64)
            pairs = np.zeros((0, 1), np.int64)
            plan = LevelPlan(pairs, nodes, nodes, nodes)
        else:
            nodes = it.open_nodes()
            pairs = self._features(it.number)[it.tree[nodes]]
            plan = plan_level(
                nodes, pairs, it.parent[nodes], it.stats[nodes, 2], self.kept
            )
        self.level = _Level(nodes, pairs, plan, report)
        assert self.grid is not None
        masked = self._mask(level_layout(plan.pairs, self.grid.n_bins).length)
        requests = {c: self._request(c, plan, report, full=False) for c in self.active}
        return RoundPlan(
            requests,
            self.config.on_dropout,
            resync=lambda c: self._request(c, plan, report, full=True),
            check=None if masked is not None else self.known.level_check(report),
            masked=masked,
        )

    def _request(
        self, client: str, plan: LevelPlan, report: bool, full: bool
    ) -> LevelRequest:
        assert self.level is not None
        c = self.config
        masked = self.masks.current
        mask = {} if masked is None else masked.fields()
        return LevelRequest(
            subsample=c.subsample, iteration=len(self.iterations), report=report,
            open_nodes=self.level.nodes, pair_feature=plan.pairs,
            **self._model_fields(client, full), **mask,
        )  # fmt: skip

    def _model_fields(self, client: str, full: bool) -> dict[str, Any]:
        """Return the fields every request shares: the fit, the model's delta, the grid.

        The decisions after the client's version (all of them when ``full``);
        the grid's edges in the client's first request and in full ones.
        """
        assert self.info is not None
        assert self.grid is not None
        base = 0 if full else self.held.get(client, 0)
        send_grid = full or base == 0
        c = self.config
        return {
            "fit_id": self.fit_id,
            "seed": c.seed,
            "objective": c.objective,
            "classes": np.asarray(self.info.schema.classes, dtype=str),
            "holdout": c.holdout,
            "n_trees": c.n_trees_per_iteration,
            "base": base,
            "full": full,
            "margin": self.margin,
            **self.decisions.after(base).as_fields(),
            "feature_bins": self.grid.n_bins,
            "grid_edges": self.grid.edges if send_grid else np.zeros(0),
            "grid_edge_ptr": self.grid.edge_ptr if send_grid else np.zeros(0, np.int64),
            "scale_pos_weight": c.scale_pos_weight,
            "metric": c.eval_metric or "",
        }

    def _pooled(
        self, level: _Level, replies: Mapping[str, Payload]
    ) -> tuple[FloatArray, Callable[[], Bins], FloatArray]:
        """Return the level's pooled node sums, histograms (on demand) and losses.

        Summed from the replies, or read back from the masked sum.
        """
        assert self.grid is not None
        if self.config.secure_aggregation:
            layout = level_layout(level.plan.pairs, self.grid.n_bins)
            assert self.info is not None
            check = level_sum_check(
                level.plan.pairs, self.grid.n_bins, level.report,
                self.info.weight_bounds, self.known,
            )  # fmt: skip
            total = self.masks.values(replies, check)
            stats, pooled_bins = layout.sparse(total)
            return (
                stats,
                lambda: derive_level(pooled_bins, level.plan, self.kept, 2),
                layout.tail(total),
            )
        got = [as_reply(r, LevelReply) for r in replies.values()]
        pooled = np.zeros((level.nodes.shape[0], 3))
        for reply in got:
            pooled += reply.node_stats
        asked = np.arange(level.nodes.shape[0])
        return (
            pooled,
            lambda: level_histograms(
                [(asked, r) for r in got], level.plan, self.kept, 3, 2
            ),
            np.sum([r.loss for r in got], axis=0),
        )

    def _report(self, total: FloatArray) -> bool:
        """Record the pooled losses; return True when early stopping ends the fit."""
        loss = self._loss
        if len(self.progress.train) >= len(self.iterations):
            return False  # the prior alone, or a level repeated after a dropout
        self.progress.train.append(loss.summary(total[0], total[1]))
        self.progress.valid.append(loss.summary(total[2], total[3]))
        rounds = self.config.early_stopping_rounds
        if rounds is None:
            return False
        valid = np.asarray(self.progress.valid)
        best = int(np.argmin(valid)) + 1  # iterations of the best model
        self.best_iteration = best
        if len(self.iterations) - best >= rounds:
            self.stopped = self.done = True
            return True
        return False

    def _grow_level(self, level: _Level, pooled: FloatArray, bins: Bins) -> None:
        it = self.current
        assert it is not None
        assert self.grid is not None
        decided, split_nodes, positions = decide_level(
            it, level.nodes, level.pairs, pooled, bins, self.grid, self.config
        )
        self.decisions = self.decisions.then(decided)
        self.kept = (
            keep_split(bins, split_nodes, positions, level.pairs.shape[1])
            if self.config.subtract
            else Kept.none(3)
        )
        if it.open_nodes().size == 0:
            self._finish_iteration(it)

    def _finish_iteration(self, it: Iteration) -> None:
        leaves = it.finish(self.config)
        self.decisions = self.decisions.then(leaves)
        self.iterations.append(it)
        self.known.moved(leaf_reach(leaves.value))
        self.kept = Kept.none(3)
        more = len(self.iterations) < self.config.n_estimators
        self.current = (
            Iteration.start(
                len(self.iterations), self.config.n_trees_per_iteration,
                self.config.max_depth,
            )
            if more
            else None
        )  # fmt: skip
