"""Convert fitted scikit-learn trees into :class:`fedtrees.tree.Tree`.

scikit-learn routes a row by ``float32(x) <= t``. A fedtrees tree compares the
float64 ``x`` itself, so each threshold is moved to the float64 boundary of that
float32 comparison (:func:`float32_equivalent_threshold`): then ``x <= t'`` holds
exactly when ``float32(x) <= t``, for every float64 ``x``, and predictions are
identical to scikit-learn's.

Missing values: scikit-learn sends a NaN row left where
``tree_.missing_go_to_left`` is set. Where the node saw missing values at fit,
that is the learned side; where it saw none, scikit-learn sets it to
``n_left > n_right`` over the training *sample* counts of the children (ties
right). The converted tree keeps ``Missing.LARGER`` wherever that routes the same
(the larger ``count`` — scikit-learn's *weighted* counts — ties right), and an
explicit ``LEFT`` / ``RIGHT`` elsewhere: a learned side against the larger child,
or sample weights that make the weighted and unweighted majorities differ. So NaN
rows are routed exactly as scikit-learn routes them, and a tree fit without NaN
and without sample weights converts with ``LARGER`` everywhere.

A split whose right child receives only the missing rows has threshold ``inf``
in scikit-learn (every value goes left); the converted threshold is the largest
float64, which sends every finite value left too (a Tree routes no infinity).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from fedtrees._typing import FloatArray
from fedtrees._validation import LARGEST_FLOAT
from fedtrees.exceptions import ValidationError
from fedtrees.tree._kinds import LEAF, Missing, NodeKind

if TYPE_CHECKING:
    from fedtrees.tree._arrays import TreeArrays

T = TypeVar("T", bound="TreeArrays")
"""The tree class a reader builds (:class:`fedtrees.tree.Tree`)."""

__all__ = ["float32_equivalent_threshold", "tree_from_sklearn"]

_SKLEARN_LEAF = -1


def tree_from_sklearn(estimator: object, tree_class: type[T]) -> T:
    """Return the fedtrees Tree of a fitted single-output sklearn decision tree.

    Parameters
    ----------
    estimator : DecisionTreeClassifier or DecisionTreeRegressor
        Fitted, with one output. Node order, thresholds, values and weighted
        counts are kept; class values become distributions; NaN rows are routed
        as scikit-learn routes them (see the module notes on ``missing``).

    Raises
    ------
    ValidationError
        If ``estimator`` is not a fitted single-output sklearn decision tree.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from fedtrees.tree import Tree
    >>> X, y = [[0.0], [1.0], [2.0], [3.0]], ["a", "a", "b", "b"]
    >>> est = DecisionTreeClassifier(random_state=0).fit(X, y)
    >>> Tree.from_sklearn(est).predict([[0.2], [2.7]]).tolist()
    ['a', 'b']

    Fit with a missing value, the learned direction is kept (it sends NaN to
    the smaller child, so it is stored and shown):

    >>> X, y = [[0.0], [1.0], [2.0], [3.0], [np.nan]], ["a", "a", "a", "b", "b"]
    >>> tree = Tree.from_sklearn(DecisionTreeClassifier(random_state=0).fit(X, y))
    >>> print(tree.to_text(show_counts=False))
    |--- x0 <= 2.5
    |   |--- class: a
    |--- x0 > 2.5 or missing
    |   |--- class: b
    >>> tree.predict([[np.nan]]).tolist()
    ['b']
    """
    skl = _fitted_tree(estimator)
    leaf = skl.children_left == _SKLEARN_LEAF
    n = skl.node_count
    is_classifier = isinstance(estimator, DecisionTreeClassifier)
    value = skl.value[:, 0, :].astype(np.float64)
    if is_classifier:
        # Recent sklearn stores fractions, older versions counts: normalise both.
        value = value / value.sum(axis=1, keepdims=True)
    names = getattr(estimator, "feature_names_in_", None)
    return tree_class(
        kind=np.where(leaf, NodeKind.LEAF, NodeKind.NUMERIC).astype(np.int8),
        feature=np.where(leaf, LEAF, skl.feature),
        threshold=np.where(leaf, np.nan, _thresholds(skl.threshold)),
        left=np.where(leaf, LEAF, skl.children_left),
        right=np.where(leaf, LEAF, skl.children_right),
        branch_ptr=np.zeros(n + 1, dtype=np.int64),
        branch_code=np.zeros(0, dtype=np.int64),
        branch_child=np.zeros(0, dtype=np.int64),
        value=value,
        count=skl.weighted_n_node_samples,
        impurity=skl.impurity,
        n_features=int(skl.n_features),
        classes=_classes(estimator) if is_classifier else None,
        feature_names=None if names is None else tuple(str(s) for s in names),
        missing=_missing(skl, leaf),
    )


def _thresholds(threshold: FloatArray) -> FloatArray:
    """Float64 thresholds of the float32 comparisons; ``inf`` becomes the largest.

    ``x <= inf`` (the split sending only the missing rows right) holds for every
    finite ``x``, and so does ``x <= max float64``: the Tree needs it finite.
    """
    out: FloatArray = np.minimum(float32_equivalent_threshold(threshold), LARGEST_FLOAT)
    return out


def _missing(skl: Any, leaf: npt.NDArray[np.bool_]) -> npt.NDArray[np.int8]:
    """Per node the :class:`Missing` that routes NaN as ``missing_go_to_left`` does.

    ``LARGER`` where it agrees with the larger weighted child (ties right), an
    explicit ``LEFT`` / ``RIGHT`` elsewhere; leaves are ``LARGER``.
    """
    left = np.where(leaf, 0, skl.children_left)
    right = np.where(leaf, 0, skl.children_right)
    count = skl.weighted_n_node_samples
    goes_left = np.asarray(skl.missing_go_to_left, dtype=bool)
    larger_left = count[left] > count[right]
    explicit = np.where(goes_left, Missing.LEFT, Missing.RIGHT)
    same = leaf | (goes_left == larger_left)
    return np.where(same, Missing.LARGER, explicit).astype(np.int8)


def _fitted_tree(estimator: object) -> Any:
    if not isinstance(estimator, DecisionTreeClassifier | DecisionTreeRegressor):
        raise ValidationError(
            "Tree.from_sklearn expects a fitted sklearn DecisionTreeClassifier or "
            f"DecisionTreeRegressor. Got {type(estimator).__name__} instead."
        )
    skl = getattr(estimator, "tree_", None)
    if skl is None:
        raise ValidationError(
            f"Tree.from_sklearn: this {type(estimator).__name__} is not fitted; "
            "call fit first."
        )
    if skl.n_outputs != 1:
        raise ValidationError(
            f"Tree.from_sklearn supports single-output trees; this one has "
            f"{skl.n_outputs} outputs."
        )
    return skl


def _classes(estimator: object) -> np.ndarray[Any, Any]:
    classes = np.asarray(estimator.classes_)  # type: ignore[attr-defined]
    return classes.astype(str) if classes.dtype.kind == "O" else classes


def float32_equivalent_threshold(threshold: npt.ArrayLike) -> FloatArray:
    """Largest float64 ``t'`` with ``x <= t'`` exactly when ``float32(x) <= t``.

    ``float32(x) <= t`` holds iff ``float32(x) <= c``, with ``c`` the largest
    float32 not above ``t``; that holds iff ``x`` is below the midpoint ``m`` of
    ``c`` and the next float32, or equal to it when rounding to nearest-even
    picks ``c``. ``m`` is exact in float64.

    Examples
    --------
    >>> t = float32_equivalent_threshold([0.1])[0]
    >>> def sklearn_left(x):  # sklearn: float32(x), promoted, compared in float64
    ...     return bool(np.float64(np.float32(x)) <= 0.1)
    >>> sklearn_left(t), sklearn_left(np.nextafter(t, 1.0))
    (True, False)
    """
    t = np.asarray(threshold, dtype=np.float64)
    c = t.astype(np.float32)
    c = np.where(c.astype(np.float64) > t, np.nextafter(c, np.float32(-np.inf)), c)
    up = np.nextafter(c, np.float32(np.inf))
    midpoint = (c.astype(np.float64) + up.astype(np.float64)) / 2.0
    even = (c.view(np.uint32) & 1) == 0
    result: FloatArray = np.where(even, midpoint, np.nextafter(midpoint, -np.inf))
    return result
