"""What a FedForest client computes for a request, from its prepared fit.

The statistics of FedForest (docs/fedforest.md) over the rows a client keeps partitioned
by node (:mod:`._rows`): node statistics and weights, per-category statistics,
type-1 quantile points of every (node, feature) pair (or its distinct values,
``candidates="exact"``), per-bin statistics between candidate thresholds (only the
non-zero bins travel, docs/fedforest.md, "What travels (protocol v2)"), the client's own
gains (AvgImp), and rows routed down the kept forest (held-out scores). Counts travel in
their smallest exact dtype (:func:`._layout.compact`). Pure functions of the fit and the
request; :mod:`._handlers` assembles them into replies.
"""

from __future__ import annotations

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedforest import _kernels as kernels
from fedtrees.algorithms.fedforest._client import ClientFit
from fedtrees.algorithms.fedforest._layout import compact
from fedtrees.algorithms.fedforest._payloads import (
    ForestState,
    LevelFields,
    SketchRequest,
)
from fedtrees.algorithms.fedforest._scoring import weight_column
from fedtrees.algorithms.histogram import node_weights as engine_node_weights
from fedtrees.exceptions import ValidationError
from fedtrees.stats import split_gains

__all__ = [
    "bin_stats",
    "category_stats",
    "check_finite",
    "distinct_values",
    "lean_stats",
    "local_gains",
    "node_stats",
    "node_weights",
    "request_nodes",
    "route_rows",
    "sketch_points",
    "sparse_bins",
]


def request_nodes(request: LevelFields) -> tuple[IntArray, IntArray]:
    """Return the request's open nodes and their considered features (int64)."""
    return (
        np.ascontiguousarray(request.open_nodes, dtype=np.int64),
        np.ascontiguousarray(request.pair_feature, dtype=np.int64),
    )


def node_stats(
    fit: ClientFit, request: LevelFields, open_nodes: IntArray
) -> tuple[FloatArray, IntArray]:
    """Return each open node's statistics ``(n, S)`` and its present rows."""
    return fit.rows.node_statistics(
        open_nodes,
        fit.weight,
        fit.codes,
        fit.targets,
        request.task != "regression",
        request.width,
    )


def node_weights(stats: FloatArray, request: LevelFields) -> FloatArray:
    """Return each node's weight: its class counts' sum, or the moment Σw.

    The engine's rule (:func:`fedtrees.algorithms.histogram.node_weights`),
    in the statistics' own dtype.
    """
    return engine_node_weights(stats, weight_column(request.task))


def lean_stats(stats: FloatArray, request: LevelFields) -> np.ndarray:
    """Class counts in their smallest exact dtype; regression moments as floats."""
    return stats if request.task == "regression" else compact(stats)


def category_stats(
    fit: ClientFit,
    request: SketchRequest,
    nodes: IntArray,
    pairs: IntArray,
) -> FloatArray:
    """Per-category statistics of the categorical pairs only, in row-major order."""
    categorical = (pairs >= 0) & fit.is_cat[np.maximum(pairs, 0)]
    shape = (int(categorical.sum()), request.max_categories, request.width)
    if shape[0] == 0:
        return np.zeros(shape)
    dense = fit.rows.category_statistics(
        nodes,
        fit.X,
        pairs,
        fit.is_cat,
        fit.weight,
        fit.codes,
        fit.targets,
        request.task != "regression",
        request.max_categories,
        request.width,
    )
    out: FloatArray = dense[categorical]
    return out


def sketch_points(
    fit: ClientFit,
    nodes: IntArray,
    pairs: IntArray,
    rows: IntArray,
    q: int,
    weight: FloatArray | None = None,
) -> tuple[IntArray, FloatArray]:
    """Return points per pair ``(n_open, F')`` and the flat ragged points."""
    numeric = (pairs >= 0) & ~fit.is_cat[np.maximum(pairs, 0)] & (rows[:, None] > 0)
    n_points = np.where(numeric, np.minimum(q, rows)[:, None] + 1, 0)
    out_ptr = np.concatenate([[0], np.cumsum(n_points.ravel())]).astype(np.int64)
    flat = fit.rows.sketch_points(
        nodes,
        pairs,
        fit.is_cat,
        fit.pos,
        fit.sval,
        fit.weight if weight is None else weight,
        rows,
        q,
        out_ptr,
        int(out_ptr[-1]),
    )
    return n_points.astype(np.int64), flat


def distinct_values(
    n_points: IntArray, points: FloatArray
) -> tuple[IntArray, FloatArray]:
    """Keep each pair's distinct values (exact mode), still ragged."""
    flat = n_points.ravel()
    first = np.zeros(points.shape[0], dtype=bool)
    first[(np.cumsum(flat) - flat)[flat > 0]] = True
    keep = first.copy()
    keep[1:] |= points[1:] != points[:-1]
    pair = np.repeat(np.arange(flat.shape[0]), flat)
    counts = np.bincount(pair[keep], minlength=flat.shape[0]).reshape(n_points.shape)
    return counts.astype(np.int64), np.ascontiguousarray(points[keep])


def sparse_bins(
    fit: ClientFit,
    request: LevelFields,
    nodes: IntArray,
    pairs: IntArray,
    count: IntArray,
    thresholds: FloatArray,
) -> tuple[np.ndarray, np.ndarray]:
    """Return the non-zero bins between ``count`` candidates per pair (index, stats)."""
    thr_ptr = np.concatenate([[0], np.cumsum(count.ravel())]).astype(np.int64)
    bins = bin_stats(fit, request, nodes, pairs, thr_ptr, thresholds)
    index = np.flatnonzero(np.any(bins != 0, axis=1))
    return compact(index), lean_stats(bins[index], request)


def check_finite(thresholds: FloatArray) -> None:
    """Refuse candidates that are NaN or infinite before the compiled bin search.

    Candidates come sorted from the mixture inversion, which can leave two
    neighbours one rounding step out of order; that is not refused here.
    """
    if not np.all(np.isfinite(thresholds)):
        raise ValidationError("FedForest request: thresholds must be finite.")


def bin_stats(
    fit: ClientFit,
    request: LevelFields,
    nodes: IntArray,
    pairs: IntArray,
    thr_ptr: IntArray,
    thresholds: FloatArray,
) -> FloatArray:
    """Statistics per bin between consecutive candidates, ragged (rows = bins)."""
    return fit.rows.evaluate_bins(
        nodes,
        fit.X,
        pairs,
        fit.is_cat,
        thr_ptr,
        thresholds,
        fit.weight,
        fit.codes,
        fit.targets,
        request.task != "regression",
        request.width,
    )


def local_gains(bins: FloatArray, criterion: str) -> FloatArray:
    """Return the local gain of every candidate; 0 if all rows fall on one side."""
    left = np.cumsum(bins, axis=-2)[..., :-1, :]
    gains = split_gains(bins.sum(axis=-2), left, criterion, 0.0)  # type: ignore[arg-type]
    return np.where(np.isfinite(gains), gains, 0.0)


def route_rows(
    fit: ClientFit,
    forest: ForestState,
    node: IntArray,
    weight: FloatArray,
    X: FloatArray,
) -> None:
    """Move the rows of ``X`` down the kept forest (``node`` in place; scoring)."""
    kernels.route(
        node,
        weight,
        X,
        fit.client_code,
        forest.node_feature,
        forest.node_threshold,
        forest.node_left,
        forest.node_right,
        forest.set_ptr,
        forest.set_codes,
        fit.is_cat,
    )
