"""FedForest messages, protocol v2 (docs/fedforest.md).

per-run client state, :mod:`fedtrees.federation._state`, applied to FedForest.
A client keeps the forest it has been told in its per-run state, so a request
carries only what changed: the splits made since the forest version ``base``,
and the version ``digest`` they lead to (a hash chained over every split batch).
A client whose kept forest is not ``base`` answers
:class:`~fedtrees.federation.Resync`; the round loop then sends it the request's
full form (``full=True``: the fit's settings for that client and every split so
far). The requests of a level are the same for every client and encoded once.

Replies are lean and lossless, and their size follows the node sizes, not the
client's row count (docs/fedforest.md, "What travels (protocol v2)"): a sketch
holds ``min(q, rows) + 1`` points per pair
(ragged: ``n_points`` says how many), per-bin statistics travel as the non-zero
bins only (``bin_index`` into the level's ragged bin layout), categorical
statistics only for categorical pairs, and counts in the smallest dtype that
holds them exactly (:func:`._layout.compact`).

Every reply is checked against the invariants of its kind before the strategy
sees it: statistics within the bounds the client declared at the agreement,
node weights equal to the sum of the class counts (or the moment Σw), each
numeric pair's bins adding up to the same node totals, consistent regression
moments, held-out scores adding up, impurity decreases (AvgImp) within
``[0, max_impurity]``. :mod:`._consistency` adds the checks across
rounds (a node's totals never change; children never exceed their parent).
This bounds what a buggy client can do to the forest; it is not a Byzantine
defence (consistent lies within the declared bounds pass).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms._plausible import gain_field
from fedtrees.algorithms.fedforest._candidates import own_candidates
from fedtrees.algorithms.fedforest._layout import (
    check_bin_index,
    check_pair_sums,
    check_ragged_points,
    pair_totals,
)
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
    "ForestState",
    "LeafStatsReply",
    "LeafStatsRequest",
    "LevelFields",
    "ScoreReply",
    "ScoreRequest",
    "SketchEvaluateReply",
    "SketchEvaluateRequest",
    "SketchReply",
    "SketchRequest",
    "TopKReply",
    "TopKRequest",
]

SCORE_BINS: Final = 100
COUNTS: Final = "iuf"  # whole counts travel as unsigned ints, others as floats


@dataclass(frozen=True, eq=False)
class LevelFields(Payload):
    """Fields shared by every FedForest request: the fit, the forest delta, the level.

    ``split_*`` are the splits made since forest version ``base`` (in node-id
    order; split i's children get the next two node ids; ``split_missing``:
    whether missing values go left), ``digest`` the version
    they lead to. ``full``: ``base`` is the empty forest and the fit's settings
    for this client are filled in (``client_code``, its ``participation`` column
    per tree, labels...); otherwise they are neutral. ``open_nodes`` (sorted by
    tree) are this request's nodes, ``pair_feature[s]`` the features open node s
    considers (-1 padding). ``class_weights`` (full form): each class's weight,
    one row for every tree or one per tree (``"balanced_subsample"``), shape
    ``(0, 0)`` for none (and in a delta); every row's weight is its bootstrap
    count times its sample weight times its class's weight. ``weight_scale``
    (every request): the largest class weight (>= 1), by which the weighted
    counts of a reply may pass the weight the client declared at the agreement.
    """

    fit_id: int
    level: int
    base: str
    digest: str
    full: bool
    seed: int
    bootstrap: bool
    task: str
    target: str
    classes: np.ndarray
    holdout: float
    client_code: int
    participation: np.ndarray
    split_node: np.ndarray
    split_feature: np.ndarray
    split_threshold: np.ndarray
    split_set_ptr: np.ndarray
    split_set_codes: np.ndarray
    split_missing: np.ndarray
    open_nodes: np.ndarray
    pair_feature: np.ndarray
    class_weights: np.ndarray
    weight_scale: float

    @property
    def width(self) -> int:
        """Size S of one statistic: the number of classes, or 3 moments."""
        return 3 if self.task == "regression" else int(self.classes.shape[0])

    @property
    def n_open(self) -> int:
        """Number of open nodes in this request."""
        return int(self.open_nodes.shape[0])

    def _stats(self, shape: tuple[int | None, ...], width: int) -> Field:
        # Class counts are non-negative; regression moments carry signed sums.
        # Both are bounded by the client's declared weight bound (bootstrap
        # counts x sample weights).
        if self.task == "regression":
            return Field.array("f", (*shape, 3), moments=True, weights=True)
        return Field.array(
            COUNTS,
            (*shape, width),
            nonnegative=True,
            weights=True,
            bound_scale=self.weight_scale,
        )

    def _counts(self, shape: tuple[int | None, ...]) -> Field:
        """Node weights (bootstrap counts x sample and class weights)."""
        return Field.array(
            COUNTS, shape, nonnegative=True, weights=True, bound_scale=self.weight_scale
        )

    def _check_node_counts(self, counts: np.ndarray, node_stats: np.ndarray) -> None:
        """Node weights must be the sum of the class counts (or the moment Σw)."""
        stats = np.asarray(node_stats, dtype=np.float64)
        total = stats[:, 0] if self.task == "regression" else stats.sum(axis=1)
        check_same_stats(
            "counts", counts, total, "the node weight vs its statistics", False
        )


@payload("fedforest.state")
class ForestState(Payload):
    """What a client keeps between rounds: its settings and the forest so far."""

    fit_id: int
    digest: str
    seed: int
    bootstrap: bool
    task: str
    target: str
    classes: np.ndarray
    holdout: float
    client_code: int
    participation: np.ndarray
    node_tree: np.ndarray
    node_feature: np.ndarray
    node_threshold: np.ndarray
    node_left: np.ndarray
    node_right: np.ndarray
    set_ptr: np.ndarray
    set_codes: np.ndarray
    node_missing: np.ndarray
    class_weights: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    """Each class's weight, for every tree or per tree; (0, 0): none."""


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


@payload("fedforest.leaf_stats_reply")
class LeafStatsReply(Payload):
    """Statistics of the open nodes (AvgImp learns children's values this way)."""

    node_stats: np.ndarray


@payload("fedforest.leaf_stats")
class LeafStatsRequest(LevelFields):
    """Ask for the statistics of the open nodes only."""

    def expected_reply(self) -> ReplySpec:
        """One statistic per open node."""
        return ReplySpec(
            LeafStatsReply,
            {"node_stats": self._stats((self.n_open,), self.width)},
        )


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


@payload("fedforest.score_reply")
class ScoreReply(Payload):
    """Held-out scores: ``hist[true, k, bin]`` of predicted P(class k), and sums.

    ``sums`` = (rows, correct, squared error, Σy, Σy²) of the held-out rows.
    """

    hist: np.ndarray
    sums: np.ndarray


@payload("fedforest.score")
class ScoreRequest(LevelFields):
    """Score the finished forest (``node_values``) on the held-out rows."""

    node_values: np.ndarray

    def expected_reply(self) -> ReplySpec:
        """Histograms of predicted probabilities and five sums.

        Classification's sums are row counts (rows, correct ones, zeros): within
        the client's declared row bound.
        """
        regression = self.task == "regression"
        c = max(self.width if not regression else 0, 0)
        return ReplySpec(
            ScoreReply,
            {
                "hist": Field.array(
                    "f", (c, c, SCORE_BINS), nonnegative=True, rows=True
                ),
                "sums": Field.array("f", (5,), rows=not regression),
            },
            check=self._check_score,
        )

    def _check_score(self, reply: Any) -> None:
        """Whole held-out counts that add up; consistent regression moments."""
        rows, correct, err, sy, syy = (float(v) for v in reply.sums)
        if rows < 0 or rows != np.floor(rows) or not 0 <= correct <= rows:
            raise InvalidField(
                "sums", f"holds {rows!r} rows and {correct!r} correct ones"
            )
        if self.task == "regression":
            if err < 0:
                raise InvalidField("sums", f"holds a squared error of {err!r}")
            check_moments("sums", np.array([rows, sy, syy]))
            # Minkowski: ||y - ŷ|| <= ||y|| + ||ŷ||, every ŷ one of node_values
            top = float(np.abs(self.node_values).max(initial=0.0))
            most = (np.sqrt(max(syy, 0.0)) + np.sqrt(rows) * top) ** 2
            check_at_most(
                "sums", np.array([err]), np.array([most]), "the squared error"
            )
            return
        per_class = reply.hist.sum(axis=2)  # (true, k): held-out rows of class t
        if per_class.size and (
            np.any(per_class != per_class[:, :1]) or per_class[:, 0].sum() != rows
        ):
            raise InvalidField(
                "hist", f"does not hold every one of the {rows:g} held-out rows once"
            )
