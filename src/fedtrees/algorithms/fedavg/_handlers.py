"""The FedAvg client handlers: feature moments and local SGD training.

Registered with :func:`fedtrees.federation.handler` on import (messages:
:mod:`._payloads`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from fedtrees._random import client_key, keyed_rng
from fedtrees._typing import FloatArray
from fedtrees.algorithms._onehot import expand_features
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
from fedtrees.algorithms.fedavg._payloads import (
    MomentsReply,
    MomentsRequest,
    TrainReply,
    TrainRequest,
)
from fedtrees.exceptions import ValidationError
from fedtrees.federation import (
    ClientData,
    handler,
)

__all__ = ["moments", "train"]


BATCH_STREAM = 6


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
