"""A DataFrame as the matrix a :class:`fedtrees.tree.Tree` routes.

A tree routes numbers: numeric columns as values, categorical ones as category
codes. A DataFrame is read **by name** when the tree knows its feature names
(columns in any order; other columns are left out), else by position. A
categorical column of the tree (``tree.categories[j]`` names its codes) takes a
pandas ``category`` column or a column of text, whose values meet the tree's
category names as the estimators' do (:mod:`fedtrees._categories`: by text,
then numbers by value). **Decision (unseen categories, as the estimators'):** a
value that is none of the tree's categories gets the code ``K`` (their number),
which no category has: it follows a set split's default branch and stops a
multiway split at that node; a missing value stays NaN, the tree's missing
category (also code ``K``). A numeric column of the tree takes numbers; NaN is a
missing value.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from fedtrees._categories import category_codes
from fedtrees._typing import FloatArray
from fedtrees.exceptions import ValidationError

__all__ = ["frame_matrix"]


def frame_matrix(
    X: pd.DataFrame,
    n_features: int,
    feature_names: Sequence[str] | None,
    categories: Sequence[Sequence[str] | None] | None,
    owner: str,
) -> FloatArray:
    """Return X's rows as the tree's matrix, shape (n_samples, n_features).

    Raises
    ------
    ValidationError
        Naming a column the tree needs that X lacks (or holds twice), or a
        column of the wrong kind: text or ``category`` where the tree splits
        numbers, numbers where it splits categories.
    """
    columns = _columns(X, n_features, feature_names, owner)
    kinds = list(categories) if categories is not None else [None] * n_features
    coded = [
        _coded(series, names, owner)
        for series, names in zip(columns, kinds, strict=True)
    ]
    if not coded:
        return np.zeros((X.shape[0], 0))
    return np.column_stack(coded).astype(np.float64)


def _columns(
    X: pd.DataFrame, n_features: int, names: Sequence[str] | None, owner: str
) -> list[pd.Series]:
    """Return the tree's columns of X, in the tree's order (by name if it has names)."""
    given = [str(c) for c in X.columns]
    if names is None:
        if len(given) != n_features:
            raise ValidationError(
                f"{owner}: X has {len(given)} columns; the tree routes {n_features} "
                "(it has no feature names, so columns are read by position)."
            )
        return [X.iloc[:, j].rename(given[j]) for j in range(n_features)]
    absent = [name for name in names if name not in given]
    if absent:
        raise ValidationError(
            f"{owner}: X has no column {absent[0]!r}, which the tree splits on "
            f"(missing: {absent[:10]}; the tree's columns: {list(names)[:20]})."
        )
    twice = sorted({name for name in names if given.count(name) > 1})
    if twice:
        raise ValidationError(
            f"{owner}: X has more than one column named {twice[0]!r} (names "
            "compared as text); give every column its own name."
        )
    return [X.iloc[:, given.index(name)].rename(name) for name in names]


def _coded(series: pd.Series, names: Sequence[str] | None, owner: str) -> FloatArray:
    """Return one column as the tree's numbers (module docstring)."""
    column = str(series.name)
    categorical = isinstance(series.dtype, pd.CategoricalDtype)
    if names is None:
        if categorical:
            raise ValidationError(
                f"{owner}: column {column!r} is numeric in the tree, but X has it "
                "as 'category' dtype; pass its numbers."
            )
        return _numbers(series, column, owner)
    if not categorical:
        if series.dtype.kind in "biufc":
            raise ValidationError(
                f"{owner}: column {column!r} is categorical in the tree (its codes "
                f"name {_listed(names)}), but X has it as numbers "
                f"({series.dtype}). Pass it as pandas 'category' dtype "
                f"(X[{column!r}].astype('category')) or as text. A tree over bin "
                "codes (ICDTA4FL, Federated-ID3) routes binned numbers: predict "
                "with its estimator (fedtrees.load of the job's document)."
            )
        series = series.astype("object").astype("category")
    codes = category_codes(series, names).astype(np.float64)
    codes[codes < 0] = len(names)  # unseen: code K, which no category has
    codes[series.isna().to_numpy()] = np.nan  # missing: the tree's missing category
    return codes


def _numbers(series: pd.Series, column: str, owner: str) -> FloatArray:
    """Return a numeric column as float64 (bool as 0/1); refuse text, naming it."""
    if series.dtype.kind in "biuf":
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    values = pd.to_numeric(series, errors="coerce")
    if (values.isna() & series.notna()).any():
        raise ValidationError(
            f"{owner}: column {column!r} is numeric in the tree, but X holds text "
            "in it; pass its numbers."
        )
    return values.to_numpy(dtype=np.float64, na_value=np.nan)


def _listed(names: Sequence[str]) -> str:
    shown = list(names[:8])
    return f"{shown}" + (f" and {len(names) - 8} more" if len(names) > 8 else "")
