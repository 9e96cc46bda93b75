"""Impurities as pure functions of sufficient statistics (docs/runtime.md).

All functions are vectorised over leading axes: ``counts`` has shape
``(..., n_classes)`` and ``moments`` shape ``(..., 3)``; the result has the leading
shape. An empty node (n = 0) has impurity 0. The formulas follow scikit-learn's
criteria so that federated and centralized trees score splits identically.
"""

from __future__ import annotations

import math
from typing import Final, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray
from fedtrees._validation import check_choice

__all__ = [
    "CRITERIA",
    "Criterion",
    "entropy",
    "gini",
    "impurity",
    "max_impurity",
    "variance",
]

Criterion: TypeAlias = Literal["gini", "entropy", "squared_error"]
CRITERIA: Final = ("gini", "entropy", "squared_error")
_LN2: Final = math.log(2.0)


def gini(counts: npt.ArrayLike) -> FloatArray:
    """Gini impurity ``1 − Σ_c p_c²`` of class counts.

    Examples
    --------
    >>> float(gini([3.0, 1.0]))
    0.375
    """
    c = np.asarray(counts, dtype=np.float64)
    n = c.sum(axis=-1)
    sq = (c * c).sum(axis=-1)
    safe = np.where(n > 0, n, 1.0)
    return np.where(n > 0, 1.0 - sq / (safe * safe), 0.0)


def entropy(counts: npt.ArrayLike) -> FloatArray:
    """Shannon entropy in bits ``−Σ_c p_c log2 p_c`` (0 log 0 = 0).

    Examples
    --------
    >>> float(entropy([1.0, 1.0]))
    1.0
    """
    c = np.asarray(counts, dtype=np.float64)
    n = c.sum(axis=-1, keepdims=True)
    p = np.divide(c, n, out=np.zeros_like(c), where=n > 0)
    logp = np.log(p, out=np.zeros_like(p), where=p > 0) / _LN2
    result: FloatArray = -(p * logp).sum(axis=-1)
    return result


def variance(moments: npt.ArrayLike) -> FloatArray:
    """Variance ``Σy²/n − (Σy/n)²`` from moments ``(n, Σy, Σy²)`` (clipped at 0).

    Examples
    --------
    >>> float(variance([2.0, 2.0, 10.0]))
    4.0
    """
    m = np.asarray(moments, dtype=np.float64)
    n = m[..., 0]
    safe = np.where(n > 0, n, 1.0)
    mean = m[..., 1] / safe
    return np.where(n > 0, np.maximum(m[..., 2] / safe - mean * mean, 0.0), 0.0)


def impurity(stats: npt.ArrayLike, criterion: Criterion) -> FloatArray:
    """Dispatch to :func:`gini`, :func:`entropy` or :func:`variance`."""
    name = check_choice(criterion, "criterion", "impurity", CRITERIA)
    if name == "gini":
        return gini(stats)
    if name == "entropy":
        return entropy(stats)
    return variance(stats)


def max_impurity(criterion: str, n_classes: int) -> float:
    """Largest impurity a node can have: ``1 − 1/C`` (Gini), ``log2 C`` (entropy).

    Reached by a uniform class distribution; so every split's impurity decrease
    lies in ``[0, max_impurity]``. Squared error (variance) has no bound without
    the target's range: ``inf``.

    Examples
    --------
    >>> max_impurity("gini", 4), max_impurity("entropy", 4)
    (0.75, 2.0)
    """
    name = check_choice(criterion, "criterion", "max_impurity", CRITERIA)
    c = max(int(n_classes), 1)
    if name == "gini":
        return 1.0 - 1.0 / c
    if name == "entropy":
        return math.log2(c)
    return math.inf


def node_count(stats: FloatArray, criterion: Criterion) -> FloatArray:
    """Weighted row count of statistics (sum of counts, or the moment n)."""
    return stats[..., 0] if criterion == "squared_error" else stats.sum(axis=-1)
