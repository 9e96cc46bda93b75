"""FedForest: federated CART and random forests for heterogeneous data (§1).

The strategy grows all trees level by level from pooled sufficient statistics:
quantile-sketch candidates (the client CDFs are mixed, never their quantiles
averaged) and exact pooled gains, plus Fisher splits on categories and on the
client indicator. See :class:`FedForestClassifier` and :class:`FedForestRegressor`.
:data:`HANDLERS` are the client handlers, by request kind: importing them
registers them (a client needs nothing else).
"""

from fedtrees.algorithms.fedforest._config import ForestConfig
from fedtrees.algorithms.fedforest._diagnose import DiagnosisReport, diagnose
from fedtrees.algorithms.fedforest._estimator import (
    FedForestClassifier,
    FedForestRegressor,
)
from fedtrees.algorithms.fedforest._handlers import HANDLERS
from fedtrees.algorithms.fedforest._strategy import FedForestStrategy, ForestResult

__all__ = [
    "HANDLERS",
    "DiagnosisReport",
    "FedForestClassifier",
    "FedForestRegressor",
    "FedForestStrategy",
    "ForestConfig",
    "ForestResult",
    "diagnose",
]
