"""The rounds of a level whose candidates come from sketches (docs/fedforest.md).

Per depth level, for every open node of every tree at once:

1. :class:`TopKStep` (AvgImp with ``top_k``): each client shortlists its k best
   features by local gain; the sketch asks about their union only;
2. :class:`SketchStep`: each client sends node counts and statistics, quantile
   points of every considered numeric feature (``"exact"``: all distinct
   values) and per-category statistics; the server pools the statistics, mixes
   the client CDFs and inverts them (never averaging quantiles) into candidate
   thresholds (the mode's :meth:`._modes.SketchMode.thresholds`), and scores
   the categorical and client-indicator splits at once;
3. :class:`EvaluateStep`: each client sends per-bin statistics between the
   candidates inside its own range (or, for AvgImp, its own gains of all of
   them); the server sums them, scores every candidate with the exact pooled
   gain and splits.

:class:`FoldedStep` absorbs 2 and 3 from one ``fedforest.sketch_evaluate``
round where every node has one client (:mod:`._fold`, **Decision**).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedforest._candidates import own_candidates
from fedtrees.algorithms.fedforest._config import ForestConfig
from fedtrees.algorithms.fedforest._layout import (
    BinLayout,
    Segments,
    client_ranges,
    compact,
    pooled_bins,
    rebase_bins,
    segments,
    separating,
)
from fedtrees.algorithms.fedforest._phase import Got, Phase
from fedtrees.algorithms.fedforest._reach import positions
from fedtrees.algorithms.fedforest._scoring import averaged_gains, other_candidates
from fedtrees.algorithms.fedforest._sketch_payloads import (
    AvgImpReply,
    EvaluateReply,
    EvaluateRequest,
    SketchEvaluateReply,
    SketchEvaluateRequest,
    SketchReply,
    SketchRequest,
    TopKReply,
    TopKRequest,
)
from fedtrees.algorithms.fedforest._state import LevelState, Pending, Replies
from fedtrees.algorithms.fedforest._steps import Ask, Fold, fixed
from fedtrees.exceptions import LocalProtocolError
from fedtrees.federation import as_reply
from fedtrees.stats import Best, best_numeric

__all__ = ["EvaluateStep", "FoldedStep", "SketchStep", "Thresholds", "TopKStep"]

Thresholds = Callable[[Segments, int, int], FloatArray]
"""A mode's candidates from the pooled sketches: ``(segments, n_todo, F')`` ->
``(n_todo, F', width)`` (:meth:`._modes.SketchMode.thresholds`)."""


class TopKStep:
    """AvgImp's shortlist: each client's k best features (docs/fedforest.md)."""

    def __init__(self, config: ForestConfig) -> None:
        self.config = config

    def ask(self, state: LevelState) -> Ask:
        """Ask for the k best of every open node's considered features."""
        c = self.config
        fields = fixed(q=c.n_quantiles, k=c.top_k or 1, criterion=c.criterion)
        return Ask(TopKRequest, state.growth.pair_features(), None, fields)

    def absorb(self, state: LevelState, got: Sequence[Got]) -> Phase:
        """Keep the union of the shortlists for the level's sketch."""
        pairs = state.growth.pair_features()
        picked = np.zeros(pairs.shape, dtype=bool)
        for _, asked, reply in got:
            slots = as_reply(reply, TopKReply).slots
            rows, cols = np.nonzero(slots >= 0)
            picked[asked[rows], slots[rows, cols]] = True
        state.shortlist = np.where(picked, pairs, -1)
        return Phase.SKETCH


class SketchStep:
    """Node statistics, sketches and categories of every open node; candidates.

    ``thresholds`` is the mode's rule (quantile or exact) from the pooled
    sketches; ``config.candidates`` names it to the clients.
    """

    def __init__(self, config: ForestConfig, thresholds: Thresholds) -> None:
        self.config, self.thresholds = config, thresholds

    def pairs(self, state: LevelState) -> IntArray:
        """Return the level's considered features: the shortlist, or the drawn ones."""
        shortlist = state.shortlist
        return shortlist if shortlist is not None else state.growth.pair_features()

    def ask(self, state: LevelState) -> Ask:
        """Ask every client to sketch the open nodes it may reach."""
        pairs = self.pairs(state)
        is_categorical = categorical(state, pairs)
        most = int(state.growth.n_categories.max(initial=0))
        q, name = self.config.n_quantiles, self.config.candidates

        def fields(k: int, rows: IntArray, full: bool) -> tuple[dict[str, Any], None]:
            return {
                "q": q,
                "candidates": name,
                "max_categories": most,
                "n_categorical_pairs": int(is_categorical[rows].sum()),
            }, None

        # AvgImp keeps its rounds: its evaluation sends gains, not bins.
        exact = self.config.gain == "exact"
        fold = Fold(Phase.SKETCH_EVALUATE, SketchEvaluateRequest) if exact else None
        return Ask(SketchRequest, pairs, None, fields, fold=fold)

    def absorb(self, state: LevelState, got: Sequence[Got]) -> Phase:
        """Pool the level; derive candidates; evaluate them next (if any)."""
        g, c = state.growth, self.config
        sketches = [(k, asked, as_reply(r, SketchReply)) for k, asked, r in got]
        pairs = self.pairs(state)
        state.shortlist = None
        todo = pool_level(state, sketches)
        nodes = g.open[todo]
        thresholds = self._thresholds(state, sketches, pairs, todo)
        cat = pooled_categories(state, sketches, pairs)[todo]
        per_client = state.per_client(sketches, todo, "node_stats")
        counts = (
            state.per_client(sketches, todo, "counts")[..., 0]
            if c.gain == "avgimp"
            else np.zeros((0, 0))
        )
        other = other_candidates(
            g.table.stats[nodes],
            cat,
            pairs[todo],
            g.is_categorical,
            c.criterion,
            g.min_leaf(nodes),
            per_client if c.split_on_client else None,
        )
        ranges = client_ranges(sketches, g.open.shape[0], todo)
        state.pending = Pending(nodes, pairs[todo], thresholds, counts, other, ranges)
        if not np.isfinite(thresholds).any():  # nothing numeric to evaluate
            return state.decide(nodes, Best.none(nodes.shape[0], g.width), other)
        return Phase.EVALUATE

    def _thresholds(
        self,
        state: LevelState,
        sketches: Sequence[tuple[int, IntArray, SketchReply]],
        pairs: IntArray,
        todo: IntArray,
    ) -> FloatArray:
        """Return the mode's candidates for every numeric pair of the todo nodes."""
        g = state.growth
        numeric = (pairs[todo] >= 0) & ~g.is_categorical[np.maximum(pairs[todo], 0)]
        pieces = segments(sketches, g.open.shape[0], todo)
        out = self.thresholds(pieces, todo.shape[0], pairs.shape[1])
        return np.where(numeric[..., None], out, np.nan)


class EvaluateStep:
    """Per-bin statistics of the candidates (AvgImp: own gains); the level splits."""

    def __init__(self, config: ForestConfig) -> None:
        self.config = config

    def ask(self, state: LevelState) -> Ask:
        """Send each client the candidates inside its own range at its nodes."""
        p, c = state.need_pending(), self.config
        avgimp = c.gain == "avgimp"  # AvgImp's clients score every candidate

        def fields(
            k: int, rows: IntArray, full: bool
        ) -> tuple[dict[str, Any], BinLayout]:
            # A full request (a resync, rebuilt during the round) sends them all.
            known = None if full or avgimp else p.ranges.get(k)
            sent, layout = separating(p.thresholds, known, rows)
            return {
                "thr_count": compact(layout.count),
                "thresholds": np.ascontiguousarray(p.thresholds[rows][sent]),
                "mode": "avgimp" if avgimp else "stats",
                "criterion": c.criterion,
                "with_stats": False,
            }, layout

        return Ask(EvaluateRequest, p.pairs, p.nodes, fields, per_client=True)

    def absorb(self, state: LevelState, got: Sequence[Got]) -> Phase:
        """Score every candidate (pooled bins, or averaged gains) and split."""
        p = state.need_pending()
        if self.config.gain == "avgimp":
            gains = [(k, a, as_reply(r, AvgImpReply).gains) for k, a, r in got]
            best = averaged_gains(
                gains, p.counts, p.thresholds, p.pairs, state.growth.width
            )
            return state.decide(p.nodes, best, p.other)
        evaluated = [(k, a, as_reply(r, EvaluateReply)) for k, a, r in got]
        layouts = {k: state.layout_of(k, BinLayout) for k, _, _ in evaluated}
        return self.split(state, evaluated, layouts)

    def split(
        self,
        state: LevelState,
        evaluated: Sequence[tuple[int, IntArray, EvaluateReply]],
        layouts: dict[int, BinLayout],
    ) -> Phase:
        """Sum the clients' bins, score every candidate exactly, split the nodes."""
        g, p = state.growth, state.need_pending()
        present = ~np.isnan(p.thresholds)
        bins = pooled_bins(evaluated, layouts, present, g.width)
        numeric = best_numeric(
            g.table.stats[p.nodes],
            bins,
            p.thresholds,
            p.pairs,
            self.config.criterion,
            g.min_leaf(p.nodes),
        )
        return state.decide(p.nodes, numeric, p.other)


class FoldedStep:
    """A sketch and its evaluation from one round (:mod:`._fold`, **Decision**)."""

    def __init__(self, sketch: SketchStep, evaluate: EvaluateStep) -> None:
        self.sketch, self.evaluate = sketch, evaluate

    def ask(self, state: LevelState) -> Ask:
        """Return the sketch's request, folded."""
        ask = self.sketch.ask(state)
        return Ask(SketchEvaluateRequest, ask.pairs, ask.nodes, ask.fields)

    def absorb(self, state: LevelState, got: Sequence[Got]) -> Phase:
        """Absorb the sketch part as its own round would be, then the bins.

        Unless the sketch decided the level (nothing numeric to evaluate), each
        client's bins are re-indexed from its own candidates at the nodes it
        was asked about to the candidates the server would have sent it at the
        nodes evaluated, which are the same ones (:mod:`._candidates`), and
        then pooled as an evaluation round's.
        """
        requested = state.growth.open
        phase = self.sketch.absorb(state, got)
        if phase is not Phase.EVALUATE:
            return phase
        p = state.need_pending()
        reach = state.rows_for(p.nodes)
        evaluated, layouts = [], {}
        for k, asked, reply in got:
            folded = as_reply(reply, SketchEvaluateReply)
            rows = reach[k]
            _, layout = separating(p.thresholds, p.ranges.get(k), rows)
            at = positions(requested[asked], p.nodes[rows])
            own = self._own(state, k, folded, at, layout)
            index, stats = rebase_bins(folded, own, at, layout.count)
            empty = np.zeros((0, state.growth.width), np.uint8)
            evaluated.append((k, rows, EvaluateReply(index, stats, empty)))
            layouts[k] = layout
        return self.evaluate.split(state, evaluated, layouts)

    def _own(
        self,
        state: LevelState,
        k: int,
        folded: SketchEvaluateReply,
        at: IntArray,
        layout: BinLayout,
    ) -> IntArray:
        """Return the client's own candidate counts; they must be the server's."""
        own, _ = own_candidates(
            folded.n_points,
            folded.points,
            folded.counts,
            self.sketch.config.candidates,
            self.sketch.config.n_quantiles,
        )
        if np.any(at < 0) or not np.array_equal(own[at], layout.count):
            raise LocalProtocolError(
                f"FedForest: the candidates of client {state.clients[k]!r} "
                "derived from its own sketch differ from the server's; a "
                "folded level must have one client per node."
            )
        return own


# -- pooling a sketch level (client statistics add up to the pooled ones) -----------
def pool_level(state: LevelState, replies: Replies) -> IntArray:
    """Sum the open nodes' statistics, learn where clients have rows.

    Returns the positions of the open nodes that may still split.
    """
    g = state.growth
    pooled = np.zeros((g.open.shape[0], g.width))
    for _, asked, reply in replies:
        pooled[asked] += reply.node_stats.astype(np.float64)
    g.set_stats(g.open, pooled)  # from the clients answering now: no phantoms
    state.learn_reach(g.open, [(k, a, r.counts) for k, a, r in replies])
    todo: IntArray = np.flatnonzero(g.splittable(g.open))
    return todo


def categorical(state: LevelState, pairs: IntArray) -> np.ndarray:
    """Which (node, feature) pairs are of a categorical feature."""
    is_cat = state.growth.is_categorical
    out: np.ndarray = (pairs >= 0) & is_cat[np.maximum(pairs, 0)]
    return out


def pooled_categories(
    state: LevelState, replies: Replies, pairs: IntArray
) -> FloatArray:
    """Sum the per-category statistics, dense ``(n_open, F', categories, S)``."""
    g = state.growth
    dense = np.zeros((*pairs.shape, int(g.n_categories.max(initial=0)), g.width))
    is_categorical = categorical(state, pairs)
    for _, asked, s in replies:
        rows, cols = np.nonzero(is_categorical[asked])
        dense[asked[rows], cols] += s.cat_stats.astype(np.float64)
    return dense
