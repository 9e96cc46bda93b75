"""Federated algorithms: one module or package per method.

Importing this package registers every method's payloads and client handlers, so
a client process (in-process or a Flower ClientApp) can answer all of them.
"""

from fedtrees.algorithms import fedforest, toy
from fedtrees.algorithms._jobs import JOBS, run_job
from fedtrees.algorithms.fedforest import FedForestClassifier, FedForestRegressor
from fedtrees.algorithms.toy import ToyResult, ToyStrategy, run_toy

__all__ = [
    "JOBS",
    "FedForestClassifier",
    "FedForestRegressor",
    "ToyResult",
    "ToyStrategy",
    "fedforest",
    "run_job",
    "run_toy",
    "toy",
]
