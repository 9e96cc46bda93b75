"""FedGBDT: lossless federated histogram gradient boosting.

The model XGBoost would grow on the pooled, binned rows, from the clients'
histograms of gradient sums on the histogram engine
(:mod:`fedtrees.algorithms.histogram`); plus Flower's bagging and cyclic
boosting as baselines on the same grid and learner. See
:class:`FedGBDTClassifier` and :class:`FedGBDTRegressor`. Importing the package
registers the client handlers; the estimators and the strategy load on first
use (PEP 562), so a client process does not load scikit-learn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from fedtrees._lazy import lazy_names
from fedtrees.algorithms.fedgbdt import _handlers

__all__ = [
    "MAX_BOOSTING_DEPTH",
    "MAX_BOOSTING_ROUNDS",
    "BoostConfig",
    "BoostResult",
    "FedGBDTClassifier",
    "FedGBDTRegressor",
    "FedGBDTStrategy",
    "with_classes",
]

_HOMES: Final[dict[str, str]] = {
    "BoostConfig": "fedtrees.algorithms.fedgbdt._config",
    "BoostResult": "fedtrees.algorithms.fedgbdt._strategy",
    "FedGBDTClassifier": "fedtrees.algorithms.fedgbdt._estimator",
    "FedGBDTRegressor": "fedtrees.algorithms.fedgbdt._estimator",
    "FedGBDTStrategy": "fedtrees.algorithms.fedgbdt._strategy",
    "MAX_BOOSTING_DEPTH": "fedtrees.algorithms.fedgbdt._config",
    "MAX_BOOSTING_ROUNDS": "fedtrees.algorithms.fedgbdt._config",
    "with_classes": "fedtrees.algorithms.fedgbdt._config",
}

if TYPE_CHECKING:
    from fedtrees.algorithms.fedgbdt._config import (
        MAX_BOOSTING_DEPTH,
        MAX_BOOSTING_ROUNDS,
        BoostConfig,
        with_classes,
    )
    from fedtrees.algorithms.fedgbdt._estimator import (
        FedGBDTClassifier,
        FedGBDTRegressor,
    )
    from fedtrees.algorithms.fedgbdt._strategy import BoostResult, FedGBDTStrategy

_ = _handlers


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
