"""FedForest: federated CART and forests for heterogeneous data (docs/fedforest.md).

The strategy grows all trees level by level from pooled sufficient statistics:
quantile-sketch candidates (the client CDFs are mixed, never their quantiles
averaged) and exact pooled gains, plus Fisher splits on categories and on the
client indicator. See :class:`FedForestClassifier` and :class:`FedForestRegressor`.
:data:`HANDLERS` are the client handlers, by request kind: importing the package
registers them (a client needs nothing else); the estimators, the strategy and
the diagnosis load on first use (PEP 562), so a client does not load
scikit-learn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from fedtrees._lazy import lazy_names
from fedtrees.algorithms.fedforest._handlers import HANDLERS

__all__ = [
    "HANDLERS",
    "MAX_DEPTH_CAP",
    "DiagnosisReport",
    "FedForestClassifier",
    "FedForestRegressor",
    "FedForestStrategy",
    "ForestConfig",
    "ForestResult",
    "diagnose",
]

_HOMES: Final[dict[str, str]] = {
    "DiagnosisReport": "fedtrees.algorithms.fedforest._diagnose",
    "FedForestClassifier": "fedtrees.algorithms.fedforest._estimator",
    "FedForestRegressor": "fedtrees.algorithms.fedforest._estimator",
    "FedForestStrategy": "fedtrees.algorithms.fedforest._strategy",
    "ForestConfig": "fedtrees.algorithms.fedforest._config",
    "ForestResult": "fedtrees.algorithms.fedforest._strategy",
    "MAX_DEPTH_CAP": "fedtrees.algorithms.fedforest._config",
    "diagnose": "fedtrees.algorithms.fedforest._diagnose",
}

if TYPE_CHECKING:
    from fedtrees.algorithms.fedforest._config import MAX_DEPTH_CAP, ForestConfig
    from fedtrees.algorithms.fedforest._diagnose import DiagnosisReport, diagnose
    from fedtrees.algorithms.fedforest._estimator import (
        FedForestClassifier,
        FedForestRegressor,
    )
    from fedtrees.algorithms.fedforest._strategy import FedForestStrategy, ForestResult

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
