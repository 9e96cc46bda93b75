"""``class_weight``: one home for its checks and for scikit-learn's weights.

scikit-learn's meaning (``sklearn.utils.class_weight``): a row of class c
weighs its sample weight times ``class_weight[c]``. Accepted values:

- ``None``: every class weighs 1;
- a dict ``{label: weight}`` (each weight a positive number <=
  :data:`MAX_CLASS_WEIGHT`; a label the dict leaves out weighs 1, a label
  the classes do not hold is an error naming it);
- ``"balanced"``: ``n_samples / (n_classes * count[c])`` from the row counts of
  the classes (:func:`balanced_weights`);
- ``"balanced_subsample"`` (forests with a bootstrap): the same, from each
  tree's bootstrap sample (draws counted with their multiplicity).

Which presets an estimator takes, and whose counts ``"balanced"`` uses (the
pooled rows for FedForest, each client's own rows for the synthetic-data
method), is the estimator's business; it passes its presets to
:func:`check_class_weight` (at ``fit``, before any round) and resolves a dict
on the agreed classes with :func:`class_weight_codes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray
from fedtrees._validation import MAX_TOTAL_WEIGHT, invalid, is_real
from fedtrees.exceptions import ValidationError

__all__ = [
    "MAX_CLASS_WEIGHT",
    "balanced_weights",
    "check_class_weight",
    "class_weight_codes",
]

MAX_CLASS_WEIGHT: Final = MAX_TOTAL_WEIGHT
"""Largest weight of a class: a client's weighted counts (up to its total weight
times the class weight) and their squares must stay finite float64."""


def check_class_weight(
    value: object, owner: str, presets: Sequence[str] = ("balanced",)
) -> object:
    """Return ``value`` if it is None, one of ``presets`` or a dict of weights.

    The labels of a dict are checked later, against the agreed classes
    (:func:`class_weight_codes`).

    Raises
    ------
    ValidationError
        Naming ``class_weight``, ``owner`` and what it must be.

    Examples
    --------
    >>> check_class_weight({"sick": 3}, "Model")
    {'sick': 3}
    >>> check_class_weight("balance", "Model")
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: The 'class_weight' parameter of Model \
must be None, 'balanced' or a dict {label: weight}. Got 'balance' instead.
    """
    if value is None or (isinstance(value, str) and value in presets):
        return value
    if not isinstance(value, Mapping):
        names = ", ".join(repr(p) for p in presets)
        raise invalid(
            "class_weight", owner, f"None, {names} or a dict {{label: weight}}", value
        )
    for label, weight in value.items():
        if not (is_real(weight) and 0 < float(weight) <= MAX_CLASS_WEIGHT):
            raise ValidationError(
                f"The 'class_weight' parameter of {owner} must map each label to "
                f"a weight: class_weight[{label!r}] = {weight!r} is not a number "
                f"in 0 < w <= {MAX_CLASS_WEIGHT:g} (weighted counts and their "
                "squares must stay finite float64)."
            )
    return value


def class_weight_codes(
    class_weight: object,
    classes: Sequence[str],
    owner: str,
    presets: Sequence[str] = ("balanced",),
) -> tuple[str, FloatArray]:
    """``(mode, weights)``: the mode and one weight per agreed class code.

    ``mode`` is ``"none"``, a preset's name (weights all 1: the counts set
    them later), or ``"given"`` for a dict, whose labels are matched to the
    agreed ``classes`` by their text (``1`` names the class ``"1"``).

    Raises
    ------
    ValidationError
        A dict naming a label the classes do not hold (naming it and the
        classes), or a value :func:`check_class_weight` refuses.

    Examples
    --------
    >>> mode, weights = class_weight_codes({"yes": 4}, ("no", "yes"), "Model")
    >>> mode, weights.tolist()
    ('given', [1.0, 4.0])
    """
    classes = tuple(str(c) for c in classes)
    checked = check_class_weight(class_weight, owner, presets)
    if checked is None:
        return "none", np.ones(len(classes))
    if not isinstance(checked, Mapping):
        return str(checked), np.ones(len(classes))
    weights = np.ones(len(classes))
    for label, weight in checked.items():
        if str(label) not in classes:
            raise ValidationError(
                f"The 'class_weight' parameter of {owner} names the label "
                f"{label!r}, which is not a class; the agreed classes are "
                f"{list(classes)}."
            )
        weights[classes.index(str(label))] = float(weight)
    return "given", weights


def balanced_weights(counts: npt.ArrayLike) -> FloatArray:
    """scikit-learn's ``"balanced"`` weights from class counts, on the last axis.

    ``n / (n_present * count[c])`` where ``n`` sums the counts and
    ``n_present`` is the number of classes with rows (scikit-learn's classes
    are those present); a class without rows weighs 0 (it has no row to
    weigh). ``counts`` of shape ``(..., n_classes)``: one set of weights per
    row of counts (per tree, for ``"balanced_subsample"``).

    Examples
    --------
    >>> balanced_weights([30, 10]).tolist()
    [0.6666666666666666, 2.0]
    >>> balanced_weights([[4, 0, 4]]).tolist()
    [[1.0, 0.0, 1.0]]
    """
    c = np.asarray(counts, dtype=np.float64)
    present = (c > 0).sum(axis=-1, keepdims=True)
    total = c.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(c > 0, total / (np.maximum(present, 1) * c), 0.0)
    weights: FloatArray = out
    return weights
