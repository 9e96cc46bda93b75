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
early or early stopping ends the fit). The strategy is a table of three phases
(:class:`Phase`: start, level, report) over one :class:`BoostRun`, complete
from the start (:class:`~fedtrees.algorithms._phased.PhasedStrategy`); the
grid agreement, the level's plan and its pooling are the engine's
(docs/histogram.md).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms._phased import PhasedStrategy, Step
from fedtrees.algorithms.fedgbdt._bounds import leaf_reach
from fedtrees.algorithms.fedgbdt._config import BoostConfig
from fedtrees.algorithms.fedgbdt._grow import Iteration, decide_level
from fedtrees.algorithms.fedgbdt._payloads import (
    LevelReply,
    LevelRequest,
    level_layout,
)
from fedtrees.algorithms.fedgbdt._pooled import (
    level_sum_check,
)
from fedtrees.algorithms.fedgbdt._run import BoostRun, agree_start, ask_start
from fedtrees.algorithms.histogram import (
    Bins,
    Grid,
    LevelPlan,
)
from fedtrees.federation import (
    FederationInfo,
    Payload,
    RoundPlan,
    as_reply,
)

__all__ = ["BoostResult", "FedGBDTStrategy", "Phase"]


class Phase(enum.Enum):
    """FedGBDT's rounds (the module docstring)."""

    START = "start"
    """Once: the grid agreement and the prior."""
    LEVEL = "level"
    """One level of the current iteration's trees."""
    REPORT = "report"
    """Last: the last trees' leaves and the final losses."""
    LOCAL = "local"
    """The baselines' rounds: the clients' own trees (:mod:`._baselines`)."""


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
    """What one level round asks: the nodes, their features, the plan."""

    nodes: IntArray
    pairs: IntArray
    plan: LevelPlan
    report: bool


# -- a level, and the last report ------------------------------------------------------
def _level(run: BoostRun, last: bool) -> _Level:
    """Return what the level (or, ``last``, the report) asks; from the state alone."""
    if last:
        nodes = np.zeros(0, np.int64)
        pairs = np.zeros((0, 1), np.int64)
        return _Level(nodes, pairs, LevelPlan(pairs, nodes, nodes, nodes), True)
    it = run.current
    nodes = it.open_nodes()
    pairs = run.features(it.number)[it.tree[nodes]]
    plan = run.rounds.plan(nodes, pairs, it.parent[nodes], it.stats[nodes])
    return _Level(nodes, pairs, plan, it.n_nodes == it.n_trees)


def _ask(run: BoostRun, last: bool) -> RoundPlan:
    level = _level(run, last)
    masked = run.mask(level_layout(level.plan.pairs, run.grid.n_bins).length)

    def request(client: str, full: bool) -> LevelRequest:
        mask = {} if run.masks.current is None else run.masks.current.fields()
        c = run.config
        return LevelRequest(
            subsample=c.subsample, iteration=len(run.iterations), report=level.report,
            open_nodes=level.nodes, pair_feature=level.plan.pairs,
            **run.model_fields(client, full), **mask,
        )  # fmt: skip

    return RoundPlan(
        {c: request(c, False) for c in run.active},
        run.config.on_dropout,
        resync=lambda c: request(c, True),
        check=None if masked is not None else run.known.level_check(level.report),
        masked=masked,
    )


def _pooled(
    run: BoostRun, level: _Level, replies: Mapping[str, Payload]
) -> tuple[FloatArray, Callable[[], Bins], FloatArray]:
    """Return the level's pooled node sums, histograms (on demand) and losses.

    Summed from the replies, or read back from the masked sum.
    """
    for client in replies:
        run.held[client] = len(run.decisions)
    if run.config.secure_aggregation:
        layout = level_layout(level.plan.pairs, run.grid.n_bins)
        check = level_sum_check(
            level.plan.pairs, run.grid.n_bins, level.report,
            run.info.weight_bounds, run.known,
        )  # fmt: skip
        total = run.masks.values(replies, check)
        return (*run.rounds.read(level.plan, layout, total), layout.tail(total))
    got = [as_reply(r, LevelReply) for r in replies.values()]
    n_nodes = level.nodes.shape[0]
    asked = np.arange(n_nodes)
    stats, bins_of = run.rounds.pooled(level.plan, [(asked, r) for r in got], n_nodes)
    return stats, bins_of, np.sum([r.loss for r in got], axis=0)


def _report(run: BoostRun, total: FloatArray) -> bool:
    """Record the pooled losses; return True when early stopping ends the fit."""
    loss = run.loss
    if len(run.progress.train) >= len(run.iterations):
        return False  # the prior alone, or a level repeated after a dropout
    run.progress.train.append(loss.summary(total[0], total[1]))
    run.progress.valid.append(loss.summary(total[2], total[3]))
    rounds = run.config.early_stopping_rounds
    if rounds is None:
        return False
    best = int(np.argmin(np.asarray(run.progress.valid))) + 1  # the best model's
    run.best_iteration = best
    if len(run.iterations) - best >= rounds:
        run.stopped = True
        return True
    return False


def absorb_level(run: BoostRun, replies: Mapping[str, Payload]) -> Phase | None:
    """Fold one level (and the losses it reports); split its nodes.

    A dropout repeats the level if it used subtraction (the engine's
    after-dropout rule, :meth:`LevelRounds.repeat`).
    """
    level = _level(run, last=False)
    pooled, bins_of, loss = _pooled(run, level, replies)
    if run.answered(replies):
        run.rounds.drop()
    if level.report and _report(run, loss):
        return None
    if run.rounds.repeat(level.plan):
        return Phase.LEVEL
    it = run.current
    bins = bins_of()
    decided, split_nodes, positions = decide_level(
        it, level.nodes, level.pairs, pooled, bins, run.grid, run.config
    )
    run.decisions = run.decisions.then(decided)
    run.rounds.keep(bins, split_nodes, positions, level.pairs.shape[1])
    if it.open_nodes().size:
        return Phase.LEVEL
    return _finish_iteration(run, it)


def _finish_iteration(run: BoostRun, it: Iteration) -> Phase:
    """Append the iteration's leaves; start the next one, or the last report."""
    leaves = it.finish(run.config)
    run.decisions = run.decisions.then(leaves)
    run.iterations.append(it)
    run.known.moved(leaf_reach(leaves.value))
    run.rounds.forget()
    if len(run.iterations) >= run.config.n_estimators:
        return Phase.REPORT
    c = run.config
    run.current = Iteration.start(
        len(run.iterations), c.n_trees_per_iteration, c.max_depth
    )
    return Phase.LEVEL


def absorb_report(run: BoostRun, replies: Mapping[str, Payload]) -> None:
    """Record the final losses; the fit is done."""
    run.answered(replies)
    _, _, loss = _pooled(run, _level(run, last=True), replies)
    _report(run, loss)


def _started(run: BoostRun, replies: Mapping[str, Payload]) -> Phase:
    agree_start(run, replies)
    return Phase.LEVEL


class FedGBDTStrategy(PhasedStrategy[BoostRun, Phase]):
    """Server side of FedGBDT (see the module docstring)."""

    first = Phase.START

    def __init__(self, config: BoostConfig, fit_id: int) -> None:
        super().__init__()
        self._config = config
        self.fit_id = fit_id

    @property
    def config(self) -> BoostConfig:
        """The fit's settings (with the agreed classes once started)."""
        return self._state.config if self._state is not None else self._config

    @property
    def secure_aggregation(self) -> bool:
        """Whether the run exchanges keys and masks its rounds (docs/security.md)."""
        return self._config.secure_aggregation

    def begin(self, info: FederationInfo) -> BoostRun:
        """Check the declared edges and ranges; the state, complete."""
        return BoostRun.begin(self._config, self.fit_id, info)

    def steps(self) -> Mapping[Phase, Step[BoostRun, Phase]]:
        """Return the table: the start, a level, the last report."""
        return {
            Phase.START: Step(ask_start, _started),
            Phase.LEVEL: Step(lambda run: _ask(run, last=False), absorb_level),
            Phase.REPORT: Step(lambda run: _ask(run, last=True), absorb_report),
        }

    def expected_rounds(self) -> int:
        """Return the rounds: the start, one per level of every iteration, a report."""
        return 2 + self._config.n_estimators * self._config.max_depth

    def result(self, state: BoostRun) -> BoostResult:
        """Return the model (trees up to the best iteration when stopping early)."""
        keep = state.best_iteration if state.stopped else len(state.iterations)
        evals = {f"training_{state.metric}": state.progress.train}
        if state.config.holdout:
            evals[f"validation_{state.metric}"] = state.progress.valid
        return BoostResult(
            state.grid, state.margin, state.iterations[:keep], evals, keep, state.info
        )

    def round_metrics(self, round: int) -> dict[str, float]:
        """Return the latest pooled losses (progress bar and callbacks)."""
        run = self.state
        out = {"iteration": float(len(run.iterations))}
        if run.progress.train:
            out[f"train_{run.metric}"] = run.progress.train[-1]
        if run.progress.valid and run.config.holdout:
            out[f"valid_{run.metric}"] = run.progress.valid[-1]
        return out
