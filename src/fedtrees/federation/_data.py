"""A client's local data, as its handlers see it.

:class:`ClientData` never leaves the client: handlers read it, and only the
payloads they return travel. It keeps the raw DataFrame and target, and derives
(once, cached) the numeric matrix handlers compute on: numeric columns as float64,
categorical columns as the codes of their categories.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Final, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import check_sample_weight
from fedtrees.exceptions import UnsupportedInputError, ValidationError

__all__ = ["ClientData", "FeatureKind", "as_frame", "label_strings"]

FeatureKind = Literal["numeric", "categorical"]
_CATEGORICAL_KINDS: Final = "OSUb"


def as_frame(X: object, owner: str) -> pd.DataFrame:
    """Columns as a DataFrame with string names; object/string columns categorical.

    Sparse matrices, complex numbers and object cells that are neither strings nor
    numbers raise :class:`UnsupportedInputError` (a ``TypeError``, as in
    scikit-learn).
    """
    if isinstance(X, pd.DataFrame):
        frame = X.copy()
        frame.columns = [str(c) for c in frame.columns]
    else:
        if hasattr(X, "tocsr") or hasattr(X, "todense"):
            raise UnsupportedInputError(
                f"{owner}: sparse input is not supported; pass a dense array "
                "(X.toarray())."
            )
        array = np.asarray(X)
        if array.ndim != 2:
            raise ValidationError(
                f"{owner}: X must be 2-D, got shape {array.shape}. Reshape your data "
                "with X.reshape(-1, 1) for one feature or X.reshape(1, -1) for one row."
            )
        frame = pd.DataFrame(array, columns=[f"x{i}" for i in range(array.shape[1])])
    if len(set(frame.columns)) != frame.shape[1]:
        raise ValidationError(f"{owner}: X has duplicate column names.")
    for column in frame.columns:
        series = frame[column]
        _check_cell_types(series, str(column), owner)
        if not isinstance(series.dtype, pd.CategoricalDtype) and (
            series.dtype.kind in _CATEGORICAL_KINDS
            or pd.api.types.is_string_dtype(series)
        ):
            frame[column] = pd.Categorical(series.astype("object"))
    return frame


_SCALAR_TYPES: Final = (str, bytes, bool, int, float, np.generic)


def _check_cell_types(series: pd.Series, column: str, owner: str) -> None:
    """Refuse complex numbers and object cells that are not strings or numbers."""
    if series.dtype.kind == "c":
        raise UnsupportedInputError(
            f"{owner}: column {column!r} holds complex numbers. Complex data not "
            "supported."
        )
    if series.dtype.kind != "O" or pd.api.types.infer_dtype(series) != "mixed":
        return
    for row, value in enumerate(series.to_numpy()):
        if value is not None and not isinstance(value, _SCALAR_TYPES):
            raise UnsupportedInputError(
                f"{owner}: column {column!r} holds a {type(value).__name__} at row "
                f"{row}; argument must be a string or a number."
            )


def label_strings(values: npt.ArrayLike) -> npt.NDArray[np.str_]:
    """Labels as the strings that travel (``str`` of each value)."""
    return np.asarray([str(v) for v in pd.unique(np.asarray(values, dtype=object))])


@dataclass(frozen=True, eq=False)
class ClientData:
    """The rows one client holds: features ``X``, target ``y``, and its id."""

    client_id: str
    X: pd.DataFrame
    y: pd.Series
    weights: FloatArray | None = None

    @classmethod
    def build(
        cls, client_id: object, X: object, y: object, weights: object = None
    ) -> ClientData:
        """Validate and normalise one client's data (``weights``: per-row, >= 0)."""
        name = str(client_id)
        frame = as_frame(X, f"client {name!r}")
        target = pd.Series(np.asarray(y)).reset_index(drop=True)
        if frame.shape[0] == 0:
            raise ValidationError(
                f"Client {name!r} has no rows; every client needs data."
            )
        if target.shape[0] != frame.shape[0]:
            raise ValidationError(
                f"Client {name!r}: y has {target.shape[0]} rows but X has "
                f"{frame.shape[0]}."
            )
        if target.isna().any():
            raise ValidationError(f"Client {name!r}: y holds missing values.")
        return cls(
            name,
            frame.reset_index(drop=True),
            target,
            None
            if weights is None
            else check_sample_weight(weights, frame.shape[0], f"client {name!r}"),
        )

    @property
    def n_rows(self) -> int:
        """Number of rows (known only on this client)."""
        return int(self.X.shape[0])

    @property
    def feature_kinds(self) -> tuple[FeatureKind, ...]:
        """Kind of every column."""
        return tuple(
            "categorical"
            if isinstance(self.X[c].dtype, pd.CategoricalDtype)
            else "numeric"
            for c in self.X.columns
        )

    @property
    def categories(self) -> tuple[tuple[str, ...] | None, ...]:
        """Category names of every categorical column (None for numeric ones)."""
        return tuple(
            tuple(str(v) for v in self.X[c].cat.categories)
            if kind == "categorical"
            else None
            for c, kind in zip(self.X.columns, self.feature_kinds, strict=True)
        )

    @cached_property
    def matrix(self) -> FloatArray:
        """Features as float64: categorical columns as category codes (missing: NaN)."""
        columns = []
        for column, kind in zip(self.X.columns, self.feature_kinds, strict=True):
            series = self.X[column]
            if kind == "categorical":
                codes = series.cat.codes.to_numpy().astype(np.float64)
                columns.append(np.where(codes < 0, np.nan, codes))
            else:
                columns.append(
                    pd.to_numeric(series, errors="coerce").to_numpy(np.float64)
                )
        return np.column_stack(columns) if columns else np.zeros((self.n_rows, 0))

    def finite_matrix(self) -> FloatArray:
        """Return the matrix, or raise naming the first column with NaN or inf."""
        bad = ~np.isfinite(self.matrix)
        if bad.any():
            column = self.X.columns[int(np.flatnonzero(bad.any(axis=0))[0])]
            raise ValidationError(
                f"Client {self.client_id!r}: column {column!r} holds missing or "
                "infinite values; fill or drop them before training."
            )
        return self.matrix

    def label_codes(self, classes: npt.ArrayLike) -> IntArray:
        """Index of every row's label in the agreed ``classes`` (strings)."""
        agreed = pd.Index(np.asarray(classes, dtype=str))
        found = agreed.get_indexer(pd.Index(self.y.astype(str)))
        codes: IntArray = np.asarray(found, dtype=np.int64)
        if np.any(codes < 0):
            unknown = str(self.y[codes < 0].iloc[0])
            raise ValidationError(
                f"Client {self.client_id!r}: label {unknown!r} is not among the agreed "
                f"classes {agreed.tolist()}."
            )
        return codes

    def targets(self) -> FloatArray:
        """Numeric regression targets (a clear error if y is not numeric)."""
        values = pd.to_numeric(self.y, errors="coerce").to_numpy(np.float64)
        if not np.all(np.isfinite(values)):
            raise ValidationError(
                f"Client {self.client_id!r}: regression needs a numeric, finite y."
            )
        return values
