"""Parameter and array validation with one message template.

Every check raises :class:`fedtrees.exceptions.ValidationError` with the message
``"The {name!r} parameter of {owner} must be {constraint}. Got {value!r} instead."``
(or the column-level variant for arrays), so that a user always learns *which*
argument was wrong, *what* was expected and *what* was received.

This module sits beside ``exceptions`` and ``_typing`` at the bottom of the import
graph: every layer may use it, it imports nothing else from the package.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Sequence
from typing import Any, Final, TypeGuard

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray
from fedtrees.exceptions import ValidationError

__all__ = [
    "LARGEST_FLOAT",
    "MAX_ABS_TARGET",
    "MAX_CLIENT_ID_CHARS",
    "MAX_GRID",
    "MAX_JSON_CHARS",
    "MAX_JSON_DEPTH",
    "MAX_TOTAL_WEIGHT",
    "MIN_EPSILON",
    "SHOWN_CHARS",
    "check_bool",
    "check_choice",
    "check_class_labels",
    "check_client_id",
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
    "label_array",
    "load_json",
    "shown",
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
SHOWN_CHARS: Final = 120
"""Longest quotation of a user's value in an error message (:func:`shown`)."""
MAX_CLIENT_ID_CHARS: Final = 256
"""Longest client id (the id travels in every message and names the client in
every error about it; 256 holds any host or file name)."""
MAX_JSON_DEPTH: Final = 32
"""Deepest nesting of a JSON text fedtrees parses from a user (:func:`load_json`)."""
MAX_JSON_CHARS: Final = 16 * 2**20
"""Longest JSON text fedtrees parses from a user (:func:`load_json`)."""
_PRINTABLE_INT_BITS: Final = 14_000
"""Ints of more bits may exceed Python's 4300-digit limit on printing an int."""


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """Return ``repr(value)`` for an error message, cut to about ``limit`` characters.

    The one way fedtrees quotes a user's value (a parameter, a client id, a
    label) in an error: a value that prints longer is cut and says how long it
    was, so a 10 MB string or a list of a million edges cannot flood the message;
    an int too long for Python to print (over 4300 digits) is described by its
    size; a value whose ``repr`` fails is described by its type.

    Examples
    --------
    >>> shown([0.5, 1.5])
    '[0.5, 1.5]'
    >>> shown("x" * 10**7)  # doctest: +ELLIPSIS
    "'xxxxx...xxx'... (10000000 characters)"
    >>> shown(10**5000)
    'an int of 16610 bits'
    """
    if isinstance(value, str | bytes) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value)} characters)"
    if isinstance(value, list | tuple) and len(value) > limit:
        return f"{_repr(value[:limit])[:limit]}... ({len(value)} items)"
    return _cut(_repr(value), limit)


def _repr(value: object) -> str:
    if is_integral(value) and abs(int(value)).bit_length() > _PRINTABLE_INT_BITS:
        return f"an int of {abs(int(value)).bit_length()} bits"
    try:
        return repr(value)
    except Exception:  # a value whose repr fails: an int too long inside a list
        return f"a {type(value).__name__} that cannot be printed"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def check_client_id(value: object, name: str, owner: str) -> str:
    """Return ``value`` written as text: a client id of at most 256 characters.

    **Decision:** a client id is bounded (:data:`MAX_CLIENT_ID_CHARS`): it
    travels in every message to and from its client and names it in every error
    about it. An int too long to write is refused before Python is asked to.

    Raises
    ------
    ValidationError
        Naming ``name`` and quoting the id cut short (:func:`shown`).

    Examples
    --------
    >>> check_client_id(7, "groups", "f")
    '7'
    >>> check_client_id("x" * 300, "groups", "f")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: The 'groups' parameter of f must be ...
    """
    constraint = (
        f"client ids of at most {MAX_CLIENT_ID_CHARS} characters once written as "
        "text (every message and error names its client)"
    )
    if is_integral(value) and abs(int(value)).bit_length() > 4 * MAX_CLIENT_ID_CHARS:
        raise invalid(name, owner, constraint, value)
    text = str(value)
    if len(text) > MAX_CLIENT_ID_CHARS:
        raise invalid(name, owner, constraint, text)
    return text


_JSON_STRING: Final = re.compile(r'"(?:[^"\\]++|\\.)*+"')
_NOT_BRACKET: Final = re.compile(r"[^\[\]{}]++")


def _json_depth(text: str) -> int:
    """Return the deepest nesting of arrays and objects in a JSON text.

    Strings are skipped whole (a bracket inside one does not count); the rest is
    counted without parsing, so a recursion bomb is measured, not followed.
    """
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    if not brackets:
        return 0
    codes = np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)
    opening = (codes == ord("[")) | (codes == ord("{"))
    steps = np.where(opening, 1, -1).astype(np.int32)
    return int(np.cumsum(steps, dtype=np.int32).max())


def load_json(
    text: str, what: str, *, max_chars: int | None = MAX_JSON_CHARS
) -> object:
    """Parse a user's JSON text, its size and nesting bounded before parsing.

    ``what`` names the text in errors (``"Run config 'params'"``). A text of
    more than ``max_chars`` characters (None: no bound, for a result document
    of many trees), or nesting arrays and objects more than
    :data:`MAX_JSON_DEPTH` deep (a recursion bomb such as ``"[" * 100000``), is
    refused before the parser sees it.

    Raises
    ------
    ValidationError
        Naming ``what``: too long, nested too deeply, or not JSON.

    Examples
    --------
    >>> load_json('{"bin_edges": {"age": [30, 50]}}', "params")
    {'bin_edges': {'age': [30, 50]}}
    >>> load_json("[" * 100000, "Run config 'params'")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: Run config 'params' nests JSON arrays ...
    """
    if max_chars is not None and len(text) > max_chars:
        raise ValidationError(
            f"{what} is {len(text)} characters long; JSON of at most "
            f"{max_chars} characters is read."
        )
    if _json_depth(text) > MAX_JSON_DEPTH:
        raise ValidationError(
            f"{what} nests JSON arrays or objects more than {MAX_JSON_DEPTH} deep; "
            f"at most {MAX_JSON_DEPTH} levels are read (no setting needs more)."
        )
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValidationError(f"{what} is not JSON: {exc}") from None


def invalid(name: str, owner: str, constraint: str, value: object) -> ValidationError:
    """Build the standard error for a parameter that breaks its constraint.

    Examples
    --------
    >>> str(invalid("q", "quantile_sketch", "an int >= 2", 1))
    "The 'q' parameter of quantile_sketch must be an int >= 2. Got 1 instead."
    """
    return ValidationError(
        f"The {name!r} parameter of {owner} must be {constraint}. "
        f"Got {shown(value)} instead."
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


def check_bool(value: object, name: str, owner: str) -> bool:
    """Return ``value`` if it is a bool (numpy bools included).

    Examples
    --------
    >>> check_bool(1, "secure", "f")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: The 'secure' parameter of f must be a bool...
    """
    if not isinstance(value, bool):
        raise invalid(name, owner, "a bool", value)
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


def label_array(y: object) -> npt.NDArray[Any]:
    """Return labels as an array, keeping the types a list of labels mixes.

    numpy writes a list such as ``[1, "a"]`` as the strings ``["1", "a"]``,
    which hides that its labels mix numbers and text; such a list (any input
    that is not already an array or a pandas object) is kept as an object
    array, so that :func:`check_class_labels` and
    :func:`check_regression_target` see its values as they were given.

    Examples
    --------
    >>> label_array([1, "a"]).dtype, label_array(["b", "a"]).dtype
    (dtype('O'), dtype('<U1'))
    """
    values = np.asarray(y)
    if values.dtype.kind not in "US" or hasattr(y, "dtype"):  # arrays, pandas
        return values
    given = np.asarray(y, dtype=object)
    if given.shape == values.shape and not all(isinstance(v, str) for v in given.flat):
        return given
    return values


def check_class_labels(y: npt.NDArray[Any], owner: str, *, quote: bool = True) -> None:
    """Refuse classification labels that mix types, overflow int64 or look continuous.

    Labels must all be numbers, all strings or all booleans (``[1, '1']`` would
    make two classes that print alike), and integer labels must fit in 64 bits
    (scikit-learn cannot sort larger ones). Floats with a fractional part are a
    regression target: the message says "Unknown label type" as scikit-learn
    does and points to a regressor. ``quote=False`` names no label value (a
    site's error travels to the server, docs/security.md "Errors that travel").

    Examples
    --------
    >>> check_class_labels(np.array([1, "1"], dtype=object), "f")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: f: y mixes label types (int and str...
    >>> check_class_labels(np.array([2**70, 0], dtype=object), "f")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: f: y holds integer labels beyond the ...
    """
    kinds = _label_kinds(y)
    if len(kinds) > 1:
        examples = (
            ": " + ", ".join(f"{kind} (e.g. {shown(v)})" for kind, v in kinds.items())
            if quote
            else ""
        )
        raise ValidationError(
            f"{owner}: y mixes label types ({' and '.join(kinds)}){examples}. "
            "Labels must be all numbers or all strings; convert them to one type."
        )
    if set(kinds) == {"int"}:
        _check_int64_labels(y, owner, quote)
    if y.dtype.kind == "f" or set(kinds) == {"float"}:
        check_discrete_labels(y, owner)


_INT64: Final = np.iinfo(np.int64)


def _check_int64_labels(y: npt.NDArray[Any], owner: str, quote: bool) -> None:
    """Refuse integer labels outside int64 (an object array of Python ints)."""
    for value in y.tolist():
        if not _INT64.min <= int(value) <= _INT64.max:
            example = f" (such as {shown(value)})" if quote else ""
            raise ValidationError(
                f"{owner}: y holds integer labels beyond the 64-bit range{example}; "
                "class labels must be integers within [-2**63, 2**63 - 1] or "
                "strings (convert them, e.g. y.astype(str))."
            )


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
