"""Configs that validate themselves: one constraint per parameter, one rule table.

Every estimator declares, as scikit-learn's ``_parameter_constraints`` does, a
table from each constructor parameter to its :class:`Constraint`, and its
method a table of cross-parameter :class:`Rule` s; its config builder calls
:func:`validate` once, at ``fit``, and builds its frozen config from the
checked values. The constraint types are our own (small, built on the checks
of :mod:`fedtrees._validation`, so every message keeps the one template
``"The {name!r} parameter of {Owner} must be ... Got ... instead."``):

- :class:`Interval` (an int or a float within bounds), :class:`Size` (an int
  that sizes memory: its bound guards against typos), :class:`Options`,
  :class:`Boolean`, :class:`NoneOr` (None, or another constraint),
  :class:`Seed` (``random_state``);
- :class:`Check`: a method's own check function (``value, owner -> value``),
  optionally reading parameters checked before it;
- :class:`Later`: a value whose check needs the data (the agreed columns or
  classes); the table names where it is checked, so no parameter is left out.

**Decision (order):** :func:`validate` checks every parameter in table order,
then every rule in its table's order, as scikit-learn validates its parameter
table before the cross-parameter checks of ``fit``: with several mistakes at
once, the first per-parameter one is reported.

Examples
--------
>>> table = {"max_depth": NoneOr(Interval(int, 1, 16)), "secure": Boolean()}
>>> rules = (
...     Rule(("max_depth", "secure"), lambda d, s: d is None or not s,
...          "{owner}: secure=True needs max_depth=None (got {max_depth!r})."),
... )
>>> validate("Model", {"max_depth": 3, "secure": False}, table, rules)
{'max_depth': 3, 'secure': False}
>>> validate("Model", {"max_depth": 0, "secure": False}, table)
... # doctest: +ELLIPSIS
Traceback (most recent call last):
...
fedtrees.exceptions.ValidationError: The 'max_depth' parameter of Model must be \
an int in [1, 16]. Got 0 instead.
>>> validate("Model", {"max_depth": 3, "secure": True}, table, rules)
Traceback (most recent call last):
...
fedtrees.exceptions.ValidationError: Model: secure=True needs max_depth=None \
(got 3).
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

import numpy as np

from fedtrees._random import resolve_seed
from fedtrees._validation import (
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_size,
    invalid,
    is_integral,
)
from fedtrees.exceptions import LocalProtocolError, ValidationError
from fedtrees.federation import check_timeout

__all__ = [
    "RUN_CONSTRAINTS",
    "Boolean",
    "Check",
    "Constraint",
    "Constraints",
    "Interval",
    "Later",
    "NoneOr",
    "Options",
    "Rule",
    "Seed",
    "Size",
    "check_params",
    "check_verbose",
    "config_fields",
    "validate",
]


class Constraint(abc.ABC):
    """What one parameter must be: :meth:`check` returns it checked, or raises."""

    @abc.abstractmethod
    def check(self, value: object, name: str, owner: str) -> Any:
        """Return ``value`` checked (and converted), or raise ``ValidationError``."""


Constraints: TypeAlias = Mapping[str, Constraint]
"""A table: each parameter's name and its constraint, in checking order."""


@dataclass(frozen=True)
class Interval(Constraint):
    """An int (``kind=int``) or a finite float (``kind=float``) within bounds.

    Bounds are inclusive; ``low_open`` excludes ``low`` (floats only);
    ``reason`` says why an int's bounds hold; ``allow_inf`` admits ``+inf``.

    Examples
    --------
    >>> Interval(float, 0.0, 1.0, low_open=True).check(0.5, "subsample", "f")
    0.5
    """

    kind: type[int] | type[float]
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    reason: str | None = None
    allow_inf: bool = False

    def check(self, value: object, name: str, owner: str) -> int | float:
        """Return ``value`` as an int or a float within the bounds."""
        if self.kind is int:
            return check_int(
                value,
                name,
                owner,
                min_value=None if self.low is None else int(self.low),
                max_value=None if self.high is None else int(self.high),
                reason=self.reason,
            )
        return check_float(
            value,
            name,
            owner,
            min_value=self.low,
            min_inclusive=not self.low_open,
            max_value=self.high,
            allow_inf=self.allow_inf,
        )


@dataclass(frozen=True)
class Size(Constraint):
    """An int in ``[low, high]`` that sizes memory (:func:`check_size`)."""

    low: int
    high: int

    def check(self, value: object, name: str, owner: str) -> int:
        """Return ``value`` as an int within the bounds."""
        return check_size(value, name, owner, self.low, self.high)


@dataclass(frozen=True)
class Options(Constraint):
    """One of a few strings (:func:`check_choice`)."""

    choices: tuple[str, ...]

    def check(self, value: object, name: str, owner: str) -> str:
        """Return ``value`` if it is one of the choices."""
        return check_choice(value, name, owner, self.choices)


@dataclass(frozen=True)
class Boolean(Constraint):
    """A bool (numpy bools included; ints refused)."""

    def check(self, value: object, name: str, owner: str) -> bool:
        """Return ``value`` if it is a bool."""
        return check_bool(value, name, owner)


@dataclass(frozen=True)
class NoneOr(Constraint):
    """None (checked as ``none``: the value None stands for), or ``inner``.

    The message of a value that is not None is ``inner`` 's.
    """

    inner: Constraint
    none: object = None

    def check(self, value: object, name: str, owner: str) -> Any:
        """Return ``none`` for None, else ``value`` checked by ``inner``."""
        return self.none if value is None else self.inner.check(value, name, owner)


@dataclass(frozen=True)
class Check(Constraint):
    """A method's own check: ``function(value, *read, owner) -> checked value``.

    ``reads`` names parameters checked earlier in the table whose checked
    values the function takes after ``value`` (``bin_edges`` reads
    ``max_bins``). The function names the parameter in its own messages.
    """

    function: Callable[..., Any]
    reads: tuple[str, ...] = ()

    def check(self, value: object, name: str, owner: str) -> Any:
        """Return ``function(value, owner)`` (see :func:`validate` for reads)."""
        return self.function(value, owner)

    def check_reading(
        self, value: object, owner: str, checked: Mapping[str, Any]
    ) -> Any:
        """Return ``function(value, *checked reads, owner)``."""
        return self.function(value, *(checked[r] for r in self.reads), owner)


@dataclass(frozen=True)
class Later(Constraint):
    """A value checked once the data is known; ``where`` says where.

    ``feature_ranges`` of a method that agrees the columns first, for example:
    the table still names it, and the value passes through unchanged here.
    """

    where: str

    def check(self, value: object, name: str, owner: str) -> object:
        """Return ``value`` unchanged (``where`` checks it)."""
        return value


@dataclass(frozen=True)
class Seed(Constraint):
    """``random_state``: None, a numpy Generator or an int seed, kept as given.

    The seed is resolved (a Generator drawn once) by
    :func:`fedtrees._random.resolve_seed` where the config is built; this
    check draws nothing.
    """

    def check(self, value: object, name: str, owner: str) -> object:
        """Return ``value`` if :func:`resolve_seed` would take it."""
        if value is not None and not isinstance(value, np.random.Generator):
            resolve_seed(value, owner)  # type: ignore[arg-type]  # raises if bad
        return value


@dataclass(frozen=True)
class Rule:
    """A cross-parameter rule: ``holds(*checked values of reads)`` or an error.

    ``message`` is formatted with ``owner`` and the checked values by name
    (``"{owner}: ... (got protocol={protocol!r})."``). With ``parameter``
    set, it is the constraint of the standard template instead, which quotes
    that parameter's value as given: ``"The {parameter!r} parameter of
    {owner} must be {message}. Got ... instead."``.
    """

    reads: tuple[str, ...]
    holds: Callable[..., bool]
    message: str
    parameter: str | None = None

    def error(
        self, owner: str, checked: Mapping[str, Any], given: Mapping[str, object]
    ) -> ValidationError:
        """Return the error of this rule broken by ``checked``."""
        values = {name: checked[name] for name in self.reads}
        text = self.message.format(owner=owner, **values)
        if self.parameter is None:
            return ValidationError(text)
        return invalid(self.parameter, owner, text, given[self.parameter])


def validate(
    owner: str,
    params: Mapping[str, object],
    constraints: Constraints,
    rules: Sequence[Rule] = (),
) -> dict[str, Any]:
    """Check ``params`` against ``constraints``, then ``rules``; return them checked.

    Parameters
    ----------
    owner
        The estimator (or function) named in every message.
    params
        Every parameter by name (an estimator's ``get_params()``).
    constraints
        Every parameter's constraint, in checking order; exactly the names of
        ``params``.
    rules
        Cross-parameter rules, checked in order after every parameter.

    Returns
    -------
    dict
        Each parameter's checked value (the type its constraint returns).

    Raises
    ------
    ValidationError
        The first parameter, then the first rule, that is broken.
    LocalProtocolError
        A parameter without a constraint, or a constraint without a parameter
        (a bug in fedtrees: the table and the constructor disagree).
    """
    _check_covered(owner, params, constraints)
    checked: dict[str, Any] = {}
    for name, constraint in constraints.items():
        value = params[name]
        if isinstance(constraint, Check) and constraint.reads:
            checked[name] = constraint.check_reading(value, owner, checked)
        else:
            checked[name] = constraint.check(value, name, owner)
    for rule in rules:
        if not rule.holds(*(checked[name] for name in rule.reads)):
            raise rule.error(owner, checked, params)
    return checked


def check_params(estimator: Any, rules: Sequence[Rule] = ()) -> dict[str, Any]:
    """Return an estimator's parameters checked against its class's table.

    The table is the class attribute ``_constraint_table`` (every constructor
    parameter, :func:`validate`); ``rules`` are its method's.
    """
    table: Constraints = type(estimator)._constraint_table
    return validate(type(estimator).__name__, estimator.get_params(), table, rules)


def _check_covered(owner: str, params: Iterable[str], constraints: Constraints) -> None:
    given, declared = set(params), set(constraints)
    if given != declared:
        raise LocalProtocolError(
            f"{owner} has parameters without a constraint "
            f"{sorted(given - declared)} and constraints without a parameter "
            f"{sorted(declared - given)}: its constraint table must name every "
            "constructor parameter."
        )


def config_fields(config: type[Any], checked: Mapping[str, Any]) -> dict[str, Any]:
    """Return the checked values that are fields of the dataclass ``config``.

    Examples
    --------
    >>> @dataclass(frozen=True)
    ... class Config:
    ...     depth: int
    >>> config_fields(Config, {"depth": 3, "timeout": 60.0})
    {'depth': 3}
    """
    names = {field.name for field in dataclasses.fields(config)}
    return {name: value for name, value in checked.items() if name in names}


def check_verbose(value: object, owner: str) -> bool:
    """Return ``verbose`` as a bool: a bool, or an int >= 0 as in scikit-learn.

    Examples
    --------
    >>> check_verbose(2, "f")
    True
    """
    if isinstance(value, bool | np.bool_) or (is_integral(value) and int(value) >= 0):
        return bool(value)
    raise invalid("verbose", owner, "a bool (or an int >= 0)", value)


RUN_CONSTRAINTS: Final[Constraints] = {
    "random_state": Seed(),
    "timeout": Check(check_timeout),
    "workers": Interval(int, 1),
    "verbose": Check(check_verbose),
}
"""The parameters of every estimator's run (``FederatedEstimator._run`` uses
them too); ``n_jobs`` joins them where an estimator has it
(:data:`fedtrees.algorithms._params.N_JOBS`)."""
