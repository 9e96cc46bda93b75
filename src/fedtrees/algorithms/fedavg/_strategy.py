"""The FedAvg server strategy: one moments round, then the averaging rounds.

Rounds after the agreement (:class:`FedAvgPhase`): the moments round (each
client's weight and feature moments: the standardizations), then up to
``n_rounds`` FedAvg rounds, fewer when a score reaches ``stop_at_score``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from fedtrees._random import keyed_rng
from fedtrees._typing import FloatArray
from fedtrees.algorithms._onehot import category_counts
from fedtrees.algorithms._phased import PhasedStrategy, Step
from fedtrees.algorithms.fedavg._network import Layout, standardize
from fedtrees.algorithms.fedavg._payloads import (
    MomentsReply,
    MomentsRequest,
    TrainReply,
    TrainRequest,
)
from fedtrees.exceptions import ValidationError
from fedtrees.federation import FederationInfo, Payload, RoundPlan, as_reply

__all__ = [
    "AvgConfig",
    "Evaluate",
    "EvaluatorFactory",
    "FedAvgPhase",
    "FedAvgResult",
    "FedAvgState",
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


class FedAvgPhase(enum.Enum):
    """The rounds of FedAvg after the agreement, in order."""

    MOMENTS = "moments"
    """Every client's weight and feature moments (the standardizations)."""
    TRAIN = "train"
    """One FedAvg round (McMahan et al.): θ down, each client's locally
    trained θ and loss up, averaged by the clients' weights."""


@dataclass(eq=False)
class FedAvgState:
    """The server's state, complete from the agreement.

    The standardizations are the identity until the moments round sets them.
    """

    clients: tuple[str, ...]
    classes: np.ndarray
    n_categories: np.ndarray
    layout: Layout
    theta: FloatArray
    evaluate: Evaluate | None
    """Scores a snapshot on the server's evaluation set (None: no set)."""
    mean: FloatArray
    scale: FloatArray
    client_mean: dict[str, FloatArray] = field(default_factory=dict)
    client_scale: dict[str, FloatArray] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    """The clients with rows (weight > 0): the only ones asked to train."""
    losses: list[float] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)


class FedAvgStrategy(PhasedStrategy[FedAvgState, FedAvgPhase]):
    """Server: one moments round, then up to ``n_rounds`` FedAvg rounds.

    ``evaluator`` (optional) is called at :meth:`start` with the agreed schema and
    returns the :data:`Evaluate` that scores θ after every training round; with
    ``config.stop_at_score`` set, no round is planned once a score reaches it.

    Raises
    ------
    ValidationError
        If ``config.stop_at_score`` is set without an ``evaluator``.
    """

    first = FedAvgPhase.MOMENTS

    def __init__(
        self, config: AvgConfig, evaluator: EvaluatorFactory | None = None
    ) -> None:
        if config.stop_at_score is not None and evaluator is None:
            raise ValidationError(
                "FedAvgStrategy: stop_at_score needs an evaluator (a server-held "
                "evaluation set); pass one or set stop_at_score=None."
            )
        super().__init__()
        self.config = config
        self.evaluator = evaluator

    def begin(self, info: FederationInfo) -> FedAvgState:
        """Remember the clients, labels, the one-hot layout; build the evaluator."""
        schema = info.schema
        classes = np.asarray(schema.classes, dtype=str)
        n_categories = category_counts(schema.categories)
        width = int(np.maximum(n_categories, 1).sum())
        layout = Layout.of(width, self.config.hidden, len(classes))
        return FedAvgState(
            info.clients,
            classes,
            n_categories,
            layout,
            layout.initial(keyed_rng(self.config.seed, INIT_STREAM)),
            None if self.evaluator is None else self.evaluator(info),
            np.zeros(width),
            np.ones(width),
        )

    def steps(self) -> Mapping[FedAvgPhase, Step[FedAvgState, FedAvgPhase]]:
        """Return the table: the moments, then the training rounds."""
        return {
            FedAvgPhase.MOMENTS: Step(self._ask_moments, self._absorb_moments),
            FedAvgPhase.TRAIN: Step(self._ask_train, self._absorb_train),
        }

    def result(self, state: FedAvgState) -> FedAvgResult:
        """Return the final model and what prediction needs."""
        st = state
        return FedAvgResult(
            st.layout,
            st.theta,
            st.n_categories,
            st.client_mean,
            st.client_scale,
            st.mean,
            st.scale,
            list(st.losses),
            self.config.standardize,
            list(st.scores),
        )

    def expected_rounds(self) -> int:
        """Return the moments round plus the training rounds."""
        return 1 + self.config.n_rounds

    def round_metrics(self, round: int) -> dict[str, float]:
        """Return the round's weighted mean training loss and evaluation score."""
        st = self.state
        if not st.losses:
            return {}
        metrics = {"loss": st.losses[-1]}
        if st.scores:
            metrics["score"] = st.scores[-1]
        return metrics

    # -- the steps -------------------------------------------------------------------
    def _ask_moments(self, st: FedAvgState) -> RoundPlan:
        request = MomentsRequest(st.n_categories)
        return RoundPlan.broadcast(request, st.clients, self.config.on_dropout)

    def _absorb_moments(
        self, st: FedAvgState, replies: Mapping[str, Payload]
    ) -> FedAvgPhase | None:
        sums, squares = [], []
        for client in sorted(replies):
            reply = as_reply(replies[client], MomentsReply)
            if reply.weight <= 0:
                continue
            st.weights[client] = reply.weight
            sums.append(reply.total)
            squares.append(reply.squares)
            st.client_mean[client], st.client_scale[client] = _mean_scale(
                reply.total, reply.squares, reply.weight
            )
        st.mean, st.scale = _mean_scale(
            np.sum(sums, axis=0), np.sum(squares, axis=0), sum(st.weights.values())
        )
        return self._next_training(st)

    def _ask_train(self, st: FedAvgState) -> RoundPlan:
        model = self.result(st)
        round_ = 2 + len(st.losses)  # the moments round, then the training rounds
        clients = [c for c in st.clients if c in st.weights]
        requests = {c: self._train_request(st, round_, c, model) for c in clients}
        return RoundPlan(requests, self.config.on_dropout)

    def _absorb_train(
        self, st: FedAvgState, replies: Mapping[str, Payload]
    ) -> FedAvgPhase | None:
        """Average the clients' parameters by weight; score the new θ."""
        total = sum(st.weights[c] for c in replies)
        theta = np.zeros_like(st.theta)
        loss = 0.0
        for client in sorted(replies):
            reply = as_reply(replies[client], TrainReply)
            share = st.weights[client] / total
            theta += share * reply.theta
            loss += share * reply.loss
        st.theta = theta
        st.losses.append(loss)
        if st.evaluate is not None:
            st.scores.append(float(st.evaluate(self.result(st))))
        return self._next_training(st)

    def _next_training(self, st: FedAvgState) -> FedAvgPhase | None:
        """Train while rounds remain and no score reached ``stop_at_score``."""
        target = self.config.stop_at_score
        reached = target is not None and bool(st.scores) and st.scores[-1] >= target
        done = len(st.losses) >= self.config.n_rounds or reached
        return None if done else FedAvgPhase.TRAIN

    def _train_request(
        self, st: FedAvgState, round_: int, client: str, model: FedAvgResult
    ) -> TrainRequest:
        c = self.config
        mean, scale = model.standardization(client)
        return TrainRequest(
            round=round_,
            seed=c.seed,
            theta=st.theta,
            widths=np.asarray(st.layout.widths, dtype=np.int64),
            n_categories=st.n_categories,
            classes=st.classes,
            mean=mean,
            scale=scale,
            learning_rate=c.learning_rate,
            batch_size=c.batch_size,
            local_steps=c.local_steps,
            local_epochs=c.local_epochs,
        )


def _mean_scale(
    total: FloatArray, squares: FloatArray, weight: float
) -> tuple[FloatArray, FloatArray]:
    """Mean and standard deviation (1 where a feature is constant)."""
    mean = total / weight
    variance = np.maximum(squares / weight - mean * mean, 0.0)
    scale = np.sqrt(variance)
    return mean, np.where(scale > _MIN_SCALE * (1 + np.abs(mean)), scale, 1.0)
