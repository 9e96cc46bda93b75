"""Federated algorithms: one module or package per method.

Importing this package registers every method's payloads and client handlers, so
a client process (in-process or a Flower ClientApp) can answer all of them.
"""

from fedtrees.algorithms import (
    _discretize,
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
from fedtrees.algorithms._jobs import JOBS, run_job
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

__all__ = [
    "JOBS",
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
    "dpforest",
    "fedavg",
    "fedforest",
    "fedga",
    "fedgbdt",
    "fedid3",
    "icdta",
    "local",
    "run_job",
    "run_toy",
    "synthetic",
    "toy",
]

del _discretize  # imported to register the discretization round's handler
