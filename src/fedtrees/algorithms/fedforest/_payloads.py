"""FedForest messages, protocol v2 (docs/fedforest.md).

per-run client state, :mod:`fedtrees.federation._state`, applied to FedForest.
A client keeps the forest it has been told in its per-run state, so a request
carries only what changed: the splits made since the forest version ``base``,
and the version ``digest`` they lead to (a hash chained over every split batch).
A client whose kept forest is not ``base`` answers
:class:`~fedtrees.federation.Resync`; the round loop then sends it the request's
full form (``full=True``: the fit's settings for that client and every split so
far). The requests of a level are the same for every client and encoded once.

The messages every candidate mode shares live here: the level's common fields
(:class:`LevelFields`), what a client keeps (:class:`ForestState`), the leaves'
statistics and the held-out score. Each mode's level rounds have their own
module: :mod:`._sketch_payloads` (quantile, exact; the uniform baseline's
evaluation) and :mod:`._hist_payloads` (``"hist"``). Counts travel in the
smallest dtype that holds them exactly (:func:`._layout.compact`).

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
    "COUNTS",
    "SCORE_BINS",
    "ForestState",
    "LeafStatsReply",
    "LeafStatsRequest",
    "LevelFields",
    "ScoreReply",
    "ScoreRequest",
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
