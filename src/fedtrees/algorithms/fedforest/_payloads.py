"""FedForest messages (ALGORITHMS.md §1.2, §1.5).

Every level request carries the forest grown so far (global node table), the open
nodes of the level (all trees together: level-wise batching) and the features each
open node considers, so a client routes its own rows and keeps no state the server
cannot re-create. Replies are fixed-shape, NaN-padded arrays whose size depends on
the nodes, features and q only — never on the client's row count (§1.5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from fedtrees.federation import Field, Payload, ReplySpec, payload

__all__ = [
    "AvgImpReply",
    "EvaluateReply",
    "EvaluateRequest",
    "LeafStatsReply",
    "LeafStatsRequest",
    "LevelFields",
    "RangesReply",
    "RangesRequest",
    "ScoreReply",
    "ScoreRequest",
    "SketchReply",
    "SketchRequest",
    "TopKReply",
    "TopKRequest",
]

SCORE_BINS: Final = 100


@dataclass(frozen=True, eq=False)
class LevelFields(Payload):
    """Fields shared by every FedForest request: the fit, the forest, the level.

    ``node_*`` describe all nodes so far (global ids; roots are 0..B-1);
    ``node_feature`` is -1 for a node not split, -2 for a client split, else the
    split feature; categorical and client splits send ``set_codes[set_ptr[g]:
    set_ptr[g+1]]`` left. ``open_nodes`` (sorted by tree) are this level's nodes,
    ``pair_feature[s]`` the features open node s considers (-1 padding).
    ``participation[b, k]``: client k takes part in tree b (client subsampling).
    """

    fit_id: int
    level: int
    seed: int
    bootstrap: bool
    task: str
    target: str
    classes: np.ndarray
    clients: np.ndarray
    participation: np.ndarray
    holdout: float
    node_tree: np.ndarray
    node_feature: np.ndarray
    node_threshold: np.ndarray
    node_left: np.ndarray
    node_right: np.ndarray
    set_ptr: np.ndarray
    set_codes: np.ndarray
    open_nodes: np.ndarray
    pair_feature: np.ndarray

    @property
    def width(self) -> int:
        """Size S of one statistic: the number of classes, or 3 moments."""
        return 3 if self.task == "regression" else int(self.classes.shape[0])

    @property
    def n_open(self) -> int:
        """Number of open nodes in this request."""
        return int(self.open_nodes.shape[0])

    def _stats(self, shape: tuple[int, ...]) -> Field:
        # Class counts are non-negative; regression moments carry signed sums.
        return Field.array("f", shape, nonnegative=self.task != "regression")


@payload("fedforest.sketch_reply")
class SketchReply(Payload):
    """Node counts and statistics, quantile points, per-category statistics."""

    counts: np.ndarray
    node_stats: np.ndarray
    points: np.ndarray
    cat_stats: np.ndarray


@payload("fedforest.sketch")
class SketchRequest(LevelFields):
    """Sketch every (open node, considered feature), with the node statistics.

    q+1 quantile points, or all distinct values for ``candidates="exact"``.
    """

    q: int
    candidates: str
    max_categories: int

    def expected_reply(self) -> ReplySpec:
        """Expect fixed shapes; points finite (NaN padding), non-decreasing."""
        fp = self.pair_feature.shape[1]
        width = self.q + 1 if self.candidates == "quantile" else None
        return ReplySpec(
            SketchReply,
            {
                "counts": Field.array("f", (self.n_open,), nonnegative=True),
                "node_stats": self._stats((self.n_open, self.width)),
                "points": Field.array(
                    "f",
                    (self.n_open, fp, width),
                    nan_padding=True,
                    nondecreasing=True,
                ),
                "cat_stats": self._stats(
                    (self.n_open, fp, self.max_categories, self.width)
                ),
            },
        )


@payload("fedforest.evaluate_reply")
class EvaluateReply(Payload):
    """Per-bin statistics of every numeric pair, and per-node statistics."""

    bin_stats: np.ndarray
    node_stats: np.ndarray


@payload("fedforest.avgimp_reply")
class AvgImpReply(Payload):
    """The client's own impurity gain of every candidate (AvgImp)."""

    gains: np.ndarray


@payload("fedforest.evaluate")
class EvaluateRequest(LevelFields):
    """Evaluate the candidate ``thresholds`` (NaN-padded) of every numeric pair.

    ``mode="stats"``: per-bin statistics (exact gain); ``"avgimp"``: local gains.
    """

    thresholds: np.ndarray
    mode: str
    criterion: str

    def expected_reply(self) -> ReplySpec:
        """Bins = candidates + 1; statistics non-negative (classification)."""
        n_open, fp, n_cand = self.thresholds.shape
        if self.mode == "avgimp":
            return ReplySpec(
                AvgImpReply, {"gains": Field.array("f", (n_open, fp, n_cand))}
            )
        return ReplySpec(
            EvaluateReply,
            {
                "bin_stats": self._stats((n_open, fp, n_cand + 1, self.width)),
                "node_stats": self._stats((n_open, self.width)),
            },
        )


@payload("fedforest.ranges_reply")
class RangesReply(Payload):
    """Per-feature (min, max) of the client's rows (Federated Histogram)."""

    ranges: np.ndarray


@payload("fedforest.ranges")
class RangesRequest(LevelFields):
    """Ask for each feature's range, once at the root (``candidates="uniform"``)."""

    n_features: int

    def expected_reply(self) -> ReplySpec:
        """Finite (min, max) per feature."""
        return ReplySpec(
            RangesReply, {"ranges": Field.array("f", (self.n_features, 2))}
        )


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
            LeafStatsReply, {"node_stats": self._stats((self.n_open, self.width))}
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
        """Slots in [-1, F') (-1: fewer than k usable), finite gains."""
        fp = self.pair_feature.shape[1]
        return ReplySpec(
            TopKReply,
            {
                "slots": Field.array("iu", (self.n_open, self.k), low=-1, high=fp - 1),
                "gains": Field.array("f", (self.n_open, self.k)),
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
        """Histograms of predicted probabilities and five sums."""
        c = max(self.width if self.task != "regression" else 0, 0)
        return ReplySpec(
            ScoreReply,
            {
                "hist": Field.array("f", (c, c, SCORE_BINS), nonnegative=True),
                "sums": Field.array("f", (5,)),
            },
        )
