"""The local forests client handler: fits a forest on the local rows.

Registered with :func:`fedtrees.federation.handler` on import (messages:
:mod:`._payloads`).
"""

from __future__ import annotations

from typing import Final

from fedtrees._random import client_key, keyed_rng
from fedtrees.algorithms._params import MAX_N_ESTIMATORS
from fedtrees.algorithms._requests import check_request_size
from fedtrees.algorithms.local._payloads import ForestReply, ForestRequest
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
    the estimator's limit first.
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
