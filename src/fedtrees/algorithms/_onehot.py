"""One home for one-hot encoding of categorical columns (FedAvg, synthetic data).

A categorical column with K agreed categories becomes K indicator columns, in the
agreed category order; a numeric column stays one column. The widths come from
the agreed schema, so every client and the server expand alike.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, IntArray

__all__ = ["category_counts", "expand_features", "expanded_names"]


def category_counts(categories: Sequence[Sequence[str] | None]) -> IntArray:
    """Per column, its number of categories (0 for a numeric column)."""
    return np.asarray([0 if c is None else len(c) for c in categories], dtype=np.int64)


def expand_features(
    matrix: FloatArray, n_categories: npt.NDArray[np.int64]
) -> FloatArray:
    """One-hot encode the categorical columns (``n_categories[j] > 0``).

    A code outside ``[0, n_categories[j])`` (an unseen category) gets all zeros.

    Examples
    --------
    >>> expand_features(np.array([[0.5, 2.0]]), np.array([0, 3])).tolist()
    [[0.5, 0.0, 0.0, 1.0]]
    """
    columns = []
    for j, k in enumerate(n_categories.tolist()):
        if k == 0:
            columns.append(matrix[:, j : j + 1])
        else:
            columns.append(
                (matrix[:, j : j + 1] == np.arange(k)[None, :]).astype(np.float64)
            )
    return np.hstack(columns)


def expanded_names(
    names: Sequence[str], categories: Sequence[Sequence[str] | None]
) -> tuple[str, ...]:
    """Names of the expanded columns: ``name`` or ``name=category``.

    Examples
    --------
    >>> expanded_names(["age", "sex"], [None, ("F", "M")])
    ('age', 'sex=F', 'sex=M')
    """
    out: list[str] = []
    for name, cats in zip(names, categories, strict=True):
        out.extend([name] if cats is None else [f"{name}={c}" for c in cats])
    return tuple(out)
