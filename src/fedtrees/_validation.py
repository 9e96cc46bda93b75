"""Parameter and array validation with one message template.

Every check raises :class:`fedtrees.exceptions.ValidationError` with the message
``"The {name!r} parameter of {owner} must be {constraint}. Got {value!r} instead."``
(or the column-level variant for arrays), so that a user always learns *which*
argument was wrong, *what* was expected and *what* was received.

This module sits beside ``exceptions`` and ``_typing`` at the bottom of the import
graph: every layer may use it, it imports nothing else from the package.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any, Final, TypeGuard

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray
from fedtrees.exceptions import ValidationError

__all__ = [
    "LARGEST_FLOAT",
    "MAX_ABS_TARGET",
    "MAX_GRID",
    "MAX_TOTAL_WEIGHT",
    "MIN_EPSILON",
    "check_choice",
    "check_class_labels",
    "check_discrete_labels",
    "check_epsilon",
    "check_float",
    "check_int",
    "check_matrix",
    "check_regression_target",
    "check_sample_weight",
    "check_size",
    "check_total_weight",
    "invalid",
    "is_integral",
    "is_real",
]

MAX_ABS_TARGET: Final = 1e100
"""Largest |y| of a regression target. With the total weight at most
:data:`MAX_TOTAL_WEIGHT`, every node's moments stay finite in float64:
``Σw·y² <= 1e200`` and ``(Σw·y)² <= 1e300``."""
LARGEST_FLOAT: Final = float(np.finfo(np.float64).max)
"""The largest finite float64: where a computed value is clipped to stay finite."""
MAX_TOTAL_WEIGHT: Final = 1e50
"""Largest sum of sample weights (weighted counts and their squares stay finite)."""
MIN_EPSILON: Final = 1e-100
"""Smallest ε of a budget and of one release: a Laplace scale ``1/ε`` of at most
1e100, so noise and noisy counts stay finite. Mechanisms, estimators, plans that
share a budget (per-query ε) and request checks all refuse less."""
MAX_GRID: Final = 4096
"""Most quantiles, bins or shortlisted features per feature or node
(``n_quantiles``, ``n_bins``, ``top_k``, a sketch's ``q``): every message and
table has that width."""


def invalid(name: str, owner: str, constraint: str, value: object) -> ValidationError:
    """Build the standard error for a parameter that breaks its constraint.

    Examples
    --------
    >>> str(invalid("q", "quantile_sketch", "an int >= 2", 1))
    "The 'q' parameter of quantile_sketch must be an int >= 2. Got 1 instead."
    """
    return ValidationError(
        f"The {name!r} parameter of {owner} must be {constraint}. "
        f"Got {value!r} instead."
    )


def is_integral(value: object) -> TypeGuard[int | np.integer[Any]]:
    """Whether ``value`` is an integer of any type (Python, numpy), not a bool.

    The one test of integrality: every bound on an integer (:func:`check_int`,
    request fields, tree fields) goes through it, so that a numpy integer meets
    the same bounds as a Python one.

    Examples
    --------
    >>> is_integral(np.int64(3)), is_integral(True), is_integral(3.0)
    (True, False, False)
    """
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value: object) -> TypeGuard[float | np.integer[Any] | np.floating[Any]]:
    """Whether ``value`` is a real number of any type (Python, numpy), not a bool.

    Examples
    --------
    >>> is_real(np.float32(0.5)), is_real(np.int8(2)), is_real(False)
    (True, True, False)
    """
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_int(
    value: object,
    name: str,
    owner: str,
    *,
    min_value: int | None = None,
    max_value: int | None = None,
    reason: str | None = None,
) -> int:
    """Return ``value`` as an ``int`` within ``[min_value, max_value]``.

    Any integer type is accepted (a numpy integer meets the same bounds as an
    ``int``); booleans are refused even though Python treats them as integers.
    ``reason`` says why the bounds hold (e.g. "it sizes memory"); the message
    gives it after the constraint.

    Examples
    --------
    >>> check_int(np.int64(3), "q", "f", min_value=2)
    3
    >>> check_int(True, "q", "f")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: The 'q' parameter of f must be an int. Got ...
    >>> check_int(np.int64(10**9), "n", "f", max_value=100, reason="it sizes memory")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: The 'n' parameter of f must be an int <= \
100 (it sizes memory). Got np.int64(1000000000) instead.
    """
    constraint = _range_text("an int", min_value, max_value)
    if reason is not None:
        constraint = f"{constraint} ({reason})"
    if not is_integral(value):
        raise invalid(name, owner, constraint, value)
    result = int(value)
    if (min_value is not None and result < min_value) or (
        max_value is not None and result > max_value
    ):
        raise invalid(name, owner, constraint, value)
    return result


def check_size(value: object, name: str, owner: str, smallest: int, cap: int) -> int:
    """Return an int in ``[smallest, cap]`` for a parameter that sizes memory.

    :func:`check_int` with the reason in the message: the cap guards against a
    typo allocating gigabytes before any work.

    Examples
    --------
    >>> check_size(np.int64(10**7), "n_quantiles", "f", 2, MAX_GRID)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: The 'n_quantiles' parameter of f must be \
an int in [2, 4096] (it sizes memory allocated before any work; ...
    """
    return check_int(
        value,
        name,
        owner,
        min_value=smallest,
        max_value=cap,
        reason="it sizes memory allocated before any work; the bound guards "
        "against typos",
    )


def check_float(
    value: object,
    name: str,
    owner: str,
    *,
    min_value: float | None = None,
    min_inclusive: bool = True,
    max_value: float | None = None,
    allow_inf: bool = False,
) -> float:
    """Return ``value`` as a ``float`` above ``min_value`` (and at most ``max_value``).

    NaN is always refused; ``+inf`` only when ``allow_inf`` is true.

    Examples
    --------
    >>> check_float(0.5, "epsilon", "Laplace", min_value=0.0, min_inclusive=False)
    0.5
    """
    bound = ">=" if min_inclusive else ">"
    parts = ["a finite float" if not allow_inf else "a float (inf allowed)"]
    if min_value is not None:
        parts.append(f"{bound} {min_value}")
    if max_value is not None:
        parts.append(f"<= {max_value}")
    constraint = " ".join(parts)
    if not is_real(value):
        raise invalid(name, owner, constraint, value)
    result = float(value)
    if math.isnan(result) or (math.isinf(result) and not (allow_inf and result > 0)):
        raise invalid(name, owner, constraint, value)
    too_low = min_value is not None and (
        result < min_value or (not min_inclusive and result == min_value)
    )
    too_high = max_value is not None and result > max_value
    if too_low or too_high:
        raise invalid(name, owner, constraint, value)
    return result


def check_epsilon(
    value: object, owner: str, *, allow_inf: bool = False, name: str = "epsilon"
) -> float:
    """Return a privacy budget ``epsilon`` as a ``float >=`` :data:`MIN_EPSILON`.

    ``allow_inf`` admits ``inf`` (noise switched off, for tests) where a method
    documents it.

    Raises
    ------
    ValidationError
        Naming ``name``: not a number, NaN, ``<= 0``, or below :data:`MIN_EPSILON`
        (then the message says why: the noise would not be finite).

    Examples
    --------
    >>> check_epsilon(0.5, "Laplace")
    0.5
    """
    eps = check_float(
        value, name, owner, min_value=0.0, min_inclusive=False, allow_inf=allow_inf
    )
    if eps < MIN_EPSILON:
        raise ValidationError(
            f"The {name!r} parameter of {owner} is too small: {value!r}; it must be "
            f">= {MIN_EPSILON:g} so that the Laplace noise scale (sensitivity / "
            "epsilon) stays finite."
        )
    return eps


def check_choice(value: object, name: str, owner: str, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``.

    Examples
    --------
    >>> check_choice("exact", "candidates", "f", ["quantile", "exact"])
    'exact'
    """
    if not isinstance(value, str) or value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise invalid(name, owner, f"one of {options}", value)
    return value


def check_sample_weight(weights: object, n: int, owner: str) -> FloatArray:
    """Return per-row weights as float64: ``n`` finite values >= 0.

    Examples
    --------
    >>> check_sample_weight([1, 0, 2], 3, "f").tolist()
    [1.0, 0.0, 2.0]
    """
    try:
        values = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise invalid("sample_weight", owner, f"{n} numbers", weights) from exc
    if values.shape != (n,):
        raise invalid(
            "sample_weight",
            owner,
            f"{n} finite values >= 0",
            f"an array of shape {values.shape}",
        )
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise invalid(
            "sample_weight",
            owner,
            f"{n} finite values >= 0",
            f"{float(values[row])!r} at row {row}",
        )
    return values


def check_total_weight(weights: FloatArray, owner: str) -> FloatArray:
    """Refuse all-zero weights or a total above :data:`MAX_TOTAL_WEIGHT`.

    Examples
    --------
    >>> check_total_weight(np.array([0.0, 0.0]), "f")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: The 'sample_weight' parameter of f must ...
    """
    with np.errstate(over="ignore"):
        total = float(np.sum(weights))
    if not weights.any():
        raise invalid(
            "sample_weight",
            owner,
            "weights with at least one non-zero number",
            "all zeros",
        )
    if not total <= MAX_TOTAL_WEIGHT:
        raise invalid(
            "sample_weight",
            owner,
            f"weights summing to at most {MAX_TOTAL_WEIGHT:g} (weighted counts, "
            "sums and squares travel as float64 statistics and must stay finite; "
            "rescale the weights)",
            f"a sum of {total:g}",
        )
    return weights


def check_class_labels(y: npt.NDArray[Any], owner: str) -> None:
    """Refuse classification labels that mix types or look continuous.

    Labels must all be numbers, all strings or all booleans (``[1, '1']`` would
    make two classes that print alike). Floats with a fractional part are a
    regression target: the message says "Unknown label type" as scikit-learn
    does and points to a regressor.

    Examples
    --------
    >>> check_class_labels(np.array([1, "1"], dtype=object), "f")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: f: y mixes label types (int and str...
    """
    kinds = _label_kinds(y)
    if len(kinds) > 1:
        examples = ", ".join(
            f"{kind} (e.g. {value!r})" for kind, value in kinds.items()
        )
        raise ValidationError(
            f"{owner}: y mixes label types ({' and '.join(kinds)}): {examples}. "
            "Labels must be all numbers or all strings; convert them to one type."
        )
    if y.dtype.kind == "f" or set(kinds) == {"float"}:
        check_discrete_labels(y, owner)


def check_discrete_labels(y: npt.NDArray[Any], owner: str) -> None:
    """Refuse float labels with a fractional part (or NaN/inf): a regression target.

    The message names no value, so a client may send it to the server.

    Examples
    --------
    >>> check_discrete_labels(np.array([0.5, 1.0]), "f")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: f: y holds continuous values ...
    """
    if y.dtype.kind == "O" and not all(is_real(v) for v in y.tolist()):
        return  # strings (even "1.5") or mixed labels: not a continuous target
    if y.dtype.kind not in "fO":
        return
    values = np.asarray(y, dtype=np.float64)
    if not np.isfinite(values).all() or np.any(values != np.round(values)):
        raise ValidationError(
            f"{owner}: y holds continuous values (Unknown label type: "
            "'continuous'); a classifier needs discrete class labels. For a "
            "numeric target use a regressor (e.g. FedForestRegressor)."
        )


def check_regression_target(y: npt.NDArray[Any], owner: str) -> FloatArray:
    """Return a regression target as float64: finite numbers, ``|y| <= 1e100``.

    Examples
    --------
    >>> check_regression_target(np.array(["a", "b"]), "f")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: The 'y' parameter of f must be numbers ...
    """
    if y.dtype.kind in "USO" and not all(is_real(v) for v in y.tolist()):
        first = next(v for v in y.tolist() if not is_real(v))
        raise invalid(
            "y", owner, "numbers (a regression target)", f"the non-numeric {first!r}"
        )
    if y.dtype.kind == "b":
        raise invalid("y", owner, "numbers (a regression target)", "booleans")
    try:
        values = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise invalid("y", owner, "numbers (a regression target)", y) from exc
    if not np.all(np.isfinite(values)):
        raise invalid("y", owner, "finite numbers for regression", "NaN or inf")
    largest = float(np.max(np.abs(values), initial=0.0))
    if largest > MAX_ABS_TARGET:
        raise invalid(
            "y",
            owner,
            f"numbers with |y| <= {MAX_ABS_TARGET:g} (node statistics carry sums "
            "of w*y and w*y^2 and their products, which must stay finite float64 "
            f"for any client's rows and weights, total weight <= "
            f"{MAX_TOTAL_WEIGHT:g}; rescale y)",
            f"max |y| = {largest:g}",
        )
    return values


def _label_kinds(y: npt.NDArray[Any]) -> dict[str, object]:
    """Each kind of label present (number types, str, bool) with one example."""
    if y.dtype.kind != "O":
        return {}
    kinds: dict[str, object] = {}
    for value in y.tolist():
        if isinstance(value, bool):
            kind = "bool"
        elif isinstance(value, numbers.Integral):
            kind = "int"
        elif isinstance(value, numbers.Real):
            kind = "float"
        elif isinstance(value, str):
            kind = "str"
        else:
            kind = type(value).__name__
        kinds.setdefault(kind, value)
    if set(kinds) == {"int", "float"}:  # numbers alike: 1 and 2.0
        return {"float": kinds["float"]}
    return kinds


def check_matrix(
    X: npt.ArrayLike,
    name: str,
    owner: str,
    *,
    n_features: int | None = None,
    column_names: Sequence[str] | None = None,
    allow_empty: bool = False,
    allow_nan: bool = False,
) -> FloatArray:
    """Return ``X`` as a finite 2-D float64 array, or say precisely what is wrong.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Numeric values (categorical features already encoded as integer codes).
    name, owner
        Used in the error message.
    n_features
        If given, the required number of columns.
    column_names
        Names used to report a non-finite column; indices otherwise.
    allow_empty
        Whether zero rows are acceptable.
    allow_nan
        Whether NaN (a missing value) is acceptable; infinities never are.

    Examples
    --------
    >>> check_matrix([[1.0, float("nan")]], "X", "f", column_names=["a", "b"])
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: Column 'b' of 'X' (f) holds NaN or inf at ...
    >>> check_matrix([[1.0, float("nan")]], "X", "f", allow_nan=True).tolist()
    [[1.0, nan]]
    """
    try:
        array = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise invalid(name, owner, "a numeric 2-D array", _describe(X)) from exc
    if array.ndim != 2:
        raise invalid(name, owner, "a 2-D array", f"an array of shape {array.shape}")
    if n_features is not None and array.shape[1] != n_features:
        raise invalid(
            name,
            owner,
            f"an array with {n_features} columns",
            f"an array of shape {array.shape}",
        )
    if not allow_empty and array.shape[0] == 0:
        raise invalid(name, owner, "an array with at least one row", "0 rows")
    _check_finite_columns(array, name, owner, column_names, allow_nan)
    return array


def _check_finite_columns(
    array: FloatArray,
    name: str,
    owner: str,
    column_names: Sequence[str] | None,
    allow_nan: bool,
) -> None:
    good = ~np.isinf(array) if allow_nan else np.isfinite(array)
    if good.all():
        return
    rows, cols = np.nonzero(~good)
    col = int(cols[np.argmin(cols)])
    row = int(rows[cols == col][0])
    label = repr(column_names[col]) if column_names is not None else str(col)
    found, expected = (
        ("inf", "finite values or NaN (missing)")
        if allow_nan
        else ("NaN or inf", "finite values")
    )
    raise ValidationError(
        f"Column {label} of {name!r} ({owner}) holds {found} at row {row}; "
        f"{expected} were expected."
    )


def _describe(value: Any) -> str:
    return f"an object of type {type(value).__name__}"


def _range_text(kind: str, low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"{kind} in [{low}, {high}]"
    if low is not None:
        return f"{kind} >= {low}"
    if high is not None:
        return f"{kind} <= {high}"
    return kind
