"""The Federated-ID3 server strategy: grows the tree level by level.

Messages and the privacy accounting: :mod:`._payloads`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from fedtrees._validation import MIN_EPSILON, invalid
from fedtrees.algorithms._discretize import Binning, BinningRound
from fedtrees.algorithms._phased import PhasedStrategy, Step
from fedtrees.algorithms.fedid3._payloads import (
    LevelReply,
    LevelRequest,
    release_epsilon,
)
from fedtrees.exceptions import ValidationError
from fedtrees.federation import FederationInfo, Payload, RoundPlan, as_reply
from fedtrees.learners import Id3Growth, default_max_depth
from fedtrees.privacy import even_share
from fedtrees.tree import Tree, pack_trees

__all__ = [
    "FedID3Phase",
    "FedID3Result",
    "FedID3Settings",
    "FedID3State",
    "FedID3Strategy",
]


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


class FedID3Phase(enum.Enum):
    """The rounds of Federated-ID3 after the agreement, in order."""

    SKETCH = "sketch"
    """Undeclared numeric columns (exact counts only): pooled sketches bin them."""
    LEVEL = "level"
    """One per depth level: every client's (noisy) count tables of the open
    nodes up; the server sums them and splits or closes every node."""


@dataclass(eq=False)
class FedID3State:
    """The server's state, complete from the agreement.

    ``binning`` is the binning so far (declared edges, one ``"all"`` bin per
    column the sketch round has yet to cut) and ``growth`` the tree over it:
    the sketch round replaces both. ``request`` is the current level's
    request (its ask builds it; its absorb reads the plan's ε from it).
    """

    settings: FedID3Settings
    info: FederationInfo
    max_depth: int
    noise_reduction: float
    """r: each client's noise variance ÷ r."""
    sketch: BinningRound
    sketch_round: bool
    """Whether the fit opens with the sketch round."""
    binning: Binning
    growth: Id3Growth
    request: LevelRequest
    spent: _Spent = field(default_factory=_Spent)


class FedID3Strategy(PhasedStrategy[FedID3State, FedID3Phase]):
    """Server side of Federated-ID3 (see :mod:`._payloads`).

    Rounds (:class:`FedID3Phase`): the sketch round when numeric columns have
    no declared edges, then one level round per depth level until no node is
    open.
    """

    first = FedID3Phase.LEVEL

    def __init__(self, settings: FedID3Settings) -> None:
        super().__init__()
        self.settings = settings

    def begin(self, info: FederationInfo) -> FedID3State:
        """Resolve the depth, the plan's ε, the binning (declared or sketched)."""
        s = self.settings
        f = info.schema.n_features
        max_depth = default_max_depth(f) if s.max_depth is None else s.max_depth
        if s.epsilon is not None:
            _check_plan(s.epsilon, max_depth, f, s.owner)
        noise_reduction = _noise_reduction(s, len(info.clients))
        sketch = BinningRound(s.bin_edges, s.n_bins, s.epsilon is None, s.owner)
        binning = sketch.start(info.schema)
        growth = _grow(s, info, binning, max_depth)
        request = _level_request(s, info, binning, growth, max_depth, noise_reduction)
        return FedID3State(
            s,
            info,
            max_depth,
            noise_reduction,
            sketch,
            sketch.pending,
            binning,
            growth,
            request,
        )

    def first_phase(self, state: FedID3State) -> FedID3Phase:
        """Return the sketch round when numeric columns need bins, else a level."""
        return FedID3Phase.SKETCH if state.sketch_round else FedID3Phase.LEVEL

    def steps(self) -> Mapping[FedID3Phase, Step[FedID3State, FedID3Phase]]:
        """Return the table: the sketch, then the levels."""
        return {
            FedID3Phase.SKETCH: Step(_ask_sketch, _absorb_sketch),
            FedID3Phase.LEVEL: Step(_ask_level, _absorb_level),
        }

    def result(self, state: FedID3State) -> FedID3Result:
        """Return the tree, the binning and every client's privacy spend."""
        st = state
        return FedID3Result(
            st.growth.tree(),
            st.binning,
            st.max_depth,
            st.growth.level,
            _charged(st),
            dict(st.spent.epsilon),
            dict(st.spent.queries),
            st.noise_reduction,
        )

    def expected_rounds(self) -> int:
        """At most one round per level (plus the sketch round)."""
        st = self.state
        return st.max_depth + int(st.sketch_round)

    def round_metrics(self, round: int) -> dict[str, float]:
        """Depth level, open nodes, nodes so far."""
        g = self.state.growth
        return {
            "level": float(g.level),
            "open_nodes": float(g.open.shape[0]),
            "nodes": float(g.n_nodes),
        }


# -- the steps -------------------------------------------------------------------
def _ask_sketch(st: FedID3State) -> RoundPlan:
    return RoundPlan.broadcast(st.sketch.request(), st.info.clients)


def _absorb_sketch(st: FedID3State, replies: Mapping[str, Payload]) -> FedID3Phase:
    st.binning = st.sketch.absorb([replies[c] for c in sorted(replies)])
    st.growth = _grow(st.settings, st.info, st.binning, st.max_depth)
    return FedID3Phase.LEVEL


def _ask_level(st: FedID3State) -> RoundPlan:
    st.request = _level_request(
        st.settings, st.info, st.binning, st.growth, st.max_depth, st.noise_reduction
    )
    return RoundPlan.broadcast(st.request, st.info.clients)


def _absorb_level(
    st: FedID3State, replies: Mapping[str, Payload]
) -> FedID3Phase | None:
    """Sum the level's tables (noisy: clipped at 0), charge them, grow."""
    request = st.request
    ordered = {c: as_reply(replies[c], LevelReply) for c in sorted(replies)}
    tables = np.sum([r.counts for r in ordered.values()], axis=0)
    min_count = 0.0
    if not request.exact:
        tables = np.maximum(tables, 0.0)  # post-processing of the noisy sums
        cells = 2 * len(ordered) * len(request.classes)
        min_count = math.sqrt(cells) / request.query_epsilon
    n_tables = int(request.allowed.sum())
    for client, reply in ordered.items():
        st.spent.epsilon[client] = reply.epsilon_spent
        st.spent.queries[client] = st.spent.queries.get(client, 0) + n_tables
    st.growth.absorb(tables, min_count)
    return None if st.growth.done else FedID3Phase.LEVEL


# -- pieces ----------------------------------------------------------------------
def _grow(
    s: FedID3Settings, info: FederationInfo, binning: Binning, max_depth: int
) -> Id3Growth:
    return Id3Growth(
        arity=binning.arity,
        n_classes=len(info.schema.classes),
        max_depth=max_depth,
        binary=s.binary,
        categorical=binning.categorical,
        significance=s.significance,
    )


def _level_request(
    s: FedID3Settings,
    info: FederationInfo,
    binning: Binning,
    g: Id3Growth,
    max_depth: int,
    noise_reduction: float,
) -> LevelRequest:
    layout = g.layout()
    return LevelRequest(
        **pack_trees([g.structure()]),
        **binning.fields(),
        open_nodes=layout.open_nodes,
        allowed=layout.allowed,
        classes=np.asarray(info.schema.classes, dtype=str),
        level=g.level,
        n_levels=max_depth,
        epsilon=math.inf if s.epsilon is None else s.epsilon,
        seed=s.seed,
        noise_reduction=noise_reduction,
    )


def _charged(st: FedID3State) -> dict[str, float]:
    """Return the plan's cost per client (the Decision in :mod:`._payloads`).

    The levels answered (each reply's spend was checked) plus the levels
    never reached: ε (``ε·sqrt(r)`` under a noise reduction r, what the
    releases cost against the server), or inf for exact counts.
    """
    eps = st.settings.epsilon
    total = math.inf if eps is None else release_epsilon(eps, st.noise_reduction)
    return dict.fromkeys(st.spent.epsilon, total)
