"""``candidates="uniform"``: the Federated Histogram baseline (README, FedForest).

Kalloori & Klingler (2022): the server gets each feature's min and max from every
client once (:class:`RangesStep`, at the roots) and uses ``q - 1`` equally
spaced interior thresholds of the global range at every node. Each level then
takes one round (:class:`UniformEvaluateStep`): the clients send their node
statistics with the bins, since no sketch round precedes it. Categorical
features are not split (the baseline bins numeric ranges only); client
splits are, on the evaluation's node statistics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedforest._config import ForestConfig
from fedtrees.algorithms.fedforest._layout import (
    BinLayout,
    compact,
    pooled_bins,
    separating,
)
from fedtrees.algorithms.fedforest._payloads import (
    EvaluateReply,
    EvaluateRequest,
    RangesReply,
    RangesRequest,
)
from fedtrees.algorithms.fedforest._scoring import node_weights
from fedtrees.algorithms.fedforest._state import LevelState
from fedtrees.algorithms.fedforest._steps import Ask, Got, Phase, Step, fixed
from fedtrees.exceptions import LocalProtocolError
from fedtrees.federation import as_reply
from fedtrees.stats import uniform_candidates
from fedtrees.stats._splits import Best, best_client, best_numeric

__all__ = ["RangesStep", "UniformEvaluateStep", "UniformMode"]


class UniformMode:
    """The agreed ranges' grid at every node: one round per level."""

    def __init__(self, config: ForestConfig) -> None:
        self.config = config
        self.grid: FloatArray | None = None
        self._steps: dict[Phase, Step] = {
            Phase.RANGES: RangesStep(self, config),
            Phase.EVALUATE: UniformEvaluateStep(self, config),
        }

    def begin(self, state: LevelState) -> None:
        """Nothing to prepare: the ranges round agrees the grid."""

    @property
    def setup(self) -> tuple[Phase, ...]:
        """The ranges, once."""
        return (Phase.RANGES,)

    @property
    def first(self) -> Phase:
        """Every level is one evaluation."""
        return Phase.EVALUATE

    def steps(self) -> Mapping[Phase, Step]:
        """Return the ranges' and the evaluation's steps."""
        return self._steps

    def reset(self) -> None:
        """Nothing is cached per level (the grid is agreed once)."""

    def expected_rounds(self, n_clients: int) -> int:
        """Return the ranges' round, then one round per level."""
        return self.config.max_depth + 1

    def agreed_grid(self) -> FloatArray:
        """Return the grid ``(F, q - 1)`` (the ranges round set it).

        Raises
        ------
        LocalProtocolError
            Before the ranges round.
        """
        if self.grid is None:
            raise LocalProtocolError("FedForest: the uniform grid is not agreed yet.")
        return self.grid


class RangesStep:
    """Each feature's range on every client, once, at the roots."""

    def __init__(self, mode: UniformMode, config: ForestConfig) -> None:
        self.mode, self.config = mode, config

    def ask(self, state: LevelState) -> Ask:
        """Ask every client for its (min, max) of every feature."""
        g = state.growth
        return Ask(
            RangesRequest, g.pair_features(), None, fixed(n_features=g.n_features)
        )

    def absorb(self, state: LevelState, got: Sequence[Got]) -> Phase:
        """Agree the grid: ``q - 1`` interior thresholds of each global range."""
        ranges = np.stack([as_reply(r, RangesReply).ranges for _, _, r in got])
        self.mode.grid = uniform_candidates(ranges, self.config.n_quantiles)
        return Phase.EVALUATE


class UniformEvaluateStep:
    """The grid's bins and the node statistics of every open node; the level splits."""

    def __init__(self, mode: UniformMode, config: ForestConfig) -> None:
        self.mode, self.config = mode, config

    def _level(self, state: LevelState) -> tuple[IntArray, FloatArray]:
        """Return the level's considered features and their grid thresholds."""
        g = state.growth
        pairs = g.pair_features()
        numeric = (pairs >= 0) & ~g.is_categorical[np.maximum(pairs, 0)]
        grid = self.mode.agreed_grid()
        return pairs, np.where(numeric[..., None], grid[np.maximum(pairs, 0)], np.nan)

    def ask(self, state: LevelState) -> Ask:
        """Send every client the whole grid of its nodes' numeric features."""
        pairs, thresholds = self._level(state)
        criterion = self.config.criterion

        def fields(
            k: int, rows: IntArray, full: bool
        ) -> tuple[dict[str, Any], BinLayout]:
            sent, layout = separating(thresholds, None, rows)
            return {
                "thr_count": compact(layout.count),
                "thresholds": np.ascontiguousarray(thresholds[rows][sent]),
                "mode": "stats",
                "criterion": criterion,
                "with_stats": True,
            }, layout

        return Ask(EvaluateRequest, pairs, state.growth.open, fields, per_client=True)

    def absorb(self, state: LevelState, got: Sequence[Got]) -> Phase:
        """Pool the node statistics and bins; score; split."""
        g, c = state.growth, self.config
        pairs, thresholds = self._level(state)  # as asked: the level is unchanged
        nodes = g.open
        evaluated = [(k, a, as_reply(r, EvaluateReply)) for k, a, r in got]
        layouts = {k: state.layout_of(k, BinLayout) for k, _, _ in evaluated}
        bins = pooled_bins(evaluated, layouts, ~np.isnan(thresholds), g.width)
        keep, other = self._pool(state, evaluated, nodes)
        numeric = best_numeric(
            g.table.stats[nodes[keep]],
            bins[keep],
            thresholds[keep],
            pairs[keep],
            c.criterion,
            g.min_leaf(nodes[keep]),
        )
        return state.decide(nodes[keep], numeric, other)

    def _pool(
        self,
        state: LevelState,
        evaluated: Sequence[tuple[int, IntArray, EvaluateReply]],
        nodes: IntArray,
    ) -> tuple[IntArray, Best]:
        """Set the nodes' statistics from the evaluation; keep the splittable ones.

        Returns their positions and their best client splits (none unless
        ``split_on_client``).
        """
        g, c = state.growth, self.config
        pooled = np.zeros((nodes.shape[0], g.width))
        for _, asked, e in evaluated:
            pooled[asked] += e.node_stats.astype(np.float64)
        weights = [(k, a, node_weights(e.node_stats, c.task)) for k, a, e in evaluated]
        state.learn_reach(nodes, weights)
        g.set_stats(nodes, pooled)
        keep = np.flatnonzero(g.splittable(nodes))
        kept = nodes[keep]
        if not c.split_on_client:
            return keep, Best.none(keep.shape[0], g.width)
        per_client = np.zeros((len(state.clients), nodes.shape[0], g.width))
        for k, asked, e in evaluated:
            per_client[k, asked] = e.node_stats.astype(np.float64)
        active = [state.index[a] for a in state.active]
        other = best_client(
            g.table.stats[kept],
            per_client[active][:, keep].transpose(1, 0, 2),
            c.criterion,
            g.min_leaf(kept),
        )
        return keep, other
