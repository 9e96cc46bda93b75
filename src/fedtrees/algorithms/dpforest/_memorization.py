"""Memorization rate of a DP forest's client trees (docs/dpforest.md, Sec. V.B)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
from sklearn.utils.validation import check_is_fitted

from fedtrees._random import client_key, keyed_rng, resolve_seed
from fedtrees._typing import RandomState
from fedtrees._validation import check_int
from fedtrees.exceptions import ValidationError

__all__ = ["memorization_matrix", "memorization_rate"]

MEMO_STREAM = 7


def memorization_matrix(
    model: Any,
    client_tests: Mapping[str, tuple[Any, npt.ArrayLike]],
    n: int,
    random_state: RandomState = None,
) -> npt.NDArray[np.float64]:
    """Accuracy of client i's tree (rows) on n held-out rows of client j (columns).

    Rows and columns follow ``model.clients_``. Each client's n rows are drawn
    without replacement from its test rows by a generator keyed by
    ``[seed, 7, crc32(client)]`` (**Decision**: all its rows when it has fewer).
    """
    check_is_fitted(model, "client_trees_")
    size = check_int(n, "n", "memorization_rate", min_value=1)
    clients = list(model.clients_)
    missing = sorted(set(clients) - set(client_tests))
    if missing:
        raise ValidationError(
            f"memorization_rate: client_tests has no test rows for clients {missing}."
        )
    seed = resolve_seed(random_state, "memorization_rate")
    samples = [_sample(client_tests[c], size, seed, c) for c in clients]
    encoded = [(model._encode(X), y) for X, y in samples]  # once per client
    out = np.empty((len(clients), len(clients)))
    for i, client in enumerate(clients):
        tree = model.client_trees_[client]
        for j, (X, y) in enumerate(encoded):
            out[i, j] = float(np.mean(tree.predict(X) == y))
    return out


def memorization_rate(
    model: Any,
    client_tests: Mapping[str, tuple[Any, npt.ArrayLike]],
    n: int,
    random_state: RandomState = None,
) -> float:
    """Return the paper's memorization rate (Sec. V.B).

    The fraction of clients whose tree is more accurate on their own n test rows
    than on every other client's n rows.

    Parameters
    ----------
    model : fitted DPForestClassifier
    client_tests : mapping client id -> (X_test, y_test)
        Each client's held-out rows.
    n : int >= 1
        Rows per client (the paper: 10, 100, 1000).
    random_state : int, Generator or None
    """
    acc = memorization_matrix(model, client_tests, n, random_state)
    own = np.diag(acc)
    others = np.where(np.eye(acc.shape[0], dtype=bool), -np.inf, acc).max(axis=1)
    return float(np.mean(own > others))


def _sample(
    test: tuple[Any, npt.ArrayLike], n: int, seed: int, client: str
) -> tuple[Any, npt.NDArray[Any]]:
    X, y = test
    labels = np.asarray(y)
    rows = labels.shape[0]
    if rows == 0:
        raise ValidationError(f"memorization_rate: client {client!r} has no test rows.")
    rng = keyed_rng(seed, MEMO_STREAM, client_key(client))
    pick = np.sort(rng.choice(rows, size=min(n, rows), replace=False))
    subset = X.iloc[pick] if hasattr(X, "iloc") else np.asarray(X)[pick]
    return subset, labels[pick]
