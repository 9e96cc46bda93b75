"""FedAvg (McMahan et al. 2017) for the small networks of :mod:`._network`.

Round 1 (moments): every client sends, per expanded feature, the sum and the sum
of squares of its rows, and its total weight ``n_k`` — the server derives each
client's and the pooled mean and scale. Rounds 2 … R+1 (train): the server sends
the current parameters θ and the standardization the client must apply; every
client runs ``local_steps`` minibatch SGD steps from θ on its own rows and returns
θ_k; the server sets θ = Σ n_k θ_k / Σ n_k. Client k's minibatches in round r are
drawn from ``[seed, 6, r, crc32(k)]`` (STYLE habit 8).

Optionally the server scores every new θ on a set it holds itself (an ``evaluate``
callable built at :meth:`FedAvgStrategy.start`) and stops once the score reaches
``stop_at_score`` (docs/synthetic.md: FedAvg runs until it beats the tree). The set
never enters a message.

The bounds every client and the estimator check (small clients, value bounds,
steps and epochs) live in :mod:`._limits`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from fedtrees._random import client_key, keyed_rng
from fedtrees._typing import FloatArray
from fedtrees.algorithms._onehot import category_counts, expand_features
from fedtrees.algorithms._requests import (
    check_category_counts,
    check_request_size,
    field_error,
    request_error,
)
from fedtrees.algorithms.fedavg._limits import (
    MAX_BATCH_SIZE,
    MAX_LOCAL_EPOCHS,
    MAX_LOCAL_STEPS,
    check_client,
)
from fedtrees.algorithms.fedavg._network import Layout, standardize
from fedtrees.exceptions import ValidationError
from fedtrees.federation import (
    ClientData,
    FederationInfo,
    Field,
    InvalidField,
    Payload,
    ReplySpec,
    RoundPlan,
    check_at_most,
    check_moments,
    check_same_stats,
    handler,
    payload,
)

__all__ = [
    "MAX_LOCAL_EPOCHS",
    "MAX_LOCAL_STEPS",
    "AvgConfig",
    "Evaluate",
    "EvaluatorFactory",
    "FedAvgResult",
    "FedAvgStrategy",
    "MomentsReply",
    "MomentsRequest",
    "TrainReply",
    "TrainRequest",
]

INIT_STREAM, BATCH_STREAM = 5, 6
Standardize = Literal["client", "global", "none"]


@payload("fedavg.moments_reply")
class MomentsReply(Payload):
    """Per expanded feature: sum and sum of squares; the client's total weight."""

    total: np.ndarray
    squares: np.ndarray
    weight: float


@payload("fedavg.moments")
class MomentsRequest(Payload):
    """Ask for feature moments; ``n_categories`` one-hot encodes categories."""

    n_categories: np.ndarray

    @property
    def width(self) -> int:
        """Features after one-hot encoding."""
        return int(np.maximum(self.n_categories, 1).sum())

    def expected_reply(self) -> ReplySpec:
        """Finite sums; non-negative squares; a weight within the declared bound.

        Each feature's (weight, sum, sum of squares) are consistent moments (a
        non-negative variance); a one-hot column's sum lies in [0, weight] and
        equals its sum of squares. This bounds a buggy client, not a hostile one.
        """
        return ReplySpec(
            MomentsReply,
            {
                "total": Field.array("f", (self.width,)),
                "squares": Field.array("f", (self.width,), nonnegative=True),
                "weight": Field.scalar(low=0.0, weights=True),
            },
            check=self._check_moments,
        )

    def _check_moments(self, reply: MomentsReply) -> None:
        weight = np.full(self.width, reply.weight)
        check_moments("total", np.stack([weight, reply.total, reply.squares], 1))
        onehot = np.repeat(self.n_categories > 0, np.maximum(self.n_categories, 1))
        if not onehot.any():
            return
        total = np.asarray(reply.total, dtype=np.float64)[onehot]
        if np.any(total < 0):
            raise InvalidField("total", "holds a negative sum of a one-hot column")
        check_at_most("total", total, weight[onehot], "a one-hot column's sum")
        check_same_stats(
            "squares",
            np.asarray(reply.squares, dtype=np.float64)[onehot],
            total,
            "a one-hot column's sum of squares (its sum)",
            False,
        )


@payload("fedavg.train_reply")
class TrainReply(Payload):
    """The client's parameters after local training and its mean training loss."""

    theta: np.ndarray
    loss: float


@payload("fedavg.train")
class TrainRequest(Payload):
    """Train from ``theta`` with the standardization ``mean``/``scale``."""

    round: int
    seed: int
    theta: np.ndarray
    widths: np.ndarray
    n_categories: np.ndarray
    classes: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    learning_rate: float
    batch_size: int
    local_steps: int
    local_epochs: int

    def expected_reply(self) -> ReplySpec:
        """Finite parameters of the same layout; a finite loss."""
        return ReplySpec(
            TrainReply,
            {
                "theta": Field.array("f", self.theta.shape),
                "loss": Field.scalar(low=0.0),
            },
        )


def _expanded(data: ClientData, n_categories: np.ndarray) -> FloatArray:
    return expand_features(data.finite_matrix(), n_categories)


def _row_weights(data: ClientData) -> FloatArray:
    return np.ones(data.n_rows) if data.weights is None else data.weights


@handler("fedavg.moments")
def moments(request: MomentsRequest, data: ClientData) -> MomentsReply:
    """Client: weighted feature sums and sums of squares."""
    check_category_counts(request.kind, "n_categories", request.n_categories, data)
    check_client(data)
    X, w = _expanded(data, request.n_categories), _row_weights(data)
    return MomentsReply(w @ X, w @ (X * X), float(w.sum()))


@handler("fedavg.train")
def train(request: TrainRequest, data: ClientData) -> TrainReply:
    """Client: minibatch SGD from the server's parameters on the local rows."""
    check_client(data)
    layout = _checked_layout(request, data)
    X = standardize(_expanded(data, request.n_categories), request.mean, request.scale)
    y = data.label_codes(request.classes)
    w = _row_weights(data)
    rng = keyed_rng(
        request.seed, BATCH_STREAM, request.round, client_key(data.client_id)
    )
    theta = request.theta.copy()
    losses = []
    with np.errstate(over="ignore", invalid="ignore"):  # divergence: refused below
        for batch in _batches(rng, data.n_rows, request):
            loss, gradient = layout.loss_and_gradient(
                theta, X[batch], y[batch], w[batch]
            )
            theta -= request.learning_rate * gradient
            losses.append(loss)
        mean_loss = float(np.mean(losses))
    if not (np.isfinite(mean_loss) and np.all(np.isfinite(theta))):
        raise ValidationError(
            "FedAvg: local training diverged on this client (its parameters or "
            f"loss overflowed with learning_rate={request.learning_rate!r}); "
            "lower learning_rate, or standardize the features."
        )
    return TrainReply(theta, mean_loss)


def _checked_layout(request: TrainRequest, data: ClientData) -> Layout:
    """Check the request's sizes against this client's columns, before allocating.

    ``n_categories`` must be this client's category counts; ``widths`` a layout
    whose input width is the one-hot width, whose parameter count is
    ``theta``'s; ``mean``/``scale`` one value per one-hot column; a batch of at
    least one row and at least one step.
    """
    kind = request.kind
    counts = check_category_counts(kind, "n_categories", request.n_categories, data)
    width = int(np.maximum(counts, 1).sum())
    widths = np.asarray(request.widths)
    if widths.ndim != 1 or widths.shape[0] < 2 or widths.dtype.kind not in "iu":
        raise request_error(kind, "widths", ">= 2 layer widths", widths.shape)
    sizes = [
        check_request_size(kind, "widths", w, request.theta.size, "theta's size", low=1)
        for w in widths.tolist()
    ]
    if sizes[0] != width:
        raise request_error(kind, "widths", f"input width {width} (one-hot)", sizes[0])
    layout = Layout(tuple(sizes))
    if request.theta.shape != (layout.size,):
        wanted = f"{layout.size} parameters (widths {sizes})"
        raise request_error(kind, "theta", wanted, request.theta.shape)
    for name, values in (("mean", request.mean), ("scale", request.scale)):
        if values.shape != (width,):
            raise request_error(kind, name, f"shape ({width},)", values.shape)
    _check_values(request)
    _check_steps(request)
    return layout


def _check_values(request: TrainRequest) -> None:
    """Refuse values training cannot use: they would come back as NaN.

    ``theta`` and ``mean`` finite, ``scale`` finite and > 0, ``learning_rate``
    finite and > 0 (what the server's estimator validated).
    """
    for name, values, positive in (
        ("theta", request.theta, False),
        ("mean", request.mean, False),
        ("scale", request.scale, True),
        ("learning_rate", np.float64(request.learning_rate), True),
    ):
        array = np.asarray(values)
        if array.dtype.kind not in "fiu" or not np.all(np.isfinite(array)):
            raise field_error(request.kind, name, "finite", "NaN or inf")
        if positive and np.any(array <= 0):
            raise field_error(request.kind, name, "> 0", "a value <= 0")


def _check_steps(request: TrainRequest) -> None:
    """Check the batch (>= 1 row) and the steps or epochs against the limits."""
    kind = request.kind
    check_request_size(
        kind, "batch_size", request.batch_size, MAX_BATCH_SIZE, "rows", low=1
    )
    check_request_size(
        kind,
        "local_steps",
        request.local_steps,
        MAX_LOCAL_STEPS,
        "SGD steps a round; >= 1 unless local_epochs is set",
        low=0 if request.local_epochs else 1,
    )
    check_request_size(
        kind, "local_epochs", request.local_epochs, MAX_LOCAL_EPOCHS, "epochs a round"
    )


def _batches(
    rng: np.random.Generator, n: int, request: TrainRequest
) -> Iterator[np.ndarray]:
    """Minibatches of shuffled epochs (the last batch of an epoch may be short).

    Drawn lazily, one epoch's order at a time: memory stays one epoch's,
    whatever the number of steps (the same batches as drawing them all first).
    """
    size = min(request.batch_size, n)
    per_epoch = -(-n // size)
    steps = (
        request.local_epochs * per_epoch
        if request.local_epochs
        else request.local_steps
    )
    done = 0
    while done < steps:
        order = rng.permutation(n)
        for i in range(0, n, size):
            if done == steps:
                return
            yield order[i : i + size]
            done += 1


@dataclass(frozen=True)
class AvgConfig:
    """Validated FedAvg settings."""

    hidden: tuple[int, ...]
    n_rounds: int
    local_steps: int
    local_epochs: int
    batch_size: int
    learning_rate: float
    standardize: Standardize
    on_dropout: Literal["fail", "continue"]
    seed: int
    stop_at_score: float | None = None


@dataclass(frozen=True, eq=False)
class FedAvgResult:
    """Parameters, layout, standardizations, loss and score curves of a run.

    Also the snapshot that :data:`Evaluate` scores after every training round.
    """

    layout: Layout
    theta: FloatArray
    n_categories: np.ndarray
    client_mean: dict[str, FloatArray]
    client_scale: dict[str, FloatArray]
    mean: FloatArray
    scale: FloatArray
    losses: list[float]
    standardize: Standardize
    scores: list[float]

    def standardization(self, client: str | None) -> tuple[FloatArray, FloatArray]:
        """Mean and scale for ``client``'s rows (None or unknown client: pooled)."""
        width = self.layout.widths[0]
        if self.standardize == "none":
            return np.zeros(width), np.ones(width)
        if (
            self.standardize == "client"
            and client is not None
            and client in self.client_mean
        ):
            return self.client_mean[client], self.client_scale[client]
        return self.mean, self.scale

    def proba(
        self,
        features: FloatArray,
        codes: npt.NDArray[np.int64] | None = None,
        clients: tuple[str, ...] = (),
    ) -> FloatArray:
        """Class probabilities of one-hot expanded rows, shape (n, n_classes).

        Row i is standardized as client ``clients[codes[i]]``; a code of -1 (or
        ``codes=None``, every row) takes the pooled standardization.
        """
        mean, scale = self.standardization(None)
        if codes is not None and np.any(codes >= 0):
            mean = np.tile(mean, (features.shape[0], 1))
            scale = np.tile(scale, (features.shape[0], 1))
            for code in np.unique(codes[codes >= 0]).tolist():
                rows = codes == code
                mean[rows], scale[rows] = self.standardization(clients[code])
        return self.layout.proba(self.theta, standardize(features, mean, scale))


Evaluate: TypeAlias = Callable[[FedAvgResult], float]
"""Score in [0, 1] of a model snapshot on a set the server holds."""

EvaluatorFactory: TypeAlias = Callable[[FederationInfo], Evaluate]
"""Build :data:`Evaluate` once the schema is agreed (it encodes the set with it)."""


_MIN_SCALE: Final = 1e-12


class FedAvgStrategy:
    """Server: one moments round, then up to ``n_rounds`` FedAvg rounds.

    ``evaluator`` (optional) is called at :meth:`start` with the agreed schema and
    returns the :data:`Evaluate` that scores θ after every training round; with
    ``config.stop_at_score`` set, no round is planned once a score reaches it.

    Raises
    ------
    ValidationError
        If ``config.stop_at_score`` is set without an ``evaluator``.
    """

    def __init__(
        self, config: AvgConfig, evaluator: EvaluatorFactory | None = None
    ) -> None:
        if config.stop_at_score is not None and evaluator is None:
            raise ValidationError(
                "FedAvgStrategy: stop_at_score needs an evaluator (a server-held "
                "evaluation set); pass one or set stop_at_score=None."
            )
        self.config = config
        self.evaluator = evaluator
        self.evaluate: Evaluate | None = None
        self.clients: tuple[str, ...] = ()
        self.weights: dict[str, float] = {}
        self.losses: list[float] = []
        self.scores: list[float] = []

    def start(self, info: FederationInfo) -> None:
        """Remember the clients, labels, the one-hot layout; build the evaluator."""
        schema = info.schema
        self.clients = info.clients
        self.classes = np.asarray(schema.classes, dtype=str)
        self.n_categories = category_counts(schema.categories)
        width = int(np.maximum(self.n_categories, 1).sum())
        self.layout = Layout.of(width, self.config.hidden, len(self.classes))
        self.theta = self.layout.initial(keyed_rng(self.config.seed, INIT_STREAM))
        if self.evaluator is not None:
            self.evaluate = self.evaluator(info)

    def expected_rounds(self) -> int:
        """Return the moments round plus the training rounds."""
        return 1 + self.config.n_rounds

    def plan_round(self, round: int) -> RoundPlan | None:
        """Round 1: moments; then training while rounds remain and no target is met."""
        if round == 1:
            return RoundPlan.broadcast(
                MomentsRequest(self.n_categories), self.clients, self.config.on_dropout
            )
        if round > 1 + self.config.n_rounds or self.reached_target():
            return None
        model = self.finish()
        clients = [c for c in self.clients if c in self.weights]
        requests = {c: self._train_request(round, c, model) for c in clients}
        return RoundPlan(requests, self.config.on_dropout)

    def reached_target(self) -> bool:
        """Whether the last score reached ``stop_at_score`` (False if unset)."""
        target = self.config.stop_at_score
        return target is not None and bool(self.scores) and self.scores[-1] >= target

    def _train_request(
        self, round: int, client: str, model: FedAvgResult
    ) -> TrainRequest:
        c = self.config
        mean, scale = model.standardization(client)
        return TrainRequest(
            round=round,
            seed=c.seed,
            theta=self.theta,
            widths=np.asarray(self.layout.widths, dtype=np.int64),
            n_categories=self.n_categories,
            classes=self.classes,
            mean=mean,
            scale=scale,
            learning_rate=c.learning_rate,
            batch_size=c.batch_size,
            local_steps=c.local_steps,
            local_epochs=c.local_epochs,
        )

    def aggregate(self, round: int, replies: Mapping[str, Payload]) -> None:
        """Fold moments (round 1) or average the clients' parameters by weight."""
        if round == 1:
            self._fold_moments(replies)
            return
        total = sum(self.weights[c] for c in replies)
        theta = np.zeros_like(self.theta)
        loss = 0.0
        for client in sorted(replies):
            reply = replies[client]
            assert isinstance(reply, TrainReply)  # validated by the loop
            share = self.weights[client] / total
            theta += share * reply.theta
            loss += share * reply.loss
        self.theta = theta
        self.losses.append(loss)
        if self.evaluate is not None:
            self.scores.append(float(self.evaluate(self.finish())))

    def _fold_moments(self, replies: Mapping[str, Payload]) -> None:
        sums, squares = [], []
        self.client_mean, self.client_scale = {}, {}
        for client in sorted(replies):
            reply = replies[client]
            assert isinstance(reply, MomentsReply)  # validated by the loop
            if reply.weight <= 0:
                continue
            self.weights[client] = reply.weight
            sums.append(reply.total)
            squares.append(reply.squares)
            self.client_mean[client], self.client_scale[client] = _mean_scale(
                reply.total, reply.squares, reply.weight
            )
        self.mean, self.scale = _mean_scale(
            np.sum(sums, axis=0), np.sum(squares, axis=0), sum(self.weights.values())
        )

    def round_metrics(self, round: int) -> dict[str, float]:
        """Return the round's weighted mean training loss and evaluation score."""
        if round == 1 or not self.losses:
            return {}
        metrics = {"loss": self.losses[-1]}
        if self.scores:
            metrics["score"] = self.scores[-1]
        return metrics

    def finish(self) -> FedAvgResult:
        """Return the final model and what prediction needs."""
        return FedAvgResult(
            self.layout,
            self.theta,
            self.n_categories,
            self.client_mean,
            self.client_scale,
            self.mean,
            self.scale,
            list(self.losses),
            self.config.standardize,
            list(self.scores),
        )


def _mean_scale(
    total: FloatArray, squares: FloatArray, weight: float
) -> tuple[FloatArray, FloatArray]:
    """Mean and standard deviation (1 where a feature is constant)."""
    mean = total / weight
    variance = np.maximum(squares / weight - mean * mean, 0.0)
    scale = np.sqrt(variance)
    return mean, np.where(scale > _MIN_SCALE * (1 + np.abs(mean)), scale, 1.0)
