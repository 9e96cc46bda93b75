"""FedGBDT: lossless federated histogram gradient boosting.

The model XGBoost would grow on the pooled, binned rows, from the clients'
histograms of gradient sums on the histogram engine
(:mod:`fedtrees.algorithms.histogram`); plus Flower's bagging and cyclic
boosting as baselines on the same grid and learner. See
:class:`FedGBDTClassifier` and :class:`FedGBDTRegressor`. Importing the package
registers the client handlers.
"""

from fedtrees.algorithms.fedgbdt import _handlers
from fedtrees.algorithms.fedgbdt._config import BoostConfig
from fedtrees.algorithms.fedgbdt._estimator import (
    FedGBDTClassifier,
    FedGBDTRegressor,
)
from fedtrees.algorithms.fedgbdt._strategy import BoostResult, FedGBDTStrategy

__all__ = [
    "BoostConfig",
    "BoostResult",
    "FedGBDTClassifier",
    "FedGBDTRegressor",
    "FedGBDTStrategy",
]

_ = _handlers
