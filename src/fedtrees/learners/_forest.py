"""A client's local CART or random forest: scikit-learn, returned as fedtrees Trees.

The CART adapter of the learners layer (docs/design.md, "Layers"): one silo fits
scikit-learn's ``DecisionTreeClassifier`` (:func:`fit_cart`) or
``RandomForestClassifier``/``RandomForestRegressor`` (:func:`fit_local_forest`) on its
own rows and gets back fedtrees :class:`Tree` objects whose class columns
follow the *agreed* label order, so trees of clients that lack a class still add
up. Categorical features
arrive as their integer codes and are split like numbers (scikit-learn's trees
have no categorical splits).

The trees route NaN by ``Missing.LARGER`` (the child with the larger weighted
count) at every node: fit on finite X they learned no direction, and they travel
as :func:`fedtrees.tree.pack_trees` arrays, which carry none. scikit-learn would
send NaN to the child with more *rows*, which a bootstrap, ``sample_weight`` or
``class_weight`` can make the lighter one; :meth:`Tree.from_sklearn` keeps that
rule as explicit directions, which are dropped here.

**Columns beyond float32.** scikit-learn's trees cast X to float32 and refuse a
value beyond its range (|x| > 3.4e38: "Input X contains infinity or a value too
large for dtype('float32')"), though float64 holds it. A column whose largest
|x| reaches 2^126 is therefore fitted as ``x · 2^-k`` (:func:`float32_scaled`:
an exact power of two that brings it below 2^126) and the tree's thresholds on
it are multiplied back by ``2^k`` (:func:`float32_unscaled`): since scaling by a
power of two is exact and commutes with float32 rounding, the tree routes every
row as the tree fitted on unscaled float32 values would, if float32 reached that
far. Other columns are untouched (the same trees as before).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.tree import DecisionTreeClassifier

from fedtrees._random import sklearn_seed
from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import LARGEST_FLOAT
from fedtrees.exceptions import ValidationError
from fedtrees.tree import Missing, Tree

__all__ = [
    "FOREST_PARAMS",
    "fit_cart",
    "fit_local_forest",
    "float32_scaled",
    "float32_unscaled",
]

FOREST_PARAMS: Final = frozenset(
    {
        "n_estimators",
        "criterion",
        "max_depth",
        "min_samples_split",
        "min_samples_leaf",
        "min_impurity_decrease",
        "max_features",
        "bootstrap",
    }
)
"""The scikit-learn forest parameters a request may set (nothing else)."""
_FLOAT32_EXPONENT: Final = 126
"""Columns are brought below ``2^126`` (float32 reaches just under ``2^128``)."""


def float32_scaled(X: FloatArray) -> tuple[FloatArray, IntArray]:
    """Return ``X`` with every column beyond float32's range scaled into it.

    Returns ``(X · 2^-k, k)`` with one exponent ``k >= 0`` per column: 0 for a
    column whose largest |x| is below ``2^126`` (left as it is), else the
    smallest that brings it below. Exact: a power of two.

    Examples
    --------
    >>> scaled, k = float32_scaled(np.array([[1.0, 1e300], [2.0, -3e299]]))
    >>> k.tolist(), bool(np.isfinite(scaled.astype(np.float32)).all())
    ([0, 871], True)
    """
    largest = np.max(np.abs(X), axis=0, initial=0.0)
    _, exponent = np.frexp(largest)  # largest < 2**exponent
    k: IntArray = np.maximum(exponent - _FLOAT32_EXPONENT, 0).astype(np.int64)
    if not k.any():
        return X, k
    return np.ldexp(X, -k[None, :]), k


def float32_unscaled(tree: Tree, k: IntArray) -> Tree:
    """Return ``tree`` with its thresholds on scaled columns multiplied by ``2^k``.

    The inverse of :func:`float32_scaled` for a tree fitted on the scaled X.
    """
    if not k.any():
        return tree
    split = tree.feature >= 0
    threshold = tree.threshold.copy()
    with np.errstate(over="ignore"):
        back = np.ldexp(threshold[split], k[tree.feature[split]])
    threshold[split] = np.minimum(back, LARGEST_FLOAT)  # "x <= largest": every x
    return dataclasses.replace(tree, threshold=threshold)


def fit_local_forest(
    X: FloatArray,
    y: FloatArray | IntArray,
    *,
    n_classes: int | None,
    params: Mapping[str, Any],
    seed: int,
    sample_weight: FloatArray | None = None,
) -> list[Tree]:
    """Fit a scikit-learn random forest on one silo; return its trees.

    Parameters
    ----------
    X : array of shape (n_rows, n_features)
        Finite features (categorical columns as codes).
    y : array of shape (n_rows,)
        Label codes in ``[0, n_classes)`` for classification, numbers otherwise.
    n_classes : int or None
        Number of agreed classes (None: regression). Trees get one value column
        per agreed class, zero for classes this silo lacks.
    params : mapping
        scikit-learn forest parameters, keys from :data:`FOREST_PARAMS`.
    seed : int
        The forest's ``random_state``.

    Examples
    --------
    >>> X = np.arange(6.0)[:, None]; y = np.array([0, 0, 0, 2, 2, 2])
    >>> trees = fit_local_forest(X, y, n_classes=3, params={"n_estimators": 2},
    ...                          seed=0)
    >>> trees[0].value.shape[1], trees[0].classes.tolist()
    (3, [0, 1, 2])
    """
    unknown = sorted(set(params) - FOREST_PARAMS)
    if unknown:
        raise ValidationError(
            f"Local forest: unknown parameters {unknown}; allowed are "
            f"{sorted(FOREST_PARAMS)}."
        )
    kwargs = {**params, "random_state": seed, "n_jobs": 1}
    scaled, k = float32_scaled(X)
    if n_classes is None:
        regressor = RandomForestRegressor(**kwargs).fit(scaled, y, sample_weight)
        trees = [_from_sklearn(est) for est in regressor.estimators_]
    else:
        classifier = RandomForestClassifier(**kwargs).fit(scaled, y, sample_weight)
        present = np.asarray(classifier.classes_, dtype=np.int64)
        trees = [
            _agreed_columns(est, present, n_classes) for est in classifier.estimators_
        ]
    return [float32_unscaled(tree, k) for tree in trees]


def fit_cart(
    X: FloatArray,
    y: IntArray,
    *,
    n_classes: int,
    max_depth: int | None,
    seed: int,
    criterion: str = "gini",
    **params: Any,
) -> Tree:
    """Fit one scikit-learn classification tree on a silo; return it as a Tree.

    Parameters
    ----------
    X : array of shape (n_rows, n_features)
        Finite features (categorical columns as codes, split like numbers).
    y : int array of shape (n_rows,)
        Label codes in ``[0, n_classes)``; value columns follow the agreed classes.
    criterion : {"gini", "entropy"}
    seed : int
        The tree's ``random_state`` (scikit-learn permutes features per node).
    **params
        Other ``DecisionTreeClassifier`` parameters (``min_samples_leaf``, ...).

    Examples
    --------
    >>> tree = fit_cart(np.arange(4.0)[:, None], np.array([0, 0, 2, 2]),
    ...                 n_classes=3, max_depth=2, seed=0)
    >>> tree.classes.tolist(), round(float(tree.threshold[0]), 3)
    ([0, 1, 2], 1.5)
    """
    scaled, k = float32_scaled(X)
    estimator = DecisionTreeClassifier(
        criterion=criterion,
        max_depth=max_depth,
        random_state=sklearn_seed(seed),
        **params,
    ).fit(_by_column(scaled), y)
    present = np.asarray(estimator.classes_, dtype=np.int64)
    return float32_unscaled(_agreed_columns(estimator, present, n_classes), k)


def _by_column(X: FloatArray) -> npt.NDArray[np.float32]:
    """``X`` as scikit-learn's trees read it: float32, stored column by column.

    A tree sorts one column of a node's rows at a time; stored by row, each
    value is a separate memory read (about 12 % of a deep fit's time on a
    large X). The same tree either way: scikit-learn casts to float32 itself.
    """
    return np.asfortranarray(X, dtype=np.float32)


def _agreed_columns(estimator: Any, present: IntArray, n_classes: int) -> Tree:
    """Spread a tree's value columns (classes seen here) over the agreed classes.

    The tree routes NaN as :func:`_from_sklearn`'s; one ``replace`` (each
    validates the whole tree).
    """
    tree = Tree.from_sklearn(estimator)
    value = np.zeros((tree.n_nodes, n_classes))
    value[:, present] = tree.value
    return dataclasses.replace(
        tree, value=value, classes=np.arange(n_classes), missing=_larger(tree)
    )


def _from_sklearn(estimator: Any) -> Tree:
    """Return the Tree of a scikit-learn tree fit on finite X (no NaN direction)."""
    tree = Tree.from_sklearn(estimator)
    return dataclasses.replace(tree, missing=_larger(tree))


def _larger(tree: Tree) -> npt.NDArray[np.int8]:
    """``Missing.LARGER`` at every node (the module docstring)."""
    return np.full(tree.n_nodes, Missing.LARGER, dtype=np.int8)
