"""Federated-ID3 messages, client handler and server strategy (docs/icdta.md).

Truex et al. (2019)'s top-down federated ID3, the baseline of ICDTA4FL (paper
002) and, made binary, the "IBM tree" of FedGA-Tree (paper 000). The server
grows the tree level by level, all open nodes of a level in one round:

0. (numeric columns without declared edges; exact mode only) the federated
   discretization round of :mod:`fedtrees.algorithms._discretize`;
1. per level: the server sends the tree's *structure* so far (splits only, no
   counts: clients learn nothing pooled), the open nodes and the features each
   considers; every client routes its rows (codes) and answers, for every
   (open node, feature), its count of rows per (value, class)
   (:func:`fedtrees.learners.value_class_counts`);
2. the server sums the tables over clients and grows the tree
   (:class:`fedtrees.learners.Id3Growth`: ID3 information gain, or binary Gini
   splits) — exactly the step :func:`fedtrees.learners.fit_id3` runs on pooled
   rows, so with ``epsilon=None`` the federated tree equals the pooled one.

**Privacy (``epsilon`` set).** The plan has d levels (d = max_depth); a level's
budget is ε/d. The q features a node considers share it: each (node, feature)
table is a histogram (one row changes one cell by 1: sensitivity 1) released
with Laplace noise of ε' = ε/(d·q). The nodes of a level hold disjoint rows, so
by parallel composition a level costs q·ε' = ε/d, whatever its number of nodes.
Every count gets noise through the client's own :class:`PrivacyAccountant`; as
handlers are stateless, a level's accountant replays the levels before it
(honest-but-curious server) and the reply reports the cumulative spend, which the
server checks. A site that declared its own budget is charged each level's share
ε/d before the level's noise is drawn, and refuses exact (noise-free) levels
(:mod:`fedtrees.federation._budget`). **Decision (charging the plan, as the DP
forest):** levels the tree never reached are charged as well, so
``epsilon_spent_`` equals ε (the server's account; a site's budget is charged
only the levels it answered).
**Decision (noise):** each client adds its own noise (Truex et al.'s secure
aggregation, which lets the noise shrink with the number of honest clients, is
not implemented); the server clips pooled counts at 0 and treats a value or a
node whose pooled noisy count is below the standard deviation of the pooled
noise, ``sqrt(2·K·C)/ε'``, as absent — post-processing, at no privacy cost.
Noise of client k at level l is keyed by ``[seed, 8, crc32(k), l]``.

Communication (K clients, S_l open nodes at level l, C classes): rounds
``1 + [1] + L`` for the L levels grown (L <= d). Per level and client, down: the
structure as a packed tree (``P(n, b)`` bytes, see ICDTA4FL), ``8·S_l`` open
ids, ``S_l·F`` allowed flags and the binning; up: ``8·C·Σ_s Σ_{f allowed} arity_f``
count bytes and 8 for the spend. No message has a row dimension.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from fedtrees._random import client_key, keyed_rng
from fedtrees._typing import FloatArray
from fedtrees._validation import MIN_EPSILON, check_epsilon
from fedtrees.algorithms._discretize import BinnedFields, Binning, BinningRound
from fedtrees.algorithms._packed import PackedTrees, class_codes, rebuild_packed
from fedtrees.algorithms._plausible import noisy_count_field
from fedtrees.algorithms._requests import request_error
from fedtrees.exceptions import ValidationError
from fedtrees.federation import (
    ClientData,
    FederationInfo,
    Field,
    InvalidField,
    Payload,
    ReplySpec,
    RoundPlan,
    as_reply,
    check_same_stats,
    handler,
    payload,
)
from fedtrees.learners import Id3Growth, Layout, default_max_depth, value_class_counts
from fedtrees.privacy import Laplace, PrivacyAccountant, even_share
from fedtrees.tree import Tree, pack_trees

__all__ = [
    "FedID3Result",
    "FedID3Settings",
    "FedID3Strategy",
    "LevelReply",
    "LevelRequest",
]

NOISE_STREAM: Final = 8


@payload("fedid3.counts")
class LevelReply(Payload):
    """The client's (value, class) counts of every pair; its cumulative ε."""

    counts: np.ndarray
    epsilon_spent: float


@payload("fedid3.level")
class LevelRequest(PackedTrees, BinnedFields):
    """Count your rows at the open nodes of this level (the structure so far).

    ``epsilon`` is the whole run's budget (inf: exact counts, no noise);
    ``n_levels`` is d, the planned depth.
    """

    open_nodes: np.ndarray
    allowed: np.ndarray
    classes: np.ndarray
    level: int
    n_levels: int
    epsilon: float
    seed: int

    @property
    def layout(self) -> Layout:
        """Where each (open node, feature) table sits in the reply."""
        return Layout(
            self.open_nodes, self.allowed, self.arity, int(self.classes.shape[0])
        )

    @property
    def exact(self) -> bool:
        """Whether counts travel without noise."""
        return math.isinf(self.epsilon)

    @property
    def tables_per_node(self) -> int:
        """q: the tables a node releases, which share the level's budget."""
        return int(self.allowed.sum(axis=1).max(initial=1))

    @property
    def level_epsilon(self) -> float:
        """A level's budget: the largest float share with d shares within ε."""
        return even_share(self.epsilon, self.n_levels)

    @property
    def query_epsilon(self) -> float:
        """ε' of one (node, feature) table: ε / (d · q), never summing above ε."""
        return even_share(self.level_epsilon, self.tables_per_node)

    def spent_after(self) -> float:
        """Return the cumulative ε a client has spent after answering this level."""
        return (
            math.inf if self.exact else self.epsilon * (self.level + 1) / self.n_levels
        )

    def structure(self) -> Tree:
        """Rebuild the partial tree the rows are routed through."""
        (tree,) = rebuild_packed(
            self,
            n_features=int(self.binned.shape[0]),
            classes=class_codes(self.classes),
        )
        return tree

    def expected_reply(self) -> ReplySpec:
        """One count per cell of the layout; the spend of ``level + 1`` levels.

        Exact counts are row counts: each at most the client's declared row
        bound, and every considered feature's table of a node adds up to the
        same class counts (each row has one value). Noisy counts (Laplace of
        scale 1/ε') need not add up, but each is a count plus noise: within the
        row bound give or take the noise's reach
        (:func:`fedtrees.algorithms._plausible.noisy_count_field`).
        """
        counts = (
            Field.array("f", (self.layout.size,), nonnegative=True, rows=True)
            if self.exact
            else noisy_count_field(1.0 / self.query_epsilon, (self.layout.size,))
        )
        spent = Field.scalar(low=0.0, finite=False)
        return ReplySpec(
            LevelReply, {"counts": counts, "epsilon_spent": spent}, check=self._check
        )

    def _check(self, reply: LevelReply) -> None:
        self._spend(reply)
        if self.exact:
            self._check_tables(reply)

    def _check_tables(self, reply: LevelReply) -> None:
        """Every considered feature's table of a node holds the same class counts."""
        per_value = self.layout.dense(reply.counts).sum(axis=2)  # (n_open, F, C)
        allowed = np.asarray(self.allowed, dtype=bool)
        first = np.argmax(allowed, axis=1)
        want = per_value[np.arange(per_value.shape[0]), first][:, None, :]
        want = np.broadcast_to(want, per_value.shape)
        check_same_stats(
            "counts",
            np.where(allowed[..., None], per_value, want),
            want,
            "a feature's table of a node sums (per class)",
            False,
        )

    def _spend(self, reply: LevelReply) -> None:
        wanted = self.spent_after()
        same = (
            math.isinf(reply.epsilon_spent)
            if math.isinf(wanted)
            else math.isclose(reply.epsilon_spent, wanted, rel_tol=1e-9)
        )
        if not same:
            raise InvalidField(
                "epsilon_spent", f"{reply.epsilon_spent!r}; expected {wanted!r}"
            )


@handler("fedid3.level")
def count_level(request: LevelRequest, data: ClientData) -> LevelReply:
    """Client: count the local rows per (open node, feature, value, class).

    The binning (which sizes every count table) is checked against this
    client's columns, and the open nodes against the structure, before any
    table is allocated.
    """
    codes = request.codes(data)
    tree = request.structure()
    _check_open(request, tree.n_nodes, codes.shape[1])
    layout = request.layout
    slot = layout.slots(tree.apply(codes), tree.n_nodes)
    labels = data.label_codes(request.classes)
    counts = value_class_counts(codes.astype(np.int64), labels, slot, layout)
    if request.exact:  # a noise-free release: no finite site budget allows it
        data.charge_privacy(
            math.inf, f"{request.kind}: level {request.level}, exact counts"
        )
        return LevelReply(counts=counts, epsilon_spent=math.inf)
    return _noisy(request, data, counts)


def _check_open(request: LevelRequest, n_nodes: int, n_features: int) -> None:
    """Open nodes of the structure, one row of ``allowed`` flags (F) each."""
    kind, nodes = request.kind, request.open_nodes
    if (
        nodes.ndim != 1
        or nodes.dtype.kind not in "iu"
        or np.any(nodes < 0)
        or np.any(nodes >= n_nodes)
    ):
        raise request_error(
            kind, "open_nodes", f"node ids of the structure, in [0, {n_nodes})", nodes
        )
    shape = (nodes.shape[0], n_features)
    if request.allowed.shape != shape or request.allowed.dtype.kind != "b":
        raise request_error(
            kind, "allowed", f"flags of shape {shape}", request.allowed.shape
        )


def _noisy(request: LevelRequest, data: ClientData, counts: FloatArray) -> LevelReply:
    """Release the level's tables through the client's accountant (see module).

    The level's share ε/d is charged to the site's budget first (if declared):
    each level is a new release; the replayed earlier levels were charged when
    they were answered.
    """
    check_epsilon(request.query_epsilon, f"request {request.kind!r} (per table)")
    accountant = PrivacyAccountant(
        request.epsilon, owner=f"client {data.client_id!r}", strict=True
    )
    if request.level:  # the levels answered before (the handler keeps no state)
        accountant.spend(
            request.level_epsilon, label="earlier levels", queries=request.level
        )
    accountant.check(request.query_epsilon, queries=request.tables_per_node)
    data.charge_privacy(request.level_epsilon, f"{request.kind}: level {request.level}")
    rng = keyed_rng(
        request.seed, NOISE_STREAM, client_key(data.client_id), request.level
    )
    noisy = accountant.release(
        Laplace(epsilon=request.query_epsilon),
        counts,
        rng,
        label=f"level {request.level} count tables",
        queries=request.tables_per_node,
    )
    return LevelReply(counts=noisy, epsilon_spent=accountant.epsilon_spent)


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


@dataclass
class _Spent:
    """Per client: the spend it reported, and the tables it released."""

    epsilon: dict[str, float] = field(default_factory=dict)
    queries: dict[str, int] = field(default_factory=dict)


class FedID3Strategy:
    """Server side of Federated-ID3 (see the module docstring)."""

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

    def start(self, info: FederationInfo) -> None:
        """Resolve the depth and the binning (declared edges or a sketch round)."""
        s = self.settings
        self.info = info
        f = info.schema.n_features
        self.max_depth = default_max_depth(f) if s.max_depth is None else s.max_depth
        if s.epsilon is not None:
            _check_plan(s.epsilon, self.max_depth, f, s.owner)
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
        """Return the plan's cost per client (the Decision above).

        The levels answered (each reply's spend was checked) plus the levels
        never reached: ε, or inf for exact counts.
        """
        eps = self.settings.epsilon
        total = math.inf if eps is None else float(eps)
        return dict.fromkeys(self.spent.epsilon, total)
