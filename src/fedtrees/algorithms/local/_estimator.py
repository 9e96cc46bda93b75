"""Local baselines: pooled local forests, per-client local models (docs/fedforest.md).

``LocalEnsemble*`` (Hauschild et al. 2022): every client trains a random forest
on its own rows and sends its trees once; the server's forest is the union, each
tree weighted equally or by its client's size. ``LocalModels*``: every client keeps
its own forest; the fitted estimator predicts with the forest of a named client,
so each local model can be evaluated on any test set (the "local learning"
baseline). Both run the one-round protocol of
:mod:`fedtrees.algorithms.local._payloads`.

**Decision:** for evaluation, ``LocalModels*`` receives every client's forest at
the server, as ``LocalEnsemble*`` does; in a deployment each site would keep its
own model and nothing else would travel.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils.validation import check_is_fitted

from fedtrees._random import resolve_seed
from fedtrees._typing import FloatArray
from fedtrees.algorithms._base import FederatedEstimator, FitOptions
from fedtrees.algorithms._constraints import (
    RUN_CONSTRAINTS,
    Check,
    Constraint,
    Options,
    check_params,
)
from fedtrees.algorithms._params import (
    check_max_depth,
    forest_constraints,
)
from fedtrees.algorithms.local._strategy import LocalForests, LocalForestStrategy
from fedtrees.exceptions import ValidationError
from fedtrees.federation import Federation, RunResult
from fedtrees.tree import Tree, client_codes

__all__ = [
    "LocalEnsembleClassifier",
    "LocalEnsembleRegressor",
    "LocalModelsClassifier",
    "LocalModelsRegressor",
]

_FOREST_DOC = """
    n_estimators : int, default 100
        Trees of every client's forest.
    criterion : str
        "gini" or "entropy" (classifiers); "squared_error" (regressors).
    max_depth, min_samples_split, min_samples_leaf, min_impurity_decrease,
    max_features, bootstrap
        scikit-learn's random-forest parameters, used by every client.
    timeout : float, default 120.0
        Seconds the round may take.
    workers : int, default 1
        Threads for in-process clients; results do not depend on it.
    verbose : bool, default False
        Show a progress bar.
    random_state : int, Generator or None
        Client k's forest is seeded by ``[seed, 4, crc32(k)]``.
"""


def _constraints(criteria: tuple[str, ...], pooled: bool) -> dict[str, Constraint]:
    """Return the constraint of every parameter of a local baseline.

    ``pooled``: a ``LocalEnsemble*`` (its ``weighting``).
    """
    table = {
        **forest_constraints(criteria, Check(check_max_depth)),
        **RUN_CONSTRAINTS,
    }
    if pooled:
        table["weighting"] = Options(("uniform", "size"))
    return table


_CLASSIFIER: Final = ("gini", "entropy")
_REGRESSOR: Final = ("squared_error",)
_FOREST_PARAMETERS: Final = tuple(forest_constraints((), Check(check_max_depth)))
"""The names of scikit-learn's forest parameters (what every client's forest takes)."""


class _LocalForests(FederatedEstimator, BaseEstimator):  # type: ignore[misc]
    """Fit: one round of local forests; keep every client's trees."""

    _constraint_table: ClassVar[dict[str, Constraint]]

    def _forest_params(self) -> dict[str, Any]:
        """Return the forest parameters, checked, as scikit-learn takes them."""
        checked = check_params(self)
        return {
            **{name: checked[name] for name in _FOREST_PARAMETERS},
            "min_samples_split": checked["min_samples_split"].as_sklearn(),
            "min_samples_leaf": checked["min_samples_leaf"].as_sklearn(),
        }

    def _strategy(
        self,
        federation: Federation,
        classes: npt.NDArray[Any] | None,
        options: FitOptions,
    ) -> LocalForestStrategy:
        """One round asking every client for its forest."""
        params = self._forest_params()
        seed = resolve_seed(self.random_state, type(self).__name__)
        return LocalForestStrategy(params, seed)

    def _keep(self, outcome: RunResult, strategy: LocalForestStrategy) -> None:
        received: LocalForests = outcome.result
        meta = self._tree_meta()
        self.forests_ = {
            client: reply.trees(**meta) for client, reply in received.replies.items()
        }
        self.client_weights_ = {
            client: reply.weight for client, reply in received.replies.items()
        }

    def _labels(self, proba: FloatArray) -> npt.NDArray[Any]:
        labels: npt.NDArray[Any] = self.classes_[np.argmax(proba, axis=1)]
        return labels


class _Ensemble(_LocalForests):
    """The server's forest: every client's trees, pooled."""

    def _keep(self, outcome: RunResult, strategy: LocalForestStrategy) -> None:
        super()._keep(outcome, strategy)
        self._pool_forests()

    def _pool_forests(self) -> None:
        """Pool ``forests_`` into ``trees_`` and their weights (fit, fedtrees.load)."""
        self.trees_ = [t for trees in self.forests_.values() for t in trees]
        self.tree_weights_ = np.concatenate(
            [
                np.full(len(trees), self._client_share(client) / len(trees))
                for client, trees in self.forests_.items()
            ]
        )

    def _client_share(self, client: str) -> float:
        if self.weighting == "uniform":
            return 1.0
        return self.client_weights_[client] / sum(self.client_weights_.values())

    def _value(self, X: object) -> FloatArray:
        check_is_fitted(self, "trees_")
        forest = self._flat_forest("trees_", self.trees_)
        owner = f"{type(self).__name__}.predict"
        return forest.mean_value(
            self._encode(X), owner=owner, weights=self.tree_weights_
        )


class LocalEnsembleClassifier(ClassifierMixin, _Ensemble):  # type: ignore[misc]
    """Local ensembling (Hauschild et al. 2022): pooled local forests.

    Every client trains a scikit-learn random forest on its own rows and sends its
    trees once (one round); the model averages the class distributions of all
    trees.

    Parameters
    ----------
    weighting : {"uniform", "size"}, default "uniform"
        Every client's forest counts equally, or in proportion to its (weighted)
        row count.
    """

    __doc__ = (__doc__ or "") + _FOREST_DOC
    _task = "classification"
    _constraint_table = _constraints(_CLASSIFIER, pooled=True)

    def __init__(
        self,
        n_estimators: int = 100,
        *,
        criterion: str = "gini",
        max_depth: int | None = None,
        min_samples_split: int | float = 2,
        min_samples_leaf: int | float = 1,
        min_impurity_decrease: float = 0.0,
        max_features: object = "sqrt",
        bootstrap: bool = True,
        weighting: str = "uniform",
        timeout: float = 120.0,
        workers: int = 1,
        verbose: bool = False,
        random_state: object = None,
    ) -> None:
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.max_features = max_features
        self.bootstrap = bootstrap
        self.weighting = weighting
        self.timeout = timeout
        self.workers = workers
        self.verbose = verbose
        self.random_state = random_state

    def predict_proba(self, X: object) -> FloatArray:
        """Weighted mean class distribution of all clients' trees."""
        return self._value(X)

    def predict(self, X: object) -> npt.NDArray[Any]:
        """Class with the largest mean probability (first on ties)."""
        return self._labels(self.predict_proba(X))


class LocalEnsembleRegressor(RegressorMixin, _Ensemble):  # type: ignore[misc]
    """Local ensembling for regression: the mean of all clients' trees.

    Parameters
    ----------
    weighting : {"uniform", "size"}, default "uniform"
        Every client's forest counts equally, or in proportion to its size.
    """

    __doc__ = (__doc__ or "") + _FOREST_DOC
    _task = "regression"
    _constraint_table = _constraints(_REGRESSOR, pooled=True)

    def __init__(
        self,
        n_estimators: int = 100,
        *,
        criterion: str = "squared_error",
        max_depth: int | None = None,
        min_samples_split: int | float = 2,
        min_samples_leaf: int | float = 1,
        min_impurity_decrease: float = 0.0,
        max_features: object = 1.0,
        bootstrap: bool = True,
        weighting: str = "uniform",
        timeout: float = 120.0,
        workers: int = 1,
        verbose: bool = False,
        random_state: object = None,
    ) -> None:
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.max_features = max_features
        self.bootstrap = bootstrap
        self.weighting = weighting
        self.timeout = timeout
        self.workers = workers
        self.verbose = verbose
        self.random_state = random_state

    def predict(self, X: object) -> FloatArray:
        """Weighted mean of all clients' trees."""
        out: FloatArray = self._value(X)[:, 0]
        return out


class _Models(_LocalForests):
    """Per-client models: predict with the forest of a named client."""

    def _value(self, X: object, client: object) -> FloatArray:
        check_is_fitted(self, "forests_")
        matrix = self._encode(X)
        owner = f"{type(self).__name__}.predict"
        clients = tuple(self.forests_)
        if client is None:
            if len(clients) > 1:
                raise ValidationError(
                    f"{owner}: this model holds one forest per client "
                    f"({', '.join(clients)}); pass client=<id> (one, or one per row)."
                )
            client = clients[0]
        codes = client_codes(clients, client, matrix.shape[0], owner, "use one of them")
        width = self.forests_[clients[0]][0].value.shape[1]
        out = np.zeros((matrix.shape[0], width))
        for code in np.unique(codes):
            rows = codes == code
            name = clients[code]
            forest = self._flat_forest(("forests_", name), self.forests_[name])
            out[rows] = forest.mean_value(matrix[rows], owner=owner)
        return out

    def score_clients(self, X: object, y: npt.ArrayLike) -> dict[str, float]:
        """Score every client's own model on the same test set (accuracy or R²)."""
        check_is_fitted(self, "forests_")
        metric = accuracy_score if self._task == "classification" else r2_score
        return {
            client: float(metric(y, self.predict(X, client=client)))
            for client in self.forests_
        }

    @property
    def trees_(self) -> list[Tree]:
        """All clients' trees (client order), for inspection."""
        check_is_fitted(self, "forests_")
        return [t for trees in self.forests_.values() for t in trees]


class LocalModelsClassifier(ClassifierMixin, _Models):  # type: ignore[misc]
    """Local learning: every client's own random forest, used per client.

    ``predict(X, client=k)`` uses client k's forest (``client`` may also give one
    id per row); :meth:`score_clients` scores every local model on a test set.
    """

    __doc__ = (__doc__ or "") + "\n    Parameters\n    ----------" + _FOREST_DOC
    _task = "classification"
    _constraint_table = _constraints(_CLASSIFIER, pooled=False)

    def __init__(
        self,
        n_estimators: int = 100,
        *,
        criterion: str = "gini",
        max_depth: int | None = None,
        min_samples_split: int | float = 2,
        min_samples_leaf: int | float = 1,
        min_impurity_decrease: float = 0.0,
        max_features: object = "sqrt",
        bootstrap: bool = True,
        timeout: float = 120.0,
        workers: int = 1,
        verbose: bool = False,
        random_state: object = None,
    ) -> None:
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.max_features = max_features
        self.bootstrap = bootstrap
        self.timeout = timeout
        self.workers = workers
        self.verbose = verbose
        self.random_state = random_state

    def predict_proba(self, X: object, client: object = None) -> FloatArray:
        """Class distribution of client ``client``'s forest (None: the only one)."""
        return self._value(X, client)

    def predict(self, X: object, client: object = None) -> npt.NDArray[Any]:
        """Class with the largest probability under client ``client``'s forest."""
        return self._labels(self.predict_proba(X, client))


class LocalModelsRegressor(RegressorMixin, _Models):  # type: ignore[misc]
    """Local learning for regression: every client's own forest, used per client."""

    __doc__ = (__doc__ or "") + "\n    Parameters\n    ----------" + _FOREST_DOC
    _task = "regression"
    _constraint_table = _constraints(_REGRESSOR, pooled=False)

    def __init__(
        self,
        n_estimators: int = 100,
        *,
        criterion: str = "squared_error",
        max_depth: int | None = None,
        min_samples_split: int | float = 2,
        min_samples_leaf: int | float = 1,
        min_impurity_decrease: float = 0.0,
        max_features: object = 1.0,
        bootstrap: bool = True,
        timeout: float = 120.0,
        workers: int = 1,
        verbose: bool = False,
        random_state: object = None,
    ) -> None:
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.max_features = max_features
        self.bootstrap = bootstrap
        self.timeout = timeout
        self.workers = workers
        self.verbose = verbose
        self.random_state = random_state

    def predict(self, X: object, client: object = None) -> FloatArray:
        """Mean of client ``client``'s trees (None: the only client)."""
        out: FloatArray = self._value(X, client)[:, 0]
        return out
