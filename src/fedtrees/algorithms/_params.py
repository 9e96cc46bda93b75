"""Forest parameters shared by FedForest and the local-forest baselines.

scikit-learn's conventions, checked with fedtrees' one message template:
``min_samples_*`` as a row count or a fraction, ``max_features`` as a name, a
count, a fraction or None.

**Decision (resource bounds):** a parameter that sizes an allocation before any
useful work (a table per tree, a grid per feature, a population, a layer) has an
upper bound, checked at ``fit`` before any round, so a typo such as
``n_quantiles=10**7`` is refused by name instead of ending in a memory error
minutes later. The bounds are far above any setting of the papers. Every bound
goes through one check, :func:`fedtrees._validation.check_int` (``check_size``
adds the reason), which takes an integer of any type — a numpy integer meets
the same bound as an ``int`` — and ``MAX_GRID`` and ``check_size`` live there
so that the statistics bound their ``q`` alike.

The constraints of scikit-learn's forest parameters, shared by FedForest and
the local-forest baselines, are one table here (:func:`forest_constraints`,
the types of :mod:`fedtrees.algorithms._constraints`).
"""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass
from typing import Final

from fedtrees._validation import (
    MAX_GRID,
    check_bool,
    check_float,
    check_int,
    check_size,
    invalid,
    is_integral,
    is_real,
)
from fedtrees.algorithms._constraints import (
    Boolean,
    Check,
    Constraint,
    Interval,
    Options,
    Size,
)

__all__ = [
    "MAX_GRID",
    "MAX_HIDDEN_UNITS",
    "MAX_HIDDEN_WEIGHTS",
    "MAX_N_ESTIMATORS",
    "MAX_POPULATION",
    "MAX_SAMPLES_PER_PATH",
    "MAX_TREE_DEPTH",
    "N_JOBS",
    "Amount",
    "RowsOrFraction",
    "check_bool",
    "check_hidden_sizes",
    "check_max_depth",
    "check_max_features",
    "check_n_jobs",
    "check_size",
    "count_or_fraction",
    "forest_constraints",
    "resolve_max_features",
]


MAX_N_ESTIMATORS: Final = 100_000
"""Most trees of a forest (per-tree seeds and tables are allocated up front)."""
MAX_POPULATION: Final = 10_000
"""Most trees of a genetic population (allocated at initialisation)."""
MAX_SAMPLES_PER_PATH: Final = 100_000
"""Most synthetic rows per tree path (rows are allocated for every path)."""
MAX_HIDDEN_UNITS: Final = 4096
"""Most units of one hidden layer."""
MAX_HIDDEN_WEIGHTS: Final = 2**24
"""Most weights between consecutive hidden layers, summed over the network."""
MAX_TREE_DEPTH: Final = 2**31 - 1
"""Deepest tree (and largest row count such as ``min_samples_split``) a setting
may ask for: scikit-learn's trees hold depths and counts in C ints, and every
count travels in a request."""
_DEPTH_REASON: Final = (
    "a tree of at most 2**31 - 1 rows is never deeper; None grows fully"
)


def check_hidden_sizes(value: object, owner: str) -> tuple[int, ...]:
    """Check ``hidden_layer_sizes``: ints in [1, 4096], at most 2^24 weights between.

    Examples
    --------
    >>> check_hidden_sizes((8, 4), "f")
    (8, 4)
    """
    if not isinstance(value, tuple | list) or not all(
        is_integral(h) and h >= 1 for h in value
    ):
        raise invalid("hidden_layer_sizes", owner, "a tuple of ints >= 1", value)
    sizes = tuple(int(h) for h in value)
    between = sum(a * b for a, b in itertools.pairwise(sizes))
    if any(h > MAX_HIDDEN_UNITS for h in sizes) or between > MAX_HIDDEN_WEIGHTS:
        raise invalid(
            "hidden_layer_sizes",
            owner,
            f"layers of at most {MAX_HIDDEN_UNITS} units with at most "
            f"{MAX_HIDDEN_WEIGHTS} weights between consecutive hidden layers "
            "(the network is allocated on every client)",
            value,
        )
    return sizes


@dataclass(frozen=True)
class Amount:
    """A ``min_samples_*`` value: rows, or (as scikit-learn) a fraction of all rows."""

    value: float
    fraction: bool = False

    def rows(self, total: float) -> float:
        """Return the amount in (weighted) rows for a tree of ``total`` rows."""
        return math.ceil(self.value * total) if self.fraction else self.value

    def as_sklearn(self) -> int | float:
        """Return the value as scikit-learn takes it (int rows or float fraction)."""
        return self.value if self.fraction else int(self.value)


def check_n_jobs(value: object, owner: str) -> int | None:
    """Return the threads ``n_jobs`` asks for (None: the defaults), as joblib counts.

    A positive int is that many threads; ``-1`` every core, ``-k`` all but
    ``k - 1`` of them (at least one), as scikit-learn and joblib count; 0 is
    refused. The model never depends on it.

    Examples
    --------
    >>> check_n_jobs(2, "f"), check_n_jobs(None, "f")
    (2, None)
    >>> check_n_jobs(-1, "f") == (os.cpu_count() or 1)
    True
    """
    if value is None:
        return None
    if not is_integral(value) or int(value) == 0:
        raise invalid("n_jobs", owner, "None or a nonzero int (-1: every core)", value)
    n = int(value)
    cores = os.cpu_count() or 1
    return n if n > 0 else max(1, cores + 1 + n)


def check_max_depth(
    value: object, owner: str, cap: int = MAX_TREE_DEPTH, name: str = "max_depth"
) -> int | None:
    """Return None (grow fully) or an int in [1, cap].

    Examples
    --------
    >>> check_max_depth(2**70, "f")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: The 'max_depth' parameter of f must be an \
int in [1, 2147483647] ...
    """
    if value is None:
        return None
    reason = None if cap != MAX_TREE_DEPTH else _DEPTH_REASON
    return check_int(value, name, owner, min_value=1, max_value=cap, reason=reason)


def count_or_fraction(value: object, name: str, owner: str, smallest: int) -> Amount:
    """Check an int >= ``smallest`` (rows) or a float in (0, 1] (a fraction)."""
    if is_real(value) and not is_integral(value):
        fraction = check_float(
            value, name, owner, min_value=0.0, min_inclusive=False, max_value=1.0
        )
        return Amount(fraction, fraction=True)
    return Amount(float(check_int(value, name, owner, min_value=smallest)))


@dataclass(frozen=True)
class RowsOrFraction(Constraint):
    """``min_samples_*``: an int >= ``smallest`` (rows) or a float in (0, 1].

    Examples
    --------
    >>> RowsOrFraction(2).check(0.25, "min_samples_split", "f")
    Amount(value=0.25, fraction=True)
    """

    smallest: int

    def check(self, value: object, name: str, owner: str) -> Amount:
        """Return the amount: rows, or a fraction of all rows."""
        return count_or_fraction(value, name, owner, self.smallest)


N_JOBS: Final = Check(check_n_jobs)
"""The constraint of ``n_jobs`` (threads, as joblib counts them)."""


def forest_constraints(
    criteria: tuple[str, ...], max_depth: Constraint
) -> dict[str, Constraint]:
    """Return the constraints of scikit-learn's random-forest parameters.

    ``criteria``: the task's criteria; ``max_depth``: the method's depth bound.
    """
    return {
        "n_estimators": Size(1, MAX_N_ESTIMATORS),
        "criterion": Options(criteria),
        "max_depth": max_depth,
        "min_samples_split": RowsOrFraction(2),
        "min_samples_leaf": RowsOrFraction(1),
        "min_impurity_decrease": Interval(float, 0.0),
        "max_features": Check(check_max_features),
        "bootstrap": Boolean(),
    }


def check_max_features(value: object, owner: str) -> object:
    """Check scikit-learn's ``max_features``: a name, an int, a fraction or None."""
    if value is None or value in ("sqrt", "log2"):
        return value
    if is_integral(value):
        return check_int(value, "max_features", owner, min_value=1)
    if is_real(value):
        return check_float(
            value,
            "max_features",
            owner,
            min_value=0.0,
            min_inclusive=False,
            max_value=1.0,
        )
    raise invalid(
        "max_features",
        owner,
        "'sqrt', 'log2', None, an int >= 1 or a float in (0, 1]",
        value,
    )


def resolve_max_features(value: object, n_features: int) -> int:
    """Features considered per node, as scikit-learn counts them.

    Examples
    --------
    >>> resolve_max_features("sqrt", 20), resolve_max_features(1 / 3, 5)
    (4, 1)
    """
    if value is None:
        return n_features
    if value == "sqrt":
        return max(1, int(math.sqrt(n_features)))
    if value == "log2":
        return max(1, int(math.log2(n_features)))
    if isinstance(value, float):
        return max(1, int(value * n_features))
    return min(int(str(value)), n_features)
