"""The kinds of FedForest rounds and a validated reply: what steps and state share.

A fit is a sequence of rounds, each one :class:`Phase` answered by one step
(:mod:`._steps`); the replies of a round reach the step as :class:`Got`. The
fit's state (:mod:`._state`) names the phase that follows a level and pools
replies, so both it and the steps import this module, and neither the other
for these names. After the last level come the out-of-bag and held-out score
rounds, if asked (:func:`final_phase`).
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from fedtrees._typing import IntArray
from fedtrees.algorithms.fedforest._config import ForestConfig
from fedtrees.federation import Payload

__all__ = ["Got", "Phase", "final_phase", "score_phase"]


class Phase(enum.Enum):
    """The kind of a round (its request); :attr:`DONE` ends the fit."""

    CLASS_COUNTS = "class_counts"
    """Once, first: the pooled class counts of ``class_weight="balanced"``."""
    GRID = "grid"
    """Once: the pooled grid of the numeric columns (``"hist"``, ``"uniform"``)."""
    TOP_K = "top_k"
    """AvgImp with ``top_k``: each client shortlists its best features."""
    SKETCH = "sketch"
    """Node statistics and quantile sketches (or distinct values)."""
    SKETCH_EVALUATE = "sketch_evaluate"
    """A sketch and its evaluation in one round, where each node has one client."""
    EVALUATE = "evaluate"
    """Per-bin statistics (or AvgImp's own gains) of the candidates."""
    HISTOGRAM = "histogram"
    """One level of ``candidates="hist"``: the engine's round (docs/histogram.md)."""
    LEAF_STATS = "leaf_stats"
    """Statistics of the leaves still without them (after AvgImp splits)."""
    OOB = "oob"
    """The sites' out-of-bag sums of the finished forest (``oob_score``)."""
    SCORE = "score"
    """Held-out scores of the finished forest (diagnostics)."""
    DONE = "done"
    """No round left."""


class Got(NamedTuple):
    """A validated reply: the client's index, the positions it was asked about."""

    client: int
    asked: IntArray
    reply: Payload


def final_phase(config: ForestConfig) -> Phase:
    """Return the phase after the forest's last level: out-of-bag, score or done."""
    return Phase.OOB if config.oob_score else score_phase(config)


def score_phase(config: ForestConfig) -> Phase:
    """Return the held-out score round if asked, else done."""
    return Phase.SCORE if config.holdout > 0 else Phase.DONE
