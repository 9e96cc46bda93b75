"""Sufficient statistics that add across clients (docs/runtime.md).

Classification: weighted class counts ``(n_1, ..., n_C)``; regression: moments
``(n, Σy, Σy²)``. Both are frozen values with ``+`` and a zero, so "sum over clients"
is :func:`sum_stats`, and the sum of client statistics equals the statistics of the
pooled rows exactly (counts are sums of weights; Σ over clients is exact up to
floating-point addition order).

The batched kernels :func:`class_counts_by_group` and :func:`moments_by_group`
compute the statistics of many row groups (nodes × bins × features) with one
``bincount`` each — the client side of every histogram request.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import check_int, invalid
from fedtrees.exceptions import ValidationError
from fedtrees.stats._impurity import Criterion, impurity

__all__ = [
    "ClassCounts",
    "Moments",
    "class_counts_by_group",
    "moments_by_group",
    "sum_stats",
]


def _as_stats_array(data: npt.ArrayLike, owner: str, width: int | None) -> FloatArray:
    array = np.array(data, dtype=np.float64, copy=True)
    if array.ndim < 1 or (width is not None and array.shape[-1] != width):
        wanted = f"last axis of length {width}" if width else "at least one axis"
        raise invalid("data", owner, f"an array with {wanted}", f"shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise invalid("data", owner, "finite", "NaN or inf values")
    array.flags.writeable = False
    return array


@dataclass(frozen=True, eq=False)
class ClassCounts:
    """Weighted class counts, shape ``(..., n_classes)``; additive over clients.

    Examples
    --------
    >>> a = ClassCounts.from_labels([0, 1, 1], n_classes=2)
    >>> b = ClassCounts.from_labels([0], n_classes=2)
    >>> (a + b).data.tolist()
    [2.0, 2.0]
    >>> float((a + b).impurity("gini"))
    0.5
    """

    data: FloatArray

    def __post_init__(self) -> None:
        array = _as_stats_array(self.data, "ClassCounts", None)
        if np.any(array < 0):
            raise invalid(
                "data", "ClassCounts", "non-negative counts", "negative counts"
            )
        object.__setattr__(self, "data", array)

    @classmethod
    def zeros(cls, n_classes: int, shape: tuple[int, ...] = ()) -> ClassCounts:
        """Return the zero element (no rows)."""
        n_classes = check_int(n_classes, "n_classes", "ClassCounts.zeros", min_value=1)
        return cls(np.zeros((*shape, n_classes)))

    @classmethod
    def from_labels(
        cls,
        y: npt.ArrayLike,
        n_classes: int,
        sample_weight: npt.ArrayLike | None = None,
    ) -> ClassCounts:
        """Count integer labels ``y`` in ``[0, n_classes)`` (optionally weighted)."""
        codes = np.asarray(y)
        group = np.zeros(codes.shape[0], dtype=np.int64)
        counts = class_counts_by_group(group, codes, 1, n_classes, sample_weight)
        return cls(counts[0])

    @property
    def n(self) -> FloatArray:
        """Total (weighted) count, shape ``data.shape[:-1]``."""
        total: FloatArray = self.data.sum(axis=-1)
        return total

    def impurity(self, criterion: Criterion = "gini") -> FloatArray:
        """Gini or entropy of these counts."""
        return impurity(self.data, criterion)

    def __add__(self, other: object) -> ClassCounts:
        if not isinstance(other, ClassCounts):
            return NotImplemented
        _same_shape(self.data, other.data, "ClassCounts")
        return ClassCounts(self.data + other.data)


@dataclass(frozen=True, eq=False)
class Moments:
    """Regression moments ``(n, Σy, Σy²)`` on the last axis; additive over clients.

    Examples
    --------
    >>> m = Moments.from_targets([1.0, 3.0]) + Moments.from_targets([5.0])
    >>> m.data.tolist(), float(m.mean)
    ([3.0, 9.0, 35.0], 3.0)
    """

    data: FloatArray

    def __post_init__(self) -> None:
        array = _as_stats_array(self.data, "Moments", 3)
        if np.any(array[..., 0] < 0):
            raise invalid("data", "Moments", "a non-negative count n", "negative n")
        object.__setattr__(self, "data", array)

    @classmethod
    def zeros(cls, shape: tuple[int, ...] = ()) -> Moments:
        """Return the zero element (no rows)."""
        return cls(np.zeros((*shape, 3)))

    @classmethod
    def from_targets(
        cls, y: npt.ArrayLike, sample_weight: npt.ArrayLike | None = None
    ) -> Moments:
        """Moments of targets ``y`` (optionally weighted)."""
        targets = np.asarray(y, dtype=np.float64)
        group = np.zeros(targets.shape[0], dtype=np.int64)
        return cls(moments_by_group(group, targets, 1, sample_weight)[0])

    @property
    def n(self) -> FloatArray:
        """Total (weighted) count."""
        return self.data[..., 0]

    @property
    def mean(self) -> FloatArray:
        """Mean target (0 where there are no rows)."""
        n = self.data[..., 0]
        return np.divide(self.data[..., 1], n, out=np.zeros_like(n), where=n > 0)

    def impurity(self, criterion: Criterion = "squared_error") -> FloatArray:
        """Variance (the squared-error impurity)."""
        return impurity(self.data, criterion)

    def __add__(self, other: object) -> Moments:
        if not isinstance(other, Moments):
            return NotImplemented
        _same_shape(self.data, other.data, "Moments")
        return Moments(self.data + other.data)


Stats = TypeVar("Stats", ClassCounts, Moments)


def sum_stats(stats: Iterable[Stats]) -> Stats:
    """Sum client statistics (the server's aggregation; at least one is needed).

    Examples
    --------
    >>> parts = [ClassCounts.from_labels([0], 2), ClassCounts.from_labels([1], 2)]
    >>> sum_stats(parts).data
    array([1., 1.])
    """
    iterator = iter(stats)
    try:
        total = next(iterator)
    except StopIteration:
        raise ValidationError("sum_stats needs at least one statistic.") from None
    for item in iterator:
        total = total + item
    return total


def _same_shape(a: FloatArray, b: FloatArray, owner: str) -> None:
    if a.shape != b.shape:
        raise ValidationError(
            f"Cannot add {owner} of shapes {a.shape} and {b.shape}; the statistics of "
            "all clients must have the same shape (same classes, same bins)."
        )


def class_counts_by_group(
    group: npt.ArrayLike,
    y: npt.ArrayLike,
    n_groups: int,
    n_classes: int,
    sample_weight: npt.ArrayLike | None = None,
) -> FloatArray:
    """Weighted class counts of every group, shape ``(n_groups, n_classes)``.

    Parameters
    ----------
    group : int array of shape (n_rows,)
        Group of each row in ``[0, n_groups)`` (e.g. ``node * n_bins + bin``).
    y : int array of shape (n_rows,)
        Class code of each row in ``[0, n_classes)``.
    """
    g, codes, w = _group_inputs(
        group, y, n_groups, sample_weight, "class_counts_by_group"
    )
    labels: IntArray = codes.astype(np.int64, copy=False)
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise invalid(
            "y", "class_counts_by_group", f"codes in [0, {n_classes})", "other codes"
        )
    flat = np.bincount(
        g * n_classes + labels, weights=w, minlength=n_groups * n_classes
    )
    return flat.astype(np.float64).reshape(n_groups, n_classes)


def moments_by_group(
    group: npt.ArrayLike,
    y: npt.ArrayLike,
    n_groups: int,
    sample_weight: npt.ArrayLike | None = None,
) -> FloatArray:
    """Moments ``(n, Σy, Σy²)`` of every group, shape ``(n_groups, 3)``."""
    g, targets, w = _group_inputs(group, y, n_groups, sample_weight, "moments_by_group")
    t: FloatArray = targets.astype(np.float64, copy=False)
    out = np.empty((n_groups, 3))
    out[:, 0] = np.bincount(g, weights=w, minlength=n_groups)
    out[:, 1] = np.bincount(g, weights=w * t, minlength=n_groups)
    out[:, 2] = np.bincount(g, weights=w * t * t, minlength=n_groups)
    return out


def _group_inputs(
    group: npt.ArrayLike,
    y: npt.ArrayLike,
    n_groups: int,
    sample_weight: npt.ArrayLike | None,
    owner: str,
) -> tuple[IntArray, npt.NDArray[np.generic], FloatArray]:
    n_groups = check_int(n_groups, "n_groups", owner, min_value=1)
    g = np.asarray(group, dtype=np.int64)
    values = np.asarray(y)
    if g.ndim != 1 or values.shape != g.shape:
        raise invalid(
            "y", owner, f"a 1-D array matching 'group' {g.shape}", values.shape
        )
    if g.size and (g.min() < 0 or g.max() >= n_groups):
        raise invalid("group", owner, f"indices in [0, {n_groups})", "other indices")
    if sample_weight is None:
        return g, values, np.ones(g.shape[0])
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != g.shape or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise invalid(
            "sample_weight", owner, f"finite weights >= 0 of shape {g.shape}", "other"
        )
    return g, values, w
