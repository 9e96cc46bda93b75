"""The FedAvg server strategy: one moments round, then the averaging rounds."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from fedtrees._random import keyed_rng
from fedtrees._typing import FloatArray
from fedtrees.algorithms._onehot import category_counts
from fedtrees.algorithms.fedavg._network import Layout, standardize
from fedtrees.algorithms.fedavg._payloads import (
    MomentsReply,
    MomentsRequest,
    TrainReply,
    TrainRequest,
)
from fedtrees.exceptions import ValidationError
from fedtrees.federation import (
    FederationInfo,
    Payload,
    RoundPlan,
    ServerStrategy,
)

__all__ = [
    "AvgConfig",
    "Evaluate",
    "EvaluatorFactory",
    "FedAvgResult",
    "FedAvgStrategy",
]


INIT_STREAM = 5
Standardize = Literal["client", "global", "none"]


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


class FedAvgStrategy(ServerStrategy):
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
