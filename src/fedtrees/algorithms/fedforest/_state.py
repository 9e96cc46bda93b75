"""What the FedForest server knows during a fit: one state, built when the fit starts.

:class:`LevelState` holds the forest being grown (:class:`._growth.ForestGrowth`)
and what the clients have been told of it (:class:`._forest.ForestDeltas`),
where each client may have rows (:class:`._reach.Reach`), the clients' node
totals for the cross-round checks (:class:`._consistency.NodeTotals`), the
clients still active, what each was asked in the current round and the bins'
layout it was sent, and what a level's rounds leave for its next (AvgImp's
shortlist, then the candidates of :class:`Pending`; the histogram engine's kept
parents, :class:`~fedtrees.algorithms.histogram.LevelRounds`), all forgotten together
after a dropout (:meth:`LevelState.forget_level`). The steps (:mod:`._steps`)
read and fold into it; its methods are what every mode's level shares (who is
asked, the masked sums, where clients have rows, per-client statistics;
docs/fedforest.md: client statistics are summed, never averaged) and the
level's end: split, then the next level, the leaves' statistics, the score, or
done.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedforest._config import ForestConfig
from fedtrees.algorithms.fedforest._consistency import NodeTotals
from fedtrees.algorithms.fedforest._forest import ForestDeltas
from fedtrees.algorithms.fedforest._growth import ForestGrowth
from fedtrees.algorithms.fedforest._layout import ClientRange
from fedtrees.algorithms.fedforest._payloads import ScoreReply
from fedtrees.algorithms.fedforest._phase import Got, Phase, final_phase
from fedtrees.algorithms.fedforest._reach import Reach, client_sides, root_reach
from fedtrees.algorithms.fedforest._scoring import weight_column
from fedtrees.algorithms.histogram import LevelRounds
from fedtrees.exceptions import LocalProtocolError
from fedtrees.federation import FederationInfo, MaskedRounds, SumCheck
from fedtrees.stats import Best, combine

__all__ = ["LevelState", "Pending", "Replies"]

T = TypeVar("T")

Replies = Sequence[tuple[int, IntArray, Any]]
"""A round's replies: (client index, asked positions, reply)."""


@dataclass(eq=False)
class Pending:
    """What a level's sketch round leaves for its evaluation round.

    The nodes still splittable and their considered features, their candidate
    thresholds ``(n, F', candidates)`` (NaN-padded), each client's node weights
    (AvgImp, ``(K, n)``; else empty), the best categorical and client splits,
    and each client's range per pair (its candidates are those inside).
    """

    nodes: IntArray
    pairs: IntArray
    thresholds: FloatArray
    counts: FloatArray
    other: Best
    ranges: Mapping[int, ClientRange]


@dataclass(eq=False)
class LevelState:
    """The server's state of one fit (see the module docstring)."""

    config: ForestConfig
    info: FederationInfo
    growth: ForestGrowth
    first: Phase
    """The phase that starts every level (the candidate mode's)."""
    clients: tuple[str, ...]
    index: Mapping[str, int]
    """A client's position in ``clients``."""
    active: list[str]
    reach: Reach
    deltas: ForestDeltas
    """What the clients have been told of the forest (each request's delta)."""
    totals: NodeTotals = field(default_factory=NodeTotals)
    asked: dict[str, IntArray] = field(default_factory=dict)
    """Per client, the positions of the round's nodes it was asked about."""
    layouts: dict[int, object] = field(default_factory=dict)
    """Per client index, what its last request's fields returned for its reply."""
    pending: Pending | None = None
    shortlist: IntArray | None = None
    """The level's considered features from AvgImp's shortlist round (-1
    padding; None: the drawn ones); the level's sketch reads and forgets it."""
    splits_made: int = 0
    scores: tuple[ScoreReply, ...] = ()
    oob: FloatArray | None = None
    """The pooled out-of-bag sums (``oob_score``, :mod:`._oob`)."""
    masks: MaskedRounds = field(default_factory=lambda: MaskedRounds({}))
    rounds: LevelRounds = field(
        default_factory=lambda: LevelRounds.begin(1, -1, subtract=False)
    )
    """The engine's level rounds: the split parents' pooled histograms kept for
    the next level (``candidates="hist"``; docs/histogram.md)."""
    """The run's masked rounds (secure aggregation, docs/security.md)."""

    @classmethod
    def start(
        cls, config: ForestConfig, info: FederationInfo, first: Phase
    ) -> LevelState:
        """Create the roots: every client reaches the trees it takes part in."""
        growth = ForestGrowth(config, info)
        clients = tuple(info.clients)
        return cls(
            config=config,
            info=info,
            growth=growth,
            first=first,
            clients=clients,
            index={c: k for k, c in enumerate(clients)},
            active=list(clients),
            reach=root_reach(growth),
            deltas=ForestDeltas(growth),
            masks=MaskedRounds(info.public_keys),
            rounds=LevelRounds.begin(
                growth.width,
                weight_column(config.task),
                config.subtract and growth.max_features >= growth.n_features,
            ),
        )

    def need_pending(self) -> Pending:
        """Return the level's pending data (its first round left it).

        Raises
        ------
        LocalProtocolError
            If no round left any: the steps ran out of order.
        """
        if self.pending is None:
            raise LocalProtocolError("FedForest: no sketch round left candidates.")
        return self.pending

    def layout_of(self, k: int, kind: type[T]) -> T:
        """Return what client ``k``'s request recorded for its reply (a ``kind``).

        Raises
        ------
        LocalProtocolError
            If its request recorded none of that kind.
        """
        layout = self.layouts.get(k)
        if not isinstance(layout, kind):
            raise LocalProtocolError(
                f"FedForest: client {self.clients[k]!r} has no {kind.__name__}."
            )
        return layout

    # -- who is asked -------------------------------------------------------------
    def rows_for(self, nodes: IntArray) -> tuple[IntArray, ...]:
        """Per client, the positions in ``nodes`` it is asked about (:mod:`._reach`).

        Below a split on the client indicator the server knows each client's
        side: a child is asked only of the clients sent to it.
        """
        g = self.growth
        if self.config.secure_aggregation:  # dense: every site, every node
            every = np.arange(nodes.shape[0], dtype=np.int64)
            return tuple(every for _ in self.clients)
        parents = g.parents(nodes)
        rows = self.reach.rows_for(nodes, parents)
        at, reaches = client_sides(g, nodes, parents)
        if at.shape[0] == 0:
            return rows
        return tuple(
            np.setdiff1d(r, at[~reaches[:, k]], assume_unique=True)
            for k, r in enumerate(rows)
        )

    def masked_sum(
        self, got: Sequence[Got], check: SumCheck | None = None
    ) -> FloatArray:
        """Return the sum of the round's masked replies (:class:`MaskedRounds`).

        ``check(values, sites)``: what the sum must hold (a failure is a
        :class:`~fedtrees.exceptions.MaskedSumError` naming the round).
        """
        return self.masks.values({self.clients[k]: r for k, _, r in got}, check)

    def declared_weight(self, sites: Sequence[str]) -> float:
        """Return the weight the ``sites`` declared at the agreement, together."""
        return self.info.declared_weight(sites)

    # -- pooling (client statistics add up to the pooled ones; docs/fedforest.md) ----
    def learn_reach(self, nodes: IntArray, counts: Replies) -> None:
        """Record where each client has rows (exact: weight > 0 iff rows)."""
        rows = [np.zeros(0, np.int64)] * len(self.clients)
        for k, asked, count in counts:
            rows[k] = asked[np.asarray(count) > 0]
        self.reach = Reach(nodes.copy(), tuple(rows))

    def per_client(
        self, replies: Replies, todo: IntArray, name: Literal["node_stats", "counts"]
    ) -> FloatArray:
        """Dense ``(K, n_todo, S)`` statistics per client (client splits, AvgImp).

        ``name`` is the reply field: ``"node_stats"`` (of the active clients
        only) or ``"counts"`` (``S = 1``, every client).
        """
        g = self.growth
        width = 1 if name == "counts" else g.width
        if name == "node_stats" and not self.config.split_on_client:
            return np.zeros((0, todo.shape[0], width))  # no rule needs them
        position = np.full(g.open.shape[0], -1)
        position[todo] = np.arange(todo.shape[0])
        out = np.zeros((len(self.clients), todo.shape[0], width))
        for k, asked, reply in replies:
            sent = reply.node_stats if name == "node_stats" else reply.counts
            values = np.asarray(sent, dtype=np.float64)
            at = position[asked]
            out[k, at[at >= 0]] = values.reshape(asked.shape[0], width)[at >= 0]
        if name == "node_stats":
            out = out[[self.index[a] for a in self.active]]
        return out

    # -- the level's end ---------------------------------------------------------------
    def decide(self, nodes: IntArray, numeric: Best, other: Best) -> Phase:
        """Split ``nodes`` on their best candidates; return the next phase."""
        g = self.growth
        best = combine(numeric, other) if other.gain.shape[0] else numeric
        before = g.table.tree.shape[0]
        g.apply(nodes, best)
        self.splits_made += (g.table.tree.shape[0] - before) // 2
        self.pending = None
        return self.after_level()

    def after_level(self) -> Phase:
        """Return the next level's first phase, else leaf statistics, score or done."""
        g = self.growth
        if g.open.shape[0]:
            return self.first
        if g.unknown_leaves().shape[0]:
            return Phase.LEAF_STATS
        return final_phase(self.config)

    def forget_level(self) -> None:
        """Forget what the level gathered: it holds a dropped client's rows.

        The open nodes' statistics, the level's shortlist, its pending
        candidates (none yet during the level's first round) and the engine's
        kept parents (after the after-dropout rule, docs/histogram.md).
        """
        g = self.growth
        g.table.stats[g.open] = np.nan
        self.shortlist = None
        self.pending = None
        self.rounds.drop()
