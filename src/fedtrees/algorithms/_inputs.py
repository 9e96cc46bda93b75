"""What X means to a fitted estimator: the agreed columns, kept and applied.

A federated estimator learns its inputs from the agreement (the schema every
site accepted): the column names, kinds and categories, the clients and the
class labels (:meth:`FittedInputs._remember`, scikit-learn's fitted attributes).
At ``predict`` it encodes X with them (:meth:`FittedInputs._encode`):
categories as codes, an unseen category as a code no category has, missing
values refused or kept as the estimator accepts them. The fit template lives
in :mod:`fedtrees.algorithms._base`; this module is its input side.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from sklearn.utils.validation import check_is_fitted

from fedtrees._categories import category_codes
from fedtrees._typing import FloatArray
from fedtrees._validation import check_matrix
from fedtrees.exceptions import ValidationError
from fedtrees.federation import FederationInfo, as_frame

__all__ = ["ACCEPTS_MISSING", "FittedInputs", "Task", "as_numbers", "missing_message"]

Task = Literal["classification", "regression"]
ACCEPTS_MISSING: Final = (
    "FedForestClassifier",
    "FedForestRegressor",
    "FedGBDTClassifier",
    "FedGBDTRegressor",
)
"""The estimators that accept missing values (NaN) in X."""


class FittedInputs:
    """Mixin: the fitted attributes that describe X, and X encoded with them."""

    _task: Task = "classification"
    _input_names: list[str] | None = None
    _names_agreed: bool = False  # fit_federation: the agreed schema names the columns
    n_features_in_: int
    feature_kinds_: tuple[str, ...]
    categories_: tuple[tuple[str, ...] | None, ...]
    clients_: tuple[str, ...]
    classes_: npt.NDArray[Any]

    def _use_agreed_names(self) -> None:
        """Name the features after the agreed schema (``fit_federation``)."""
        self._input_names, self._names_agreed = None, True

    def _accepts_missing(self) -> bool:
        """Whether X may hold NaN (see the module docstring)."""
        return False

    def _missing_hint(self) -> str | None:
        """Return None if ``fit`` accepts NaN; else what to do instead."""
        if self._accepts_missing():
            return None
        return (
            "fill or drop them, or use an estimator that accepts missing values "
            f"({', '.join(ACCEPTS_MISSING)})"
        )

    def _remember(self, info: FederationInfo, classes: npt.NDArray[Any] | None) -> None:
        """Fitted attributes that describe the inputs (sklearn conventions)."""
        schema = info.schema
        self.n_features_in_ = schema.n_features
        names = (
            [str(n) for n in schema.feature_names]
            if self._names_agreed
            else getattr(self, "_input_names", None)
        )
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
        if self._all_numeric() and _numeric_array(X):
            # The common case, without pandas: a numeric array needs no encoding.
            matrix = np.asarray(X, dtype=np.float64)
            self._check_width(matrix.shape[1], owner)
            return self._checked(matrix, owner)
        frame = as_frame(X, owner, strings="keep")
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
        self._check_width(frame.shape[1], owner)
        columns = [
            self._encode_column(_kind_kept(frame.iloc[:, j], kind, owner), j)
            for j, kind in enumerate(self.feature_kinds_)
        ]
        return self._checked(np.column_stack(columns).astype(np.float64), owner)

    def _checked(self, matrix: FloatArray, owner: str) -> FloatArray:
        """Check the encoded matrix; refuse NaN where the estimator needs values."""
        if not self._accepts_missing():
            _refuse_missing(matrix, _names(self), owner, self._missing_hint() or "")
        return check_matrix(
            matrix,
            "X",
            owner,
            column_names=_names(self),
            allow_nan=self._accepts_missing(),
        )

    def _check_width(self, n_columns: int, owner: str) -> None:
        if n_columns != self.n_features_in_:
            raise ValidationError(
                f"X has {n_columns} features, but {owner} is expecting "
                f"{self.n_features_in_} features as input."
            )

    def _all_numeric(self) -> bool:
        return all(kind == "numeric" for kind in self.feature_kinds_)

    def _encode_column(self, column: pd.Series, j: int) -> FloatArray:
        """Return a column as numbers: categories as codes, an unseen one as ``K``.

        ``K = len(categories)`` is a code no category has. With missing values
        (``_accepts_missing``) a missing category is ``K`` too: its own
        category, which an unseen one follows (as in scikit-learn's
        ``HistGradientBoosting*``); otherwise it stays NaN (and is refused).
        """
        categories = self.categories_[j]
        if categories is None:
            values = pd.to_numeric(column, errors="coerce")
            return np.asarray(values, dtype=np.float64)
        codes = category_codes(column, categories)
        known: FloatArray = np.where(codes < 0, len(categories), codes).astype(float)
        if self._accepts_missing():
            return known
        return np.where(column.isna().to_numpy(), np.nan, known)


def _numeric_array(X: object) -> bool:
    """Whether X is a 2-D numpy array of numbers (ints, unsigned ints or floats)."""
    return isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype.kind in "iuf"


def _names(estimator: Any) -> list[str] | None:
    names = getattr(estimator, "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]


def _kind_kept(series: pd.Series, kind: str, owner: str) -> pd.Series:
    """Return a predict column as its fit kind, or raise if its kind changed."""
    categorical = isinstance(series.dtype, pd.CategoricalDtype)
    if kind == "categorical" and not categorical:
        raise ValidationError(
            f"{owner}: column {str(series.name)!r} was categorical at fit, but X "
            f"has it as {series.dtype}. Pass it as pandas 'category' dtype "
            f"(X[{str(series.name)!r}].astype('category')), as at fit."
        )
    if kind == "numeric":
        if categorical:
            raise ValidationError(
                f"{owner}: column {str(series.name)!r} was numeric at fit, but X "
                "has it as 'category' dtype; pass the numbers, as at fit."
            )
        return as_numbers(series, str(series.name), owner)
    return series


def _refuse_missing(
    matrix: FloatArray, names: list[str] | None, owner: str, hint: str
) -> None:
    """Refuse NaN for an estimator without missing values, naming the column."""
    missing = np.isnan(matrix)
    if not missing.any():
        return
    rows, cols = np.nonzero(missing)
    column = names[int(cols[0])] if names else f"x{int(cols[0])}"
    raise ValidationError(missing_message(owner, column, int(rows[0]), hint))


def missing_message(owner: str, column: str, row: int, hint: str) -> str:
    return (
        f"{owner}: column {column!r} holds NaN, inf or non-numeric values (first "
        f"missing value at row {row}); {owner} needs finite values: {hint}."
    )


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


_NUMBER_KINDS = frozenset(
    {"integer", "floating", "mixed-integer-float", "decimal", "boolean", "empty"}
)


def as_numbers(series: pd.Series, column: str, owner: str) -> pd.Series:
    """Return a non-category column as numbers, or raise naming it."""
    if series.dtype.kind == "b":
        return series.astype(np.float64)
    if series.dtype.kind in "iuf":
        return series
    if pd.api.types.infer_dtype(series, skipna=True) in _NUMBER_KINDS:
        return pd.to_numeric(series.astype("object").map(_bool_as_number))
    raise ValidationError(
        f"{owner}: column {column!r} holds text ({series.dtype} dtype), but only "
        "pandas 'category' columns are categorical. Make it categorical with "
        f"X[{column!r}] = X[{column!r}].astype('category') (its categories, in "
        "order, become public metadata of the fit), or encode it as numbers. "
        "(A numpy array of strings: make it a DataFrame first.)"
    )


def _bool_as_number(value: object) -> object:
    return float(value) if isinstance(value, bool | np.bool_) else value
