"""fedtrees: decision trees and forests trained across silos, without moving rows."""

from fedtrees.algorithms import FedForestClassifier, FedForestRegressor
from fedtrees.exceptions import FedTreesError
from fedtrees.federation import Federation
from fedtrees.tree import Tree

__all__ = [
    "FedForestClassifier",
    "FedForestRegressor",
    "FedTreesError",
    "Federation",
    "Tree",
    "__version__",
]

__version__ = "0.1.0"
