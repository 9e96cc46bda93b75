"""Quantile bins of numeric features: the pure parts of the federated discretizer.

ID3 and Federated-ID3 split on categories, so numeric features are cut into
``n_bins`` quantile bins first (docs/icdta.md: 5 bins; docs/fedga.md: the "IBM tree").
The bins are pooled quantiles, found from statistics, never from pooled rows:

- client part, :func:`bin_sketches`: every numeric column's row count and
  ``q + 1`` type-1 quantile points (:func:`quantile_sketches`, one group per
  column) — the FedForest sketch, taken once over the client's rows;
- server part, :func:`quantile_bin_edges`: the count-weighted mixture of the
  client CDFs, inverted at ``1/b, ..., (b-1)/b`` (:func:`mixtures_by_client`;
  client quantiles are never averaged). Its rank error is at most ``1/q``
  against the pooled rows (Thm 3.1). Equal edges are merged, so a column with
  few distinct values gets fewer bins (as scikit-learn's ``KBinsDiscretizer``
  drops repeated edges).

Codes follow the trees' ``x <= t`` convention: bin ``i`` holds
``edges[i-1] < x <= edges[i]`` (:func:`digitize`), so a numeric split at an edge
and the split between two bins are the same split.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import MAX_GRID, check_size, invalid
from fedtrees.stats._quantile import mixtures_by_client, quantile_sketches

__all__ = [
    "bin_labels",
    "bin_sketches",
    "check_edges",
    "check_increasing",
    "digitize",
    "quantile_bin_edges",
]


def bin_sketches(X: npt.ArrayLike, q: int) -> tuple[FloatArray, FloatArray]:
    """Client part: each column's count and ``q + 1`` quantile points.

    Parameters
    ----------
    X : array of shape (n_rows, n_columns)
        The client's finite numeric columns.
    q : int >= 2
        Sketch resolution (points per column, minus one).

    Returns
    -------
    counts : array of shape (n_columns,)
    points : array of shape (n_columns, q + 1)
        NaN-padded after ``min(q, n_rows) + 1`` points.

    Examples
    --------
    >>> counts, points = bin_sketches([[1.0], [2.0], [3.0], [4.0]], q=2)
    >>> counts.tolist(), points.tolist()
    ([4.0], [[1.0, 2.0, 4.0]])
    """
    matrix = np.asarray(X, dtype=np.float64)
    if matrix.ndim != 2:
        raise invalid("X", "bin_sketches", "a 2-D array", matrix.shape)
    n, k = matrix.shape
    if k == 0:
        return np.zeros(0), np.zeros((0, q + 1))
    group = np.repeat(np.arange(k), n)
    return quantile_sketches(matrix.T.ravel(), group, k, q)


def quantile_bin_edges(
    points: npt.ArrayLike, counts: npt.ArrayLike, n_bins: int
) -> list[FloatArray]:
    """Server part: interior edges of ``n_bins`` pooled quantile bins per column.

    Parameters
    ----------
    points : array of shape (n_clients, n_columns, L)
        Every client's :func:`bin_sketches` points.
    counts : array of shape (n_clients, n_columns)
        Every client's counts.
    n_bins : int >= 2

    Returns
    -------
    list of arrays
        Per column, the sorted distinct edges ``F⁻¹(m/b)``, ``m = 1..b-1``.

    Examples
    --------
    >>> a = bin_sketches(np.arange(0.0, 50.0)[:, None], q=50)
    >>> b = bin_sketches(np.arange(50.0, 100.0)[:, None], q=50)
    >>> edges = quantile_bin_edges([a[1], b[1]], [a[0], b[0]], n_bins=4)
    >>> edges[0].round(6).tolist()  # the pooled rows' quartiles
    [24.0, 49.0, 74.0]
    """
    n_bins = check_size(n_bins, "n_bins", "quantile_bin_edges", 2, MAX_GRID)
    pts = np.asarray(points, dtype=np.float64)
    weights = np.asarray(counts, dtype=np.float64)
    if pts.ndim != 3 or weights.shape != pts.shape[:2]:
        raise invalid(
            "points",
            "quantile_bin_edges",
            "shape (n_clients, n_columns, L) matching counts",
            pts.shape,
        )
    if pts.shape[1] == 0:
        return []
    inverted = mixtures_by_client(pts, weights, n_bins)
    return [row[~np.isnan(row)] for row in inverted]


def check_edges(
    edges: object, column: str, owner: str, max_edges: int = MAX_GRID - 1
) -> FloatArray:
    """Return declared edges as a float array: finite and strictly increasing.

    At most ``max_edges`` edges (by default ``MAX_GRID - 1``: a column of at
    most ``MAX_GRID`` bins, the bound of every ``n_bins``).

    Raises
    ------
    ValidationError
        Naming ``bin_edges[column]``: not a flat list of numbers (a string, a
        mapping, nested lists, booleans, text, None, an int too large for a
        float), empty, not finite, not strictly increasing, or too many.

    Examples
    --------
    >>> check_edges([30, 50], "age", "f").tolist()
    [30.0, 50.0]
    >>> check_edges(["30", "50"], "age", "f")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: The "bin_edges['age']" parameter of f ...
    """
    return check_increasing(edges, f"bin_edges[{column!r}]", owner, max_edges)


def check_increasing(
    value: object, name: str, owner: str, max_count: int = MAX_GRID - 1
) -> FloatArray:
    """Return a flat list of at most ``max_count`` finite, increasing numbers.

    The one check of declared edges and thresholds (:func:`check_edges`, the
    toy's ``initial``).

    Raises
    ------
    ValidationError
        Naming ``name``: not a flat list of numbers, empty, not finite, not
        strictly increasing, or longer than ``max_count``.

    Examples
    --------
    >>> check_increasing([0.5, 1.5], "initial", "f").tolist()
    [0.5, 1.5]
    """
    constraint = "a non-empty list of finite, strictly increasing numbers"
    values = _numbers(value)
    if values is None or values.size == 0:
        raise invalid(name, owner, constraint, value)
    if not np.all(np.isfinite(values)) or np.any(np.diff(values) <= 0):
        raise invalid(name, owner, constraint, value)
    if values.size > max_count:
        raise invalid(
            name, owner, f"at most {max_count} numbers", f"{values.size} numbers"
        )
    return values


def _numbers(value: object) -> FloatArray | None:
    """Return a flat list of real numbers as float64; None if it is not one.

    Any one-dimensional array-like (list, tuple, numpy array, pandas Series) of
    numbers; never text, a mapping, booleans or None.
    """
    if isinstance(value, str | bytes | Mapping):
        return None
    try:
        given = np.asarray(value)
    except (TypeError, ValueError):  # ragged nesting
        return None
    if given.ndim != 1:
        return None
    if given.dtype.kind == "O" and all(
        isinstance(v, numbers.Real) and not isinstance(v, bool) for v in given
    ):
        try:
            return given.astype(np.float64)
        except OverflowError:  # an int too large for a float
            return None
    return given.astype(np.float64) if given.dtype.kind in "iuf" else None


def digitize(values: npt.ArrayLike, edges: npt.ArrayLike) -> IntArray:
    """Bin code of every value: ``i`` where ``edges[i-1] < x <= edges[i]``.

    Examples
    --------
    >>> digitize([0.0, 1.0, 1.5, 9.0], [1.0, 2.0]).tolist()
    [0, 0, 1, 2]
    """
    codes: IntArray = np.searchsorted(
        np.asarray(edges, dtype=np.float64),
        np.asarray(values, dtype=np.float64),
        side="left",
    ).astype(np.int64)
    return codes


def bin_labels(
    edges: Sequence[float] | FloatArray, decimals: int = 4
) -> tuple[str, ...]:
    """Readable names of the bins of ``edges`` (the categories of a binned column).

    Examples
    --------
    >>> bin_labels([37.5, 45.0])
    ('<= 37.5', '(37.5, 45]', '> 45')
    >>> bin_labels([])
    ('all',)
    """
    shown = [_number(float(e), decimals) for e in edges]
    if not shown:
        return ("all",)
    middle = [f"({a}, {b}]" for a, b in itertools.pairwise(shown)]
    return (f"<= {shown[0]}", *middle, f"> {shown[-1]}")


def _number(x: float, decimals: int) -> str:
    text = f"{x:.{decimals}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text
