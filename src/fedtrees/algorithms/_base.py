"""What every federated estimator shares: inputs in, federation built, schema kept.

``fit(X, y, groups=None)`` simulates the federation in process: one client per
value of ``groups`` (all rows one client when None, so scikit-learn's checks,
pipelines and cross-validation work). Inputs are numpy arrays or DataFrames;
pandas ``category``/object columns are categorical features; NaN in X is refused
naming the column; labels may be strings. At predict time X is encoded with the
categories agreed at fit; an unseen category gets a code no split lists, so it
follows the default branch.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from fedtrees._typing import FloatArray
from fedtrees._validation import (
    check_class_labels,
    check_matrix,
    check_regression_target,
    check_sample_weight,
    check_total_weight,
)
from fedtrees.algorithms._progress import round_progress
from fedtrees.exceptions import ValidationError
from fedtrees.federation import (
    Federation,
    FederationInfo,
    Ledger,
    RoundCallback,
    RunResult,
    ServerStrategy,
)
from fedtrees.federation._data import as_frame

__all__ = ["FederatedEstimator"]

Task = Literal["classification", "regression"]


class FederatedEstimator:
    """Mixin: fitting entry points, input validation and encoding of all estimators.

    A subclass implements ``_fit(federation, classes, callbacks)``.
    """

    _task: Task = "classification"
    _input_names: list[str] | None = None

    # -- fit ---------------------------------------------------------------------
    def fit(
        self,
        X: object,
        y: npt.ArrayLike,
        groups: npt.ArrayLike | None = None,
        sample_weight: npt.ArrayLike | None = None,
    ) -> Any:
        """Fit on in-process clients: one per distinct value of ``groups``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Categorical columns as pandas ``category`` (or object) dtype.
        y : array-like of shape (n_samples,)
        groups : array-like of shape (n_samples,), optional
            The client (site) of every row; None means one client.
        sample_weight : array-like of shape (n_samples,), optional
            Per-row weights (>= 0, not all zero); each client keeps its own.
        """
        federation, classes = self._federation(
            X, y, groups, sample_weight, getattr(self, "workers", 1)
        )
        return self._fit(federation, classes, ())

    def fit_federation(
        self, federation: Federation, *, callbacks: Sequence[RoundCallback] = ()
    ) -> Any:
        """Fit on any federation: in-process clients or a Flower deployment.

        ``callbacks`` are called with a :class:`fedtrees.federation.RoundEnv` after
        every round (per-round metrics for logs and dashboards).
        """
        self._input_names = None
        return self._fit(federation, None, callbacks)

    def _fit(
        self,
        federation: Federation,
        classes: npt.NDArray[Any] | None,
        callbacks: Sequence[RoundCallback],
    ) -> Any:
        raise NotImplementedError

    def _federation(
        self,
        X: object,
        y: npt.ArrayLike,
        groups: npt.ArrayLike | None,
        sample_weight: npt.ArrayLike | None,
        workers: int = 1,
    ) -> tuple[Federation, npt.NDArray[Any] | None]:
        """Validate ``fit``'s inputs; return the in-process federation and classes.

        **Decision:** the estimator holds every row, so the categories of every
        categorical column are known here: it declares them (the frame's
        categories, in order) and, for classification, the classes (the labels
        of ``y``), so the agreement sends no category value and no label set up
        (``fit_federation`` declares only what its federation declares).
        """
        owner = type(self).__name__
        frame = _checked_frame(X, owner)
        target = _checked_target(y, frame.shape[0], self._task, owner)
        keys = (
            np.zeros(frame.shape[0], dtype=np.int64)
            if groups is None
            else np.asarray(groups)
        )
        if keys.shape[0] != frame.shape[0]:
            raise ValidationError(
                f"{owner}.fit: groups has {keys.shape[0]} entries; X has "
                f"{frame.shape[0]} rows."
            )
        weights = _checked_weights(sample_weight, frame.shape[0], owner)
        declared = {
            str(column): [str(v) for v in frame[column].cat.categories]
            for column in frame.columns
            if isinstance(frame[column].dtype, pd.CategoricalDtype)
        }
        federation = Federation.from_groups(
            frame,
            target,
            keys,
            sample_weight=weights,
            workers=workers,
            categories=declared,
        )
        classes = np.unique(target) if self._task == "classification" else None
        if classes is not None:
            federation = federation.with_classes(classes.tolist())
        self._input_names = list(frame.columns) if isinstance(X, pd.DataFrame) else None
        return federation, classes

    def _run(
        self,
        federation: Federation,
        strategy: ServerStrategy,
        callbacks: Sequence[RoundCallback] = (),
    ) -> RunResult:
        """Run ``strategy`` with a fresh ledger, the progress bar and ``callbacks``."""
        verbose = bool(getattr(self, "verbose", False))
        with round_progress(type(self).__name__, verbose) as progress:
            return federation.run(
                strategy,
                task=self._task,
                timeout=getattr(self, "timeout", 60.0),
                callbacks=[*progress, *callbacks],
                ledger=Ledger(),
            )

    def _remember(self, info: FederationInfo, classes: npt.NDArray[Any] | None) -> None:
        """Fitted attributes that describe the inputs (sklearn conventions)."""
        schema = info.schema
        self.n_features_in_ = schema.n_features
        names = getattr(self, "_input_names", None)
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.feature_kinds_ = schema.feature_kinds
        self.categories_ = schema.categories
        self.clients_ = info.clients
        if self._task == "classification":
            self.classes_ = _native_classes(schema.classes, schema.label_type, classes)

    def _tree_meta(self, *, with_clients: bool = False) -> dict[str, Any]:
        """Metadata of the fitted trees: names, classes, categories (clients)."""
        names = getattr(self, "feature_names_in_", None)
        meta = {
            "n_features": self.n_features_in_,
            "classes": getattr(self, "classes_", None),
            "feature_names": None if names is None else tuple(str(n) for n in names),
            "categories": self.categories_
            if any(c is not None for c in self.categories_)
            else None,
        }
        if with_clients:
            meta["clients"] = tuple(self.clients_)
        return meta

    # -- predict -------------------------------------------------------------------
    def _encode(self, X: object) -> FloatArray:
        """X as the numeric matrix trees route (categorical columns as codes)."""
        check_is_fitted(self, "n_features_in_")
        owner = type(self).__name__
        frame = as_frame(X, owner)
        names = getattr(self, "feature_names_in_", None)
        if (
            names is not None
            and isinstance(X, pd.DataFrame)
            and list(frame.columns) != list(names)
        ):
            raise ValidationError(
                f"{owner}: X has columns {list(frame.columns)}; the model was fitted "
                "on "
                f"{list(names)}."
            )
        if frame.shape[1] != self.n_features_in_:
            raise ValidationError(
                f"X has {frame.shape[1]} features, but {owner} is expecting "
                f"{self.n_features_in_} features as input."
            )
        columns = [
            self._encode_column(frame.iloc[:, j], j) for j in range(self.n_features_in_)
        ]
        matrix = np.column_stack(columns).astype(np.float64)
        return check_matrix(matrix, "X", owner, column_names=_names(self))

    def _encode_column(self, column: pd.Series, j: int) -> FloatArray:
        categories = self.categories_[j]
        if categories is None:
            values = pd.to_numeric(
                column.astype("object")
                if isinstance(column.dtype, pd.CategoricalDtype)
                else column,
                errors="coerce",
            )
            return np.asarray(values, dtype=np.float64)
        text = column.astype("object")
        missing = text.isna().to_numpy()
        codes = pd.Index(categories, dtype=object).get_indexer(
            pd.Index(text.astype(str))
        )
        codes = np.where(codes < 0, len(categories), codes).astype(np.float64)
        return np.where(missing, np.nan, codes)


def _names(estimator: Any) -> list[str] | None:
    names = getattr(estimator, "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]


def _checked_frame(X: object, owner: str) -> pd.DataFrame:
    frame = as_frame(X, owner)
    if frame.shape[0] == 0:
        raise ValidationError(
            f"{owner}.fit: X: found array with 0 sample(s) (shape={frame.shape}) "
            "while a minimum of 1 is required."
        )
    if frame.shape[1] == 0:
        raise ValidationError(
            f"{owner}.fit: X: found array with 0 feature(s) (shape={frame.shape}) "
            "while a minimum of 1 is required."
        )
    for column in frame.columns:
        series = frame[column]
        numeric = not isinstance(series.dtype, pd.CategoricalDtype)
        values = pd.to_numeric(series, errors="coerce") if numeric else series
        bad = values.isna().to_numpy()
        if numeric:
            bad = bad | ~np.isfinite(values.to_numpy(np.float64, na_value=np.nan))
        if bad.any():
            raise ValidationError(
                f"{owner}.fit: column {str(column)!r} holds NaN, inf or non-numeric "
                f"values (first at row {int(np.flatnonzero(bad)[0])}); fill or drop "
                "them."
            )
    return frame


def _checked_weights(
    sample_weight: npt.ArrayLike | None, n: int, owner: str
) -> FloatArray | None:
    if sample_weight is None:
        return None
    weights = check_sample_weight(sample_weight, n, f"{owner}.fit")
    return check_total_weight(weights, f"{owner}.fit")


def _checked_target(
    y: npt.ArrayLike, n: int, task: Task, owner: str
) -> npt.NDArray[Any]:
    if y is None:
        raise ValidationError(
            f"{owner} requires y to be passed, but the target y is None."
        )
    target = np.asarray(y)
    if target.ndim == 2 and target.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected; fedtrees "
            f"({owner}.fit) ravels it to shape (n_samples,).",
            DataConversionWarning,
            stacklevel=4,
        )
        target = target.ravel()
    if target.ndim != 1 or target.shape[0] != n:
        raise ValidationError(
            f"{owner}.fit: y must have shape ({n},); got {target.shape}."
        )
    if task == "classification":
        if pd.isna(target).any():
            raise ValidationError(f"{owner}.fit: y holds missing values.")
        check_class_labels(target, f"{owner}.fit")
        check_classification_targets(target)
        return target
    return check_regression_target(target, f"{owner}.fit")


def _native_classes(
    agreed: tuple[str, ...], label_type: str, local: npt.NDArray[Any] | None
) -> npt.NDArray[Any]:
    """Return the agreed labels in their original type (the fit's, if they match)."""
    if local is not None and [str(c) for c in local] == list(agreed):
        return local
    if label_type == "int":
        return np.asarray([int(c) for c in agreed])
    if label_type == "float":
        return np.asarray([float(c) for c in agreed])
    if label_type == "bool":
        return np.asarray([c == "True" for c in agreed])
    return np.asarray(agreed, dtype=object)
