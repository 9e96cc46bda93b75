"""Candidate modes: how each ``candidates=`` value finds the thresholds of a level.

docs/fedforest.md, "The estimator". Each mode is a
:class:`._steps.CandidateMode`: the phases it runs once before the first level,
the phase that starts every level, and its steps.

- ``"quantile"`` (:class:`QuantileMode`, the paper's): the clients' quantile
  sketches, mixed as CDFs and inverted at ``l/q``;
- ``"exact"`` (:class:`ExactMode`, Appendix C): the midpoints of the pooled
  distinct values, scikit-learn's candidates;
- ``"uniform"`` (:class:`._uniform.UniformMode`, the Federated Histogram
  baseline): ``q - 1`` equally spaced thresholds over each feature's pooled
  grid (**Decision** in :mod:`._uniform`: not the clients' raw min and max).

The gain rule (``gain=``) varies the quantile and exact modes: AvgImp evaluates
with the clients' own gains, and with ``top_k`` a shortlist round starts each
level. :func:`candidate_mode` picks the mode of a configuration.

A new mode is one more class that satisfies the protocol, named in
:data:`MODES` (and in ``ForestConfig.candidates``): its setup phases and the
phase that starts every level, a step per phase (its ``ask`` builds no state;
what it needs back from a client's request its fields function returns, and
the request builder records it in ``LevelState.layouts``; what a level
gathers for its next round is kept on the level state, which forgets it after a
dropout, :meth:`._state.LevelState.forget_level`: a mode caches nothing per
level), and ``expected_rounds``. The strategy does not change: it only runs the
steps, addresses their requests and applies the
dropout policy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from fedtrees._typing import FloatArray
from fedtrees.algorithms.fedforest._candidates import exact_thresholds
from fedtrees.algorithms.fedforest._config import ForestConfig
from fedtrees.algorithms.fedforest._hist_mode import HistMode
from fedtrees.algorithms.fedforest._layout import Segments
from fedtrees.algorithms.fedforest._phase import Phase
from fedtrees.algorithms.fedforest._sketching import (
    EvaluateStep,
    FoldedStep,
    SketchStep,
    TopKStep,
)
from fedtrees.algorithms.fedforest._state import LevelState
from fedtrees.algorithms.fedforest._steps import CandidateMode, Step
from fedtrees.algorithms.fedforest._uniform import UniformMode
from fedtrees.exceptions import ValidationError
from fedtrees.stats import mixtures_ragged

__all__ = ["ExactMode", "QuantileMode", "SketchMode", "candidate_mode"]


class SketchMode:
    """Candidates from the clients' sketches: a sketch, then an evaluation, per level.

    With ``gain="avgimp"`` and ``top_k`` each level starts with the clients'
    shortlists (kept on the level state until the level's sketch,
    :attr:`._state.LevelState.shortlist`). Where
    every node of a level has one client, its sketch and evaluation fold into
    one round (:mod:`._fold`; exact gains only).
    """

    def __init__(self, config: ForestConfig) -> None:
        self.config = config
        self.top_k = config.gain == "avgimp" and bool(config.top_k)
        sketch, evaluate = SketchStep(config, self.thresholds), EvaluateStep(config)
        self._steps: dict[Phase, Step] = {
            Phase.SKETCH: sketch,
            Phase.SKETCH_EVALUATE: FoldedStep(sketch, evaluate),
            Phase.EVALUATE: evaluate,
        }
        if self.top_k:
            self._steps[Phase.TOP_K] = TopKStep(config)

    def begin(self, state: LevelState) -> None:
        """Nothing to prepare."""

    @property
    def setup(self) -> tuple[Phase, ...]:
        """Nothing to agree before the first level."""
        return ()

    @property
    def first(self) -> Phase:
        """The shortlist (AvgImp with ``top_k``), else the sketch."""
        return Phase.TOP_K if self.top_k else Phase.SKETCH

    def steps(self) -> Mapping[Phase, Step]:
        """Shortlist (if any), sketch, evaluate, and the folded sketch."""
        return self._steps

    def expected_rounds(self, n_clients: int) -> int:
        """Return the rounds per level times the depth, plus AvgImp's leaf round.

        One client folds every level into one round (:mod:`._fold`).
        """
        c = self.config
        alone = n_clients == 1 and c.gain == "exact" and c.fold
        per_level = 1 if alone else (3 if self.top_k else 2)
        return per_level * c.max_depth + (1 if c.gain == "avgimp" else 0)

    def thresholds(self, segments: Segments, n_todo: int, fp: int) -> FloatArray:
        """Candidates ``(n_todo, fp, width)`` of every pair from its sketches."""
        raise NotImplementedError


class QuantileMode(SketchMode):
    """The pooled quantile mixture inverted at ``l/q`` (never averaged quantiles)."""

    def thresholds(self, segments: Segments, n_todo: int, fp: int) -> FloatArray:
        """Invert each pair's mixture of client CDFs at ``1/q .. (q-1)/q``."""
        q = self.config.n_quantiles
        out = mixtures_ragged(*segments, n_todo * fp, q)
        return out.reshape(n_todo, fp, q - 1)


class ExactMode(SketchMode):
    """scikit-learn's midpoints of the pooled distinct values (a reference mode)."""

    def thresholds(self, segments: Segments, n_todo: int, fp: int) -> FloatArray:
        """Return the midpoints of each pair's pooled distinct values."""
        return exact_thresholds(*segments, n_todo, fp)


MODES: Mapping[str, Callable[[ForestConfig], CandidateMode]] = {
    "quantile": QuantileMode,
    "exact": ExactMode,
    "uniform": UniformMode,
    "hist": HistMode,
}
"""The candidate mode of each ``candidates=`` value."""


def candidate_mode(config: ForestConfig) -> CandidateMode:
    """Return the candidate mode of ``config`` (a fresh one: modes keep state).

    Raises
    ------
    ValidationError
        For ``candidates="uniform"`` with ``gain="avgimp"``: the uniform
        baseline learns node statistics from its evaluation, which AvgImp's
        clients do not send.
    """
    if config.candidates == "uniform" and config.gain == "avgimp":
        raise ValidationError(
            "FedForest: candidates='uniform' learns node statistics from its "
            "evaluation round; it cannot be combined with gain='avgimp'."
        )
    return MODES[config.candidates](config)
