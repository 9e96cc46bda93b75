"""Readable text of ICDTA4FL rules: ``"safety = high ∧ persons = 4"`` (display only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from fedtrees._typing import FloatArray, IntArray

__all__ = ["Conditions", "format_number", "rule_texts"]


class Conditions(Protocol):
    """What the texts read of a rule set (a RuleSet is one)."""

    @property
    def base(self) -> str:
        """``"id3"`` (category codes) or ``"cart"`` (intervals)."""
        ...

    @property
    def n_features(self) -> int:
        """Columns the conditions refer to."""
        ...

    @property
    def values(self) -> IntArray:
        """ID3 rules: the code each feature must equal (-1: any)."""
        ...

    @property
    def low(self) -> FloatArray:
        """CART rules: the lower bound of each feature (exclusive)."""
        ...

    @property
    def high(self) -> FloatArray:
        """CART rules: the upper bound of each feature (inclusive)."""
        ...


def format_number(x: float, decimals: int) -> str:
    """Return ``x`` with at most ``decimals`` decimals, trailing zeros trimmed."""
    return np.format_float_positional(float(x), precision=decimals, trim="-")


def rule_texts(
    rules: Conditions,
    feature_names: Sequence[str] | None,
    categories: Sequence[Sequence[str] | None] | None,
    decimals: int,
) -> list[str]:
    """One text per rule (display only, so a loop over the rules is fine here)."""
    names = list(feature_names or (f"x{f}" for f in range(rules.n_features)))
    if rules.base == "id3":
        parts = [_code_texts(names, categories, row) for row in rules.values.tolist()]
    else:
        bounds = zip(rules.low.tolist(), rules.high.tolist(), strict=True)
        parts = [_interval_texts(names, lo, hi, decimals) for lo, hi in bounds]
    return [" ∧ ".join(p) if p else "(always)" for p in parts]


def _code_texts(
    names: list[str], categories: Sequence[Sequence[str] | None] | None, row: list[int]
) -> list[str]:
    parts = []
    for f, code in enumerate(row):
        labels = categories[f] if categories else None
        if code >= 0:
            shown = labels[code] if labels and code < len(labels) else str(code)
            parts.append(f"{names[f]} = {shown}")
    return parts


def _interval_texts(
    names: list[str], low: list[float], high: list[float], decimals: int
) -> list[str]:
    parts = []
    for f, (lo, hi) in enumerate(zip(low, high, strict=True)):
        if lo > -np.inf:
            parts.append(f"{names[f]} > {format_number(lo, decimals)}")
        if hi < np.inf:
            parts.append(f"{names[f]} <= {format_number(hi, decimals)}")
    return parts
