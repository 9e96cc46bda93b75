"""Category values meet category names: one home for every layer.

Category names travel as ``str`` (the agreement, declarations, fitted trees).
A value is first looked up by its text. **Decision (numbers are compared by
value):** a value that is a number and whose text is not among the names then
matches the name that *prints that same number* — ``1`` at fit and ``1.0`` at
predict (or a client's float categories against a declaration of ints) are one
category, as they are in pandas (``pd.Categorical([1.0], categories=[1])``)
and in scikit-learn's encoders. Names that do not print a number canonically
(the text ``"01234"`` of a zip code, ``"True"``) match only by text, so text
categories are never reinterpreted; a number equal to two names (``"1"`` and
``"1.0"`` both named) matches neither, rather than one at random.

This module sits beside ``_validation`` at the bottom of the import graph: the
sites' data (:mod:`fedtrees.federation`), the estimators and
:meth:`fedtrees.tree.Tree.predict` on a DataFrame code categories with it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

import numpy as np
import pandas as pd

from fedtrees._typing import IntArray

__all__ = ["canonical_number", "category_codes", "category_positions"]

_AMBIGUOUS: Final = -2


def category_positions(values: Sequence[object], names: Sequence[str]) -> IntArray:
    """Return the position in ``names`` of each value; -1 where none matches.

    By text (``str(value)``), then, for a number, by value (module docstring).

    Examples
    --------
    >>> names = ["1", "2", "3", "b", "0"]
    >>> category_positions([1.0, 3, "b", 2.5, "02", 0.0], names).tolist()
    [0, 2, 3, -1, -1, 4]
    >>> category_positions(["a", "b"], ("a", "b")).tolist()  # the names, in order
    [0, 1]
    """
    texts = [str(v) for v in values]
    if texts == list(names) and len(set(texts)) == len(texts):
        # the common case (a client's own categories are the declared ones): no
        # index to build (measured on adult's 8 categorical columns: 0.03 ms a
        # client against 1.4 ms)
        return np.arange(len(texts), dtype=np.int64)
    text = pd.Index(texts, dtype=object)
    positions = np.asarray(
        pd.Index(list(names), dtype=object).get_indexer(text), dtype=np.int64
    )
    missing = np.flatnonzero(positions < 0).tolist()
    numbers = {i: _number(values[i]) for i in missing}
    unmatched = {i: x for i, x in numbers.items() if x is not None}
    if unmatched:
        by_value = _numeric_names(names)
        for i, number in unmatched.items():
            found = by_value.get(number, -1)
            positions[i] = max(found, -1)  # an ambiguous number matches nothing
    return positions


def category_codes(series: pd.Series, names: Sequence[str]) -> IntArray:
    """Return each row's position in ``names``: -1 if missing or not among them.

    ``series`` is a pandas ``category`` column; its categories meet ``names``
    by :func:`category_positions`.

    Examples
    --------
    >>> column = pd.Series(["b", "z", None, "a"], dtype="category")
    >>> category_codes(column, ["a", "b"]).tolist()
    [1, -1, -1, 0]
    """
    position = category_positions(list(series.cat.categories), names)
    table = np.append(position, -1).astype(np.int64)  # code -1 (missing) -> -1
    codes: IntArray = table[series.cat.codes.to_numpy()]
    return codes


def _numeric_names(names: Sequence[str]) -> dict[int | float, int]:
    """Map each number a name prints canonically to its position (-2: twice)."""
    out: dict[int | float, int] = {}
    for k, name in enumerate(names):
        number = canonical_number(name)
        if number is not None:  # 1 and 1.0 are one key: equal numbers hash alike
            out[number] = _AMBIGUOUS if number in out else k
    return out


def canonical_number(name: str) -> int | float | None:
    """Return the number ``name`` is the canonical text of (``"1"``, ``"0.5"``).

    Examples
    --------
    >>> canonical_number("1"), canonical_number("0.5"), canonical_number("01")
    (1, 0.5, None)
    """
    try:
        number: int | float = int(name)
    except ValueError:
        try:
            number = float(name)
        except ValueError:
            return None
    return number if math.isfinite(number) and str(number) == name else None


def _number(value: object) -> int | float | None:
    """Return a finite int or float value as a Python number (not a bool)."""
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, np.integer | np.floating):
        value = value.item()
    if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        return value
    return None
