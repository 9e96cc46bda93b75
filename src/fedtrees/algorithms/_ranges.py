"""Declared public feature ranges (docs/dpforest.md and docs/synthetic.md).

Ranges are metadata the user declares — never computed from the private rows
(that would release each client's min and max without noise). They are given as
a dict by column (name, or position for unnamed arrays) or an array of shape
(F, 2). **Decision:** a categorical column needs no declaration: its codes
``0..K-1`` are public schema, so its range is ``(-0.5, K - 0.5)``. Declaring a
numeric range for it is an error naming the column (a range over category codes
means nothing); in the array form its row must be ``(nan, nan)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from fedtrees._typing import BoolArray, FloatArray
from fedtrees._validation import is_integral, shown
from fedtrees.exceptions import ValidationError
from fedtrees.federation import FederationInfo

__all__ = ["check_ranges_form", "column_position", "resolve_ranges", "secure_ranges"]


def check_ranges_form(declared: object, owner: str) -> object:
    """Check declared ranges before the columns are known; return them unchanged.

    None, a mapping from column to a ``(min, max)`` pair of finite numbers with
    min < max, or an array-like of shape ``(n_features, 2)`` of numbers (NaN
    rows stand for categorical columns). Methods that use the ranges only in
    some modes (FedForest, FedGBDT: under secure aggregation) check them at
    every fit all the same, so a malformed declaration is never silently kept.

    Raises
    ------
    ValidationError
        Naming ``feature_ranges`` (and the column of a malformed pair).
    """
    if declared is None:
        return None
    if isinstance(declared, Mapping):
        for key, value in declared.items():
            _check_pair(*_pair(value, str(key), owner), str(key), owner)
    else:
        _as_array(declared, owner)
    return declared


def resolve_ranges(declared: object, info: FederationInfo, owner: str) -> FloatArray:
    """Return the ``(F, 2)`` ranges of the agreed features, or a clear error."""
    schema = info.schema
    names = list(schema.feature_names)
    if declared is None:
        raise ValidationError(
            f"{owner}: feature_ranges is required: declare the public (min, max) of "
            f"every numeric feature {names}, as a dict by column or an array of "
            "shape (n_features, 2). They are never computed from private data."
        )
    if isinstance(declared, Mapping):
        out = np.array(
            [_from_mapping(declared, j, info, owner) for j in range(len(names))]
        )
        unknown = sorted(str(k) for k in declared if column_position(k, names) is None)
        if unknown:
            raise ValidationError(
                f"{owner}: feature_ranges names unknown columns {unknown}; the "
                f"features are {names}."
            )
    else:
        out = _as_array(declared, owner)
        if out.shape != (len(names), 2):
            raise ValidationError(
                f"{owner}: feature_ranges has shape {out.shape}; expected "
                f"({len(names)}, 2): one (min, max) per feature."
            )
        out = _array_with_categories(out, info, owner)
    for j, (low, high) in enumerate(out):
        _check_pair(low, high, names[j], owner)
    result: FloatArray = out.astype(np.float64)
    return result


def column_position(key: object, names: Sequence[str]) -> int | None:
    """Return the position of column ``key`` (a name, or a position), else None.

    The one lookup of a declared column's key (``bin_edges``,
    ``feature_ranges``, a discretization's edges).

    Examples
    --------
    >>> column_position("age", ["sex", "age"]), column_position(0, ["sex"])
    (1, 0)
    >>> column_position(5, ["sex"]) is None
    True
    """
    if is_integral(key):
        return int(key) if 0 <= int(key) < len(names) else None
    return list(names).index(str(key)) if str(key) in names else None


def _from_mapping(
    declared: Mapping[object, object], j: int, info: FederationInfo, owner: str
) -> tuple[float, float]:
    schema = info.schema
    name = schema.feature_names[j]
    categorical = schema.feature_kinds[j] == "categorical"
    for key, value in declared.items():
        if column_position(key, schema.feature_names) == j:
            if categorical:
                raise _categorical_range(name, owner)
            return _pair(value, name, owner)
    if categorical:
        return _code_range(info, j)
    raise ValidationError(
        f"{owner}: feature_ranges has no (min, max) for column {name!r}; declare "
        "every numeric feature's public range."
    )


def _code_range(info: FederationInfo, j: int) -> tuple[float, float]:
    """Return the public range of a categorical column's codes ``0..K-1``."""
    return -0.5, len(info.schema.categories[j] or ()) - 0.5


def _categorical_range(name: str, owner: str) -> ValidationError:
    return ValidationError(
        f"{owner}: feature_ranges declares a range for column {name!r}, which is "
        "categorical; its category codes are public schema and take no range. "
        "Leave it out of the dict (or give (nan, nan) in the array form)."
    )


def _array_with_categories(
    out: FloatArray, info: FederationInfo, owner: str
) -> FloatArray:
    """Fill the ``(nan, nan)`` rows of categorical columns; refuse any other."""
    schema = info.schema
    filled = out.copy()
    for j, kind in enumerate(schema.feature_kinds):
        if kind != "categorical":
            continue
        if not np.isnan(out[j]).all():
            raise _categorical_range(schema.feature_names[j], owner)
        filled[j] = _code_range(info, j)
    return filled


def _as_array(declared: object, owner: str) -> FloatArray:
    """Return the array form of declared ranges: numbers, shape (n_features, 2)."""
    out = _numbers(declared)
    if out is None or out.ndim != 2 or out.shape[1] != 2:
        raise ValidationError(
            f"{owner}: feature_ranges must be a dict from column to (min, max), or "
            f"an array of numbers of shape (n_features, 2); got {shown(declared)}."
        )
    return out


def _numbers(value: object) -> FloatArray | None:
    """Return ``value`` as a float array if it holds numbers only (no text, bools)."""
    if isinstance(value, str | bytes):
        return None
    try:
        given = np.asarray(value)
        out = np.asarray(given, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if given.dtype.kind in "USb" else out


def _pair(value: object, name: str, owner: str) -> tuple[float, float]:
    pair = _numbers(value)
    if pair is None or pair.shape != (2,):
        raise ValidationError(
            f"{owner}: feature_ranges[{name!r}] is {shown(value)}; expected a pair "
            "(min, max) of numbers."
        )
    return float(pair[0]), float(pair[1])


def _check_pair(low: float, high: float, name: str, owner: str) -> None:
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ValidationError(
            f"{owner}: feature_ranges for column {name!r} is ({low}, {high}); "
            "expected finite numbers with min < max."
        )


def secure_ranges(
    declared: object, info: FederationInfo, sketched: BoolArray, owner: str
) -> FloatArray:
    """Return the declared ranges of a secure grid (docs/security.md).

    Under secure aggregation no site may send a sketch of its values, so the
    columns whose edges are not declared (``sketched``) need a public range:
    the grid is cut from the secure sum of fine histograms over it.

    Raises
    ------
    ValidationError
        Naming ``bin_edges`` and ``feature_ranges``, when neither is declared
        for such a column, or a malformed range (naming the column).
    """
    if declared is None:
        names = [info.schema.feature_names[j] for j in np.flatnonzero(sketched)]
        raise ValidationError(
            f"{owner}: secure_aggregation=True never sends a site's sketch of its "
            f"values, so the grid of the numeric columns {names} must come from "
            "declared bin_edges= (edges per column) or declared feature_ranges= "
            "(a public (min, max) per column, summed securely as fine histograms)."
        )
    return resolve_ranges(declared, info, owner)
