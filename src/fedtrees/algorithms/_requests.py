"""Bounds on request fields that size a client's allocations: one home.

A request comes from the server, but its bytes may have been damaged (or sent
by a buggy server): a flipped bit in a count such as ``n_categories`` would make
a client allocate gigabytes to exabytes before anything else fails. A client
handler therefore checks every field that sizes an allocation against what it
can know locally — its own schema (number of features, its categorical columns'
category counts), limits the server itself validated, the sizes of the
request's other arrays, or the largest reply one message can carry — **before
allocating**, and fails with a :class:`~fedtrees.exceptions.ValidationError`
naming the request kind, the field and what was expected. The client runtime
turns it into an error envelope, so the server reports "client X, round R, kind
K: handler failed: ... field 'n_categories' ...".

**Decision (what an error may say):** these messages travel to the server, so
they never state the client's row count; they state only what the server knows
(the schema, the request's own values).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np

from fedtrees._typing import IntArray
from fedtrees._validation import is_integral
from fedtrees.exceptions import ValidationError
from fedtrees.federation import MAX_MESSAGE_BYTES, ClientData

__all__ = [
    "MAX_REPLY_CELLS",
    "MAX_ROWS",
    "check_category_counts",
    "check_column_sizes",
    "check_reply_cells",
    "check_request_size",
    "field_error",
    "local_category_counts",
    "request_error",
]

MAX_REPLY_CELLS: Final = MAX_MESSAGE_BYTES // 8
"""Most 8-byte values one reply can carry (a size beyond it cannot be answered)."""
MAX_ROWS: Final = 2**31 - 1
"""Largest row count a request may name (scikit-learn's trees use C ints)."""


def request_error(kind: str, name: str, expected: str, got: object) -> ValidationError:
    """Return the error of request field ``name`` of ``kind`` (what was expected).

    Examples
    --------
    >>> str(request_error("toy.counts", "n_bins", "an int in [1, 4096]", 2**40))
    "Request 'toy.counts': field 'n_bins' must be an int in [1, 4096]; got \
1099511627776 (refused before allocating)."
    """
    return ValidationError(
        f"Request {kind!r}: field {name!r} must be {expected}; got {got} "
        "(refused before allocating)."
    )


def field_error(kind: str, name: str, expected: str, got: object) -> ValidationError:
    """Return the error of request field ``name`` of ``kind``: a value it cannot use.

    As :func:`request_error`, for a field that sizes nothing (a rate, a scale, a
    setting that does not parse).

    Examples
    --------
    >>> str(field_error("toy.fit", "rate", "finite numbers", "NaN or inf"))
    "Request 'toy.fit': field 'rate' must be finite numbers; got NaN or inf."
    """
    return ValidationError(
        f"Request {kind!r}: field {name!r} must be {expected}; got {got}."
    )


def check_request_size(
    kind: str, name: str, value: object, limit: int, what: str, *, low: int = 0
) -> int:
    """Return ``value`` as an int in ``[low, limit]``: a request field sizing memory.

    ``what`` says where the limit comes from (e.g. "the number of features").

    Raises
    ------
    ValidationError
        Naming ``kind``, ``name``, the bounds and ``what`` (:func:`request_error`).

    Examples
    --------
    >>> check_request_size("t.k", "q", 256, 4096, "the server's grid limit")
    256
    """
    if not is_integral(value):
        raise request_error(kind, name, f"an int ({what})", repr(value))
    number = int(value)
    if not low <= number <= limit:
        raise request_error(kind, name, f"an int in [{low}, {limit}] ({what})", number)
    return number


def local_category_counts(data: ClientData) -> IntArray:
    """Per column of this client, its number of categories (0 for numeric ones)."""
    return np.asarray(
        [0 if names is None else len(names) for names in data.categories],
        dtype=np.int64,
    )


def check_column_sizes(
    kind: str,
    name: str,
    sizes: np.ndarray,
    expected: IntArray,
    what: str,
    columns: Sequence[str] = (),
) -> IntArray:
    """Return ``sizes`` (int64) if it equals ``expected``, one entry per column.

    For per-column sizes the client knows itself (its category counts): the
    error names the first column that differs (by its name in ``columns``, else
    its position), its expected and received size.

    Raises
    ------
    ValidationError
        Naming ``kind`` and ``name`` (:func:`request_error`).
    """
    if sizes.shape != expected.shape or sizes.dtype.kind not in "iub":
        raise request_error(
            kind,
            name,
            f"{expected.shape[0]} ints, one per column ({what})",
            f"an array of shape {sizes.shape} and dtype {sizes.dtype}",
        )
    values = sizes.astype(np.int64)
    wrong = np.flatnonzero(values != expected)
    if wrong.size:
        j = int(wrong[0])
        column = repr(str(columns[j])) if j < len(columns) else str(j)
        raise request_error(
            kind,
            name,
            f"{int(expected[j])} at column {column} ({what})",
            int(values[j]),
        )
    return values


def check_category_counts(
    kind: str, name: str, n_categories: np.ndarray, data: ClientData
) -> IntArray:
    """Return ``n_categories`` if it is this client's categories per column.

    The agreed schema is the same on every client, so a per-column category
    count (0 for a numeric column) must equal the client's own.

    Raises
    ------
    ValidationError
        Naming ``kind``, ``name`` and the first column that differs.
    """
    return check_column_sizes(
        kind,
        name,
        n_categories,
        local_category_counts(data),
        "this client's number of categories of the column, 0 if numeric",
        [str(c) for c in data.X.columns],
    )


def check_reply_cells(kind: str, name: str, shape: Sequence[int], reply: str) -> None:
    """Refuse a request whose ``reply`` array of ``shape`` could not be sent.

    A reply holds at most :data:`MAX_REPLY_CELLS` 8-byte values; a request whose
    fields (``name``) ask for more is refused before the array is allocated.

    Raises
    ------
    ValidationError
        Naming ``kind``, ``name`` and the reply's shape.
    """
    cells = 1
    for size in shape:
        cells *= max(int(size), 0)
    if cells > MAX_REPLY_CELLS:
        raise request_error(
            kind,
            name,
            f"a size whose reply {reply} fits one message "
            f"(<= {MAX_REPLY_CELLS} values)",
            f"a reply of shape {tuple(int(s) for s in shape)}",
        )
