"""Federated algorithms: one module or package per method.

Importing this package registers every method's payloads and client handlers, so
a client process (in-process or a Flower ClientApp) can answer all of them.
"""

from fedtrees.algorithms import dpforest, fedavg, fedforest, local, toy
from fedtrees.algorithms._jobs import JOBS, run_job
from fedtrees.algorithms.dpforest import DPForestClassifier
from fedtrees.algorithms.fedavg import FedAvgClassifier
from fedtrees.algorithms.fedforest import FedForestClassifier, FedForestRegressor
from fedtrees.algorithms.local import (
    LocalEnsembleClassifier,
    LocalEnsembleRegressor,
    LocalModelsClassifier,
    LocalModelsRegressor,
)
from fedtrees.algorithms.toy import ToyResult, ToyStrategy, run_toy

__all__ = [
    "JOBS",
    "DPForestClassifier",
    "FedAvgClassifier",
    "FedForestClassifier",
    "FedForestRegressor",
    "LocalEnsembleClassifier",
    "LocalEnsembleRegressor",
    "LocalModelsClassifier",
    "LocalModelsRegressor",
    "ToyResult",
    "ToyStrategy",
    "dpforest",
    "fedavg",
    "fedforest",
    "local",
    "run_job",
    "run_toy",
    "toy",
]
