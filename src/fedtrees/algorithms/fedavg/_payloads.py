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

__all__ = ["MomentsReply", "MomentsRequest", "TrainReply", "TrainRequest"]


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
