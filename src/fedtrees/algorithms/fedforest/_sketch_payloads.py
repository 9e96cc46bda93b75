"""FedForest messages of a level whose candidates come from sketches, and their checks.

The rounds of :mod:`._sketching` (``candidates="quantile"`` and ``"exact"``;
the uniform baseline, :mod:`._uniform`, reuses the evaluation): AvgImp's
shortlist (:class:`TopKRequest`), the sketch (:class:`SketchRequest`), the
evaluation of the candidates (:class:`EvaluateRequest`) and the two folded
into one round (:class:`SketchEvaluateRequest`, :mod:`._fold`). Every request
is a :class:`._payloads.LevelFields` (protocol v2: the forest's delta rides
along).

Replies are lean and lossless, and their size follows the node sizes, not the
client's row count (docs/fedforest.md, "What travels (protocol v2)"): a sketch
holds ``min(q, rows) + 1`` points per pair (ragged: ``n_points`` says how
many), per-bin statistics travel as the non-zero bins only (``bin_index`` into
the level's ragged bin layout, :func:`._layout.first_bins`), and categorical
statistics only for categorical pairs.

The checks of these replies live here, beside the payloads they check (each
request's ``expected_reply`` names them): a sketch's points fit its counts and
rise within each pair (:func:`check_ragged_points`); bins are strictly
increasing and inside the layout (:func:`check_bin_index`); every numeric
pair's bins add up to its node's totals (:func:`pair_totals`,
:func:`check_pair_sums`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms._plausible import gain_field
from fedtrees.algorithms.fedforest._candidates import own_candidates
from fedtrees.algorithms.fedforest._layout import first_bins
from fedtrees.algorithms.fedforest._payloads import LevelFields
from fedtrees.exceptions import FedTreesError
from fedtrees.federation import (
    Field,
    InvalidField,
    Payload,
    ReplySpec,
    check_at_most,
    check_moments,
    check_same_stats,
    payload,
)

__all__ = [
    "AvgImpReply",
    "EvaluateReply",
    "EvaluateRequest",
    "SketchEvaluateReply",
    "SketchEvaluateRequest",
    "SketchReply",
    "SketchRequest",
    "TopKReply",
    "TopKRequest",
    "check_bin_index",
    "check_pair_sums",
    "check_ragged_points",
    "pair_totals",
]


# -- the checks of a level's replies --------------------------------------------------
def pair_totals(thr_count: np.ndarray, reply: Any, width: int) -> FloatArray:
    """Sum of every pair's bins, shape ``(*thr_count.shape, S)``.

    Pair p (row-major) owns ``thr_count[p] + 1`` consecutive bins of the
    layout that ``reply.bin_index`` indexes (checked to be inside it).
    """
    count = np.asarray(thr_count, dtype=np.int64)
    starts = first_bins(count)
    pair = np.searchsorted(starts, reply.bin_index.astype(np.int64), "right") - 1
    totals = np.zeros((count.size, width))
    np.add.at(totals, pair, np.asarray(reply.bin_stats, dtype=np.float64))
    out: FloatArray = totals.reshape(*count.shape, width)
    return out


def check_pair_sums(
    totals: FloatArray, node_stats: np.ndarray | None, regression: bool
) -> None:
    """Every used pair's bins sum to its node's statistics (or to each other).

    Categorical and unused pairs have one empty bin: pairs whose bins are all
    zero are not compared. Without ``node_stats`` a node's pairs are compared
    with its first used pair.
    """
    if regression:
        check_moments("bin_stats", totals)
    used = np.any(totals != 0, axis=2)  # (n_open, F')
    first = np.argmax(used, axis=1)
    if node_stats is None:
        want = totals[np.arange(totals.shape[0]), first]
    else:
        want = np.asarray(node_stats, dtype=np.float64)
    want = np.broadcast_to(want[:, None, :], totals.shape)
    check_same_stats(
        "bin_stats",
        np.where(used[..., None], totals, want),
        want,
        "a pair's bins sum (vs the node's other pairs)"
        if node_stats is None
        else "a pair's bins sum (vs the node's statistics)",
        regression,
    )


def check_bin_index(reply: Any, n_bins: int | None = None) -> None:
    """Bins strictly increasing, one statistic each, inside ``n_bins`` if given."""
    index = reply.bin_index
    if reply.bin_stats.shape[0] != index.shape[0]:
        raise InvalidField("bin_stats", "needs one row per bin_index entry")
    if np.any(np.diff(index.astype(np.int64)) <= 0):
        raise InvalidField("bin_index", "must be strictly increasing")
    if n_bins is not None and index.size and int(index[-1]) >= n_bins:
        raise InvalidField(
            "bin_index", f"holds bin {int(index[-1])}; the layout has {n_bins} bins"
        )


def rises_within(values: np.ndarray, starts: np.ndarray) -> bool:
    """Whether a ragged array never falls inside a block (blocks at ``starts``)."""
    falls = np.diff(values) < 0
    cuts = np.asarray(starts, dtype=np.int64)
    falls[cuts[(cuts > 0) & (cuts < values.shape[0])] - 1] = False
    return not bool(np.any(falls))


def check_ragged_points(reply: Any) -> None:
    """Points must match ``n_points`` in number and rise within each pair."""
    n_points = np.asarray(reply.n_points, dtype=np.int64).ravel()
    points = reply.points
    if int(n_points.sum()) != points.shape[0]:
        raise InvalidField(
            "points",
            f"holds {points.shape[0]} values; n_points sums to {int(n_points.sum())}",
        )
    if not rises_within(points, np.cumsum(n_points) - n_points):
        raise InvalidField("points", "must be non-decreasing within each pair")


# -- the messages ------------------------------------------------------------------
@payload("fedforest.sketch_reply")
class SketchReply(Payload):
    """Node weights and statistics, ragged quantile points, categorical stats.

    ``points`` holds ``n_points[s, k]`` points of pair (s, k), pairs in row-major
    order; ``cat_stats`` one (categories, S) block per categorical pair, in the
    same order.
    """

    counts: np.ndarray
    node_stats: np.ndarray
    n_points: np.ndarray
    points: np.ndarray
    cat_stats: np.ndarray


@payload("fedforest.sketch")
class SketchRequest(LevelFields):
    """Sketch every (open node, considered feature), with the node statistics.

    ``min(q, rows) + 1`` quantile points, or all distinct values for
    ``candidates="exact"``; per-category statistics of the categorical pairs.
    """

    q: int
    candidates: str
    max_categories: int
    n_categorical_pairs: int

    def expected_reply(self) -> ReplySpec:
        """Expect counts and statistics per node; ragged, sorted points per pair."""
        fp = self.pair_feature.shape[1]
        high = self.q + 1 if self.candidates == "quantile" else None
        return ReplySpec(
            SketchReply,
            {
                "counts": self._counts((self.n_open,)),
                "node_stats": self._stats((self.n_open,), self.width),
                "n_points": Field.array("iu", (self.n_open, fp), low=0, high=high),
                "points": Field.array("f", (None,)),
                "cat_stats": self._stats(
                    (self.n_categorical_pairs, self.max_categories), self.width
                ),
            },
            check=self._check_sketch,
        )

    def _check_sketch(self, reply: Any) -> None:
        """Ragged points; node weights matching the statistics."""
        check_ragged_points(reply)
        self._check_node_counts(reply.counts, reply.node_stats)
        if reply.cat_stats.size and self.task != "regression":
            # A categorical pair's categories hold at most the rows of its node.
            per_pair = np.asarray(reply.cat_stats, dtype=np.float64).sum(axis=1)
            top = np.asarray(reply.counts, dtype=np.float64).max(initial=0.0)
            check_at_most(
                "cat_stats", per_pair, np.asarray(top), "a pair's categories hold"
            )


@payload("fedforest.evaluate_reply")
class EvaluateReply(Payload):
    """Non-zero per-bin statistics of every numeric pair; node statistics if asked.

    ``bin_index`` (increasing) indexes the level's ragged bins: pair p (row-major)
    owns bins ``ptr[p] + p .. ptr[p + 1] + p`` where ``ptr`` is the cumulative
    ``thr_count``; ``bin_stats[i]`` is the statistic of bin ``bin_index[i]``.
    """

    bin_index: np.ndarray
    bin_stats: np.ndarray
    node_stats: np.ndarray


@payload("fedforest.avgimp_reply")
class AvgImpReply(Payload):
    """The client's own impurity gain of every candidate (AvgImp), ragged."""

    gains: np.ndarray


@payload("fedforest.evaluate")
class EvaluateRequest(LevelFields):
    """Evaluate the candidate ``thresholds`` of every numeric pair (ragged).

    Pair (s, k) has ``thr_count[s, k]`` sorted candidates, consecutive in
    ``thresholds``. ``mode="stats"``: per-bin statistics (exact gain); ``"avgimp"``:
    local gains. ``with_stats``: also the open nodes' statistics (uniform mode).
    """

    thr_count: np.ndarray
    thresholds: np.ndarray
    mode: str
    criterion: str
    with_stats: bool

    @property
    def n_bins(self) -> int:
        """Bins of the level: candidates + 1 per pair."""
        return int(self.thresholds.shape[0]) + int(self.thr_count.size)

    def expected_reply(self) -> ReplySpec:
        """Sparse bins inside the layout; statistics non-negative (classification)."""
        if self.mode == "avgimp":
            n = int(self.thresholds.shape[0])
            gains = gain_field(self.criterion, self.width, (n,))
            return ReplySpec(AvgImpReply, {"gains": gains})
        return ReplySpec(
            EvaluateReply,
            {
                "bin_index": Field.array(
                    "iu", (None,), low=0, high=max(self.n_bins - 1, 0)
                ),
                "bin_stats": self._stats((None,), self.width),
                "node_stats": self._stats(
                    (self.n_open if self.with_stats else 0,), self.width
                ),
            },
            check=self._check_bins,
        )

    def pair_totals(self, reply: Any) -> FloatArray:
        """Sum of every pair's bins, shape ``(n_open, F', S)`` (a checked reply)."""
        return pair_totals(self.thr_count, reply, self.width)

    def _check_bins(self, reply: Any) -> None:
        """Each numeric pair's bins add up to its node's totals (the same for all)."""
        check_bin_index(reply)
        node = reply.node_stats if self.with_stats else None
        check_pair_sums(self.pair_totals(reply), node, self.task == "regression")


# -- a level whose every node has one client: sketch and evaluate in one round ---
@payload("fedforest.sketch_evaluate_reply")
class SketchEvaluateReply(SketchReply):
    """A sketch reply and the non-zero bins of the client's own candidates.

    ``bin_index`` indexes the ragged bins of the candidates
    :func:`._candidates.own_candidates` derives from this reply's own sketch
    (pair p owns ``thr_count[p] + 1`` bins, as in :class:`EvaluateReply`).
    """

    bin_index: np.ndarray
    bin_stats: np.ndarray


@payload("fedforest.sketch_evaluate")
class SketchEvaluateRequest(SketchRequest):
    """Sketch, then evaluate the candidates the server would send: one round.

    Sent where every asked node may hold rows of this client only
    (**Decision**, :mod:`._fold`): the pooled sketch of each node is then
    the client's own, so the client derives the server's candidates itself
    (:func:`._candidates.own_candidates`) and returns their bins with the
    sketch. The fields are those of :class:`SketchRequest`.
    """

    def expected_reply(self) -> ReplySpec:
        """Expect a sketch reply plus sparse bins over the client's own candidates."""
        spec = super().expected_reply()
        return ReplySpec(
            SketchEvaluateReply,
            {
                **spec.fields,
                "bin_index": Field.array("iu", (None,), low=0),
                "bin_stats": self._stats((None,), self.width),
            },
            check=self._check_sketch_evaluate,
        )

    def own_layout(self, reply: Any) -> tuple[IntArray, FloatArray]:
        """Return the client's own candidates per pair and their values.

        Raises
        ------
        InvalidField
            Naming ``points`` when the sketch cannot be inverted.
        """
        try:
            return own_candidates(
                reply.n_points, reply.points, reply.counts, self.candidates, self.q
            )
        except FedTreesError as error:
            raise InvalidField("points", f"is not a sketch: {error}") from error

    def _check_sketch_evaluate(self, reply: Any) -> None:
        """Check the sketch, then bins inside the own layout that sum to the nodes."""
        self._check_sketch(reply)
        count, _ = self.own_layout(reply)
        check_bin_index(reply, int(count.sum()) + int(count.size))
        totals = pair_totals(count, reply, self.width)
        check_pair_sums(totals, reply.node_stats, self.task == "regression")


@payload("fedforest.top_k_reply")
class TopKReply(Payload):
    """Each open node's k best considered features (slots) by local gain."""

    slots: np.ndarray
    gains: np.ndarray


@payload("fedforest.top_k")
class TopKRequest(LevelFields):
    """AvgImp shortlist: best local gain per considered feature, keep the top k."""

    q: int
    k: int
    criterion: str

    def expected_reply(self) -> ReplySpec:
        """Slots in [-1, F') (-1: fewer than k usable), gains of a split (>= 0)."""
        fp = self.pair_feature.shape[1]
        gains = gain_field(self.criterion, self.width, (self.n_open, self.k))
        return ReplySpec(
            TopKReply,
            {
                "slots": Field.array("iu", (self.n_open, self.k), low=-1, high=fp - 1),
                "gains": gains,
            },
        )
