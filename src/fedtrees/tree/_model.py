"""The one ``Tree`` of fedtrees: parallel arrays, node 0 the root.

Every method (federated CART, DP trees, ID3, rule aggregation, GA trees, the
scikit-learn adapter) emits this structure, so prediction, rules, rendering and
persistence exist once. See docs/getting-started.md, "The tree model".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, IntArray
from fedtrees.tree import _predict, _structure
from fedtrees.tree._arrays import TreeArrays
from fedtrees.tree._render import export_text
from fedtrees.tree._rules import Rule, extract_rules
from fedtrees.tree._serialize import tree_from_dict, tree_from_json, tree_to_dict

__all__ = ["Tree"]


@dataclass(frozen=True, eq=False)
class Tree(TreeArrays):
    """A fitted decision tree stored as flat arrays (node 0 is the root).

    Children always have larger indices than their parent, so the arrays are in
    topological order. Every node — internal ones too — carries the value and the
    (weighted, possibly noisy) training count of the rows that reached it.

    Parameters
    ----------
    kind : int8 array of shape (n_nodes,)
        A :class:`NodeKind` per node.
    feature : int64 array of shape (n_nodes,)
        Split feature of numeric and categorical nodes, ``LEAF`` otherwise.
    threshold : float64 array of shape (n_nodes,)
        Threshold of numeric nodes, NaN otherwise.
    left, right : int64 arrays of shape (n_nodes,)
        Children of numeric nodes. For categorical and client nodes ``left`` is
        ``LEAF`` and ``right`` is the default branch (``LEAF``: stop here).
    branch_ptr : int64 array of shape (n_nodes + 1,)
        Node ``i`` owns the branch entries ``branch_ptr[i]:branch_ptr[i+1]``.
    branch_code, branch_child : int64 arrays of shape (n_branches,)
        Branch entries: rows with this code go to this child.
    value : float64 array of shape (n_nodes, n_outputs)
        Class distribution (rows sum to 1) for classification, mean for regression.
    count : float64 array of shape (n_nodes,)
        Training count (weighted; noisy for DP trees) of each node.
    impurity : float64 array of shape (n_nodes,)
        Impurity of each node, NaN where unknown.
    n_features : int
        Number of columns of the X the tree routes.
    classes : 1-D array or None
        Class labels (order of ``value``'s columns); None for regression.
    feature_names : tuple of str or None
    categories : tuple of (tuple of str or None) or None
        Per feature, the category names of codes 0, 1, ... (None for numeric ones).
    clients : tuple of str or None
        Client ids of the client codes used by ``CLIENT`` nodes.
    missing : int8 array of shape (n_nodes,), or None
        A :class:`Missing` per node: where a numeric node sends a row whose
        feature value is NaN. ``LEFT`` / ``RIGHT`` are directions learned at fit;
        ``LARGER`` (the default, and the only value allowed at other nodes) sends
        it to the child with the larger training ``count`` (``right`` on a tie).
        None means ``LARGER`` everywhere.

    Notes
    -----
    Routing accepts NaN (a missing value) in X, never infinity. At a numeric node
    a NaN row follows ``missing``; at a categorical node NaN is not a category
    code, so the row takes the default branch (``right``), like any unlisted code.

    Examples
    --------
    >>> import numpy as np
    >>> from fedtrees.tree import Missing, NodeStats, TreeBuilder
    >>> b = TreeBuilder(n_features=1)
    >>> root = b.add_root(NodeStats.from_mean(1.0, 6))
    >>> _ = b.split_numeric(root, 0, 0.5, NodeStats.from_mean(0.0, 4),
    ...                     NodeStats.from_mean(3.0, 2), missing=Missing.RIGHT)
    >>> tree = b.build()
    >>> tree.predict([[0.0], [1.0], [np.nan]]).tolist()
    [0.0, 3.0, 3.0]
    >>> tree.missing.tolist()  # the leaves hold LARGER
    [0, -1, -1]
    """

    def __post_init__(self) -> None:
        for name, array in _structure.coerce_arrays(self).items():
            object.__setattr__(self, name, array)
        _structure.validate(self)
        object.__setattr__(self, "n_features", int(self.n_features))  # numpy ints

    # -- shape ------------------------------------------------------------------
    @cached_property
    def node_depth(self) -> IntArray:
        """Depth of every node (the root has depth 0)."""
        return _structure.node_depths(self)

    @property
    def max_depth(self) -> int:
        """Length of the longest root-to-leaf path."""
        return int(self.node_depth.max())

    @cached_property
    def _routing(self) -> _predict.Routing:
        return _predict.Routing.of(self)

    # -- prediction ---------------------------------------------------------------
    def apply(self, X: npt.ArrayLike, client: object = None) -> IntArray:
        """Return, for every row, the index of the node where it ends.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Finite values or NaN (missing; routed by ``missing`` at numeric
            nodes, to the default branch at categorical ones); categorical
            features as integer codes. A DataFrame is read by column name when
            the tree has ``feature_names`` (any order; other columns are left
            out), its categorical columns (``category`` dtype, or text) coded
            by the tree's ``categories``; a category the tree does not know
            gets code K, which no category has (:mod:`fedtrees.tree._frame`).
        client : str, array-like of str, or None
            Client id of every row (or one for all rows), needed only if the tree
            has client-indicator splits.

        Raises
        ------
        ValidationError
            If X holds an infinity or has the wrong width, or a row reaches a client
            split without a known client (use ``predict`` to mix both branches); for
            a DataFrame, naming a missing column or one of the wrong kind.
        """
        return self._routing.apply(X, client)

    def predict_value(self, X: npt.ArrayLike, client: object = None) -> FloatArray:
        """Return the (n_samples, n_outputs) leaf values, mixing branches if needed.

        A row that reaches a client split without a known client goes down every
        branch; the leaf values are mixed with weights proportional to the
        branches' training counts (docs/fedforest.md, client splits).
        """
        return self._routing.predict_value(X, client)

    def predict_proba(self, X: npt.ArrayLike, client: object = None) -> FloatArray:
        """Class probabilities of shape (n_samples, n_classes) (classifiers only)."""
        self._require_classifier("predict_proba")
        return self.predict_value(X, client)

    def predict(self, X: npt.ArrayLike, client: object = None) -> npt.NDArray[Any]:
        """Predicted class labels (first class on ties) or regression means.

        ``X`` as :meth:`apply` takes it: codes, or a DataFrame read by name.

        Examples
        --------
        >>> import pandas as pd
        >>> from fedtrees.tree import NodeStats, TreeBuilder
        >>> b = TreeBuilder(n_features=2, classes=np.array(["no", "yes"]),
        ...                 feature_names=["age", "pain"],
        ...                 categories=[None, ["atypical", "typical"]])
        >>> root = b.add_root(NodeStats.from_class_counts([4, 4]))
        >>> _ = b.split_categorical(root, 1, [([0], NodeStats.from_class_counts(
        ...     [0, 4]))], NodeStats.from_class_counts([4, 0]))
        >>> X = pd.DataFrame({"pain": ["atypical", "typical", "none"], "age": 50})
        >>> b.build().predict(X).tolist()  # "none": unseen, the default branch
        ['yes', 'no', 'no']
        """
        values = self.predict_value(X, client)
        if self.classes is None:
            return values[:, 0]
        labels: npt.NDArray[Any] = self.classes[np.argmax(values, axis=1)]
        return labels

    def _require_classifier(self, method: str) -> None:
        if self.classes is None:
            raise _structure.error(f"Tree.{method} needs a classification tree")

    # -- views ----------------------------------------------------------------------
    def rules(self) -> list[Rule]:
        """Every root-to-leaf conjunction with its leaf value and support."""
        return extract_rules(self)

    def to_text(self, *, decimals: int = 3, show_counts: bool = True) -> str:
        """Render the tree as indented text (see :func:`fedtrees.tree.export_text`)."""
        return export_text(self, decimals=decimals, show_counts=show_counts)

    # -- persistence ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Return the versioned JSON-compatible document of this tree."""
        return tree_to_dict(self)

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> Tree:
        """Rebuild a tree from :meth:`to_dict`'s document (validated)."""
        return tree_from_dict(document, cls)

    def to_json(self) -> str:
        """Serialize to a JSON string (standard JSON: no NaN literals)."""
        return json.dumps(self.to_dict(), allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> Tree:
        """Parse :meth:`to_json`'s output."""
        return tree_from_json(text, cls)

    @classmethod
    def from_sklearn(cls, estimator: object) -> Tree:
        """Convert a fitted scikit-learn DecisionTreeClassifier/Regressor."""
        from fedtrees.tree._sklearn import tree_from_sklearn

        return tree_from_sklearn(estimator, cls)

    def to_sklearn(self) -> Any:
        """Return a fitted scikit-learn DecisionTreeClassifier/Regressor.

        Numeric splits only; see :func:`fedtrees.tree._to_sklearn.tree_to_sklearn`
        for the float32 thresholds, missing values and what is refused.
        """
        from fedtrees.tree._to_sklearn import tree_to_sklearn

        return tree_to_sklearn(self)

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        # Pickle goes through the one persistence format (STYLE habit 5).
        return (Tree.from_dict, (self.to_dict(),))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tree):
            return NotImplemented
        return all(
            _field_equal(getattr(self, f.name), getattr(other, f.name))
            for f in fields(self)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        task = "classification" if self.is_classifier else "regression"
        return (
            f"Tree({task}, n_nodes={self.n_nodes}, n_leaves={self.n_leaves}, "
            f"max_depth={self.max_depth}, n_features={self.n_features})"
        )


def _field_equal(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        return a.dtype == b.dtype and bool(
            np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        )
    return a == b
