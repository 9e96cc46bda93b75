"""The FedForest server strategy: level-wise batched growth of all trees (§1.2).

Per depth level, for every open node of every tree at once:

1. (AvgImp with ``top_k``) each client shortlists its k best features;
2. **sketch**: each client sends node counts and statistics, quantile points of
   every considered numeric feature (``"exact"``: all distinct values) and
   per-category statistics; the server mixes the client CDFs and inverts them
   (never averaging quantiles) into candidate thresholds;
3. **evaluate**: each client sends per-bin statistics between candidates (or, for
   AvgImp, its own gains); the server sums them, scores every candidate (exact
   pooled gain), adds Fisher groupings of categories and of clients, and splits.

``candidates="uniform"`` (the Federated Histogram baseline) replaces 2 by one
range request at the root; node statistics then come with the evaluations, and
categorical features are not split (the baseline bins numeric ranges only).
A forest of depth D needs about 2·D + 1 round trips whatever ``n_estimators``.
No I/O: the round loop moves the messages.

Protocol v2 (DESIGN.md, "Per-run client state"): requests carry the forest's
new splits only (:mod:`._forest`), and each client is asked only about the
nodes it may reach (:mod:`._reach`) and, when evaluating, only the candidates
inside its own range at each node (its sketch's first and last points); the
server maps its sparse replies back to the level's layout.

**Decision** (beyond the paper): a level where every open node may hold rows of
one active client only takes **one** round, ``fedforest.sketch_evaluate``,
instead of a sketch and an evaluation: every level of a one-client federation
(``fit`` without ``groups``) or of one client per tree (``client_fraction``),
and levels whose nodes each lie inside one client's rows (learned from the
previous sketch, or known below a split on the client indicator). Each node's
pooled sketch is then its one client's sketch, so that client computes the
candidates the server would send it
(:func:`._candidates.own_candidates`) and returns their bins with the sketch.
The server derives the candidates from the sketches as before and re-indexes
the bins into the evaluation's layout: what travels is what the two rounds
would carry, and the forest is the same bit for bit (tested). AvgImp keeps its
rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedforest._candidates import (
    exact_thresholds,
    own_candidates,
)
from fedtrees.algorithms.fedforest._config import ForestConfig
from fedtrees.algorithms.fedforest._consistency import NodeTotals
from fedtrees.algorithms.fedforest._growth import ForestGrowth
from fedtrees.algorithms.fedforest._layout import (
    BinLayout,
    ClientRange,
    client_ranges,
    compact,
    compact_ints,
    pooled_bins,
    rebase_bins,
    segments,
    separating,
)
from fedtrees.algorithms.fedforest._payloads import (
    AvgImpReply,
    EvaluateReply,
    EvaluateRequest,
    LeafStatsReply,
    LeafStatsRequest,
    LevelFields,
    RangesReply,
    RangesRequest,
    ScoreReply,
    ScoreRequest,
    SketchEvaluateReply,
    SketchEvaluateRequest,
    SketchReply,
    SketchRequest,
    TopKReply,
    TopKRequest,
)
from fedtrees.algorithms.fedforest._reach import Reach, positions
from fedtrees.algorithms.fedforest._scoring import (
    averaged_gains,
    node_weights,
    other_candidates,
)
from fedtrees.exceptions import LocalProtocolError
from fedtrees.federation import (
    FederationInfo,
    InvalidField,
    Payload,
    RoundPlan,
    as_reply,
)
from fedtrees.stats import uniform_candidates
from fedtrees.stats._quantile import mixtures_ragged
from fedtrees.stats._splits import (
    Best,
    best_client,
    best_numeric,
    combine,
)

__all__ = ["FedForestStrategy", "ForestResult"]


@dataclass(frozen=True, eq=False)
class ForestResult:
    """The grown forest (node table), the agreed info, held-out scores if asked."""

    growth: ForestGrowth
    info: FederationInfo
    scores: tuple[ScoreReply, ...] = ()


@dataclass
class _Pending:
    """What a level's sketch round left for its evaluation round."""

    nodes: IntArray
    pairs: IntArray
    thresholds: FloatArray
    counts: FloatArray
    other: Best


class FedForestStrategy:
    """Server side of FedForest; see the module docstring for the protocol."""

    def __init__(self, config: ForestConfig) -> None:
        self.config = config
        self.growth: ForestGrowth | None = None
        self.info: FederationInfo | None = None
        self.active: list[str] = []
        self.phase = ""
        self.pending: _Pending | None = None
        self.shortlist: IntArray | None = None
        self.grid: FloatArray | None = None
        self.splits_made = 0
        self.scores: list[ScoreReply] = []
        self.started = False
        self.client_range: dict[int, ClientRange] = {}
        self.layout: dict[int, BinLayout] = {}
        self.clients: list[str] = []
        self.index: dict[str, int] = {}  # a client's position in ``clients``
        self.asked: dict[str, IntArray] = {}
        self.reach = Reach(np.zeros(0, np.int64), ())
        self.totals = NodeTotals()  # per client, its open nodes' totals (checks)

    # -- the ServerStrategy protocol ------------------------------------------------
    def start(self, info: FederationInfo) -> None:
        """Create the roots; the first phase depends on the candidate mode."""
        self.info = info
        self.growth = ForestGrowth(self.config, info)
        self.active = list(info.clients)
        self.clients = list(info.clients)
        self.index = {c: k for k, c in enumerate(self.clients)}
        self.reach = self.growth.root_reach()
        self.phase = self._first_phase()

    def expected_rounds(self) -> int:
        """Upper bound of the rounds after the agreement (for progress bars).

        One client folds every level into one round (see the module docstring).
        """
        c = self.config
        alone = len(self.clients) == 1 and c.gain == "exact"
        per_level = 1 if alone else c.rounds_per_level
        extra = 1 if c.candidates == "uniform" or c.gain == "avgimp" else 0
        return per_level * c.max_depth + extra

    def round_metrics(self, round: int) -> dict[str, float]:
        """Depth level, open nodes and splits so far."""
        g = self._g()
        return {
            "level": float(g.level),
            "open_nodes": float(g.open.shape[0]),
            "splits": float(self.splits_made),
        }

    def plan_round(self, round: int) -> RoundPlan | None:
        """Return the next request (shortlist, sketch, evaluate, ranges, ...).

        Each client is asked only about the nodes it may reach (:mod:`._reach`);
        clients with the same nodes share one payload, encoded once. Every
        request carries the same forest delta; a client that lost its state is
        resent the full form in the same round. The first request of a fit goes
        out in full form, since no client holds a forest yet.
        """
        if self.phase == "done":
            return None
        g = self._g()
        cls, pairs, nodes, extra = getattr(self, f"_plan_{self.phase}")()
        nodes = g.open if nodes is None else nodes
        shared = g.request_fields()
        rows = self._rows_for(nodes)
        cls = self._fold_where_alone(cls, rows)
        self.asked = dict(zip(self.clients, rows, strict=True))
        made: dict[bytes, Payload] = {}
        shareable = self.phase not in _PER_CLIENT_PHASES

        def build(client: str, full: bool = False) -> Payload:
            r, k = self.asked[client], self.index[client]
            key = r.tobytes()
            if shareable and not full and key in made:
                return made[key]
            request: Payload = cls(
                **(g.full_fields(client) if full else shared),
                open_nodes=compact_ints(nodes[r]),
                pair_feature=compact_ints(pairs[r]),
                **extra(k, r, full),
            )
            if shareable and not full:
                made[key] = request
            return request

        def full(client: str) -> Payload:
            return build(client, full=True)

        first = not self.started
        self.started = True
        requests = {c: build(c, full=first) for c in self.active}
        if self.phase == "evaluate":
            # Requests are built: a resync (rebuilt later) then sends every
            # candidate, and its layout is recorded again. Frees K x nodes x F'.
            self.client_range = {}
        return RoundPlan(requests, self.config.on_dropout, full, self._checker())

    def aggregate(self, round: int, replies: Mapping[str, Payload]) -> None:
        """Fold the validated replies of the current phase into the growth state.

        After a dropout the level is rebuilt from the clients still active
        (:meth:`_after_dropout`) before anything is folded.
        """
        dropped = [c for c in self.active if c not in replies]
        self.active = [c for c in self.active if c in replies]
        if dropped and self._after_dropout():
            return
        got = [_Got(self.index[c], self.asked[c], replies[c]) for c in sorted(replies)]
        getattr(self, f"_absorb_{self.phase}")(got)

    def _after_dropout(self) -> bool:
        """Make every statistic from now on come from the active clients only.

        **Decision** (``on_dropout="continue"``): the dropped client's rows are
        absent from the level of its dropout on, as if its data had vanished
        then. The open nodes' statistics are pooled at every level from the
        clients answering its first round (never parent − left, which would
        keep the dropped rows as phantoms). A dropout in a later round of a
        level (evaluate, or the sketch after AvgImp's shortlist) finds
        candidates, shortlist and totals that still hold its rows, so the level
        starts again: its rounds are repeated without the client. Returns
        whether the current replies are discarded. Nodes closed before the
        dropout keep their statistics: they were decided then.
        """
        if self.phase in ("ranges", "leaf_stats", "score"):
            return False  # no level is under way: the replies are all there is
        g = self._g()
        g.table.stats[g.open] = np.nan
        if self.phase in (self._level_phase(), "sketch_evaluate"):
            return False  # the level's first round: nothing to start again
        self.pending, self.shortlist, self.client_range = None, None, {}
        self.phase = self._level_phase()
        return True

    def _rows_for(self, nodes: IntArray) -> tuple[IntArray, ...]:
        """Per client, the positions in ``nodes`` it is asked about.

        Below a split on the client indicator the server knows each client's
        side: a child is asked only of the clients sent to it.
        """
        g = self._g()
        parents = g.parents(nodes)
        rows = self.reach.rows_for(nodes, parents)
        at, reaches = g.client_sides(nodes, parents)
        if at.shape[0] == 0:
            return rows
        return tuple(
            np.setdiff1d(r, at[~reaches[:, k]], assume_unique=True)
            for k, r in enumerate(rows)
        )

    def finish(self) -> ForestResult:
        """Return the grown forest."""
        assert self.info is not None
        return ForestResult(self._g(), self.info, tuple(self.scores))

    # -- phases ----------------------------------------------------------------------
    def _g(self) -> ForestGrowth:
        assert self.growth is not None
        return self.growth

    def _first_phase(self) -> str:
        if self.config.candidates == "uniform":
            return "ranges"
        return self._level_phase()

    def _level_phase(self) -> str:
        """Return the phase of the first round of every level."""
        if self.config.candidates == "uniform":
            return "evaluate"
        return (
            "top_k" if self.config.gain == "avgimp" and self.config.top_k else "sketch"
        )

    def _after_level(self) -> None:
        g = self._g()
        if g.open.shape[0]:
            self.phase = self._level_phase()
            return
        self.phase = (
            "leaf_stats" if g.unknown_leaves().shape[0] else self._final_phase()
        )

    def _final_phase(self) -> str:
        return "score" if self.config.holdout > 0 else "done"

    def _plan_score(self) -> _Planned:
        g = self._g()
        empty = np.full((0, 1), -1, dtype=np.int64)
        values = g.node_values()
        return ScoreRequest, empty, np.zeros(0, np.int64), _fixed(node_values=values)

    def _absorb_score(self, got: list[_Got]) -> None:
        self.scores = [as_reply(reply, ScoreReply) for _, _, reply in got]
        self.phase = "done"

    def _plan_ranges(self) -> _Planned:
        g = self._g()
        return RangesRequest, g.pair_features(), None, _fixed(n_features=g.n_features)

    def _absorb_ranges(self, got: list[_Got]) -> None:
        ranges = np.stack([as_reply(r, RangesReply).ranges for _, _, r in got])
        self.grid = uniform_candidates(ranges, self.config.n_quantiles)
        self.phase = "evaluate"

    def _plan_top_k(self) -> _Planned:
        g, c = self._g(), self.config
        extra = _fixed(q=c.n_quantiles, k=c.top_k or 1, criterion=c.criterion)
        return TopKRequest, g.pair_features(), None, extra

    def _absorb_top_k(self, got: list[_Got]) -> None:
        g = self._g()
        pairs = g.pair_features()
        picked = np.zeros(pairs.shape, dtype=bool)
        for _, asked, reply in got:
            slots = as_reply(reply, TopKReply).slots
            rows, cols = np.nonzero(slots >= 0)
            picked[asked[rows], slots[rows, cols]] = True
        self.shortlist = np.where(picked, pairs, -1)
        self.phase = "sketch"

    def _plan_sketch(self) -> _Planned:
        g = self._g()
        pairs = self.shortlist if self.shortlist is not None else g.pair_features()
        categorical = self._categorical(pairs)

        def extra(k: int, rows: IntArray, full: bool) -> dict[str, Any]:
            return {
                "q": self.config.n_quantiles,
                "candidates": self.config.candidates,
                "max_categories": int(g.n_categories.max(initial=0)),
                "n_categorical_pairs": int(categorical[rows].sum()),
            }

        return SketchRequest, pairs, None, extra

    def _categorical(self, pairs: IntArray) -> np.ndarray:
        categorical: np.ndarray = (pairs >= 0) & self._g().is_categorical[
            np.maximum(pairs, 0)
        ]
        return categorical

    def _absorb_sketch(self, got: list[_Got]) -> None:
        g, c = self._g(), self.config
        sketches = [(k, asked, as_reply(r, SketchReply)) for k, asked, r in got]
        pairs = self.shortlist if self.shortlist is not None else g.pair_features()
        self.shortlist = None
        todo = self._pool_level(sketches)
        nodes = g.open[todo]
        thresholds = self._numeric_candidates(sketches, pairs, todo)
        self.client_range = client_ranges(sketches, g.open.shape[0], todo)
        cat = self._pooled_categories(sketches, pairs)[todo]
        per_client = self._per_client(sketches, todo, "node_stats")
        counts = (
            self._per_client(sketches, todo, "counts")[..., 0]
            if c.gain == "avgimp"
            else np.zeros((0, 0))
        )
        self.pending = _Pending(
            nodes,
            pairs[todo],
            thresholds,
            counts,
            other_candidates(
                g.table.stats[nodes],
                cat,
                pairs[todo],
                g.is_categorical,
                c.criterion,
                g.min_leaf(nodes),
                per_client if c.split_on_client else None,
            ),
        )
        self.phase = "evaluate"
        if not np.isfinite(thresholds).any():  # nothing numeric to evaluate
            self._decide(Best.none(nodes.shape[0], g.width))

    def _pool_level(self, replies: list[tuple[int, IntArray, Any]]) -> IntArray:
        """Sum the open nodes' statistics, learn where clients have rows.

        Returns the positions of the open nodes that may still split.
        """
        g = self._g()
        pooled = np.zeros((g.open.shape[0], g.width))
        for _, asked, reply in replies:
            pooled[asked] += reply.node_stats.astype(np.float64)
        g.set_stats(g.open, pooled)  # from the clients answering now: no phantoms
        self._learn_reach(g.open, [(k, a, r.counts) for k, a, r in replies])
        todo: IntArray = np.flatnonzero(g.splittable(g.open))
        return todo

    def _learn_reach(
        self, nodes: IntArray, counts: list[tuple[int, IntArray, np.ndarray]]
    ) -> None:
        """Record where each client has rows (exact: weight > 0 iff rows)."""
        rows = [np.zeros(0, np.int64)] * len(self.clients)
        for k, asked, count in counts:
            rows[k] = asked[np.asarray(count) > 0]
        self.reach = Reach(nodes.copy(), tuple(rows))

    def _per_client(
        self, replies: list[tuple[int, IntArray, Any]], todo: IntArray, name: str
    ) -> FloatArray:
        """Dense ``(K, n_todo, S)`` statistics per client (client splits, AvgImp).

        Only built when a rule needs each client's own statistics; otherwise
        ``(0, n_todo, S)`` (the server keeps per-client index arrays only).
        """
        g, c = self._g(), self.config
        width = 1 if name == "counts" else g.width
        if name == "node_stats" and not c.split_on_client:
            return np.zeros((0, todo.shape[0], width))
        position = np.full(g.open.shape[0], -1)
        position[todo] = np.arange(todo.shape[0])
        out = np.zeros((len(self.clients), todo.shape[0], width))
        for k, asked, reply in replies:
            values = np.asarray(getattr(reply, name), dtype=np.float64)
            at = position[asked]
            out[k, at[at >= 0]] = values.reshape(asked.shape[0], width)[at >= 0]
        if name == "node_stats":
            out = out[[self.index[a] for a in self.active]]
        return out

    def _pooled_categories(
        self, sketches: list[tuple[int, IntArray, Any]], pairs: IntArray
    ) -> FloatArray:
        """Sum the per-category statistics, dense ``(n_open, F', categories, S)``."""
        g = self._g()
        dense = np.zeros((*pairs.shape, int(g.n_categories.max(initial=0)), g.width))
        categorical = self._categorical(pairs)
        for _, asked, s in sketches:
            rows, cols = np.nonzero(categorical[asked])
            dense[asked[rows], cols] += s.cat_stats.astype(np.float64)
        return dense

    def _numeric_candidates(
        self,
        sketches: list[tuple[int, IntArray, SketchReply]],
        pairs: IntArray,
        todo: IntArray,
    ) -> FloatArray:
        """Quantile mixture inversion (or exact midpoints) for every numeric pair."""
        g, c = self._g(), self.config
        numeric = (pairs[todo] >= 0) & ~g.is_categorical[np.maximum(pairs[todo], 0)]
        pieces = segments(sketches, g.open.shape[0], todo)
        if c.candidates == "quantile":
            out = mixtures_ragged(
                *pieces, todo.shape[0] * pairs.shape[1], c.n_quantiles
            )
            out = out.reshape(todo.shape[0], pairs.shape[1], c.n_quantiles - 1)
        else:
            out = exact_thresholds(*pieces, todo.shape[0], pairs.shape[1])
        return np.where(numeric[..., None], out, np.nan)

    def _plan_evaluate(self) -> _Planned:
        g, c = self._g(), self.config
        if c.candidates == "uniform":
            pairs = g.pair_features()
            assert self.grid is not None
            numeric = (pairs >= 0) & ~g.is_categorical[np.maximum(pairs, 0)]
            thresholds = np.where(
                numeric[..., None], self.grid[np.maximum(pairs, 0)], np.nan
            )
            self.pending = _Pending(
                g.open, pairs, thresholds, np.zeros((0, 0)), Best.none(0, g.width)
            )
        assert self.pending is not None
        p = self.pending

        def extra(k: int, rows: IntArray, full: bool) -> dict[str, Any]:
            sent, self.layout[k] = self._separating(k, rows)
            return {
                "thr_count": compact(self.layout[k].count),
                "thresholds": np.ascontiguousarray(p.thresholds[rows][sent]),
                "mode": "avgimp" if c.gain == "avgimp" else "stats",
                "criterion": c.criterion,
                "with_stats": c.candidates == "uniform",
            }

        return EvaluateRequest, p.pairs, p.nodes, extra

    def _separating(self, k: int, rows: IntArray) -> tuple[np.ndarray, BinLayout]:
        """Candidates that separate client k's rows at each pair; its layout.

        AvgImp and the uniform grid send every candidate (:func:`._layout.
        separating`).
        """
        p = self.pending
        assert p is not None
        known = self.client_range.get(k)
        if self.config.gain == "avgimp":
            known = None
        return separating(p.thresholds, known, rows)

    def _absorb_evaluate(self, got: list[_Got]) -> None:
        g, c = self._g(), self.config
        p = self.pending
        assert p is not None
        present = ~np.isnan(p.thresholds)
        if c.gain == "avgimp":
            gains = [(k, a, as_reply(r, AvgImpReply).gains) for k, a, r in got]
            self._decide(
                averaged_gains(gains, p.counts, p.thresholds, p.pairs, g.width)
            )
            return
        evaluated = [(k, a, as_reply(r, EvaluateReply)) for k, a, r in got]
        bins = pooled_bins(evaluated, self.layout, present, g.width)
        if c.candidates == "uniform":
            bins = bins[self._uniform_nodes(evaluated)]
        p = self.pending
        assert p is not None
        numeric = best_numeric(
            g.table.stats[p.nodes],
            bins,
            p.thresholds,
            p.pairs,
            c.criterion,
            g.min_leaf(p.nodes),
        )
        self._decide(numeric)

    def _uniform_nodes(
        self, evaluated: list[tuple[int, IntArray, EvaluateReply]]
    ) -> IntArray:
        """Uniform mode: set node statistics from the evaluation; keep splittable."""
        g, c = self._g(), self.config
        p = self.pending
        assert p is not None
        pooled = np.zeros((p.nodes.shape[0], g.width))
        for _, asked, e in evaluated:
            pooled[asked] += e.node_stats.astype(np.float64)
        self._learn_reach(
            p.nodes,
            [(k, a, node_weights(e.node_stats, c.task)) for k, a, e in evaluated],
        )
        g.set_stats(p.nodes, pooled)
        keep = np.flatnonzero(g.splittable(p.nodes))
        nodes = p.nodes[keep]
        other = Best.none(keep.shape[0], g.width)
        if c.split_on_client:
            per_client = np.zeros((len(self.clients), p.nodes.shape[0], g.width))
            for k, asked, e in evaluated:
                per_client[k, asked] = e.node_stats.astype(np.float64)
            active = [self.index[a] for a in self.active]
            other = best_client(
                g.table.stats[nodes],
                per_client[active][:, keep].transpose(1, 0, 2),
                c.criterion,
                g.min_leaf(nodes),
            )
        self.pending = _Pending(
            nodes, p.pairs[keep], p.thresholds[keep], p.counts, other
        )
        return keep

    def _decide(self, numeric: Best) -> None:
        g = self._g()
        p = self.pending
        assert p is not None
        best = combine(numeric, p.other) if p.other.gain.shape[0] else numeric
        before = g.table.tree.shape[0]
        g.apply(p.nodes, best)
        self.splits_made += (g.table.tree.shape[0] - before) // 2
        self.pending = None
        self._after_level()

    def _plan_leaf_stats(self) -> _Planned:
        nodes = self._g().unknown_leaves()
        empty = np.full((nodes.shape[0], 1), -1, dtype=np.int64)
        return LeafStatsRequest, empty, nodes, _fixed()

    def _absorb_leaf_stats(self, got: list[_Got]) -> None:
        g = self._g()
        nodes = g.unknown_leaves()
        pooled = np.zeros((nodes.shape[0], g.width))
        for _, asked, reply in got:
            pooled[asked] += as_reply(reply, LeafStatsReply).node_stats.astype(float)
        g.set_stats(nodes, pooled)
        self.phase = self._final_phase()

    # -- one round for a level whose every node has one client (Decision) -------
    def _fold_where_alone(
        self, cls: type[LevelFields], rows: tuple[IntArray, ...]
    ) -> type[LevelFields]:
        """Fold a sketch round with its evaluation, if it can be.

        It can where the nodes it asks about (``rows`` per client) may each hold
        rows of at most one active client (:mod:`._reach`; exact gains only):
        the module docstring's **Decision**. Returns the request class to send.
        """
        if self.phase not in _FOLDED or self.config.gain != "exact":
            return cls
        asked = [rows[self.index[c]] for c in self.active]
        every = np.concatenate(asked) if asked else np.zeros(0, np.int64)
        if np.unique(every).shape[0] != every.shape[0]:
            return cls
        self.phase = _FOLDED[self.phase]
        return SketchEvaluateRequest

    def _checker(self) -> Callable[[str, Payload, Payload], None]:
        """Return the round's reply check: node totals, sketched pairs.

        A sketch holds points of numeric pairs only; one with points of a
        categorical or unused pair is refused (field ``n_points``) before the
        server derives candidates from it — a folded reply's own candidates
        would otherwise not match the server's.
        """
        g = self._g()
        totals = self.totals.checker(g.parents)

        def check(client: str, request: Payload, reply: Payload) -> None:
            totals(client, request, reply)
            if isinstance(reply, SketchReply) and isinstance(request, LevelFields):
                pairs = np.asarray(request.pair_feature, dtype=np.int64)
                numeric = (pairs >= 0) & ~g.is_categorical[np.maximum(pairs, 0)]
                if np.any(np.asarray(reply.n_points)[~numeric] > 0):
                    raise InvalidField(
                        "n_points", "holds points of a categorical or unused pair"
                    )

        return check

    def _absorb_sketch_evaluate(self, got: list[_Got]) -> None:
        """Absorb the sketch part as its own round would be, then the bins."""
        self._absorb_sketch(got)
        self._absorb_own_bins(got, self._g().open, self.config.candidates)

    def _absorb_own_bins(self, got: list[_Got], requested: IntArray, mode: str) -> None:
        """Absorb the folded bins as the evaluation round's replies.

        The sketch part was absorbed as a sketch round's: the server holds the
        candidates and every client's range. Unless that decided the level
        (nothing numeric to evaluate), each client's bins are re-indexed from
        its own candidates at the nodes it was asked about to the candidates the
        server would have sent it at the nodes evaluated, which are the same
        ones (:mod:`._candidates`), and then pooled as an evaluation round's.
        """
        if self.phase != "evaluate":
            return
        p = self._pending()
        reach = self._rows_for(p.nodes)
        evaluated = []
        for k, asked, reply in got:
            folded = as_reply(reply, SketchEvaluateReply)
            rows = reach[k]
            _, self.layout[k] = self._separating(k, rows)
            count = self.layout[k].count
            own, _ = own_candidates(
                folded.n_points,
                folded.points,
                folded.counts,
                mode,
                self.config.n_quantiles,
            )
            at = positions(requested[asked], p.nodes[rows])
            if np.any(at < 0) or not np.array_equal(own[at], count):
                raise LocalProtocolError(
                    f"FedForest: the candidates of client {self.clients[k]!r} "
                    "derived from its own sketch differ from the server's; a "
                    "folded level must have one client per node."
                )
            index, stats = rebase_bins(folded, own, at, count)
            empty = np.zeros((0, self._g().width), np.uint8)
            evaluated.append(_Got(k, rows, EvaluateReply(index, stats, empty)))
        self._absorb_evaluate(evaluated)

    def _pending(self) -> _Pending:
        assert self.pending is not None
        return self.pending


class _Got(NamedTuple):
    """A validated reply: the client's index, the positions it was asked about."""

    client: int
    asked: IntArray
    reply: Payload


def _fixed(**values: Any) -> Callable[[int, IntArray, bool], dict[str, Any]]:
    """Request fields that are the same whatever nodes a client is asked about."""
    return lambda k, rows, full: dict(values)


_FOLDED = {"sketch": "sketch_evaluate"}
"""Rounds that fold with their evaluation where every node has one client."""

_PER_CLIENT_PHASES = frozenset({"evaluate"})
"""Phases whose requests differ per client beyond its nodes (its own
candidates): never shared between clients."""

_Planned = tuple[
    type[LevelFields],
    IntArray,
    IntArray | None,
    Callable[[int, IntArray, bool], dict[str, Any]],
]
"""A phase's request: its class, pairs, nodes (None: the open level), and the
extra fields for a client asked about the given positions."""
