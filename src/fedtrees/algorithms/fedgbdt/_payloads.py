"""FedGBDT messages: the start round and the level round.

- ``fedgbdt.start`` (once per fit): every client summarises its numeric
  columns for the grid (the engine's sketch) and sends the prior statistics
  of its training rows and, apart, of its validation rows (held out for early
  stopping; zeros without): weighted class counts, or the moments
  ``(Σw, Σw·y, Σw·y²)`` for regression (:class:`StartReply`). The server agrees
  the grid and the starting raw prediction from the training prior; both
  priors bound what the client's later replies may hold (:mod:`._bounds`).
- ``fedgbdt.level`` (one per level of every iteration, and a last one): the
  decisions since the client's version (:mod:`._decisions`), the iteration,
  the open nodes of its trees and the features each considers. The client
  answers every open node's ``(Σg, Σh, Σw)`` and, per asked (node, feature)
  pair, the non-zero bins of the same sums (:class:`LevelReply`). A request
  with ``report`` set also asks the summed training and validation losses of
  the finished iterations (the first level of an iteration, and the last
  request).

Every reply is checked on arrival: bins in code order and inside the grid,
finite g, h >= 0 and weights >= 0, and every pair's bins adding up to its
node's sums. The objective bounds g and h by the weight of the same rows
(:data:`HESSIAN_MAX`): for logloss ``|Σg| <= Σw`` and ``Σh <= Σw/4`` (``Σw/2``
per class for softmax), for squared error ``Σh = Σw``; and a logloss sum by
``-log(1e-16)`` times its weight (the clipped probabilities). A node's sums
outside them are no client's rows.

Size: one module past ~400 lines, by choice: every FedGBDT message with the checks of
its reply, so that what travels and what is refused read as one protocol.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from fedtrees.algorithms.histogram import (
    FINE_BINS,
    MAX_BINS,
    MISSING,
    DenseLayout,
    Histograms,
    MaskedLevel,
    check_grid_reply,
    grid_reply_fields,
)
from fedtrees.federation import (
    RTOL,
    Field,
    InvalidField,
    Payload,
    ReplySpec,
    check_at_most,
    check_same_stats,
    masked_spec,
    no_cohort,
    no_cohort_keys,
    payload,
)

__all__ = [
    "BoostState",
    "DecisionFields",
    "LevelReply",
    "LevelRequest",
    "StartReply",
    "StartRequest",
    "level_layout",
    "prior_width",
    "wide_statistics",
]

_STATS = 3  # Σg, Σh, Σw
HESSIAN_MAX: Final = {"binary": 0.25, "softmax": 0.5, "squared_error": 1.0}
"""Largest h per unit of weight: p(1-p), 2p(1-p), 1 (``_loss``)."""
LOGLOSS_MAX: Final = -math.log(1e-16)
"""Largest logloss of one row (probabilities are clipped to [1e-16, 1 - 1e-16])."""


@payload("fedgbdt.start_reply")
class StartReply(Payload):
    """A client's grid summary; its training and validation rows' prior statistics."""

    points: np.ndarray
    weights: np.ndarray
    counts: np.ndarray
    complete: np.ndarray
    prior: np.ndarray
    held_prior: np.ndarray


def prior_width(objective: str, n_classes: int) -> int:
    """Entries of one prior: 3 moments (squared error), or one count per class."""
    return 3 if objective == "squared_error" else n_classes


@payload("fedgbdt.start")
class StartRequest(Payload):
    """Summarise the numeric ``columns`` for the grid; send the prior statistics.

    ``holdout``: the share of rows each client keeps for validation (keyed by
    the seed and the client), left out of both.
    """

    fit_id: int
    seed: int
    objective: str
    classes: np.ndarray
    holdout: float
    n_features: int
    max_bins: int
    columns: np.ndarray
    ranges: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    mask_round: int = -1
    cohort: np.ndarray = field(default_factory=no_cohort)
    cohort_keys: np.ndarray = field(default_factory=no_cohort_keys)

    @property
    def wide_mask(self) -> bool:
        """Whether a masked value takes two words (:func:`wide_statistics`)."""
        return wide_statistics(self.objective)

    @property
    def prior_width(self) -> int:
        """Entries of one prior (:func:`prior_width`)."""
        return prior_width(self.objective, int(self.classes.shape[0]))

    def expected_reply(self) -> ReplySpec:
        """Expect the engine's grid summary; class counts or regression moments.

        Masked (secure aggregation): the fine histograms of the columns over
        the declared ``ranges``, then the training prior and the validation
        prior, as one masked vector.
        """
        if self.mask_round >= 0:
            fine = int(np.count_nonzero(self.columns)) * FINE_BINS
            return masked_spec(
                fine + 2 * self.prior_width,
                sites=self.cohort.shape[0],
                wide=self.wide_mask,
            )
        prior = (
            Field.array("f", (3,), moments=True, weights=True)
            if self.objective == "squared_error"
            else Field.array(
                "f", (self.classes.shape[0],), nonnegative=True, weights=True
            )
        )
        return ReplySpec(
            StartReply,
            {
                **grid_reply_fields(self.n_features, self.max_bins),
                "prior": prior,
                "held_prior": prior,
            },
            check=check_grid_reply,
        )


@dataclass(frozen=True, eq=False)
class DecisionFields(Payload):
    """The decision columns a payload carries, ``d_*`` (:mod:`._decisions`)."""

    d_iteration: np.ndarray
    d_node: np.ndarray
    d_kind: np.ndarray
    d_feature: np.ndarray
    d_bin: np.ndarray
    d_missing_left: np.ndarray
    d_left: np.ndarray
    d_right: np.ndarray
    d_value: np.ndarray
    d_set_ptr: np.ndarray
    d_set_codes: np.ndarray


@payload("fedgbdt.state")
class BoostState(DecisionFields):
    """What a client keeps between rounds: its fit and the decisions so far."""

    fit_id: int


@payload("fedgbdt.level_reply")
class LevelReply(Payload):
    """Node sums and the non-zero bins of every asked pair (module docstring).

    A node's Σw travels apart from its (Σg, Σh): it is bounded by the weight
    the client declared at the agreement; g and h are not.

    ``loss``: Σ training loss, Σ training weight, Σ validation loss, Σ
    validation weight of the model of the finished iterations (zeros unless
    the request asked for a report).
    """

    node_gh: np.ndarray
    node_weight: np.ndarray
    bin_count: np.ndarray
    bin_code: np.ndarray
    bin_stats: np.ndarray
    loss: np.ndarray

    @property
    def node_stats(self) -> np.ndarray:
        """Every open node's ``(Σg, Σh, Σw)``."""
        return np.column_stack([
            np.asarray(self.node_gh, np.float64),
            np.asarray(self.node_weight, np.float64),
        ])  # fmt: skip


@payload("fedgbdt.level")
class LevelRequest(DecisionFields, MaskedLevel):
    """One level of an iteration's trees (see the module docstring).

    ``base``: the decisions the server believes the client holds (0 and
    ``full`` after a resync); ``d_*``: the decisions after them. ``margin``:
    the starting raw prediction per output. ``open_nodes`` (sorted by tree)
    are local ids of iteration ``iteration``; ``pair_feature[s]`` the features
    open node s considers (-1: none, its sums only). ``feature_bins`` and the
    grid edges as the engine sends them (edges in the first level request and
    full requests only). ``scale_pos_weight``: the factor of the positive
    rows' g and h (binary logloss); ``metric``: XGBoost's name of the metric
    the losses report ("": the objective's own).
    """

    fit_id: int
    seed: int
    objective: str
    classes: np.ndarray
    holdout: float
    subsample: float
    n_trees: int
    iteration: int
    report: bool
    base: int
    full: bool
    margin: np.ndarray
    open_nodes: np.ndarray
    pair_feature: np.ndarray
    feature_bins: np.ndarray
    grid_edges: np.ndarray
    grid_edge_ptr: np.ndarray
    mask_round: int = -1
    cohort: np.ndarray = field(default_factory=no_cohort)
    cohort_keys: np.ndarray = field(default_factory=no_cohort_keys)
    scale_pos_weight: float = 1.0
    metric: str = ""

    @property
    def n_open(self) -> int:
        """Number of open nodes in this request."""
        return int(self.open_nodes.shape[0])

    @property
    def wide_mask(self) -> bool:
        """Whether a masked value takes two words (:func:`wide_statistics`)."""
        return wide_statistics(self.objective)

    def dense_layout(self) -> DenseLayout:
        """Return the masked reply's layout (:func:`level_layout`)."""
        return level_layout(self.pair_feature, self.feature_bins)

    def expected_reply(self) -> ReplySpec:
        """Expect sums per node; per pair its bins, inside the grid, adding up."""
        masked = self.masked_reply_spec()
        if masked is not None:
            return masked
        fp = int(self.pair_feature.shape[1])
        return ReplySpec(
            LevelReply,
            {
                "node_gh": Field.array("f", (self.n_open, 2)),
                "node_weight": Field.array(
                    "f", (self.n_open,), nonnegative=True, weights=True
                ),
                "bin_count": Field.array(
                    "iu", (self.n_open, fp), low=0, high=MAX_BINS + 1
                ),
                "bin_code": Field.array("iu", (None,), low=0, high=MISSING),
                "bin_stats": Field.array("f", (None, _STATS)),
                "loss": Field.array("f", (4,), nonnegative=True),
            },
            check=self._check_sums,
        )

    def _check_sums(self, reply: Any) -> None:
        """H and weights >= 0; bins inside the grid, adding up to their node."""
        node = reply.node_stats
        stats = np.asarray(reply.bin_stats, dtype=np.float64)
        if reply.bin_code.shape[0] != stats.shape[0]:
            raise InvalidField("bin_stats", "needs one row per bin_code entry")
        for name, values in (("node_gh", node), ("bin_stats", stats)):
            if np.any(values[:, 1:] < 0):
                raise InvalidField(name, "holds a negative hessian or weight sum")
            check_gradient_sums(
                name, values, self.objective, scale=self.scale_pos_weight
            )
        check_losses(reply.loss, self.objective)
        count = np.asarray(reply.bin_count, dtype=np.int64)
        bins = Histograms(count.ravel(), reply.bin_code, stats)
        sums = bins.checked_sums(self.pair_feature, self.feature_bins)
        asked = (np.asarray(self.pair_feature) >= 0).ravel()
        want = np.repeat(node, count.shape[1], axis=0)[asked]
        got = sums[asked]
        scale = np.maximum(np.abs(got), np.abs(want))
        bad = np.abs(got - want) > RTOL * scale
        if np.any(bad[:, 0]):
            # Σg may cancel: its rounding is relative to the pair's Σ|bin sums|
            spread = Histograms(count.ravel(), reply.bin_code, np.abs(stats))
            wide = spread.checked_sums(self.pair_feature, self.feature_bins)[asked, 0]
            scale[:, 0] = np.maximum(scale[:, 0], wide)
            bad = np.abs(got - want) > RTOL * scale
        if np.any(bad):
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            raise InvalidField(
                "bin_stats",
                f"is inconsistent at {at}: a pair's bins sum to {float(got[at])!r} "
                f"but its node's sum is {float(want[at])!r}",
            )


def wide_statistics(objective: str) -> bool:
    """Whether masked values take two words: squared error's (docs/security.md).

    Its gradients, prior moments and losses grow with the target; a
    classifier's stay below one word's range.
    """
    return objective == "squared_error"


def level_layout(pair_feature: np.ndarray, feature_bins: np.ndarray) -> DenseLayout:
    """Return a masked level reply's layout: node sums, every bin, the 4 losses."""
    return DenseLayout(
        np.asarray(pair_feature, np.int64),
        np.asarray(feature_bins, np.int64),
        _STATS,
        extra=4,
    )


def check_gradient_sums(
    name: str,
    stats: np.ndarray,
    objective: str,
    *,
    atol: float = 0.0,
    scale: float = 1.0,
) -> None:
    """Require ``(Σg, Σh, Σw)`` rows the objective allows (module docstring).

    ``atol``: an absolute allowance (a masked sum's rounding); ``scale``: the
    ``scale_pos_weight`` of binary logloss, which multiplies a positive row's
    g and h (not its weight), so the bounds grow by ``max(1, scale)``.

    Raises
    ------
    InvalidField
        Naming ``name`` and the first sum beyond its bound.
    """
    g, h, w = stats[:, 0], stats[:, 1], stats[:, 2]
    if objective == "squared_error":
        check_same_stats(
            name, h, w, "a hessian sum (h = w per row) vs Σw", False, atol=2 * atol
        )
        return
    most = max(1.0, scale) * w
    check_at_most(name, np.abs(g), most, "|Σg| (|g| <= w per row) vs Σw", atol=2 * atol)
    check_at_most(
        name, h, HESSIAN_MAX[objective] * most, "Σh vs its most, Σw", atol=2 * atol
    )


def check_losses(loss: np.ndarray, objective: str, *, atol: float = 0.0) -> None:
    """Require logloss sums of at most :data:`LOGLOSS_MAX` per unit of weight.

    ``atol``: an absolute allowance (a masked sum's rounding).

    Raises
    ------
    InvalidField
        Naming ``loss``.
    """
    values = np.asarray(loss, dtype=np.float64)
    if objective != "squared_error":
        check_at_most(
            "loss",
            values[[0, 2]],
            LOGLOSS_MAX * values[[1, 3]],
            "a logloss sum",
            atol=(1.0 + LOGLOSS_MAX) * atol,
        )


@payload("fedgbdt.local_reply")
class LocalReply(DecisionFields):
    """A client's own trees (baselines): decisions, each node's Σw, losses.

    ``loss`` is :class:`LevelReply`'s: the global model's before the client
    boosted.
    """

    cover: np.ndarray
    loss: np.ndarray


@payload("fedgbdt.local")
class LocalRequest(DecisionFields):
    """Boost ``features.shape[0]`` trees on the client's own rows (baselines).

    Flower's bagging and cyclic boosting on FedGBDT's grid and learner: the
    request carries the global model as :class:`LevelRequest` does (decisions
    after ``base``, the grid in the first and in full requests) and the
    learner's settings; ``features[j, k]`` are the features tree k of local
    iteration j considers; the trees are numbered from ``first``.
    """

    fit_id: int
    seed: int
    objective: str
    classes: np.ndarray
    holdout: float
    n_trees: int
    first: int
    base: int
    full: bool
    margin: np.ndarray
    features: np.ndarray
    max_depth: int
    learning_rate: float
    reg_lambda: float
    gamma: float
    min_child_weight: float
    feature_bins: np.ndarray
    grid_edges: np.ndarray
    grid_edge_ptr: np.ndarray
    scale_pos_weight: float = 1.0
    metric: str = ""

    @property
    def iteration(self) -> int:
        """The global model's iterations the client catches up to."""
        return self.first

    def expected_reply(self) -> ReplySpec:
        """Decision columns of the client's trees, their node weights, losses."""
        rows = Field.array("iu", (None,))
        return ReplySpec(
            LocalReply,
            {
                "d_iteration": rows,
                "d_node": rows,
                "d_kind": Field.array("iu", (None,), low=0, high=2),
                "d_feature": Field.array("i", (None,)),
                "d_bin": Field.array("i", (None,)),
                "d_missing_left": Field.array("b", (None,)),
                "d_left": Field.array("i", (None,)),
                "d_right": Field.array("i", (None,)),
                "d_value": Field.array("f", (None,)),
                "d_set_ptr": Field.array("iu", (None,)),
                "d_set_codes": Field.array("iu", (None,), low=0, high=MISSING),
                "cover": Field.array("f", (None,), nonnegative=True, weights=True),
                "loss": Field.array("f", (4,), nonnegative=True),
            },
            check=self._check_trees,
        )

    def _check_trees(self, reply: Any) -> None:
        """Trees of the asked iterations, node ids a tree of ``max_depth`` holds."""
        check_losses(reply.loss, self.objective)
        n = reply.d_node.shape[0]
        per_decision = (
            "d_iteration", "d_kind", "d_feature", "d_bin", "d_missing_left",
            "d_left", "d_right", "d_value", "cover",
        )  # fmt: skip
        for name in per_decision:
            if getattr(reply, name).shape[0] != n:
                raise InvalidField(name, "needs one entry per decision, as d_node")
        ptr = np.asarray(reply.d_set_ptr, np.int64)
        if (
            ptr.shape != (n + 1,)
            or ptr[0] != 0
            or np.any(np.diff(ptr) < 0)
            or (ptr[-1] != reply.d_set_codes.shape[0])
        ):
            raise InvalidField("d_set_ptr", "must rise from 0 to the set codes")
        trees = int(self.features.shape[0])
        iteration = np.asarray(reply.d_iteration, np.int64)
        if np.any(iteration < self.first) or np.any(iteration >= self.first + trees):
            raise InvalidField("d_iteration", f"must lie in [{self.first}, "
                               f"{self.first + trees})")  # fmt: skip
        most = self.n_trees * 2 ** (self.max_depth + 1)
        split = np.asarray(reply.d_kind) != 0
        ids = np.concatenate([reply.d_node, reply.d_left[split], reply.d_right[split]])
        feature = np.asarray(reply.d_feature)[split]
        if np.any(ids < 0) or np.any(ids >= most):
            raise InvalidField("d_node", f"holds a node id outside [0, {most})")
        if np.any(feature < 0) or np.any(feature >= self.feature_bins.shape[0]):
            raise InvalidField("d_feature", "names a feature outside the grid")
        if self.objective != "squared_error":
            self._check_leaf_weights(reply)

    def _check_leaf_weights(self, reply: Any) -> None:
        """Bound a logloss leaf weight ``-η·G/(H+λ)``: ``|G| <= cover``, ``H >= mcw``.

        A leaf is weighted only where ``H >= min_child_weight`` and ``H > 0``
        (and ``H >= 1e-16·cover``, the clipped hessians), so
        ``|weight| <= η·cover / (max(mcw, 1e-16·cover) + λ)``; with
        ``scale_pos_weight`` s, ``|G| <= max(1, s)·cover`` and
        ``H >= 1e-16·min(1, s)·cover``.
        """
        leaf = np.asarray(reply.d_kind) == 0
        cover = np.asarray(reply.cover, np.float64)[leaf]
        s = self.scale_pos_weight
        lowest = (
            np.maximum(self.min_child_weight, 1e-16 * min(1.0, s) * cover)
            + self.reg_lambda
        )
        most = self.learning_rate * max(1.0, s) * cover / np.maximum(lowest, 1e-300)
        check_at_most(
            "d_value",
            np.abs(np.asarray(reply.d_value, np.float64)[leaf]),
            most,
            "|a leaf weight| (|Σg| <= cover for logloss)",
        )
