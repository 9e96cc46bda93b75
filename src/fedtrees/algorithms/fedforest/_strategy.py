"""The FedForest server strategy: all trees grown level by level (docs/fedforest.md).

All trees grow together, one depth level at a time, from sufficient statistics
pooled over the clients (docs/fedforest.md). Each round is one
:class:`._phase.Phase`, answered by one step of the fit's candidate mode
(:mod:`._modes`, one per ``candidates=``):

- ``"quantile"`` / ``"exact"``: per level a sketch round, which pools the node
  statistics and derives candidate thresholds, then an evaluation round, which
  pools per-bin statistics and splits (:mod:`._sketching`); AvgImp's
  ``top_k`` adds a shortlist round first;
- ``"uniform"``: the pooled grid once (as ``"hist"``), then one evaluation
  round per level (:mod:`._uniform`).

A forest of depth D needs about 2·D + 1 round trips whatever ``n_estimators``;
a level whose every node has one client takes one (:mod:`._fold`). After the
last level come the statistics of leaves that lack them (AvgImp) and the
held-out score (diagnostics). No I/O: the round loop moves the messages.

:meth:`FedForestStrategy.plan_round` asks the current step what to request and
lets the request builder address it (:mod:`._requests`: who is asked about
which nodes, shared payloads, forest deltas, resyncs);
:meth:`FedForestStrategy.aggregate` applies the dropout policy, then lets the
step fold the replies and name the next phase.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fedtrees._typing import FloatArray
from fedtrees.algorithms._class_weight import class_weight_codes
from fedtrees.algorithms.fedforest._class_counts import ClassCountStep
from fedtrees.algorithms.fedforest._config import ForestConfig
from fedtrees.algorithms.fedforest._fold import FoldPolicy
from fedtrees.algorithms.fedforest._growth import ForestGrowth
from fedtrees.algorithms.fedforest._modes import candidate_mode
from fedtrees.algorithms.fedforest._oob import OobStep
from fedtrees.algorithms.fedforest._payloads import ScoreReply
from fedtrees.algorithms.fedforest._phase import Got, Phase
from fedtrees.algorithms.fedforest._requests import RequestBuilder
from fedtrees.algorithms.fedforest._state import LevelState
from fedtrees.algorithms.fedforest._steps import (
    CandidateMode,
    LeafStatsStep,
    ScoreStep,
    Step,
)
from fedtrees.exceptions import LocalProtocolError
from fedtrees.federation import (
    FederationInfo,
    Payload,
    RoundPlan,
    ServerStrategy,
    check_cohort,
)

__all__ = ["FedForestStrategy", "ForestResult"]

_NO_LEVEL = frozenset({Phase.CLASS_COUNTS, Phase.LEAF_STATS, Phase.OOB, Phase.SCORE})
"""Phases before the first level or after the last: no level is under way."""
_COUNTED = ("balanced", "balanced_subsample")
"""The ``class_weight`` presets whose counts take a round (:mod:`._class_counts`)."""


@dataclass(frozen=True, eq=False)
class ForestResult:
    """The grown forest (node table), the agreed info, held-out scores if asked."""

    growth: ForestGrowth
    info: FederationInfo
    scores: tuple[ScoreReply, ...] = ()
    oob: FloatArray | None = None
    """Pooled out-of-bag sums (``oob_score``; :func:`._oob.oob_score`)."""


class FedForestStrategy(ServerStrategy):
    """Server side of FedForest; see the module docstring for the protocol."""

    def __init__(self, config: ForestConfig, owner: str = "FedForest") -> None:
        self.config = config
        self.owner = owner  # the estimator's class, named by its errors
        self.mode: CandidateMode = candidate_mode(config)
        self.steps: Mapping[Phase, Step] = {
            **self.mode.steps(),
            Phase.CLASS_COUNTS: ClassCountStep(self._forest_start),
            Phase.LEAF_STATS: LeafStatsStep(),
            Phase.OOB: OobStep(),
            Phase.SCORE: ScoreStep(),
        }
        self.builder = RequestBuilder(FoldPolicy(config.fold))
        self.phase = Phase.DONE
        self.opening = False  # the current round opened its level
        self.setup_round = False  # the last aggregated round was a setup round
        self._state: LevelState | None = None

    @property
    def secure_aggregation(self) -> bool:
        """Whether the run exchanges keys and masks its rounds (docs/security.md)."""
        return self.config.secure_aggregation

    @property
    def state(self) -> LevelState:
        """The fit's state (built by :meth:`start`)."""
        if self._state is None:
            raise LocalProtocolError("FedForestStrategy: start() was not called.")
        return self._state

    # -- the ServerStrategy protocol ------------------------------------------------
    def start(self, info: FederationInfo) -> None:
        """Create the roots; the first phase is the mode's setup, or its level."""
        if self.config.secure_aggregation:
            check_cohort(info.clients, "FedForest")
        self._state = LevelState.start(self.config, info, self.mode.first)
        self.mode.begin(self._state)
        mode, weights = class_weight_codes(
            self.config.class_weight, info.schema.classes, self.owner, _COUNTED
        )
        if mode == "given":
            self._state.deltas.class_weights = weights[None, :]
        self.phase = Phase.CLASS_COUNTS if mode in _COUNTED else self._forest_start()

    def _forest_start(self) -> Phase:
        """Return the forest's first phase: the mode's setup, or its first level."""
        return (*self.mode.setup, self.mode.first)[0]

    def expected_rounds(self) -> int:
        """Upper bound of the rounds after the agreement (progress bars, job logs).

        The mode's rounds, plus the class-count round of ``class_weight``'s
        presets, the out-of-bag score's round, and the held-out score's round
        when ``holdout`` asks for one (:mod:`._diagnose`).
        """
        c = self.config
        extra = int(c.oob_score) + int(c.class_weight in _COUNTED) + int(c.holdout > 0)
        return self.mode.expected_rounds(len(self.state.clients)) + extra

    def round_metrics(self, round: int) -> dict[str, float]:
        """Depth level (not after a setup round), open nodes and splits so far."""
        s = self.state
        level = {} if self.setup_round else {"level": float(s.growth.level)}
        return {
            **level,
            "open_nodes": float(s.growth.open.shape[0]),
            "splits": float(s.splits_made),
        }

    def plan_round(self, round: int) -> RoundPlan | None:
        """Return the next request: the current step's ask, addressed to the clients."""
        if self.phase is Phase.DONE:
            return None
        self.opening = self.phase is self.mode.first
        planned = self.builder.build(self.steps[self.phase].ask(self.state), self.state)
        if planned.folded is not None:
            self.phase = planned.folded
        return planned.plan

    def aggregate(self, round: int, replies: Mapping[str, Payload]) -> None:
        """Fold the validated replies of the current phase into the fit's state.

        After a dropout the level is rebuilt from the clients still active
        (:meth:`_after_dropout`) before anything is folded.
        """
        s = self.state
        self.setup_round = self.phase in (Phase.CLASS_COUNTS, *self.mode.setup)
        dropped = [c for c in s.active if c not in replies]
        s.active = [c for c in s.active if c in replies]
        if dropped and self._after_dropout():
            return
        got = [Got(s.index[c], s.asked[c], replies[c]) for c in sorted(replies)]
        self.phase = self.steps[self.phase].absorb(s, got)

    def finish(self) -> ForestResult:
        """Return the grown forest."""
        s = self.state
        return ForestResult(s.growth, s.info, s.scores, s.oob)

    # -- dropouts ------------------------------------------------------------------
    def _after_dropout(self) -> bool:
        """Make every statistic from now on come from the active clients only.

        **Decision** (``on_dropout="continue"``): the dropped client's rows are
        absent from the level of its dropout on, as if its data had vanished
        then. The open nodes' statistics are pooled at every level from the
        clients answering its first round (never parent − left, which would
        keep the dropped rows as phantoms). A dropout in a later round of a
        level (the evaluation, or the sketch after AvgImp's shortlist) finds
        candidates, shortlist and totals that still hold its rows, so the level
        starts again: its rounds are repeated without the client. Whatever the
        level state cached during the level (the shortlist, the engine's kept
        parents) holds the client's rows too: it is forgotten either way.
        Returns whether the current replies are discarded. Nodes closed before
        the dropout keep their statistics: they were decided then; a setup
        round (before the first level) or a round after the last one keeps its
        replies.
        """
        if self.phase in self.mode.setup or self.phase in _NO_LEVEL:
            return False
        self.state.forget_level()
        if self.opening:
            return False  # the level's first round: nothing to start again
        self.phase = self.mode.first
        return True
