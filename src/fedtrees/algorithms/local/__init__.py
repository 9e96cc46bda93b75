"""Local baselines: local ensembling and local learning (docs/fedforest.md).

Both run one round in which every client fits a scikit-learn random forest on its
own rows and sends the trees: :class:`LocalEnsembleClassifier` pools them,
:class:`LocalModelsClassifier` keeps them per client.

Examples
--------
>>> import numpy as np
>>> from fedtrees import LocalEnsembleClassifier, LocalModelsClassifier
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(200, 2)); y = (X[:, 0] > 0).astype(int)
>>> sites = np.repeat(["a", "b"], 100)
>>> pooled = LocalEnsembleClassifier(n_estimators=5, random_state=0)
>>> pooled.fit(X, y, groups=sites).score(X, y) > 0.95
True
>>> models = LocalModelsClassifier(n_estimators=5, random_state=0)
>>> sorted(models.fit(X, y, groups=sites).score_clients(X, y))
['a', 'b']

Importing the package registers its client handlers; every other name loads
on first use (PEP 562). Its one round fits a scikit-learn forest, so the
handlers load scikit-learn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from fedtrees._lazy import lazy_names
from fedtrees.algorithms.local import _handlers  # registers the client handlers

__all__ = [
    "LocalEnsembleClassifier",
    "LocalEnsembleRegressor",
    "LocalForestStrategy",
    "LocalModelsClassifier",
    "LocalModelsRegressor",
]

_HOMES: Final[dict[str, str]] = {
    "LocalEnsembleClassifier": "fedtrees.algorithms.local._estimator",
    "LocalEnsembleRegressor": "fedtrees.algorithms.local._estimator",
    "LocalForestStrategy": "fedtrees.algorithms.local._strategy",
    "LocalModelsClassifier": "fedtrees.algorithms.local._estimator",
    "LocalModelsRegressor": "fedtrees.algorithms.local._estimator",
}
"""Every public name and the module that defines it."""

if TYPE_CHECKING:
    from fedtrees.algorithms.local._estimator import (
        LocalEnsembleClassifier,
        LocalEnsembleRegressor,
        LocalModelsClassifier,
        LocalModelsRegressor,
    )
    from fedtrees.algorithms.local._strategy import LocalForestStrategy

del _handlers

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
