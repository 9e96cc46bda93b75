"""Export fedtrees trees as fitted scikit-learn trees and forests.

The reverse of :mod:`fedtrees.tree._sklearn`. Each tree is built through
scikit-learn's public tree state: ``sklearn.tree._tree.Tree(n_features,
n_classes, n_outputs)`` and ``__setstate__`` with ``nodes`` in the installed
scikit-learn's own node dtype (``NODE_DTYPE``, which holds
``missing_go_to_left``) and ``values``; the estimator around it gets the fitted
attributes scikit-learn reads. A list of trees becomes a
``RandomForestClassifier`` / ``RandomForestRegressor``, whose prediction is the
unweighted mean of the trees' leaf values (the classifier's label the first
class of the largest mean, on ties), which is the prediction of every forest
in fedtrees.

- **Numeric splits.** fedtrees sends ``x <= t`` left, in float64; scikit-learn
  reads X as float32 and sends ``float32(x) <= T`` left. The export writes
  ``T = float64(float32(t))`` (rounded to nearest; beyond the float32 range
  ``±inf``), so scikit-learn sends a row left exactly when
  ``float32(x) <= float32(t)`` — the rule of the XGBoost export
  (``FedGBDT.to_xgboost``). Every value at or below the threshold goes left;
  the two models disagree only on a value above the threshold that rounds to
  the threshold's own float32 (within half a float32 step of it). The last
  bin's threshold (the largest float, which splits the missing values from
  the others) becomes ``inf``: every value goes left, as in fedtrees.
  scikit-learn refuses rows beyond the float32 range (they become infinite).
- **Missing values.** ``missing_go_to_left`` is set where a NaN goes left
  (a learned ``Missing.LEFT``, or ``LARGER`` where the left child has the
  larger training count): NaN rows are routed as fedtrees routes them.
- **Values and counts.** ``values`` are the class distributions (the fractions
  scikit-learn stores since 1.4) or the means; ``weighted_n_node_samples``
  the weighted training counts (SHAP's cover), ``n_node_samples`` those counts
  rounded (a federated tree keeps no unweighted row counts).
- **Impurity.** Kept where the tree knows it; where it is NaN (unknown), a
  classification node gets the impurity of its class distribution under the
  criterion (Gini unless ``criterion="entropy"``, in bits as scikit-learn)
  and a regression node 0, so ``feature_importances_`` is finite (a
  regression tree without impurities has zero importances).
- **Refused.** Client-indicator splits (scikit-learn's rows carry no client:
  refit without them, FedForest's ``split_on_client=False``) and splits by
  category sets, CART's or ID3's multiway ones over categories or bins
  (scikit-learn splits numbers at thresholds): the error names the tree (in a
  forest), the node, the column and the category sets. **Decision:** a
  categorical column no split uses is refused too, naming the column: the
  scikit-learn model would read numbers in that column, where the fedtrees
  model reads categories. One-hot encode such a column into numeric columns
  before fitting.

Tested with scikit-learn 1.5 (the oldest supported) and 1.9.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.tree._tree import NODE_DTYPE
from sklearn.tree._tree import Tree as SklearnTree

from fedtrees._typing import FloatArray
from fedtrees.exceptions import ValidationError
from fedtrees.tree._kinds import NodeKind
from fedtrees.tree._render import format_condition
from fedtrees.tree._rules import child_conditions
from fedtrees.tree._structure import missing_goes_left, node_depths

if TYPE_CHECKING:
    from fedtrees.tree._arrays import TreeArrays

__all__ = [
    "check_exportable",
    "forest_to_sklearn",
    "refuse_categorical_columns",
    "sklearn_threshold",
    "tree_to_sklearn",
]

_LEAF: Final = -1  # scikit-learn's TREE_LEAF
_UNDEFINED: Final = -2  # scikit-learn's TREE_UNDEFINED (a leaf's feature, threshold)
_ONE_HOT: Final = (
    "One-hot encode the column into numeric columns before fitting, then export."
)


def tree_to_sklearn(
    tree: TreeArrays,
    *,
    classes: npt.ArrayLike | None = None,
    criterion: str | None = None,
    owner: str = "Tree.to_sklearn",
) -> DecisionTreeClassifier | DecisionTreeRegressor:
    """Return ``tree`` as a fitted ``DecisionTreeClassifier`` / ``Regressor``.

    Parameters
    ----------
    tree : Tree
        Numeric splits only, no categorical column (module notes).
    classes : array-like of shape (n_classes,), optional
        The labels ``classes_`` reports (default: the tree's classes).
    criterion : str, optional
        The estimator's ``criterion`` (scikit-learn's default if None); it fills
        unknown impurities of classification nodes.
    owner : str
        The caller, for error messages.

    Returns
    -------
    DecisionTreeClassifier or DecisionTreeRegressor
        Its ``predict`` (``predict_proba``) equals the tree's on every row
        within the float32 range, NaN included, but for the float32 rounding
        in the module notes. ``feature_names_in_`` is set when the tree has
        feature names.

    Raises
    ------
    ValidationError
        If the tree has a client-indicator or categorical split (naming the
        node) or a categorical column.

    Examples
    --------
    >>> from fedtrees.tree import Missing, NodeStats, TreeBuilder
    >>> b = TreeBuilder(n_features=1, classes=np.array(["a", "b"]))
    >>> root = b.add_root(NodeStats.from_class_counts([3, 3]))
    >>> _ = b.split_numeric(root, 0, 0.5, NodeStats.from_class_counts([3, 1]),
    ...                     NodeStats.from_class_counts([0, 2]), missing=Missing.RIGHT)
    >>> est = b.build().to_sklearn()
    >>> est.predict([[0.0], [1.0], [np.nan]]).tolist()
    ['a', 'b', 'b']
    """
    check_exportable([tree], owner, forest=False)
    estimator = _estimator(tree, criterion)
    _set_fitted(estimator, tree, classes)
    if tree.feature_names is not None:
        estimator.feature_names_in_ = np.asarray(tree.feature_names, dtype=object)
    return estimator


def forest_to_sklearn(
    trees: Sequence[TreeArrays],
    *,
    classes: npt.ArrayLike | None = None,
    criterion: str | None = None,
    owner: str = "forest_to_sklearn",
) -> RandomForestClassifier | RandomForestRegressor:
    """Return ``trees`` as a fitted ``RandomForestClassifier`` / ``Regressor``.

    Parameters
    ----------
    trees : sequence of Tree
        At least one; all classification or all regression, over the same
        columns; numeric splits only (module notes).
    classes, criterion, owner
        As :func:`tree_to_sklearn`; ``criterion`` is the forest's too.

    Returns
    -------
    RandomForestClassifier or RandomForestRegressor
        ``n_estimators`` is the number of trees; ``estimators_`` hold the
        trees (without feature names, as scikit-learn's own forests), the
        forest holds ``feature_names_in_`` when the trees have names. Its
        predictions equal the unweighted mean of the trees' (see
        :func:`tree_to_sklearn` for the float32 rounding). The other
        hyper-parameters are scikit-learn's defaults: the forest was not grown
        by them.

    Raises
    ------
    ValidationError
        If there is no tree, the trees disagree on the task or the columns, or
        a tree has a split scikit-learn cannot hold (naming tree and node).
    """
    if len(trees) == 0:
        raise ValidationError(f"{owner}: there is no tree to export.")
    _check_alike(trees, owner)
    check_exportable(trees, owner, forest=True)
    first = trees[0]
    template = _estimator(first, criterion)
    kind = RandomForestClassifier if first.is_classifier else RandomForestRegressor
    forest = kind(n_estimators=len(trees), criterion=template.criterion)
    forest.estimator_ = template
    forest.estimators_ = [
        _set_fitted(_estimator(tree, criterion), tree, classes) for tree in trees
    ]
    _set_shape(forest, first, classes)
    if first.feature_names is not None:
        forest.feature_names_in_ = np.asarray(first.feature_names, dtype=object)
    return forest


def check_exportable(trees: Sequence[TreeArrays], owner: str, *, forest: bool) -> None:
    """Refuse the first non-numeric split, then any categorical column."""
    for index, tree in enumerate(trees):
        split = (tree.kind != NodeKind.NUMERIC) & (tree.kind != NodeKind.LEAF)
        if split.any():
            node = int(np.flatnonzero(split)[0])
            where = f"tree {index}, node {node}" if forest else f"node {node}"
            raise ValidationError(_split_message(tree, node, where, owner))
    refuse_categorical_columns(trees[0].categories, trees[0].feature_names, owner)


def _split_message(tree: TreeArrays, node: int, where: str, owner: str) -> str:
    """Say which split cannot be exported, and what to do instead."""
    branches = " | ".join(
        format_condition(tree, c) for _, c in child_conditions(tree, node)
    )
    if tree.kind[node] == NodeKind.CLIENT:
        return (
            f"{owner}: {where} splits on the client indicator ({branches}); "
            "scikit-learn's rows carry no client. Refit without client splits "
            "(FedForest: split_on_client=False), then export."
        )
    column = _column_name(tree.feature_names, int(tree.feature[node]))
    return (
        f"{owner}: {where} splits column {column} by category sets ({branches}); "
        "scikit-learn's trees split numbers at thresholds only. One-hot encode a "
        "categorical column into numeric columns before fitting, then export (a "
        "tree over binned numeric columns, as ID3's, cannot be exported)."
    )


def refuse_categorical_columns(
    categories: Sequence[Sequence[str] | None] | None,
    feature_names: Sequence[str] | None,
    owner: str,
) -> None:
    """Refuse a categorical column (``categories[j]`` not None), naming it.

    **Decision:** even a column no split uses: the scikit-learn model would
    read numbers there, where the fedtrees model reads categories.
    """
    if categories is None:
        return
    for j, names in enumerate(categories):
        if names is not None:
            column = _column_name(feature_names, j)
            raise ValidationError(
                f"{owner}: column {column} is categorical; a scikit-learn model "
                f"reads numbers in every column. {_ONE_HOT}"
            )


def _column_name(feature_names: Sequence[str] | None, j: int) -> str:
    return repr(feature_names[j]) if feature_names is not None else str(j)


def _check_alike(trees: Sequence[TreeArrays], owner: str) -> None:
    first = trees[0]
    for index, tree in enumerate(trees):
        same = (
            tree.n_features == first.n_features
            and tree.is_classifier == first.is_classifier
            and tree.value.shape[1] == first.value.shape[1]
            and tree.feature_names == first.feature_names
        )
        if not same:
            raise ValidationError(
                f"{owner}: tree {index} differs from tree 0 in its task, classes "
                "or columns; a forest's trees must share them."
            )


def _estimator(tree: TreeArrays, criterion: str | None) -> Any:
    """Return the unfitted tree estimator (with ``criterion`` if given)."""
    params = {} if criterion is None else {"criterion": criterion}
    if tree.is_classifier:
        return DecisionTreeClassifier(**params)
    return DecisionTreeRegressor(**params)


def _set_fitted(estimator: Any, tree: TreeArrays, classes: npt.ArrayLike | None) -> Any:
    """Give ``estimator`` the fitted attributes and the ``tree_`` of ``tree``."""
    _set_shape(estimator, tree, classes)
    estimator.max_features_ = tree.n_features
    estimator.tree_ = _sklearn_tree(tree, str(estimator.criterion))
    return estimator


def _set_shape(estimator: Any, tree: TreeArrays, classes: npt.ArrayLike | None) -> None:
    """Set ``n_features_in_``, ``n_outputs_`` and (classifiers) the classes."""
    estimator.n_features_in_ = tree.n_features
    estimator.n_outputs_ = 1
    if tree.classes is not None:
        labels = tree.classes if classes is None else np.asarray(classes)
        estimator.classes_ = labels
        estimator.n_classes_ = int(labels.shape[0])


def _sklearn_tree(tree: TreeArrays, criterion: str) -> Any:
    """Build scikit-learn's ``Tree`` of ``tree`` through its public state."""
    n_classes = tree.value.shape[1] if tree.is_classifier else 1
    out = SklearnTree(tree.n_features, np.asarray([n_classes], dtype=np.intp), 1)
    out.__setstate__(
        {
            "max_depth": int(node_depths(tree).max()),
            "node_count": tree.n_nodes,
            "nodes": _nodes(tree, criterion),
            "values": np.ascontiguousarray(tree.value[:, None, :], dtype=np.float64),
        }
    )
    return out


def _nodes(tree: TreeArrays, criterion: str) -> npt.NDArray[np.void]:
    """Return the node records of ``tree`` in the installed scikit-learn's dtype."""
    leaf = tree.kind == NodeKind.LEAF
    nodes = np.zeros(tree.n_nodes, dtype=NODE_DTYPE)
    nodes["left_child"] = np.where(leaf, _LEAF, tree.left)
    nodes["right_child"] = np.where(leaf, _LEAF, tree.right)
    nodes["feature"] = np.where(leaf, _UNDEFINED, tree.feature)
    nodes["threshold"] = np.where(leaf, _UNDEFINED, sklearn_threshold(tree.threshold))
    nodes["impurity"] = _impurity(tree, criterion)
    nodes["n_node_samples"] = np.rint(np.maximum(tree.count, 0.0)).astype(np.int64)
    nodes["weighted_n_node_samples"] = tree.count
    nodes["missing_go_to_left"] = ~leaf & missing_goes_left(tree)
    return nodes


def sklearn_threshold(threshold: npt.ArrayLike) -> FloatArray:
    """Return ``T = float64(float32(t))``, the threshold scikit-learn compares with.

    scikit-learn's ``float32(x) <= T`` then holds exactly when
    ``float32(x) <= float32(t)``. Rounded to nearest; a threshold beyond the
    float32 range becomes ``±inf``; NaN stays NaN.

    Examples
    --------
    >>> t = sklearn_threshold([0.1, 1e300])
    >>> t[0] == np.float32(0.1), t[1]
    (np.True_, np.float64(inf))
    """
    with np.errstate(over="ignore"):
        rounded = np.asarray(threshold, dtype=np.float64).astype(np.float32)
    out: FloatArray = rounded.astype(np.float64)
    return out


def _impurity(tree: TreeArrays, criterion: str) -> FloatArray:
    """Return the impurities; where NaN, that of the node's distribution (or 0)."""
    unknown = np.isnan(tree.impurity)
    if not unknown.any():
        return tree.impurity
    if not tree.is_classifier:
        filled: FloatArray = np.where(unknown, 0.0, tree.impurity)
        return filled
    p = tree.value
    if criterion in ("entropy", "log_loss"):  # in bits, as scikit-learn's
        estimate = -(p * np.log2(np.where(p > 0, p, 1.0))).sum(axis=1)
    else:
        estimate = 1.0 - np.square(p).sum(axis=1)
    result: FloatArray = np.where(unknown, estimate, tree.impurity)
    return result
