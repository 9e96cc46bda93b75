"""Federated algorithms: one module or package per method.

Names load on first use (PEP 562): a method's package registers its payloads
and client handlers when it is imported, which using its estimator or strategy
does. A client process that must answer a job's requests before any estimator
is used (a Flower ClientApp) loads that job's handlers with
:func:`fedtrees.algorithms._handlers.load_handlers` (the job's packages only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from fedtrees._lazy import lazy_names
from fedtrees._methods import METHODS, estimator_homes

_HOMES: Final[dict[str, str]] = {
    **estimator_homes(),
    **{method.name: method.package for method in METHODS},
    **{name: method.package for method in METHODS for name in method.exports},
    "JOBS": "fedtrees.algorithms._jobs",
    "check_job": "fedtrees.algorithms._jobs",
    "job_params": "fedtrees.algorithms._jobs",
    "run_job": "fedtrees.algorithms._jobs",
    "JOB_PACKAGES": "fedtrees.algorithms._handlers",
    "load_handlers": "fedtrees.algorithms._handlers",
    "MAX_GRID": "fedtrees.algorithms._params",
    "MAX_N_ESTIMATORS": "fedtrees.algorithms._params",
    "MAX_SAMPLES_PER_PATH": "fedtrees.algorithms._params",
    "MAX_TREE_DEPTH": "fedtrees.algorithms._params",
    "check_size": "fedtrees.algorithms._params",
    "client_scores": "fedtrees.algorithms._metrics",
    "load": "fedtrees.algorithms._load",
}
"""Every public name and the module that defines it (a method package: itself).

The methods, their estimators and exports come from the registry of methods
(:mod:`fedtrees._methods`); ``tests/test_faces.py`` checks this, ``__all__``
and the imports below agree.
"""


__all__ = [
    "JOBS",
    "JOB_PACKAGES",
    "MAX_GRID",
    "MAX_N_ESTIMATORS",
    "MAX_SAMPLES_PER_PATH",
    "MAX_TREE_DEPTH",
    "DPForestClassifier",
    "FedAvgClassifier",
    "FedForestClassifier",
    "FedForestRegressor",
    "FedGAClassifier",
    "FedGARegressor",
    "FedGBDTClassifier",
    "FedGBDTRegressor",
    "FederatedID3Classifier",
    "ICDTAClassifier",
    "LocalEnsembleClassifier",
    "LocalEnsembleRegressor",
    "LocalModelsClassifier",
    "LocalModelsRegressor",
    "SyntheticDataClassifier",
    "ToyResult",
    "ToyStrategy",
    "check_job",
    "check_size",
    "client_scores",
    "dpforest",
    "fedavg",
    "fedforest",
    "fedga",
    "fedgbdt",
    "fedid3",
    "icdta",
    "job_params",
    "load",
    "load_handlers",
    "local",
    "run_job",
    "run_toy",
    "synthetic",
    "toy",
]

if TYPE_CHECKING:
    from fedtrees.algorithms import (
        dpforest,
        fedavg,
        fedforest,
        fedga,
        fedgbdt,
        fedid3,
        icdta,
        local,
        synthetic,
        toy,
    )
    from fedtrees.algorithms._handlers import JOB_PACKAGES, load_handlers
    from fedtrees.algorithms._jobs import JOBS, check_job, job_params, run_job
    from fedtrees.algorithms._load import load
    from fedtrees.algorithms._metrics import client_scores
    from fedtrees.algorithms._params import (
        MAX_GRID,
        MAX_N_ESTIMATORS,
        MAX_SAMPLES_PER_PATH,
        MAX_TREE_DEPTH,
        check_size,
    )
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
    from fedtrees.algorithms.toy import ToyResult, ToyStrategy, run_toy


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
