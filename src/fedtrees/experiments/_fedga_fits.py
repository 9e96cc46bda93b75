"""One FedGA-Tree run on one split: FedGA and its benchmarks, scored per client.

Benchmarks (docs/fedga.md): each client's local tree (depth tuned by
``GridSearchCV`` over the depth range on its own rows), a centralized tree
(tuned the same way on the pooled training rows) and, for classification, the
"IBM tree" (:class:`~fedtrees.FederatedID3Classifier` with ``binary=True``,
ε = 1, depth 6, the split's quantile edges declared). Every model is scored on
the common test set: F1 (classification), MSE (regression). Each row pairs a
method's score for client k with client k's local score.

**The two readings** (:class:`RunSettings`): the paper's protocol scores a
two-class task by the F1 of its positive class — scikit-learn's default
``f1_score``, the positive class the larger label (code 1 after sorting, as
``LabelEncoder`` gives) — in FedGA's fitness and depth CV
(``f1_average="binary"``), in the local and centralized trees' CV and on the test
set, and gives the IBM tree Truex et al.'s honest-client noise reduction
(``noise="honest_clients"``); ours scores macro-F1 everywhere and gives every
client the full noise. A task of more than two classes (nursery) is scored by
macro-F1 in both. Classification rows also carry the macro-F1 and the accuracy
of every model (and of the client's local tree), whatever the reading.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from sklearn.metrics import accuracy_score, f1_score, make_scorer, mean_squared_error
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

__all__ = ["READINGS", "RunSettings", "Scorer", "fit_run"]

READINGS: Final = ("paper", "ours")
"""The protocol readings the experiment can run (module docstring)."""


@dataclass(frozen=True)
class RunSettings:
    """What one run fits: the FedGA settings, the reading, the benchmarks to add.

    ``f1_average`` is FedGA's and the scoring's F1 averaging for a two-class
    task ("binary" under the paper's reading; tasks of more classes use
    macro-F1 whatever it says); ``ibm_noise`` the IBM tree's ``noise``.
    """

    n_generations: int
    client_fraction: float
    depth_range: tuple[int, int]
    cv_folds: int
    seed: int
    benchmarks: bool = True
    ibm_epsilon: float = 1.0
    ibm_depth: int = 6
    f1_average: str = "macro"
    ibm_noise: str = "per_client"


@dataclass(frozen=True)
class Scorer:
    """How a reading scores one dataset's predictions: F1 or MSE, and more.

    ``average`` is "binary" (the F1 of ``positive``) or "macro"; regression
    scores the MSE.
    """

    task: str
    average: str = "macro"
    positive: object = None

    @classmethod
    def of(cls, problem: Problem, f1_average: str) -> Scorer:
        """Return the scorer of ``problem`` under a reading's ``f1_average``."""
        if problem.task != "classification":
            return cls(problem.task)
        labels = np.unique(problem.y)
        if f1_average == "binary" and labels.shape[0] == 2:
            return cls(problem.task, "binary", labels[1])
        return cls(problem.task)

    @property
    def label(self) -> str:
        """The metric's name in the tables: "binary F1", "macro-F1" or "MSE"."""
        if self.task != "classification":
            return "MSE"
        return "binary F1" if self.average == "binary" else "macro-F1"

    def __call__(self, y_true: npt.ArrayLike, y_pred: npt.ArrayLike) -> float:
        """Return the reading's test score: F1 (as ``average``) or MSE."""
        if self.task != "classification":
            return float(mean_squared_error(y_true, y_pred))
        return float(
            f1_score(
                y_true,
                y_pred,
                average=self.average,
                pos_label=self.positive if self.average == "binary" else 1,
                zero_division=0.0,
            )
        )

    def extra(self, y_true: npt.ArrayLike, y_pred: npt.ArrayLike) -> dict[str, float]:
        """Macro-F1 and accuracy beside the reading's score (classification)."""
        if self.task != "classification":
            return {}
        return {
            "macro_f1": float(
                f1_score(y_true, y_pred, average="macro", zero_division=0.0)
            ),
            "accuracy": float(accuracy_score(y_true, y_pred)),
        }

    def cv_scoring(self) -> Any:
        """``GridSearchCV``'s scoring: the same metric, on the validation folds."""
        if self.task != "classification":
            return "neg_mean_squared_error"
        if self.average == "binary":
            return make_scorer(
                f1_score, average="binary", pos_label=self.positive, zero_division=0.0
            )
        return "f1_macro"


@dataclass(frozen=True)
class _Scored:
    """A model's test score per client, with macro-F1 and accuracy beside it."""

    score: float
    extra: dict[str, float]


def _scored(scorer: Scorer, y_true: npt.ArrayLike, y_pred: npt.ArrayLike) -> _Scored:
    return _Scored(scorer(y_true, y_pred), scorer.extra(y_true, y_pred))


def fit_run(problem: Problem, split: Split, s: RunSettings) -> list[dict[str, Any]]:
    """Fit FedGA, the local trees and (if asked) the benchmarks; rows per client."""
    task = problem.task
    scorer = Scorer.of(problem, s.f1_average)
    clients = np.unique(split.clients)
    local = [_local_score(scorer, split, k, s) for k in clients]
    model = _fedga(scorer, s).fit(  # the sites' noise seed: the run's (it plays them)
        split.codes_train, split.y_train, groups=split.clients, noise_seed=s.seed
    )
    fed = [
        _scored(scorer, split.y_test, model.predict(split.codes_test, client=str(k)))
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
        central = _central_score(scorer, split, s)
        rows += _rows("centralized", [central] * len(clients), local, clients)
        if task == "classification":
            ibm = _ibm_score(scorer, split, s)
            rows += _rows("IBM tree", [ibm] * len(clients), local, clients)
    for row in rows:
        row["metric"] = scorer.label
    return rows


def _delta(scores: list[float], local: list[float]) -> list[float]:
    """Eq. 3 per client; NaN where the local score is 0 (Δ undefined)."""
    try:
        delta: list[float] = relative_improvement(scores, local).tolist()
    except ValidationError:
        delta = [
            (f / ell - 1) * 100 if ell > 0 else np.nan
            for f, ell in zip(scores, local, strict=True)
        ]
    return delta


def _rows(
    method: str, scored: list[_Scored], local: list[_Scored], clients: np.ndarray
) -> list[dict[str, Any]]:
    scores, locals_ = [x.score for x in scored], [x.score for x in local]
    delta = _delta(scores, locals_)
    rows = []
    for k, mine, ref, d in zip(clients, scored, local, delta, strict=True):
        row = {
            "method": method,
            "client": int(k),
            "score": mine.score,
            "score_local": ref.score,
            "delta": d,
        }
        for name, value in mine.extra.items():
            row[name] = value
            row[f"{name}_local"] = ref.extra[name]
        rows.append(row)
    return rows


def _fedga(scorer: Scorer, s: RunSettings) -> FedGAClassifier | FedGARegressor:
    model = (
        FedGAClassifier(f1_average=scorer.average)
        if scorer.task == "classification"
        else FedGARegressor()
    )
    model.set_params(
        n_generations=s.n_generations,
        client_fraction=s.client_fraction,
        depth_range=s.depth_range,
        cv_folds=s.cv_folds,
        random_state=s.seed,
    )
    return model


def _grid(scorer: Scorer, s: RunSettings) -> GridSearchCV:
    low, high = s.depth_range
    tree: DecisionTreeClassifier | DecisionTreeRegressor = (
        DecisionTreeClassifier(random_state=s.seed)
        if scorer.task == "classification"
        else DecisionTreeRegressor(random_state=s.seed)
    )
    return GridSearchCV(
        tree,
        {"max_depth": list(range(low, high + 1))},
        cv=s.cv_folds,
        scoring=scorer.cv_scoring(),
    )


def _local_score(scorer: Scorer, split: Split, client: int, s: RunSettings) -> _Scored:
    mine = split.clients == client
    grid = _grid(scorer, s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a class below cv_folds rows
        grid.fit(split.codes_train[mine].to_numpy(), split.y_train[mine])
    return _scored(scorer, split.y_test, grid.predict(split.codes_test.to_numpy()))


def _central_score(scorer: Scorer, split: Split, s: RunSettings) -> _Scored:
    grid = _grid(scorer, s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a class below cv_folds rows
        grid.fit(split.codes_train.to_numpy(), split.y_train)
    return _scored(scorer, split.y_test, grid.predict(split.codes_test.to_numpy()))


def _ibm_score(scorer: Scorer, split: Split, s: RunSettings) -> _Scored:
    tree = FederatedID3Classifier(
        epsilon=s.ibm_epsilon,
        max_depth=s.ibm_depth,
        binary=True,
        bin_edges=split.bin_edges,
        random_state=s.seed,
        noise=s.ibm_noise,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        tree.fit(split.X_train, split.y_train, groups=split.clients, noise_seed=s.seed)
    return _scored(scorer, split.y_test, tree.predict(split.X_test))


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
