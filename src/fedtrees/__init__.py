"""fedtrees: decision trees and forests trained across silos, without moving rows."""

from fedtrees.algorithms import (
    DPForestClassifier,
    FedAvgClassifier,
    FederatedID3Classifier,
    FedForestClassifier,
    FedForestRegressor,
    FedGAClassifier,
    FedGARegressor,
    FedGBDTClassifier,
    FedGBDTRegressor,
    ICDTAClassifier,
    LocalEnsembleClassifier,
    LocalEnsembleRegressor,
    LocalModelsClassifier,
    LocalModelsRegressor,
    SyntheticDataClassifier,
)
from fedtrees.exceptions import FedTreesError
from fedtrees.federation import Federation
from fedtrees.tree import Tree

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
]

__version__ = "0.1.0"
