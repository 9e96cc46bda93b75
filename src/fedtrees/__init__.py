"""fedtrees: decision trees and forests trained across silos, without moving rows.

The names below load on first use (PEP 562): ``import fedtrees`` itself loads
neither scikit-learn, pandas, numba nor any method, so the command line and a
Flower ClientApp pay only for what they use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from fedtrees._lazy import lazy_names
from fedtrees._methods import estimator_homes

__version__ = "0.1.0"

_HOMES: Final[dict[str, str]] = {
    **dict.fromkeys(estimator_homes(), "fedtrees.algorithms"),
    "FedTreesError": "fedtrees.exceptions",
    "Federation": "fedtrees.federation",
    "Tree": "fedtrees.tree",
    "load": "fedtrees.algorithms",
}
"""Every public name and the module it loads from.

The estimators come from the registry of methods (:mod:`fedtrees._methods`);
``tests/test_faces.py`` checks this, ``__all__`` and the imports below agree.
"""

__all__ = [
    "DPForestClassifier",
    "FedAvgClassifier",
    "FedForestClassifier",
    "FedForestRegressor",
    "FedGAClassifier",
    "FedGARegressor",
    "FedGBDTClassifier",
    "FedGBDTRegressor",
    "FedTreesError",
    "FederatedID3Classifier",
    "Federation",
    "ICDTAClassifier",
    "LocalEnsembleClassifier",
    "LocalEnsembleRegressor",
    "LocalModelsClassifier",
    "LocalModelsRegressor",
    "SyntheticDataClassifier",
    "Tree",
    "__version__",
    "load",
]

if TYPE_CHECKING:
    from fedtrees.algorithms import load
    from fedtrees.algorithms.dpforest import DPForestClassifier
    from fedtrees.algorithms.fedavg import FedAvgClassifier
    from fedtrees.algorithms.fedforest import FedForestClassifier, FedForestRegressor
    from fedtrees.algorithms.fedga import FedGAClassifier, FedGARegressor
    from fedtrees.algorithms.fedgbdt import FedGBDTClassifier, FedGBDTRegressor
    from fedtrees.algorithms.fedid3 import FederatedID3Classifier
    from fedtrees.algorithms.icdta import ICDTAClassifier
    from fedtrees.algorithms.local import (
        LocalEnsembleClassifier,
        LocalEnsembleRegressor,
        LocalModelsClassifier,
        LocalModelsRegressor,
    )
    from fedtrees.algorithms.synthetic import SyntheticDataClassifier
    from fedtrees.exceptions import FedTreesError
    from fedtrees.federation import Federation
    from fedtrees.tree import Tree


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
