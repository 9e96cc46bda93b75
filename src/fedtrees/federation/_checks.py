"""Validation of replies against the request's :class:`ReplySpec`.

Run by the round loop on every reply, before any strategy sees it: a malformed
reply becomes a :class:`RemoteProtocolError` naming client, round and field, and
never reaches (or corrupts) the aggregation.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

from fedtrees.federation._payload import Field, Payload, ReplySpec

P = TypeVar("P", bound=Payload)

__all__ = ["InvalidField", "as_reply", "check_reply"]


class InvalidField(Exception):  # an internal signal, converted by the loop
    """Raised by checks: ``field`` broke its constraint for ``reason``."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason


def as_reply(reply: Payload, cls: type[P]) -> P:
    """Return ``reply`` typed as ``cls``: the round loop checked it against its spec.

    For strategies, whose ``aggregate`` receives validated replies as ``Payload``.
    """
    assert isinstance(reply, cls)  # check_reply refused any other type
    return reply


def check_reply(spec: ReplySpec, reply: Payload) -> None:
    """Raise :class:`InvalidField` unless ``reply`` satisfies ``spec``."""
    if type(reply) is not spec.type:
        raise InvalidField(
            "kind", f"is {reply.kind!r}; a {spec.type.kind!r} reply was expected"
        )
    for name, constraint in spec.fields.items():
        value = getattr(reply, name)
        if isinstance(value, np.ndarray):
            _check_array(name, value, constraint)
        else:
            _check_scalar(name, value, constraint)
    if spec.check is not None:
        spec.check(reply)


def _check_array(name: str, value: np.ndarray, c: Field) -> None:
    if c.dtype and value.dtype.kind not in c.dtype:
        raise InvalidField(name, f"has dtype {value.dtype}; kind {c.dtype!r} expected")
    if c.shape is not None and (
        value.ndim != len(c.shape)
        or any(
            want is not None and got != want
            for got, want in zip(value.shape, c.shape, strict=True)
        )
    ):
        shown = tuple("*" if s is None else s for s in c.shape)
        raise InvalidField(name, f"has shape {value.shape}; {shown} expected")
    if c.equals is not None and not _same(value, np.asarray(c.equals)):
        raise InvalidField(
            name, f"is {value.tolist()!r}; {np.asarray(c.equals).tolist()!r} expected"
        )
    if value.dtype.kind not in "fiub":
        return
    _check_numbers(name, value.astype(np.float64, copy=False), c)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.all(a == b))


def _check_numbers(name: str, x: np.ndarray, c: Field) -> None:
    original = x
    finite = np.isfinite(x)
    if c.nan_padding:
        nan = np.isnan(x)
        # NaN may only trail: once NaN starts along the last axis, it continues.
        trailing = np.flip(np.logical_and.accumulate(np.flip(nan, -1), -1), -1)
        if np.any(nan & ~trailing) or np.any(np.isinf(x)):
            raise InvalidField(name, "holds NaN or inf outside trailing padding")
        finite = finite | nan
        x = np.where(nan, 0.0, x)
    if c.finite and not finite.all():
        raise InvalidField(name, "holds NaN or inf; finite values were expected")
    if c.nonnegative and np.any(x < 0):
        raise InvalidField(name, "holds negative values; counts must be >= 0")
    if c.low is not None and np.any(x < c.low):
        raise InvalidField(name, f"holds values below {c.low}")
    if c.high is not None and np.any(x > c.high):
        raise InvalidField(name, f"holds values above {c.high}")
    if c.nondecreasing and original.ndim and _falls(original):
        raise InvalidField(name, "must be non-decreasing along its last axis")


def _falls(x: np.ndarray) -> bool:
    """Whether any value is below its predecessor (NaN padding counts as +inf)."""
    rising = np.where(np.isnan(x), np.inf, x)
    with np.errstate(invalid="ignore"):  # inf - inf in the padding
        return bool(np.any(np.diff(rising, axis=-1) < 0))


def _check_scalar(name: str, value: object, c: Field) -> None:
    if c.equals is not None and value != c.equals:
        raise InvalidField(name, f"is {value!r}; {c.equals!r} expected")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    if c.finite and not np.isfinite(value):
        raise InvalidField(name, f"is {value!r}; a finite value was expected")
    if c.low is not None and value < c.low:
        raise InvalidField(name, f"is {value!r}; at least {c.low} expected")
    if c.high is not None and value > c.high:
        raise InvalidField(name, f"is {value!r}; at most {c.high} expected")
