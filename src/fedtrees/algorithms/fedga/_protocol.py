"""FedGA-Tree's messages and client handlers (ALGORITHMS.md §4; WORK IN PROGRESS).

Algorithm 1 on the round loop, stateless clients (every handler recomputes what
it needs from its rows and keyed generators):

1. **init** (steps 5–8): K-fold CV depth ``d^i`` and the noisy size
   ``n^i + Lap(1/ε)``, charged to the client's accountant.
2. **local** (steps 11–19): the local structure ``T_d^i`` at the server's
   median depth; regression votes (Eq. 1–2).
3. **evaluate** (step 28), or **join** for a client not seen before (steps
   29–33: evaluate, plus its local structure, that structure's fitness and its
   noisy size).
4. **final** (steps 45–48): the client scores the final population and keeps
   the best; it replies with the index only.

The server sees structures, fitness scores, depths, votes and noisy sizes —
never a threshold or a row. Client k splits its rows into training and
validation parts with ``[seed, 12, crc32(k)]`` (train ratio r; r = 1 uses all
rows for both).
"""

from __future__ import annotations

from typing import Final

import numpy as np

from fedtrees._random import client_key, keyed_rng
from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedga._evaluate import Task, TrainingRows, score_structures
from fedtrees.algorithms.fedga._initialize import (
    cross_validate_depths,
    local_structure,
    noisy_size,
)
from fedtrees.algorithms.fedga._votes import regression_votes
from fedtrees.federation import (
    ClientData,
    Field,
    Payload,
    ReplySpec,
    handler,
    payload,
)
from fedtrees.privacy import PrivacyAccountant

__all__ = [
    "EvaluateRequest",
    "FinalRequest",
    "InitRequest",
    "JoinRequest",
    "LocalRequest",
]

SPLIT_STREAM: Final = 12
SIZE_STREAM: Final = 13


# -- shared ------------------------------------------------------------------------
def _task(request: Payload) -> Task:
    return "classification" if request.task == "classification" else "regression"  # type: ignore[attr-defined]


def _labels(request: Payload, data: ClientData) -> np.ndarray:
    """Return class codes (classification) or float targets (regression)."""
    if _task(request) == "classification":
        return data.label_codes(request.classes)  # type: ignore[attr-defined]
    return data.y.to_numpy(np.float64)


def _split(
    data: ClientData, seed: int, train_ratio: float
) -> tuple[IntArray, IntArray]:
    """The client's fixed training / validation rows (keyed; r = 1: all, all)."""
    rows = np.arange(data.n_rows)
    if train_ratio >= 1.0 or data.n_rows < 2:
        return rows, rows
    order = keyed_rng(seed, SPLIT_STREAM, client_key(data.client_id)).permutation(rows)
    cut = min(max(int(round(train_ratio * data.n_rows)), 1), data.n_rows - 1)
    return np.sort(order[:cut]), np.sort(order[cut:])


def _fitness(
    request: Payload, data: ClientData, structures: np.ndarray
) -> FloatArray:
    """Score ``structures`` on the client's validation part (step 28)."""
    X, y = data.finite_matrix(), _labels(request, data)
    train, val = _split(data, request.seed, request.train_ratio)  # type: ignore[attr-defined]
    n_classes = int(request.classes.shape[0]) if _task(request) == "classification" else 0  # type: ignore[attr-defined]
    rows = TrainingRows.of(X[train], y[train], _task(request), n_classes)
    return score_structures(rows, structures, request.depth, X[val], y[val])  # type: ignore[attr-defined]


def _size(request: Payload, data: ClientData) -> tuple[float, float]:
    accountant = PrivacyAccountant(request.epsilon, owner=f"client {data.client_id!r}")  # type: ignore[attr-defined]
    rng = keyed_rng(request.seed, SIZE_STREAM, client_key(data.client_id))  # type: ignore[attr-defined]
    return noisy_size(data.n_rows, request.epsilon, rng, accountant=accountant)  # type: ignore[attr-defined]


# -- 1. init -----------------------------------------------------------------------
@payload("fedga.init_reply")
class InitReply(Payload):
    """The client's CV depth and its noisy size (and the ε it spent)."""

    depth: int
    noisy_size: float
    epsilon_spent: float


@payload("fedga.init")
class InitRequest(Payload):
    """Propose a depth by K-fold CV; release the noisy size (steps 6–7)."""

    task: str
    classes: np.ndarray
    depth_low: int
    depth_high: int
    folds: int
    epsilon: float
    seed: int

    def expected_reply(self) -> ReplySpec:
        """A depth in range; a finite noisy size; ε spent equal to ε."""
        return ReplySpec(
            InitReply,
            {
                "depth": Field.scalar(low=self.depth_low, high=self.depth_high),
                "noisy_size": Field.scalar(),
                "epsilon_spent": Field.scalar(low=self.epsilon, high=self.epsilon),
            },
        )


@handler("fedga.init")
def propose_depth(request: InitRequest, data: ClientData) -> InitReply:
    """Client: CV depth over the range; the noisy size."""
    search = cross_validate_depths(
        data.finite_matrix(),
        _labels(request, data),
        _task(request),
        seed=request.seed,
        depth_range=(request.depth_low, request.depth_high),
        folds=request.folds,
    )
    size, spent = _size(request, data)
    return InitReply(int(search.best_depth), size, spent)
