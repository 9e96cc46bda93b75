"""Validation of replies against the request's :class:`ReplySpec`.

Run by the round loop on every reply, before any strategy sees it: a malformed
reply becomes a :class:`RemoteProtocolError` naming client, round and field, and
never reaches (or corrupts) the aggregation.

Besides types, shapes and ranges, every reply is checked against the invariants
of its message kind (:attr:`ReplySpec.check`; the helpers below) and against the
bounds its client declared at the agreement (``row_bound``, ``weight_bound``,
:mod:`fedtrees.federation._schema`): no count exceeds them, class counts add up
to node counts, moments are consistent with their weights. This bounds what a
*buggy* client can do to the model (an inflated statistic is refused by name);
it is **not** a Byzantine defence: a hostile client that sends consistent,
plausible lies within its declared bounds is not detected.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

from fedtrees._validation import is_real
from fedtrees.federation._payload import Field, Payload, ReplySpec

P = TypeVar("P", bound=Payload)

__all__ = [
    "RTOL",
    "InvalidField",
    "as_reply",
    "check_at_most",
    "check_moments",
    "check_reply",
    "check_same_stats",
    "moment_tolerance",
]

RTOL = 1e-9
"""Relative tolerance of equalities between sums of float64 statistics."""


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


def check_reply(
    spec: ReplySpec,
    reply: Payload,
    *,
    row_bound: int | None = None,
    weight_bound: float | None = None,
) -> None:
    """Raise :class:`InvalidField` unless ``reply`` satisfies ``spec``.

    ``row_bound`` and ``weight_bound`` are what the replying client declared at
    the agreement; fields marked ``rows``/``weights`` may not exceed them (not
    checked when None: round 0, or a loop without an agreement).
    """
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
        _check_bounds(name, value, constraint, row_bound, weight_bound)
    if spec.check is not None:
        spec.check(reply)


def _check_bounds(
    name: str,
    value: object,
    c: Field,
    row_bound: int | None,
    weight_bound: float | None,
) -> None:
    """Refuse a count above the client's declared row (or weight) bound."""
    if not (c.rows or c.weights) or row_bound is None or weight_bound is None:
        return
    x = np.asarray(value)
    if x.size == 0 or x.dtype.kind not in "fiu":
        return
    if c.moments:
        x = x[..., 0]  # only the weight Σw of a moment triple is a count
    # NaN padding (or refused already) is no count; integers need no copy
    top = float(np.fmax.reduce(x, axis=None, initial=0.0))  # counts are >= 0
    # A rounding allowance for weighted sums (below one row for any real bound).
    bounds = ([float(row_bound)] if c.rows else []) + (
        [weight_bound] if c.weights else []
    )
    limit = max(bounds) * (1.0 + RTOL) * c.bound_scale + c.bound_slack
    if top > limit:
        scaled = "" if c.bound_scale == 1.0 else f" times {c.bound_scale!r}"
        noise = "" if not c.bound_slack else f" plus {c.bound_slack:g} of noise"
        raise InvalidField(
            name,
            f"holds {top!r}, more than the {row_bound} rows (weight "
            f"{weight_bound!r}){scaled} the client declared at the agreement"
            f"{noise}",
        )


def moment_tolerance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return the rounding allowed between two sums of the same moment triples.

    Σw and Σw·y² are sums of non-negative terms: relative :data:`RTOL`. Σw·y can
    cancel to about 0; its rounding is relative to Σ|w·y| <= sqrt(Σw · Σw·y²).
    """
    scale = np.maximum(np.abs(a), np.abs(b))
    spread = np.sqrt(np.maximum(a[..., 0] * a[..., 2], b[..., 0] * b[..., 2]))
    scale[..., 1] = np.maximum(scale[..., 1], spread)
    out: np.ndarray = RTOL * scale
    return out


def check_same_stats(
    name: str,
    got: np.ndarray,
    want: np.ndarray,
    what: str,
    moments: bool,
    *,
    atol: float = 0.0,
) -> None:
    """Require statistics ``got == want`` up to rounding (moment triples if asked).

    ``atol``: an absolute allowance on top (a fixed-point sum's rounding).
    """
    a = np.asarray(got, dtype=np.float64)
    b = np.asarray(want, dtype=np.float64)
    tol = moment_tolerance(a, b) if moments else RTOL * np.maximum(abs(a), abs(b))
    bad = np.abs(a - b) > tol + atol
    if np.any(bad):
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InvalidField(
            name,
            f"is inconsistent at {at}: {what} is {float(a[at])!r} but should be "
            f"{float(b[at])!r}",
        )


def check_at_most(
    name: str, values: np.ndarray, limit: np.ndarray, what: str, *, atol: float = 0.0
) -> None:
    """Require ``values <= limit`` elementwise (relative tolerance :data:`RTOL`).

    ``atol``: an absolute allowance on top (a fixed-point sum's rounding).
    """
    a = np.asarray(values, dtype=np.float64)
    b = np.asarray(limit, dtype=np.float64)
    bad = a > b + RTOL * np.maximum(np.abs(a), np.abs(b)) + atol
    if np.any(bad):
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        shown = np.broadcast_to(b, a.shape)[at]
        raise InvalidField(
            name,
            f"is inconsistent at {at}: {what} {float(a[at])!r} exceeds "
            f"{float(shown)!r}",
        )


def check_moments(name: str, moments: np.ndarray) -> None:
    """Require moment triples ``(Σw, Σw·y, Σw·y²)`` (last axis) to be consistent.

    ``Σw >= 0``, ``Σw·y² >= 0`` and ``Σw·y² · Σw >= (Σw·y)²`` (a non-negative
    variance, Cauchy-Schwarz) up to rounding; ``Σw = 0`` forces the others to 0.
    """
    m = np.asarray(moments, dtype=np.float64).reshape(-1, 3)
    w, s1, s2 = m[:, 0], m[:, 1], m[:, 2]
    if np.any(w < 0):
        raise InvalidField(name, "holds a negative weight Σw; weights must be >= 0")
    if np.any(s2 < 0):
        raise InvalidField(name, "holds a negative Σw·y²; it must be >= 0")
    with np.errstate(over="ignore", invalid="ignore"):
        lhs, rhs = s2 * w, s1 * s1
        bad = lhs < rhs - 1e-6 * np.maximum(lhs, rhs) - 1e-300
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise InvalidField(
            name,
            f"holds inconsistent moments at {i}: Σw={w[i]!r}, Σw·y={s1[i]!r}, "
            f"Σw·y²={s2[i]!r} give a negative variance",
        )


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
    if value.dtype.kind in "iu" and not c.moments:
        _check_integers(name, value, c)  # no float copy: replies hold millions
        return
    _check_numbers(name, value.astype(np.float64, copy=False), c)


def _check_integers(name: str, x: np.ndarray, c: Field) -> None:
    """Check :func:`_check_numbers`'s constraints on integers (always finite)."""
    if x.size:
        low, high = x.min(), x.max()
        if c.nonnegative and low < 0:
            raise InvalidField(name, "holds negative values; counts must be >= 0")
        if c.low is not None and low < c.low:
            raise InvalidField(name, f"holds values below {c.low}")
        if c.high is not None and high > c.high:
            raise InvalidField(name, f"holds values above {c.high}")
    if c.nondecreasing and x.ndim and np.any(x[..., 1:] < x[..., :-1]):  # no wrap
        raise InvalidField(name, "must be non-decreasing along its last axis")


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
    if c.moments and original.size:
        if original.shape[-1] != 3:
            raise InvalidField(name, "must hold (Σw, Σw·y, Σw·y²) triples")
        check_moments(name, original)


def _falls(x: np.ndarray) -> bool:
    """Whether any value is below its predecessor (NaN padding counts as +inf)."""
    rising = np.where(np.isnan(x), np.inf, x)
    with np.errstate(invalid="ignore"):  # inf - inf in the padding
        return bool(np.any(np.diff(rising, axis=-1) < 0))


def _check_scalar(name: str, value: object, c: Field) -> None:
    if c.equals is not None and value != c.equals:
        raise InvalidField(name, f"is {value!r}; {c.equals!r} expected")
    if not is_real(value):
        return
    if c.finite and not np.isfinite(value):
        raise InvalidField(name, f"is {value!r}; a finite value was expected")
    if c.low is not None and value < c.low:
        raise InvalidField(name, f"is {value!r}; at least {c.low} expected")
    if c.high is not None and value > c.high:
        raise InvalidField(name, f"is {value!r}; at most {c.high} expected")
