"""One FedGA-Tree run on one split: FedGA and its benchmarks, scored per client.

Benchmarks (docs/fedga.md): each client's local tree (depth tuned by
``GridSearchCV`` over the depth range on its own rows), a centralized tree
(tuned the same way on the pooled training rows) and, for classification, the
"IBM tree" (:class:`~fedtrees.FederatedID3Classifier` with ``binary=True``,
ε = 1, depth 6, the split's quantile edges declared). Every model is scored on
the common test set: macro-F1 (classification), MSE (regression). Each row
pairs a method's score for client k with client k's local score.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from sklearn.metrics import f1_score, mean_squared_error
from sklearn.model_selection import GridSearchCV
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from fedtrees.algorithms.fedga import (
    FedGAClassifier,
    FedGARegressor,
    decision_nodes,
    edit_distance,
    local_structure,
    relative_improvement,
)
from fedtrees.algorithms.fedid3 import FederatedID3Classifier
from fedtrees.exceptions import PrivacyLeakWarning, ValidationError
from fedtrees.experiments._fedga_data import Problem, Split

__all__ = ["RunSettings", "fit_run"]


@dataclass(frozen=True)
class RunSettings:
    """What one run fits: the FedGA settings and which benchmarks to add."""

    n_generations: int
    client_fraction: float
    depth_range: tuple[int, int]
    cv_folds: int
    seed: int
    benchmarks: bool = True
    ibm_epsilon: float = 1.0
    ibm_depth: int = 6


def score(task: str, y_true: npt.ArrayLike, y_pred: npt.ArrayLike) -> float:
    """Macro-F1 (classification) or MSE (regression)."""
    if task == "classification":
        return float(f1_score(y_true, y_pred, average="macro", zero_division=0.0))
    return float(mean_squared_error(y_true, y_pred))


def fit_run(problem: Problem, split: Split, s: RunSettings) -> list[dict[str, Any]]:
    """Fit FedGA, the local trees and (if asked) the benchmarks; rows per client."""
    task = problem.task
    clients = np.unique(split.clients)
    local = [_local_score(task, split, k, s) for k in clients]
    model = _fedga(task, s).fit(  # the sites' noise seed: the run's (it plays them)
        split.codes_train, split.y_train, groups=split.clients, noise_seed=s.seed
    )
    fed = [
        score(task, split.y_test, model.predict(split.codes_test, client=str(k)))
        for k in clients
    ]
    structures = _structures(task, split, model, s)
    rows = _rows("FedGA", fed, local, clients)
    for row, k in zip(rows, clients, strict=True):
        final, mine = model.structures_[str(k)], structures[int(k)]
        row.update(
            depth=model.depth_,
            decision_nodes=decision_nodes(final),
            local_decision_nodes=decision_nodes(mine),
            edit_distance=edit_distance(final, mine),
        )
    if s.benchmarks:
        central = _central_score(task, split, s)
        rows += _rows("centralized", [central] * len(clients), local, clients)
        if task == "classification":
            ibm = _ibm_score(split, s)
            rows += _rows("IBM tree", [ibm] * len(clients), local, clients)
    return rows


def _rows(
    method: str, scores: list[float], local: list[float], clients: np.ndarray
) -> list[dict[str, Any]]:
    try:
        delta = relative_improvement(scores, local).tolist()
    except ValidationError:  # a local score of 0: Δ undefined for that client
        delta = [
            (f / ell - 1) * 100 if ell > 0 else np.nan
            for f, ell in zip(scores, local, strict=True)
        ]
    return [
        {
            "method": method,
            "client": int(k),
            "score": f,
            "score_local": ell,
            "delta": d,
        }
        for k, f, ell, d in zip(clients, scores, local, delta, strict=True)
    ]


def _fedga(task: str, s: RunSettings) -> FedGAClassifier | FedGARegressor:
    kind = FedGAClassifier if task == "classification" else FedGARegressor
    return kind(
        n_generations=s.n_generations,
        client_fraction=s.client_fraction,
        depth_range=s.depth_range,
        cv_folds=s.cv_folds,
        random_state=s.seed,
    )


def _grid(task: str, s: RunSettings) -> GridSearchCV:
    low, high = s.depth_range
    tree: DecisionTreeClassifier | DecisionTreeRegressor = (
        DecisionTreeClassifier(random_state=s.seed)
        if task == "classification"
        else DecisionTreeRegressor(random_state=s.seed)
    )
    return GridSearchCV(
        tree,
        {"max_depth": list(range(low, high + 1))},
        cv=s.cv_folds,
        scoring="f1_macro" if task == "classification" else "neg_mean_squared_error",
    )


def _local_score(task: str, split: Split, client: int, s: RunSettings) -> float:
    mine = split.clients == client
    grid = _grid(task, s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a class below cv_folds rows
        grid.fit(split.codes_train[mine].to_numpy(), split.y_train[mine])
    return score(task, split.y_test, grid.predict(split.codes_test.to_numpy()))


def _central_score(task: str, split: Split, s: RunSettings) -> float:
    grid = _grid(task, s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a class below cv_folds rows
        grid.fit(split.codes_train.to_numpy(), split.y_train)
    return score(task, split.y_test, grid.predict(split.codes_test.to_numpy()))


def _ibm_score(split: Split, s: RunSettings) -> float:
    tree = FederatedID3Classifier(
        epsilon=s.ibm_epsilon,
        max_depth=s.ibm_depth,
        binary=True,
        bin_edges=split.bin_edges,
        random_state=s.seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        tree.fit(split.X_train, split.y_train, groups=split.clients, noise_seed=s.seed)
    return score("classification", split.y_test, tree.predict(split.X_test))


def _structures(
    task: str, split: Split, model: Any, s: RunSettings
) -> dict[int, np.ndarray]:
    """Each client's local structure at FedGA's depth (step 12), as FedGA built it."""
    classes = np.asarray([str(c) for c in getattr(model, "classes_", [])])
    out = {}
    for k in np.unique(split.clients):
        mine = split.clients == k
        y = split.y_train[mine]
        if task == "classification":
            y = np.searchsorted(classes, y.astype(str))
        out[int(k)] = local_structure(
            split.codes_train[mine].to_numpy(np.float64),
            y,
            task,  # type: ignore[arg-type]
            model.depth_,
            seed=s.seed,
            n_classes=len(classes),
        )
    return out
