"""The Federated-ID3 server strategy: grows the tree level by level.

Messages and the privacy accounting: :mod:`._payloads`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from fedtrees._validation import MIN_EPSILON, invalid
from fedtrees.algorithms._discretize import Binning, BinningRound
from fedtrees.algorithms.fedid3._payloads import (
    LevelReply,
    LevelRequest,
    release_epsilon,
)
from fedtrees.exceptions import ValidationError
from fedtrees.federation import (
    FederationInfo,
    Payload,
    RoundPlan,
    ServerStrategy,
    as_reply,
)
from fedtrees.learners import Id3Growth, default_max_depth
from fedtrees.privacy import even_share
from fedtrees.tree import Tree, pack_trees

__all__ = ["FedID3Result", "FedID3Settings", "FedID3Strategy"]


def _check_plan(epsilon: float, max_depth: int, n_features: int, owner: str) -> None:
    """Refuse an ε whose per-table share ε/(d·q) is below ``MIN_EPSILON``.

    q is at most the number of features (every feature's table at a node).
    """
    share = even_share(even_share(epsilon, max_depth), n_features)
    if share < MIN_EPSILON:
        raise ValidationError(
            f"The 'epsilon' parameter of {owner} is too small for the plan: "
            f"epsilon={epsilon!r} over {max_depth} levels and up to {n_features} "
            f"tables per node gives a per-table epsilon of {share:g}; it must be "
            f">= {MIN_EPSILON:g} so that the Laplace noise stays finite. Raise "
            "epsilon or lower max_depth."
        )


@dataclass(frozen=True)
class FedID3Settings:
    """The validated parameters of one Federated-ID3 run."""

    epsilon: float | None
    max_depth: int | None
    binary: bool
    seed: int
    n_bins: int
    bin_edges: object
    owner: str
    noise: str = "per_client"
    honest_clients: int | None = None
    significance: float | None = None


def _noise_reduction(settings: FedID3Settings, n_clients: int) -> float:
    """Return r, the divisor of each client's noise variance (1: full noise).

    ``noise="honest_clients"``: r = t − 1 for t honest clients (Truex et al.;
    :mod:`._payloads`), t = ``honest_clients`` or every client of the run.
    """
    if settings.noise == "per_client":
        return 1.0
    t = n_clients if settings.honest_clients is None else settings.honest_clients
    if not 2 <= t <= n_clients:
        raise invalid(
            "honest_clients",
            settings.owner,
            f"an int in [2, {n_clients}]: at most the clients of the federation, "
            "and at least 2 (each client's noise variance is divided by t - 1)",
            t,
        )
    return float(t - 1)


@dataclass(frozen=True, eq=False)
class FedID3Result:
    """The grown tree (labels as codes), the binning and the privacy spent."""

    tree: Tree
    binning: Binning
    max_depth: int
    levels: int
    epsilon_spent: dict[str, float]
    epsilon_queried: dict[str, float]
    n_queries: dict[str, int]
    noise_reduction: float = 1.0


@dataclass
class _Spent:
    """Per client: the spend it reported, and the tables it released."""

    epsilon: dict[str, float] = field(default_factory=dict)
    queries: dict[str, int] = field(default_factory=dict)


class FedID3Strategy(ServerStrategy):
    """Server side of Federated-ID3 (see :mod:`._payloads`)."""

    def __init__(self, settings: FedID3Settings) -> None:
        self.settings = settings
        self.info: FederationInfo | None = None
        self.binning: BinningRound | None = None
        self.growth: Id3Growth | None = None
        self.max_depth = 1
        self.phase = ""
        self.rounds = 1
        self.spent = _Spent()
        self.pending: LevelRequest | None = None  # the level's request, planned
        self.noise_reduction = 1.0  # r: each client's noise variance ÷ r

    def start(self, info: FederationInfo) -> None:
        """Resolve the depth and the binning (declared edges or a sketch round)."""
        s = self.settings
        self.info = info
        f = info.schema.n_features
        self.max_depth = default_max_depth(f) if s.max_depth is None else s.max_depth
        if s.epsilon is not None:
            _check_plan(s.epsilon, self.max_depth, f, s.owner)
        self.noise_reduction = _noise_reduction(s, len(info.clients))
        exact = s.epsilon is None
        self.binning = BinningRound(s.bin_edges, s.n_bins, exact, s.owner)
        self.binning.start(info.schema)
        self.phase = "sketch" if self.binning.pending else "level"
        self.rounds = self.max_depth + (1 if self.phase == "sketch" else 0)
        if not self.binning.pending:
            self._grow()

    def expected_rounds(self) -> int:
        """At most one round per level (plus the sketch round)."""
        return self.rounds

    def round_metrics(self, round: int) -> dict[str, float]:
        """Depth level, open nodes, nodes so far."""
        g = self.growth
        if g is None:
            return {}
        return {
            "level": float(g.level),
            "open_nodes": float(g.open.shape[0]),
            "nodes": float(g.n_nodes),
        }

    def plan_round(self, round: int) -> RoundPlan | None:
        """Return the sketch request, a level's request, or None when grown."""
        clients = self._info().clients
        if self.phase == "sketch":
            assert self.binning is not None
            return RoundPlan.broadcast(self.binning.request(), clients)
        if self.phase == "done":
            return None
        self.pending = self._level_request()
        return RoundPlan.broadcast(self.pending, clients)

    def aggregate(self, round: int, replies: Mapping[str, Payload]) -> None:
        """Fold the sketch, or sum a level's tables and grow."""
        if self.phase == "sketch":
            assert self.binning is not None
            self.binning.absorb([replies[c] for c in sorted(replies)])
            self._grow()
            self.phase = "level"
            return
        self._absorb_level(
            {c: as_reply(replies[c], LevelReply) for c in sorted(replies)}
        )

    def finish(self) -> FedID3Result:
        """Return the tree, the binning and every client's privacy spend."""
        g, binning = self._g(), self._binning()
        return FedID3Result(
            g.tree(),
            binning,
            self.max_depth,
            g.level,
            self._charged(),
            dict(self.spent.epsilon),
            dict(self.spent.queries),
            self.noise_reduction,
        )

    # -- steps ----------------------------------------------------------------------
    def _info(self) -> FederationInfo:
        assert self.info is not None
        return self.info

    def _g(self) -> Id3Growth:
        assert self.growth is not None
        return self.growth

    def _binning(self) -> Binning:
        assert self.binning is not None
        assert self.binning.binning is not None
        return self.binning.binning

    def _grow(self) -> None:
        binning = self._binning()
        self.growth = Id3Growth(
            arity=binning.arity,
            n_classes=len(self._info().schema.classes),
            max_depth=self.max_depth,
            binary=self.settings.binary,
            categorical=binning.categorical,
            significance=self.settings.significance,
        )

    def _level_request(self) -> LevelRequest:
        g, s = self._g(), self.settings
        layout = g.layout()
        return LevelRequest(
            **pack_trees([g.structure()]),
            **self._binning().fields(),
            open_nodes=layout.open_nodes,
            allowed=layout.allowed,
            classes=np.asarray(self._info().schema.classes, dtype=str),
            level=g.level,
            n_levels=self.max_depth,
            epsilon=math.inf if s.epsilon is None else s.epsilon,
            seed=s.seed,
            noise_reduction=self.noise_reduction,
        )

    def _absorb_level(self, replies: Mapping[str, LevelReply]) -> None:
        request = self.pending
        assert request is not None  # planned in this round
        tables = np.sum([r.counts for r in replies.values()], axis=0)
        min_count = 0.0
        if not request.exact:
            tables = np.maximum(tables, 0.0)  # post-processing of the noisy sums
            cells = 2 * len(replies) * len(request.classes)
            min_count = math.sqrt(cells) / request.query_epsilon
        n_tables = int(request.allowed.sum())
        for client, reply in replies.items():
            self.spent.epsilon[client] = reply.epsilon_spent
            self.spent.queries[client] = self.spent.queries.get(client, 0) + n_tables
        self._g().absorb(tables, min_count)
        if self._g().done:
            self.phase = "done"

    def _charged(self) -> dict[str, float]:
        """Return the plan's cost per client (the Decision in :mod:`._payloads`).

        The levels answered (each reply's spend was checked) plus the levels
        never reached: ε (``ε·sqrt(r)`` under a noise reduction r, what the
        releases cost against the server), or inf for exact counts.
        """
        eps = self.settings.epsilon
        total = math.inf if eps is None else release_epsilon(eps, self.noise_reduction)
        return dict.fromkeys(self.spent.epsilon, total)
