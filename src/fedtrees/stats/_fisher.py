"""Fisher (1958) ordering of categories (docs/fedforest.md).

For squared error and binary classification, ordering the categories present at a
node by their mean (resp. class-1 proportion) and scanning only the contiguous
groupings finds the best binary partition. **Decision** for more than two classes:
order by the proportion of the node's majority class — an approximation, not
optimal in general. The same ordering serves client-indicator splits.

Everything is batched over leading axes, so a whole level of (node, feature) pairs
is ordered at once.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import check_choice, invalid
from fedtrees.stats._gain import left_cumulative
from fedtrees.stats._impurity import CRITERIA, Criterion, node_count

__all__ = ["fisher_order", "fisher_sort", "fisher_splits"]


def fisher_sort(
    stats: npt.ArrayLike, criterion: Criterion
) -> tuple[IntArray, IntArray]:
    """Fisher order of categories, batched; absent categories (n = 0) come last.

    Parameters
    ----------
    stats : array of shape (..., n_categories, S)

    Returns
    -------
    order : int array of shape (..., n_categories)
        Category codes, present ones in Fisher order (ties: by code), then absent.
    n_present : int array of shape (...)
        How many leading entries of ``order`` are present.

    Examples
    --------
    >>> order, n = fisher_sort([[[1.0, 3.0], [0.0, 0.0], [4.0, 0.0]]], "gini")
    >>> order.tolist(), n.tolist()
    ([[2, 0, 1]], [2])
    """
    check_choice(criterion, "criterion", "fisher_sort", CRITERIA)
    s = np.asarray(stats, dtype=np.float64)
    if s.ndim < 2:
        raise invalid(
            "stats", "fisher_sort", "an array (..., n_categories, S)", s.shape
        )
    n = node_count(s, criterion)
    present = n > 0
    key = _order_key(s, np.where(present, n, 1.0), criterion)
    key = np.where(present, key, np.inf)
    order = np.argsort(key, axis=-1, kind="stable").astype(np.int64)
    return order, present.sum(axis=-1).astype(np.int64)


def _order_key(s: FloatArray, n: FloatArray, criterion: Criterion) -> FloatArray:
    if criterion == "squared_error":
        return s[..., 1] / n  # mean target
    if s.shape[-1] == 2:
        return s[..., 1] / n  # class-1 proportion
    majority = np.argmax(s.sum(axis=-2), axis=-1)  # Decision: the node's majority class
    share: FloatArray = np.take_along_axis(s, majority[..., None, None], axis=-1)[
        ..., 0
    ]
    return share / n


def fisher_order(stats: npt.ArrayLike, criterion: Criterion) -> IntArray:
    """Codes of the categories present (n > 0), in Fisher order (ties: by code).

    Parameters
    ----------
    stats : array of shape (n_categories, S)
        Pooled statistics of every category at the node (class counts or moments).
    criterion : {"gini", "entropy", "squared_error"}

    Examples
    --------
    >>> fisher_order([[1.0, 3.0], [0.0, 0.0], [4.0, 0.0], [1.0, 1.0]], "gini").tolist()
    [2, 3, 0]
    """
    s = np.asarray(stats, dtype=np.float64)
    if s.ndim != 2:
        raise invalid("stats", "fisher_order", "a 2-D array (n_categories, S)", s.shape)
    order, n_present = fisher_sort(s, criterion)
    return order[: int(n_present)]


def fisher_splits(
    stats: npt.ArrayLike, criterion: Criterion
) -> tuple[IntArray, FloatArray]:
    """Fisher order and the left statistics of its contiguous groupings.

    Returns
    -------
    order : int array of shape (n_present,)
    left : array of shape (n_present - 1, S)
        Entry ``i`` holds the statistics of ``order[: i + 1]`` (sent left).

    Examples
    --------
    >>> order, left = fisher_splits([[1.0, 3.0], [4.0, 0.0], [1.0, 1.0]], "gini")
    >>> order.tolist(), left.tolist()
    ([1, 2, 0], [[4.0, 0.0], [5.0, 1.0]])
    """
    order = fisher_order(stats, criterion)
    s = np.asarray(stats, dtype=np.float64)
    return order, left_cumulative(s[order])
