"""The one tree model of fedtrees: flat arrays, vectorised routing, rules, text, JSON.

Every method emits a :class:`Tree`: numeric splits ``x_f <= t``, categorical splits
(multiway for ID3, a category set to the left for CART) and client-indicator splits.
A NaN (missing) value at a numeric split follows the node's :class:`Missing`
direction: one learned at fit, or else the child with the larger training count.

Examples
--------
>>> import numpy as np
>>> from fedtrees.tree import NodeStats, Tree, TreeBuilder
>>> b = TreeBuilder(n_features=2, classes=np.array([0, 1]))
>>> root = b.add_root(NodeStats.from_class_counts([5, 5]))
>>> left, right = b.split_numeric(root, 1, 0.0, NodeStats.from_class_counts([5, 1]),
...                               NodeStats.from_class_counts([0, 4]))
>>> tree = b.build()
>>> tree.predict([[9.0, -1.0], [9.0, 2.0]]).tolist()
[0, 1]
>>> Tree.from_json(tree.to_json()) == tree
True
"""

from typing import TYPE_CHECKING, Final

from fedtrees._lazy import lazy_names
from fedtrees.tree._builder import NodeStats, TreeBuilder
from fedtrees.tree._ensemble import mean_value, vote_shares
from fedtrees.tree._flat import FlatForest
from fedtrees.tree._kinds import LEAF, Missing, NodeKind
from fedtrees.tree._model import Tree
from fedtrees.tree._pack import PACKED_FIELDS, pack_trees, unpack_trees
from fedtrees.tree._predict import client_codes
from fedtrees.tree._render import export_text, format_condition
from fedtrees.tree._rules import CLIENT_FEATURE, Condition, Rule
from fedtrees.tree._serialize import FORMAT, VERSION

__all__ = [
    "CLIENT_FEATURE",
    "FORMAT",
    "LEAF",
    "PACKED_FIELDS",
    "VERSION",
    "Condition",
    "FlatForest",
    "Missing",
    "NodeKind",
    "NodeStats",
    "Rule",
    "Tree",
    "TreeBuilder",
    "check_exportable",
    "client_codes",
    "export_text",
    "forest_to_sklearn",
    "format_condition",
    "mean_value",
    "pack_trees",
    "refuse_categorical_columns",
    "tree_to_sklearn",
    "unpack_trees",
    "vote_shares",
]

_HOMES: Final[dict[str, str]] = {
    "check_exportable": "fedtrees.tree._to_sklearn",
    "forest_to_sklearn": "fedtrees.tree._to_sklearn",
    "refuse_categorical_columns": "fedtrees.tree._to_sklearn",
    "tree_to_sklearn": "fedtrees.tree._to_sklearn",
}
"""The names that load scikit-learn, loaded on first use (PEP 562)."""

if TYPE_CHECKING:
    from fedtrees.tree._to_sklearn import (
        check_exportable,
        forest_to_sklearn,
        refuse_categorical_columns,
        tree_to_sklearn,
    )

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
