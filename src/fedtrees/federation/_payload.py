"""Payloads: frozen, typed, wire-safe message contents (STYLE habit 2).

A payload is a frozen dataclass whose fields are ``int``, ``float``, ``str``,
``bool`` or numpy arrays (never object arrays), registered under a ``kind``
(``"<method>.<action>"``). A *request* payload also declares, through
:meth:`Payload.expected_reply`, what a valid reply looks like; the round loop
checks every reply against it before any strategy sees it.

Examples
--------
>>> import numpy as np
>>> from fedtrees.federation import Field, Payload, ReplySpec, payload
>>> @payload("doc.counts")
... class DocCounts(Payload):
...     counts: np.ndarray
>>> @payload("doc.count_request")
... class DocCountRequest(Payload):
...     n_classes: int
...     def expected_reply(self) -> ReplySpec:
...         return ReplySpec(DocCounts, {"counts": Field.array("f", (self.n_classes,),
...                                                             nonnegative=True)})
>>> DocCounts(np.array([1.0, 2.0])) == DocCounts(np.array([1.0, 2.0]))
True
"""

from __future__ import annotations

import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Final, Literal, TypeVar, dataclass_transform

import numpy as np
import numpy.typing as npt

from fedtrees.exceptions import LocalProtocolError

__all__ = [
    "Field",
    "FieldType",
    "Payload",
    "ReplySpec",
    "field_types",
    "payload",
    "payload_class",
]

FieldType = Literal["int", "float", "str", "bool", "array"]
_KIND = re.compile(r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$")
_SCALARS: Final[dict[Any, FieldType]] = {
    int: "int",
    float: "float",
    str: "str",
    bool: "bool",
}
_REGISTRY: dict[str, type[Payload]] = {}
_FIELD_TYPES: dict[type[Payload], dict[str, FieldType]] = {}


class Payload:
    """Base class of every message payload; subclass it with :func:`payload`."""

    kind: ClassVar[str] = ""

    def expected_reply(self) -> ReplySpec:
        """Describe what a valid reply to this request looks like (requests only)."""
        raise LocalProtocolError(
            f"{type(self).__name__} ({self.kind!r}) is not a request: it declares no "
            "expected reply."
        )

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(
            _equal(getattr(self, f.name), getattr(other, f.name))
            for f in fields(self)  # type: ignore[arg-type]
        )

    __hash__ = None  # type: ignore[assignment]


def _equal(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        same_kind = a.dtype == b.dtype and a.shape == b.shape
        return same_kind and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True  # NaN scalars: equal to themselves, like NaN array entries
    return type(a) is type(b) and a == b


P = TypeVar("P", bound=type[Payload])


@dataclass_transform(frozen_default=True, eq_default=False)
def payload(kind: str) -> Callable[[P], P]:
    """Class decorator: make a frozen payload dataclass and register it as ``kind``.

    Raises
    ------
    LocalProtocolError
        For a malformed or duplicate kind, or a field of an unsupported type.
    """
    if not isinstance(kind, str) or not _KIND.match(kind):
        raise LocalProtocolError(
            f"Payload kind {kind!r} must look like '<method>.<action>' (lower case)."
        )

    def register(cls: P) -> P:
        if kind in _REGISTRY and _REGISTRY[kind].__qualname__ != cls.__qualname__:
            raise LocalProtocolError(
                f"Payload kind {kind!r} is already registered by "
                f"{_REGISTRY[kind].__qualname__}."
            )
        cls.kind = kind
        made: P = dataclass(frozen=True, eq=False)(cls)  # type: ignore[assignment]
        _FIELD_TYPES[made] = _resolve_field_types(made)
        _REGISTRY[kind] = made
        return made

    return register


def _resolve_field_types(cls: type[Payload]) -> dict[str, FieldType]:
    hints = typing.get_type_hints(cls)
    out: dict[str, FieldType] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        hint = hints[f.name]
        if hint in _SCALARS:
            out[f.name] = _SCALARS[hint]
        elif hint is np.ndarray or typing.get_origin(hint) is np.ndarray:
            out[f.name] = "array"
        else:
            raise LocalProtocolError(
                f"Field {f.name!r} of payload {cls.__name__} has type {hint!r}; "
                "payload "
                "fields must be int, float, str, bool or numpy arrays."
            )
    return out


def field_types(cls: type[Payload]) -> dict[str, FieldType]:
    """Return the wire type of every field of a registered payload class."""
    return _FIELD_TYPES[cls]


def payload_class(kind: str) -> type[Payload]:
    """Return the payload class registered as ``kind`` (KeyError if unknown)."""
    return _REGISTRY[kind]


@dataclass(frozen=True)
class Field:
    """Constraints on one field of a reply.

    Build with :meth:`array` or :meth:`scalar`. ``shape`` entries of ``None`` accept
    any length on that axis. ``nan_padding`` allows NaN as trailing padding along
    the last axis (quantile sketches); ``nondecreasing`` requires the values to
    rise (or stay) along the last axis, padding aside (sorted quantile points).
    ``equals`` requires an exact value (e.g. the agreed label order).
    ``rows`` requires every entry to be at most the row bound the replying client
    declared at the agreement (row counts); ``weights``, at most its weight bound
    (weighted counts: class counts, node weights, with sample weights or
    bootstrap counts). These bound what a buggy client can send; they are not a
    Byzantine defence (a client may lie at the agreement). ``moments``: the last
    axis holds ``(Σw, Σw·y, Σw·y²)`` triples, which must be consistent (Σw >= 0, a
    non-negative variance); with ``weights``, only Σw is bounded. With both
    ``rows`` and ``weights`` the larger bound applies (a count that is weighted
    or not); ``bound_scale`` multiplies the bound (e.g. by the largest agreed
    class weight) and ``bound_slack`` is added to it: the reach of the noise a
    differentially private release adds to a count (a noisy count is the count
    plus noise, so it may pass the bound by that much, never by more).
    """

    dtype: str = ""
    shape: tuple[int | None, ...] | None = None
    finite: bool = True
    nonnegative: bool = False
    nan_padding: bool = False
    low: float | None = None
    high: float | None = None
    equals: object = None
    nondecreasing: bool = False
    rows: bool = False
    weights: bool = False
    moments: bool = False
    bound_scale: float = 1.0
    bound_slack: float = 0.0

    @classmethod
    def array(
        cls,
        dtype: str,
        shape: tuple[int | None, ...] | None = None,
        *,
        finite: bool = True,
        nonnegative: bool = False,
        nan_padding: bool = False,
        low: float | None = None,
        high: float | None = None,
        equals: npt.ArrayLike | None = None,
        nondecreasing: bool = False,
        rows: bool = False,
        weights: bool = False,
        moments: bool = False,
        bound_scale: float = 1.0,
        bound_slack: float = 0.0,
    ) -> Field:
        """Constrain an array: dtype kinds (``"f"``, ``"iu"``, ``"U"``...) and shape."""
        exact = None if equals is None else np.asarray(equals)
        return cls(
            dtype,
            shape,
            finite,
            nonnegative,
            nan_padding,
            low,
            high,
            exact,
            nondecreasing,
            rows,
            weights,
            moments,
            bound_scale,
            bound_slack,
        )

    @classmethod
    def scalar(
        cls,
        *,
        low: float | None = None,
        high: float | None = None,
        equals: object = None,
        finite: bool = True,
        rows: bool = False,
        weights: bool = False,
        bound_slack: float = 0.0,
    ) -> Field:
        """Constraints on a scalar field (range, exact value, finiteness, bounds)."""
        return cls(
            "", None, finite, False, False, low, high, equals, False, rows, weights,
            bound_slack=bound_slack,
        )  # fmt: skip


@dataclass(frozen=True)
class ReplySpec:
    """What a valid reply is: its payload type, field constraints, an optional check.

    ``check`` receives the decoded reply and raises
    :class:`fedtrees.federation.InvalidField` for semantic errors that field
    constraints cannot express: the invariants of the message kind (class counts
    summing to node counts, bins summing to node totals, moments consistent with
    their weights). They bound what a buggy client can do; a hostile client that
    sends consistent lies is not caught (not a Byzantine defence).
    """

    type: type[Payload]
    fields: Mapping[str, Field]
    check: Callable[[Any], None] | None = None
