"""One home for estimators whose fitted model is a single tree over codes.

ICDTA4FL and Federated-ID3 end with one :class:`fedtrees.tree.Tree` that routes
*codes*: categorical columns as category codes and, when the method binned them,
numeric columns as bin codes (:class:`fedtrees.algorithms._discretize.Binning`).
This mixin holds what they share: the fit entry point (no sample weights), the
tree metadata, encoding X at predict, and the predictions.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import numpy.typing as npt
from sklearn.utils.validation import check_is_fitted

from fedtrees._typing import FloatArray
from fedtrees.algorithms._base import FederatedEstimator
from fedtrees.algorithms._discretize import Binning
from fedtrees.tree import Tree

__all__ = ["SingleTreeClassifier"]


class SingleTreeClassifier(FederatedEstimator):
    """Mixin: fit, metadata and prediction of a federated single-tree classifier.

    Put it left of scikit-learn's ``ClassifierMixin``: its tags build on those.

    A subclass gives the fit template's hooks (``_strategy``, ``_keep``); its
    ``_keep`` sets ``binning_`` (None: no binned column) before it calls
    :meth:`_with_meta` for its trees.
    """

    _task = "classification"
    binning_: Binning | None

    def fit(  # type: ignore[override]  # no sample_weight (see the subclasses)
        self,
        X: object,
        y: npt.ArrayLike,
        groups: npt.ArrayLike | None = None,
        *,
        noise_seed: int | None = None,
    ) -> Any:
        """Fit on in-process clients, one per value of ``groups``.

        ``groups=None`` puts every row on one client (centralized training, with
        a :class:`~fedtrees.exceptions.CentralizedFitWarning`). ``noise_seed``:
        the simulated sites' secret noise seed (DP releases only, e.g.
        Federated-ID3 with ``epsilon``; docs/security.md): None draws fresh
        operating-system noise, an int reproduces the fit.
        """
        return self._fit_rows(X, y, groups, None, noise_seed)

    def _with_meta(self, tree: Tree) -> Tree:
        """Return the tree with names, agreed classes, category or bin labels."""
        meta = self._tree_meta()
        meta.pop("n_features")
        if self.binning_ is not None:
            meta["categories"] = self.binning_.labels
        return dataclasses.replace(tree, **meta)

    def _codes(self, X: object) -> FloatArray:
        """X as the codes the tree routes (categories, bins of binned columns)."""
        check_is_fitted(self, "tree_")
        matrix = self._encode(X)
        return matrix if self.binning_ is None else self.binning_.transform(matrix)

    def predict_proba(self, X: object) -> FloatArray:
        """Class distribution of each row's leaf."""
        codes = self._codes(X)  # checks that the model is fitted
        proba: FloatArray = self.tree_.predict_proba(codes)  # type: ignore[attr-defined]
        return proba

    def predict(self, X: object) -> npt.NDArray[Any]:
        """Return the leaf's most likely class (first of ``classes_`` on ties)."""
        proba = self.predict_proba(X)
        labels: npt.NDArray[Any] = self.classes_[np.argmax(proba, axis=1)]
        return labels

    def to_sklearn(self) -> Any:
        """Return ``tree_`` as a fitted scikit-learn ``DecisionTreeClassifier``.

        It takes the X that :meth:`predict` takes and predicts the same, but
        for float32 rounding (:mod:`fedtrees.tree._to_sklearn`). Only a tree
        of numeric splits over numeric columns can be exported: ICDTA4FL with
        ``base="cart"`` and the synthetic-data tree over numeric columns.

        Raises
        ------
        ValidationError
            If the tree has a categorical split (ID3's multiway splits, over
            categories or bins of a numeric column), naming the node and the
            split; or if a column is categorical (one-hot encode it into
            numeric columns before fitting).
        """
        # Imported here: it imports sklearn.ensemble, which fit does not need.
        from fedtrees.tree import (
            check_exportable,
            refuse_categorical_columns,
            tree_to_sklearn,
        )

        check_is_fitted(self, "tree_")
        owner = f"{type(self).__name__}.to_sklearn"
        tree: Tree = self.tree_  # type: ignore[attr-defined]
        check_exportable([tree], owner, forest=False)
        names = getattr(self, "feature_names_in_", None)
        names = None if names is None else tuple(str(n) for n in names)
        refuse_categorical_columns(self.categories_, names, owner)
        # The X of predict: the estimator's column names (the synthetic tree's
        # are its one-hot names, which equal them over numeric columns).
        tree = dataclasses.replace(tree, feature_names=names)
        return tree_to_sklearn(tree, classes=self.classes_, owner=owner)

    def __sklearn_tags__(self) -> Any:
        """Mark the poor score: a depth-|F|/2 tree on 5 bins is weak on toy data."""
        tags = super().__sklearn_tags__()  # type: ignore[misc]
        tags.classifier_tags.poor_score = True
        return tags
