"""Forest parameters shared by FedForest and the local-forest baselines.

scikit-learn's conventions, checked with fedtrees' one message template:
``min_samples_*`` as a row count or a fraction, ``max_features`` as a name, a
count, a fraction or None.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fedtrees._validation import check_float, check_int, invalid

__all__ = [
    "Amount",
    "check_bool",
    "check_max_depth",
    "check_max_features",
    "count_or_fraction",
    "resolve_max_features",
]


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


def check_bool(value: object, name: str, owner: str) -> bool:
    """Return ``value`` if it is a bool (numpy bools included)."""
    if not isinstance(value, bool):
        raise invalid(name, owner, "a bool", value)
    return value


def check_max_depth(value: object, owner: str, cap: int | None = None) -> int | None:
    """Return None (grow fully) or an int in [1, cap]."""
    if value is None:
        return None
    return check_int(value, "max_depth", owner, min_value=1, max_value=cap)


def count_or_fraction(value: object, name: str, owner: str, smallest: int) -> Amount:
    """Check an int >= ``smallest`` (rows) or a float in (0, 1] (a fraction)."""
    if isinstance(value, float):
        fraction = check_float(
            value, name, owner, min_value=0.0, min_inclusive=False, max_value=1.0
        )
        return Amount(fraction, fraction=True)
    return Amount(float(check_int(value, name, owner, min_value=smallest)))


def check_max_features(value: object, owner: str) -> object:
    """Check scikit-learn's ``max_features``: a name, an int, a fraction or None."""
    if value is None or value in ("sqrt", "log2"):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return check_int(value, "max_features", owner, min_value=1)
    if isinstance(value, float):
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
