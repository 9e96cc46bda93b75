"""``candidates="uniform"``: the Federated Histogram baseline (docs/fedforest.md).

Kalloori & Klingler (2022) use ``q - 1`` equally spaced thresholds of each
feature's global range at every node. Each level takes one round
(:class:`UniformEvaluateStep`): the clients send their node statistics with the
bins, since no sketch round precedes it. Categorical features are not split
(the baseline bins numeric ranges only); client splits are, on the
evaluation's node statistics.

**Decision (the range; privacy):** the paper's clients send every feature's
exact minimum and maximum — for a one-row client its whole row, and through the
spaced thresholds, which every client receives in the model, the extreme values
of some client. Here the range is the extent of the *pooled grid* instead: the
same once-per-fit round as ``candidates="hist"`` (the engine's grid agreement,
docs/histogram.md; :class:`UniformGridStep`; each client summarises its numeric
columns, or nothing where ``bin_edges`` are declared), and the ``q - 1``
thresholds are spaced evenly from the
grid's first edge to its last (:func:`spaced_thresholds`): pooled quantiles
``1/max_bins`` and ``1 - 1/max_bins`` (or, on an exact grid, the midpoints next to the
pooled extremes), never one client's extreme value. The mode therefore reveals what
``"hist"`` reveals (docs/security.md), no more than the quantile path's sketches of the
root, and nothing at all with declared ``bin_edges``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedforest._config import ForestConfig
from fedtrees.algorithms.fedforest._hist_mode import (
    agreed_grid,
    ask_grid,
    begin_agreement,
)
from fedtrees.algorithms.fedforest._layout import (
    BinLayout,
    compact,
    pooled_bins,
    separating,
)
from fedtrees.algorithms.fedforest._phase import Got, Phase
from fedtrees.algorithms.fedforest._scoring import node_weights
from fedtrees.algorithms.fedforest._sketch_payloads import (
    EvaluateReply,
    EvaluateRequest,
)
from fedtrees.algorithms.fedforest._state import LevelState
from fedtrees.algorithms.fedforest._steps import Ask, Step
from fedtrees.algorithms.histogram import Grid, GridAgreement
from fedtrees.exceptions import LocalProtocolError
from fedtrees.federation import as_reply
from fedtrees.stats import Best, best_client, best_numeric, spaced_points

__all__ = [
    "UniformEvaluateStep",
    "UniformGridStep",
    "UniformMode",
    "spaced_thresholds",
]


def spaced_thresholds(grid: Grid, q: int) -> FloatArray:
    """``q - 1`` thresholds per numeric feature, evenly spaced over its grid edges.

    From the first edge to the last, both included (their midpoint when
    ``q = 2``), de-duplicated and NaN-padded; a feature with no edge (one
    pooled value) or a categorical one gets none.

    Returns
    -------
    array of shape (n_features, q - 1)

    Examples
    --------
    >>> g = Grid.from_lists([[0.5, 1.0, 4.5], [2.0], None], [0, 0, 3])
    >>> spaced_thresholds(g, 4).tolist()
    [[0.5, 2.5, 4.5], [2.0, nan, nan], [nan, nan, nan]]
    """
    out = np.full((grid.n_features, q - 1), np.nan)
    for j in range(grid.n_features):
        edges = grid.feature_edges(j) if not grid.is_categorical[j] else np.zeros(0)
        if not edges.size:
            continue
        steps = np.linspace(0.0, 1.0, q - 1) if q > 2 else np.array([0.5])
        unique = np.unique(spaced_points(edges[0], edges[-1], steps))
        out[j, : unique.shape[0]] = unique
    return out


class UniformMode:
    """The pooled grid's extent, evenly cut, at every node: one round per level."""

    def __init__(self, config: ForestConfig) -> None:
        self.config = config
        self.agreement: GridAgreement | None = None
        self.grid: FloatArray | None = None
        self._steps: dict[Phase, Step] = {
            Phase.GRID: UniformGridStep(self, config),
            Phase.EVALUATE: UniformEvaluateStep(self, config),
        }

    def begin(self, state: LevelState) -> None:
        """Check the declared edges; space the thresholds now if all are declared."""
        self.agreement = begin_agreement(self.config, state)
        if not self.agreement.needed:
            grid = self.agreement.declared_only()
            self.grid = spaced_thresholds(grid, self.config.n_quantiles)

    @property
    def setup(self) -> tuple[Phase, ...]:
        """The grid round, unless every numeric column's edges are declared."""
        needed = self.agreement is not None and self.agreement.needed
        return (Phase.GRID,) if needed else ()

    @property
    def first(self) -> Phase:
        """Every level is one evaluation."""
        return Phase.EVALUATE

    def steps(self) -> Mapping[Phase, Step]:
        """Return the grid's and the evaluation's steps."""
        return self._steps

    def expected_rounds(self, n_clients: int) -> int:
        """Return the grid's round (if any), then one round per level."""
        return self.config.max_depth + len(self.setup)

    def agreed_grid(self) -> FloatArray:
        """Return the thresholds ``(F, q - 1)`` (the grid round set them).

        Raises
        ------
        LocalProtocolError
            Before the grid round.
        """
        if self.grid is None:
            raise LocalProtocolError("FedForest: the uniform grid is not agreed yet.")
        return self.grid


class UniformGridStep:
    """The pooled grid, once, as ``"hist"`` agrees it: its extent sets the range."""

    def __init__(self, mode: UniformMode, config: ForestConfig) -> None:
        self.mode, self.config = mode, config

    def ask(self, state: LevelState) -> Ask:
        """Ask every client for the summary of its undeclared numeric columns."""
        return ask_grid(self.mode.agreement, state)

    def absorb(self, state: LevelState, got: Sequence[Got]) -> Phase:
        """Agree the grid; space ``q - 1`` thresholds over each feature's edges."""
        grid = agreed_grid(self.mode.agreement, state, got)
        self.mode.grid = spaced_thresholds(grid, self.config.n_quantiles)
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
