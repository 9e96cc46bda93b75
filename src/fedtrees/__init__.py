"""fedtrees: decision trees and forests trained across silos, without moving rows."""

from fedtrees.exceptions import FedTreesError
from fedtrees.tree import Tree

__all__ = ["FedTreesError", "Tree", "__version__"]

__version__ = "0.1.0"
