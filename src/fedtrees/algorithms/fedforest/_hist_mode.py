"""``candidates="hist"``: FedForest on the histogram engine (beyond the paper).

What XGBoost's and LightGBM's ``hist`` methods do, made federated and exact on
a grid (:mod:`fedtrees.algorithms.histogram`, step by step):

1. **The grid, once** (:class:`GridStep`): each client summarises every
   numeric column it holds; the server agrees at most ``max_bins`` bins per
   feature from the pooled mixture of the client CDFs (an exact grid where the
   pooled distinct values are few). Columns with declared ``bin_edges`` are
   not summarised; when every numeric column is declared the round is skipped.
2. **One round per level** (:class:`HistogramStep`): every client answers, per
   open node it may reach, its statistics and the non-zero bins of every
   considered feature, from its rows kept partitioned by node and their codes
   (:mod:`._hist_handlers`). The server sums the bins (exact for whole
   counts), derives a larger child's bins as parent minus its smaller sibling
   where every feature is considered (the engine's level), scores every
   threshold of every open node of every tree at once — both directions of
   missing values — adds Fisher groupings of the clients if asked, and splits.

Under secure aggregation (docs/security.md) both rounds are masked: the grid
comes from declared edges or from the secure sum of fine histograms over the
declared ``feature_ranges``, and each level from the secure sum of dense
histograms; the server reads the pooled statistics and bins back from the sum,
checks what no honest sites' sums can break (weights non-negative and within
the declared ones, every pair's bins adding up to its node, moments with a
non-negative variance: :mod:`fedtrees.algorithms.histogram._pooled`) and goes
on as above.

A forest of depth D takes D + 2 rounds at most (the agreement, the grid, one
per level), whatever the trees and the clients. **Decision**: no per-node
refinement: below the root a bin may hold more than ``1/max_bins`` of a node's
rows, as in XGBoost and LightGBM; ``candidates="quantile"`` keeps the paper's
per-node ``1/q`` guarantee. The grid agreement, the level's pooling,
subtraction and the after-dropout rule are the engine's
(:class:`~fedtrees.algorithms.histogram.GridAgreement`,
:class:`~fedtrees.algorithms.histogram.LevelRounds`; docs/histogram.md): this
module keeps FedForest's scores and decisions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedforest._config import ForestConfig
from fedtrees.algorithms.fedforest._hist_level import grid_splits
from fedtrees.algorithms.fedforest._hist_payloads import (
    GridReply,
    GridRequest,
    HistogramReply,
    HistogramRequest,
    wide_statistics,
)
from fedtrees.algorithms.fedforest._kernels import SPLIT_NONE
from fedtrees.algorithms.fedforest._layout import compact_ints
from fedtrees.algorithms.fedforest._phase import Got, Phase
from fedtrees.algorithms.fedforest._scoring import node_weights
from fedtrees.algorithms.fedforest._state import LevelState
from fedtrees.algorithms.fedforest._steps import Ask, Step, fixed
from fedtrees.algorithms.histogram import (
    Bins,
    DenseLayout,
    Grid,
    GridAgreement,
    LevelPlan,
    check_pooled_level,
    check_pooled_moments,
)
from fedtrees.exceptions import LocalProtocolError
from fedtrees.federation import as_reply
from fedtrees.stats import best_client, combine

__all__ = [
    "GridStep",
    "HistMode",
    "HistogramStep",
    "agreed_grid",
    "ask_grid",
    "begin_agreement",
]


def begin_agreement(config: ForestConfig, state: LevelState) -> GridAgreement:
    """Return the engine's grid agreement of a ``"hist"`` or ``"uniform"`` fit.

    Under secure aggregation the columns without declared edges need declared
    ``feature_ranges`` (the secure grid, docs/histogram.md).
    """
    return GridAgreement.begin(
        state.info, owner="FedForest", max_bins=config.max_bins,
        bin_edges=config.bin_edges, feature_ranges=config.feature_ranges,
        secure=config.secure_aggregation,
    )  # fmt: skip


def _begun(agreement: GridAgreement | None) -> GridAgreement:
    """Return the mode's grid agreement (its ``begin`` made it).

    Raises
    ------
    LocalProtocolError
        Before the mode's ``begin``: the steps ran out of order.
    """
    if agreement is None:
        raise LocalProtocolError("FedForest: the grid round before the mode began.")
    return agreement


def ask_grid(agreement: GridAgreement | None, state: LevelState) -> Ask:
    """Ask every client for the summary of every column not declared."""
    agreement = _begun(agreement)
    fields = fixed(**agreement.request_fields())
    masked = agreement.n_fine if agreement.ranges is not None else None
    return Ask(GridRequest, state.growth.pair_features(), None, fields, masked=masked)


def agreed_grid(
    agreement: GridAgreement | None, state: LevelState, got: Sequence[Got]
) -> Grid:
    """Agree the grid from the round's replies: plain, or the masked total."""
    agreement = _begun(agreement)
    if agreement.ranges is None or not got:
        return agreement.agree([as_reply(reply, GridReply) for _, _, reply in got])

    def check(total: FloatArray, sites: tuple[str, ...]) -> None:
        bound = state.declared_weight(sites)
        agreement.check_fine(total, sites=len(sites), bound=bound)

    return agreement.agree_masked(state.masked_sum(got, check))


class HistMode:
    """The grid once, then one histogram round per level."""

    def __init__(self, config: ForestConfig) -> None:
        self.config = config
        self.grid: Grid | None = None
        self.agreement: GridAgreement | None = None
        self._steps: dict[Phase, Step] = {
            Phase.GRID: GridStep(self, config),
            Phase.HISTOGRAM: HistogramStep(self, config),
        }

    def begin(self, state: LevelState) -> None:
        """Check the declared edges; agree the grid now if every column is declared."""
        self.agreement = begin_agreement(self.config, state)
        if not self.agreement.needed:
            self.grid = self._checked(state, self.agreement.declared_only())

    @property
    def setup(self) -> tuple[Phase, ...]:
        """The grid round, unless every numeric column's edges are declared."""
        needed = self.agreement is not None and self.agreement.needed
        return (Phase.GRID,) if needed else ()

    @property
    def first(self) -> Phase:
        """Every level is one histogram round."""
        return Phase.HISTOGRAM

    def steps(self) -> Mapping[Phase, Step]:
        """Return the grid's and the level's steps."""
        return self._steps

    def expected_rounds(self, n_clients: int) -> int:
        """Return the grid's round (if any), then one round per level."""
        return self.config.max_depth + len(self.setup)

    def agreed_grid(self) -> Grid:
        """Return the grid (agreed by now).

        Raises
        ------
        LocalProtocolError
            Before the grid round.
        """
        if self.grid is None:
            raise LocalProtocolError("FedForest: the hist grid is not agreed yet.")
        return self.grid

    @staticmethod
    def _checked(state: LevelState, grid: Grid) -> Grid:
        """Refuse categorical columns the engine cannot code (named)."""
        grid.check_categories(
            "FedForest",
            state.info.schema.feature_names,
            "use candidates='quantile', which has no such limit",
        )
        return grid


class GridStep:
    """Every client summarises its numeric columns, once: the server agrees the grid."""

    def __init__(self, mode: HistMode, config: ForestConfig) -> None:
        self.mode, self.config = mode, config

    def ask(self, state: LevelState) -> Ask:
        """Ask for the summary of every column not declared."""
        return ask_grid(self.mode.agreement, state)

    def absorb(self, state: LevelState, got: Sequence[Got]) -> Phase:
        """Agree the grid from the pooled mixture of the clients' summaries."""
        self.mode.grid = self.mode._checked(
            state, agreed_grid(self.mode.agreement, state, got)
        )
        return Phase.HISTOGRAM


class HistogramStep:
    """One level: the clients' histograms, pooled and searched; the level splits."""

    def __init__(self, mode: HistMode, config: ForestConfig) -> None:
        self.mode, self.config = mode, config

    def _plan(self, state: LevelState) -> tuple[IntArray, LevelPlan]:
        """Return the level's features per open node and what is asked of them."""
        g = state.growth
        pairs = g.pair_features()
        stats = np.asarray(g.table.stats[g.open], dtype=np.float64)
        plan = state.rounds.plan(g.open, pairs, g.parents(g.open), stats)
        return pairs, plan

    def ask(self, state: LevelState) -> Ask:
        """Ask every client's bins (the grid travels in full requests and level 0)."""
        grid = self.mode.agreed_grid()
        _, plan = self._plan(state)
        level = state.growth.level

        def fields(
            k: int, rows: IntArray, full: bool
        ) -> tuple[dict[str, Any], LevelPlan]:
            send = full or level == 0
            return {
                "feature_bins": compact_ints(grid.n_bins),
                "grid_edges": grid.edges if send else np.zeros(0),
                "grid_edge_ptr": compact_ints(grid.edge_ptr if send else np.zeros(0)),
            }, plan

        masked = None
        if self.config.secure_aggregation:
            layout = DenseLayout(plan.pairs, grid.n_bins, state.growth.width)
            masked = layout.length
        wide = wide_statistics(self.config.task)
        return Ask(
            HistogramRequest, plan.pairs, None, fields, masked=masked, masked_wide=wide
        )

    def absorb(self, state: LevelState, got: Sequence[Got]) -> Phase:
        """Pool, subtract, search, split; keep the split nodes' bins if useful."""
        g, c = state.growth, self.config
        asked_plan = state.layout_of(got[0].client, LevelPlan) if got else None
        if state.rounds.repeat(asked_plan):
            return Phase.HISTOGRAM  # a dropout: the level again, no subtraction
        assert asked_plan is not None  # repeat() asks again without one
        pairs = g.pair_features()
        if c.secure_aggregation:
            todo, bins = self._secure_pool(state, got, asked_plan)
            replies: list[tuple[int, IntArray, HistogramReply]] = []
        else:
            replies = [(k, a, as_reply(r, HistogramReply)) for k, a, r in got]
            todo, bins = self._pool(state, replies, asked_plan)
        nodes = g.open[todo]
        parent, min_leaf = g.table.stats[nodes], g.min_leaf(nodes)
        numeric, other = grid_splits(
            bins, pairs, todo, self.mode.agreed_grid(), parent, min_leaf, c.criterion
        )
        if c.split_on_client:
            per_client = state.per_client(replies, todo, "node_stats")
            clients = best_client(
                parent, per_client.transpose(1, 0, 2), c.criterion, min_leaf
            )
            other = combine(other, clients)
        open_before = g.open
        phase = state.decide(nodes, numeric, other)
        self._keep(state, bins, open_before, pairs)
        return phase

    def _pool(
        self,
        state: LevelState,
        replies: Sequence[tuple[int, IntArray, HistogramReply]],
        plan: LevelPlan,
    ) -> tuple[IntArray, Bins]:
        """Pool the open nodes' statistics and bins, learn where clients have rows.

        Returns the positions of the open nodes that may still split, and the
        level's histograms.
        """
        g = state.growth
        pooled, bins_of = state.rounds.pooled(
            plan, [(a, r) for _, a, r in replies], g.open.shape[0]
        )
        weights = [
            (k, a, node_weights(r.node_stats, self.config.task)) for k, a, r in replies
        ]
        state.learn_reach(g.open, weights)
        g.set_stats(g.open, pooled)  # from the clients answering now: no phantoms
        todo: IntArray = np.flatnonzero(g.splittable(g.open))
        return todo, bins_of()

    def _secure_pool(
        self, state: LevelState, got: Sequence[Got], plan: LevelPlan
    ) -> tuple[IntArray, Bins]:
        """Read the level's masked sum: pooled node statistics and bins.

        Returns the positions of the open nodes that may still split, and the
        pooled histograms of every asked pair. The server learns no client's
        statistics, so where clients have rows is not learned: every client is
        asked about every node (:meth:`LevelState.rows_for`).
        """
        g = state.growth
        layout = DenseLayout(plan.pairs, self.mode.agreed_grid().n_bins, g.width)
        regression = self.config.task == "regression"

        def check(total: FloatArray, sites: tuple[str, ...]) -> None:
            counts = [0] if regression else list(range(g.width))
            stats, bins = check_pooled_level(
                layout, total, sites=len(sites), counts=counts,
                bound=state.declared_weight(sites),
            )  # fmt: skip
            if regression:
                check_pooled_moments("node_stats", stats, sites=len(sites))
                check_pooled_moments("bin_stats", bins, sites=len(sites))

        total = state.masked_sum(got, check)
        stats, bins_of = state.rounds.read(plan, layout, total)
        g.set_stats(g.open, stats)
        todo: IntArray = np.flatnonzero(g.splittable(g.open))
        return todo, bins_of()

    def _keep(
        self, state: LevelState, bins: Bins, nodes: IntArray, pairs: IntArray
    ) -> None:
        """Keep the split nodes' bins where their children consider every feature."""
        g = state.growth
        if not g.open.shape[0]:
            state.rounds.forget()
            return
        split = np.flatnonzero(g.table.feature[nodes] != SPLIT_NONE)
        state.rounds.keep(bins, nodes[split], split, pairs.shape[1])
