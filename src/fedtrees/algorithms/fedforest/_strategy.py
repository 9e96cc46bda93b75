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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedforest import _client
from fedtrees.algorithms.fedforest._config import ForestConfig
from fedtrees.algorithms.fedforest._growth import ForestGrowth
from fedtrees.algorithms.fedforest._payloads import (
    AvgImpReply,
    EvaluateReply,
    EvaluateRequest,
    LeafStatsReply,
    LeafStatsRequest,
    RangesReply,
    RangesRequest,
    ScoreReply,
    ScoreRequest,
    SketchReply,
    SketchRequest,
    TopKReply,
    TopKRequest,
)
from fedtrees.federation import FederationInfo, Payload, RoundPlan, as_reply
from fedtrees.stats import exact_candidates, mixtures_by_client, uniform_candidates
from fedtrees.stats._splits import (
    Best,
    best_avgimp,
    best_categorical,
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

    # -- the ServerStrategy protocol ------------------------------------------------
    def start(self, info: FederationInfo) -> None:
        """Create the roots; the first phase depends on the candidate mode."""
        self.info = info
        self.growth = ForestGrowth(self.config, info)
        self.active = list(info.clients)
        self.phase = self._first_phase()

    def expected_rounds(self) -> int:
        """Upper bound of the rounds after the agreement (for progress bars)."""
        extra = (
            1
            if self.config.candidates == "uniform" or self.config.gain == "avgimp"
            else 0
        )
        return self.config.rounds_per_level * self.config.max_depth + extra

    def round_metrics(self, round: int) -> dict[str, float]:
        """Depth level, open nodes and splits so far."""
        g = self._g()
        return {
            "level": float(g.level),
            "open_nodes": float(g.open.shape[0]),
            "splits": float(self.splits_made),
        }

    def plan_round(self, round: int) -> RoundPlan | None:
        """Return the next request (shortlist, sketch, evaluate, ranges, ...)."""
        if self.phase == "done":
            return None
        payload = getattr(self, f"_plan_{self.phase}")()
        return RoundPlan.broadcast(
            payload, self.active, on_dropout=self.config.on_dropout
        )

    def aggregate(self, round: int, replies: Mapping[str, Payload]) -> None:
        """Fold the validated replies of the current phase into the growth state."""
        if self.config.on_dropout == "continue":
            self.active = [c for c in self.active if c in replies]
        ordered = [replies[c] for c in sorted(replies)]
        getattr(self, f"_absorb_{self.phase}")(ordered)

    def finish(self) -> ForestResult:
        """Return the grown forest."""
        assert self.info is not None
        return ForestResult(self._g(), self.info, tuple(self.scores))

    def release(self) -> None:
        """Free the in-process clients' cache of this fit (no-op over Flower)."""
        if self.growth is not None:
            _client.release(self.growth.fit_id)

    # -- phases ----------------------------------------------------------------------
    def _g(self) -> ForestGrowth:
        assert self.growth is not None
        return self.growth

    def _first_phase(self) -> str:
        if self.config.candidates == "uniform":
            return "ranges"
        return (
            "top_k" if self.config.gain == "avgimp" and self.config.top_k else "sketch"
        )

    def _after_level(self) -> None:
        g = self._g()
        if g.open.shape[0]:
            self.phase = (
                "top_k"
                if self.config.gain == "avgimp" and self.config.top_k
                else "sketch"
            )
            if self.config.candidates == "uniform":
                self.phase = "evaluate"
            return
        self.phase = (
            "leaf_stats" if g.unknown_leaves().shape[0] else self._final_phase()
        )

    def _final_phase(self) -> str:
        return "score" if self.config.holdout > 0 else "done"

    def _plan_score(self) -> ScoreRequest:
        g = self._g()
        empty = np.full((0, 1), -1, dtype=np.int64)
        return ScoreRequest(
            **g.fields(empty, open_nodes=np.zeros(0, np.int64)),
            node_values=g.node_values(),
        )

    def _absorb_score(self, replies: list[Payload]) -> None:
        self.scores = [as_reply(r, ScoreReply) for r in replies]
        self.phase = "done"

    def _plan_ranges(self) -> RangesRequest:
        g = self._g()
        return RangesRequest(**g.fields(g.pair_features()), n_features=g.n_features)

    def _absorb_ranges(self, replies: list[Payload]) -> None:
        ranges = np.stack([as_reply(r, RangesReply).ranges for r in replies])
        self.grid = uniform_candidates(ranges, self.config.n_quantiles)
        self.phase = "evaluate"

    def _plan_top_k(self) -> TopKRequest:
        g = self._g()
        c = self.config
        return TopKRequest(
            **g.fields(g.pair_features()),
            q=c.n_quantiles,
            k=c.top_k or 1,
            criterion=c.criterion,
        )

    def _absorb_top_k(self, replies: list[Payload]) -> None:
        g = self._g()
        pairs = g.pair_features()
        picked = np.zeros(pairs.shape, dtype=bool)
        for reply in replies:
            slots = as_reply(reply, TopKReply).slots
            rows, cols = np.nonzero(slots >= 0)
            picked[rows, slots[rows, cols]] = True
        self.shortlist = np.where(picked, pairs, -1)
        self.phase = "sketch"

    def _plan_sketch(self) -> SketchRequest:
        g = self._g()
        pairs = self.shortlist if self.shortlist is not None else g.pair_features()
        return SketchRequest(
            **g.fields(pairs),
            q=self.config.n_quantiles,
            candidates=self.config.candidates,
            max_categories=int(g.n_categories.max(initial=0)),
        )

    def _absorb_sketch(self, replies: list[Payload]) -> None:
        g = self._g()
        sketches = [as_reply(r, SketchReply) for r in replies]
        pairs = self.shortlist if self.shortlist is not None else g.pair_features()
        self.shortlist = None
        client_stats = np.stack([s.node_stats for s in sketches])  # (K, n_open, S)
        unknown = np.isnan(g.table.stats[g.open, 0])
        g.set_stats(g.open[unknown], client_stats.sum(axis=0)[unknown])
        todo = np.flatnonzero(g.splittable(g.open))
        nodes = g.open[todo]
        counts = np.stack([s.counts for s in sketches])[:, todo]
        points = _stack_padded([s.points[todo] for s in sketches])
        thresholds = self._numeric_candidates(points, counts, pairs[todo])
        cat = np.stack([s.cat_stats for s in sketches]).sum(axis=0)[todo]
        self.pending = _Pending(
            nodes,
            pairs[todo],
            thresholds,
            counts,
            self._other_candidates(nodes, pairs[todo], cat, client_stats[:, todo]),
        )
        self.phase = "evaluate"
        if not np.isfinite(thresholds).any():  # nothing numeric to evaluate
            self._decide(Best.none(nodes.shape[0], g.width))

    def _numeric_candidates(
        self, points: FloatArray, counts: FloatArray, pairs: IntArray
    ) -> FloatArray:
        """Quantile mixture inversion (or exact midpoints) for every numeric pair."""
        g, c = self._g(), self.config
        n_clients, n_todo, fp, width = points.shape
        numeric = (pairs >= 0) & ~g.is_categorical[np.maximum(pairs, 0)]
        if c.candidates == "quantile":
            flat = points.reshape(n_clients, n_todo * fp, width)  # a view
            weights = np.repeat(counts, fp, axis=1)  # (K, pairs)
            weights[np.isnan(flat[..., 0])] = 0.0  # categorical or padding slot
            out = mixtures_by_client(flat, weights, c.n_quantiles).reshape(
                n_todo, fp, c.n_quantiles - 1
            )
        else:
            out = _exact_thresholds(points)
        return np.where(numeric[..., None], out, np.nan)

    def _other_candidates(
        self,
        nodes: IntArray,
        pairs: IntArray,
        cat: FloatArray,
        client_stats: FloatArray,
    ) -> Best:
        """Categorical Fisher groupings and client-indicator splits (pooled, exact)."""
        g, c = self._g(), self.config
        parent = g.table.stats[nodes]
        min_leaf = g.min_leaf(nodes)
        best = best_categorical(
            parent, cat, pairs, g.is_categorical, c.criterion, min_leaf
        )
        if c.split_on_client:
            per_client = client_stats.transpose(1, 0, 2)  # (n_todo, K, S)
            best = combine(best, best_client(parent, per_client, c.criterion, min_leaf))
        return best

    def _plan_evaluate(self) -> EvaluateRequest:
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
        return EvaluateRequest(
            **g.fields(p.pairs, open_nodes=p.nodes),
            thresholds=p.thresholds,
            mode="avgimp" if c.gain == "avgimp" else "stats",
            criterion=c.criterion,
        )

    def _absorb_evaluate(self, replies: list[Payload]) -> None:
        g, c = self._g(), self.config
        p = self.pending
        assert p is not None
        if c.gain == "avgimp":
            gains = np.stack([as_reply(r, AvgImpReply).gains for r in replies])
            weights = p.counts / np.maximum(p.counts.sum(axis=0, keepdims=True), 1e-300)
            average = (weights[:, :, None, None] * gains).sum(axis=0)
            self._decide(best_avgimp(average, p.thresholds, p.pairs, g.width))
            return
        evaluated = [as_reply(r, EvaluateReply) for r in replies]
        bins = np.stack([e.bin_stats for e in evaluated]).sum(axis=0)
        if c.candidates == "uniform":
            keep = self._uniform_nodes(np.stack([e.node_stats for e in evaluated]))
            bins = bins[keep]
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

    def _uniform_nodes(self, client_stats: FloatArray) -> IntArray:
        """Uniform mode: set node statistics from the evaluation; keep splittable."""
        g, c = self._g(), self.config
        p = self.pending
        assert p is not None
        unknown = np.isnan(g.table.stats[p.nodes, 0])
        g.set_stats(p.nodes[unknown], client_stats.sum(axis=0)[unknown])
        keep = np.flatnonzero(g.splittable(p.nodes))
        nodes = p.nodes[keep]
        other = Best.none(keep.shape[0], g.width)
        if c.split_on_client:
            per_client = client_stats[:, keep].transpose(1, 0, 2)
            other = best_client(
                g.table.stats[nodes], per_client, c.criterion, g.min_leaf(nodes)
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

    def _plan_leaf_stats(self) -> LeafStatsRequest:
        g = self._g()
        nodes = g.unknown_leaves()
        empty = np.full((nodes.shape[0], 1), -1, dtype=np.int64)
        return LeafStatsRequest(**g.fields(empty, open_nodes=nodes))

    def _absorb_leaf_stats(self, replies: list[Payload]) -> None:
        g = self._g()
        stats = np.stack([as_reply(r, LeafStatsReply).node_stats for r in replies]).sum(
            axis=0
        )
        g.set_stats(g.unknown_leaves(), stats)
        self.phase = self._final_phase()


def _stack_padded(arrays: list[FloatArray]) -> FloatArray:
    """Stack NaN-padded arrays whose last axis may differ (exact mode)."""
    width = max(a.shape[-1] for a in arrays)
    if all(a.shape[-1] == width for a in arrays):
        return np.stack(arrays)
    pad = [
        np.pad(
            a,
            [(0, 0)] * (a.ndim - 1) + [(0, width - a.shape[-1])],
            constant_values=np.nan,
        )
        for a in arrays
    ]
    return np.stack(pad)


def _exact_thresholds(points: FloatArray) -> FloatArray:
    """scikit-learn's midpoints of the pooled distinct values of every pair."""
    _, n_todo, fp, _ = points.shape
    per_pair = [
        exact_candidates([row[~np.isnan(row)] for row in points[:, s, k]])
        for s in range(n_todo)
        for k in range(fp)
    ]
    width = max((c.shape[0] for c in per_pair), default=0)
    out = np.full((n_todo * fp, width), np.nan)
    for i, cands in enumerate(per_pair):
        out[i, : cands.shape[0]] = cands
    return out.reshape(n_todo, fp, width)
