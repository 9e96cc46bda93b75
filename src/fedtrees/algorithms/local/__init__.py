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
"""

from fedtrees.algorithms.local import _handlers  # registers the client handler
from fedtrees.algorithms.local._estimator import (
    LocalEnsembleClassifier,
    LocalEnsembleRegressor,
    LocalModelsClassifier,
    LocalModelsRegressor,
)
from fedtrees.algorithms.local._strategy import LocalForestStrategy

__all__ = [
    "LocalEnsembleClassifier",
    "LocalEnsembleRegressor",
    "LocalForestStrategy",
    "LocalModelsClassifier",
    "LocalModelsRegressor",
]

del _handlers
