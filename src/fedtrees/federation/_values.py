"""Values that travel as text: category names and class labels (one home).

Category names and class labels travel as ``str`` (the agreement,
declarations, fitted models). This module says which text a value is, and
which texts a label type allows.

**Categories.** A value is first looked up by its text. **Decision (numbers are
compared by value):** a value that is a number and whose text is not among the
names then matches the name that *prints that same number* — ``1`` at fit and
``1.0`` at predict (or a client's float categories against a declaration of
ints) are one category, as they are in pandas
(``pd.Categorical([1.0], categories=[1])``) and in scikit-learn's encoders.
Names that do not print a number canonically (the text ``"01234"`` of a zip
code, ``"True"``) match only by text, so text categories are never
reinterpreted; a number equal to two names (``"1"`` and ``"1.0"`` both
declared) matches neither, rather than one at random.

**Declarations.** A run may declare category names and class labels (public
metadata); :func:`check_categories` and :func:`check_classes` validate them
and turn every name into its text.

**Labels.** A client reports its label set as text with the label type
(``"int"``, ``"float"``, ``"bool"`` or ``"str"``); :func:`label_text_problem`
says what is wrong with a set that its type cannot hold — text under ``"int"``,
``"nan"`` under ``"float"`` (a phantom class), a repeated label — so the server
refuses it by name instead of failing while sorting or typing the classes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Final

import numpy as np

from fedtrees._categories import canonical_number, category_positions
from fedtrees.exceptions import ValidationError

__all__ = [
    "DeclaredCategories",
    "category_positions",
    "check_categories",
    "check_classes",
    "label_text_problem",
]

DeclaredCategories = dict[str, tuple[str, ...]]
"""Declared categories: column name -> its category names, in code order."""
_CATEGORY_SCALARS: Final = (str, int, float, bool, np.generic)


def check_categories(categories: object, owner: str) -> DeclaredCategories:
    """Validate a declaration of categories; return it as column -> names (``str``).

    ``categories`` maps column names to sequences of category names; a name may
    be given as any scalar and travels as ``str(value)``; a client's values meet
    it by :func:`category_positions`. None declares nothing.

    Raises
    ------
    ValidationError
        Naming ``owner`` and the column: not a mapping, a column given no or
        duplicate categories, or a category that is not a scalar.
    """
    if categories is None:
        return {}
    if not isinstance(categories, Mapping):
        raise ValidationError(
            f"{owner}: categories must map column names to their category names; "
            f"got {type(categories).__name__}."
        )
    return {
        str(column): _declared_list(f"categories[{str(column)!r}]", values, owner)
        for column, values in categories.items()
    }


def check_classes(classes: object, owner: str) -> tuple[str, ...] | None:
    """Validate a declaration of the class labels; return them as ``str`` (or None).

    Labels are compared as ``str(label)``, as they travel (``1`` and ``"1"`` are
    the same label, ``1.0`` is another).

    Raises
    ------
    ValidationError
        Naming ``owner``: not a sequence, empty, repeated or non-scalar labels.
    """
    if classes is None:
        return None
    return _declared_list("classes", classes, owner)


def _declared_list(what: str, values: object, owner: str) -> tuple[str, ...]:
    """Check one declared list (``what`` names it, e.g. ``categories['ward']``)."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence | np.ndarray):
        raise ValidationError(
            f"{owner}: {what} must be a sequence of names; got {type(values).__name__}."
        )
    items = list(values)
    if not items:
        raise ValidationError(f"{owner}: {what} is empty.")
    bad = [v for v in items if not isinstance(v, _CATEGORY_SCALARS)]
    if bad:
        raise ValidationError(
            f"{owner}: {what} holds a {type(bad[0]).__name__}; names must be strings "
            "or numbers."
        )
    names = tuple(str(v) for v in items)
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise ValidationError(f"{owner}: {what} repeats {repeated} (compared as str).")
    return names


_BOOLS: Final = frozenset({"True", "False"})


def label_text_problem(labels: Sequence[str], label_type: str) -> str | None:
    """Return what is wrong with a label set of ``label_type``, or None.

    ``"int"`` labels are the text of ints (``str(int(x)) == x``), ``"float"``
    ones of finite floats, ``"bool"`` ones ``"True"``/``"False"``; ``"str"``
    allows any text. No label may repeat. The problem names no label (a
    client's labels stay out of the message).

    Examples
    --------
    >>> label_text_problem(["0", "1"], "int") is None
    True
    >>> label_text_problem(["0.0", "nan"], "float")
    'holds a label that is not the text of a finite float'
    """
    if len(set(labels)) != len(labels):
        return "repeats a label"
    check = _LABEL_TEXT.get(label_type)
    if check is not None and not all(check(label) for label in labels):
        return f"holds a label that is not the text of {_LABEL_WHAT[label_type]}"
    return None


def _is_int_text(text: str) -> bool:
    number = canonical_number(text)
    return isinstance(number, int)


def _is_float_text(text: str) -> bool:
    """Finite float text as numpy prints it (not "nan", " 1", "1_0"; "1e+03" is)."""
    if "_" in text or text.strip() != text:
        return False
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


_LABEL_TEXT: Final = {
    "int": _is_int_text,
    "float": _is_float_text,
    "bool": _BOOLS.__contains__,
}
_LABEL_WHAT: Final = {"int": "an int", "float": "a finite float", "bool": "a bool"}
