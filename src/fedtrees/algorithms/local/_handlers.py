"""The local forests client handler: fits a forest on the local rows.

Registered with :func:`fedtrees.federation.handler` on import (messages:
:mod:`._payloads`).
"""

from __future__ import annotations

from typing import Final

from fedtrees._random import client_key, keyed_rng
from fedtrees._validation import shown
from fedtrees.algorithms._params import MAX_N_ESTIMATORS
from fedtrees.algorithms._requests import check_request_size
from fedtrees.algorithms.local._payloads import ForestReply, ForestRequest
from fedtrees.exceptions import ValidationError
from fedtrees.federation import (
    ClientData,
    handler,
)
from fedtrees.learners import fit_local_forest

__all__ = ["fit_forest"]


LOCAL_STREAM: Final = 4


@handler("local.forest")
def fit_forest(request: ForestRequest, data: ClientData) -> ForestReply:
    """Client: fit a forest on the local rows; reply with its trees.

    ``params``' ``n_estimators`` (the trees fitted and sent) is checked within
    the estimator's limit first. A client whose rows all weigh zero has nothing
    to fit a forest on: its error names ``sample_weight`` and the client.
    """
    params = request.parsed_params()
    check_request_size(
        request.kind,
        "params",
        params.get("n_estimators", 100),
        MAX_N_ESTIMATORS,
        "its n_estimators: the trees to fit",
        low=1,
    )
    _check_some_weight(data)
    X = data.finite_matrix()
    regression = request.classes.size == 0
    y = data.targets() if regression else data.label_codes(request.classes)
    key = client_key(data.client_id)
    seed = int(keyed_rng(request.seed, LOCAL_STREAM, key).integers(2**31 - 1))
    trees = fit_local_forest(
        X,
        y,
        n_classes=None if regression else int(request.classes.shape[0]),
        params=params,
        seed=seed,
        sample_weight=data.weights,
    )
    weight = float(data.n_rows if data.weights is None else data.weights.sum())
    return ForestReply.of(trees, weight)


def _check_some_weight(data: ClientData) -> None:
    """Refuse a client whose ``sample_weight`` is zero on every row (no row count)."""
    if data.weights is not None and not data.weights.any():
        raise ValidationError(
            f"Local forest: the 'sample_weight' of client {shown(data.client_id)} is "
            "zero on every row, so it has no rows to fit its forest on; give some "
            "of its rows a weight > 0, or leave the client out."
        )
