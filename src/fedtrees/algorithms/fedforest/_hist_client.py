"""FedForest client handlers of ``candidates="hist"`` (beyond the paper).

Round 1 summarises every feature at the root (:func:`._hist.grid_sketch`); the
server agrees one global grid of at most 255 bins per feature. The client keeps
the grid in its per-run state and its rows' uint8 bin codes in its memo, and
answers one histogram request per level: per open node, its statistics and the
non-zero grid bins of every considered numeric feature. Pairs whose grid is too
coarse at a node are refined by a sketch round (:func:`refine_points`).
"""

from __future__ import annotations

from typing import Final

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedforest import _hist
from fedtrees.algorithms.fedforest._client import (
    _category_stats,
    _counts,
    _Fit,
    _keep_forest,
    _lean_stats,
    _node_stats,
    _request_nodes,
    forest_handler,
)
from fedtrees.algorithms.fedforest._payloads import (
    ForestState,
    GridReply,
    GridRequest,
    GridState,
    HistogramReply,
    HistogramRequest,
    compact,
)
from fedtrees.algorithms.fedforest._reach import gather_ranges
from fedtrees.exceptions import ValidationError
from fedtrees.federation import ClientData, ClientState, Resync, handler

__all__ = ["grid", "histogram"]

GRID_KEY: Final = "fedforest.grid"
CODES_KEY: Final = "fedforest.codes"


@handler("fedforest.grid", stateful=True)
def grid(request: GridRequest, data: ClientData, state: ClientState) -> GridReply:
    """Summarise every feature of the client's rows for the grid agreement."""
    _keep_forest(request, data, state)
    is_cat = np.array([k == "categorical" for k in data.feature_kinds], dtype=bool)
    sketch = _hist.grid_sketch(
        data.finite_matrix(),
        request.max_bins,
        is_categorical=is_cat,
        sample_weight=data.weights,
    )
    return GridReply(
        sketch.points, sketch.weights, compact(sketch.counts), sketch.complete
    )


@forest_handler("fedforest.histogram")
def histogram(
    request: HistogramRequest, fit: _Fit, forest: ForestState, state: ClientState
) -> HistogramReply | Resync:
    """Statistics and non-zero grid bins of every asked (node, feature)."""
    agreed = _grid(request, state)
    if agreed is None:
        return Resync("the agreed grid is not kept")
    nodes, pairs = _request_nodes(request)
    stats, _ = _node_stats(fit, request, nodes)
    index, hist, n_bins = _sparse_histograms(
        fit, nodes, pairs, forest.node_tree, _codes(fit, agreed, state), agreed, request
    )
    if n_bins != request.n_bins:
        raise ValidationError("FedForest request: n_bins does not match the grid.")
    return HistogramReply(
        compact(_counts(stats, request)),
        _lean_stats(stats, request),
        compact(index),
        _lean_stats(hist, request),
        _lean_stats(_category_stats(fit, request, nodes, pairs), request),
    )


def _sparse_histograms(
    fit: _Fit,
    nodes: IntArray,
    pairs: IntArray,
    node_tree: IntArray,
    codes: np.ndarray,
    agreed: _hist.Grid,
    request: HistogramRequest,
) -> tuple[IntArray, FloatArray, int]:
    """Non-zero grid bins of every asked numeric pair, without a dense layout.

    Each present row of a node adds its weight to the bin of its code, for
    every numeric feature the node considers; keys (pair, code) are summed by
    one ``np.unique``, so the work and memory follow the rows, never the
    nodes x features x 255 bins of :func:`._hist.client_histograms` (whose
    layout the returned indices use, and which the tests compare against).
    """
    rows, ptr = fit.rows, _hist.histogram_layout(pairs, agreed)
    numeric = (pairs >= 0) & (agreed.n_bins[np.maximum(pairs, 0)] > 0)
    s_idx, k_idx = np.nonzero(numeric)
    node, n = nodes[s_idx], rows.perm.shape[1]
    tree = node_tree[node]
    starts, stops = tree * n + rows.start[node], tree * n + rows.stop[node]
    members = rows.perm.ravel()[gather_ranges(starts, stops)]
    lengths = stops - starts
    pair = np.repeat(s_idx * pairs.shape[1] + k_idx, lengths)
    key = ptr[pair] + codes[members, np.repeat(pairs[s_idx, k_idx], lengths)]
    weight = fit.weight[np.repeat(tree, lengths), members]
    index, inverse = np.unique(key, return_inverse=True)
    if request.task == "regression":
        y = fit.targets[members]
        parts = (weight, weight * y, weight * y * y)
        sums = [np.bincount(inverse, p, minlength=index.shape[0]) for p in parts]
        # bincount of no rows is int64 even with float weights: moments are floats
        moments: FloatArray = np.stack(sums, axis=1).astype(np.float64)
        return index.astype(np.int64), moments, int(ptr[-1])
    width = request.width
    flat = np.bincount(
        inverse * width + fit.codes[members],
        weight,
        minlength=index.shape[0] * width,
    )
    per_class: FloatArray = flat.reshape(index.shape[0], width).astype(np.float64)
    return index.astype(np.int64), per_class, int(ptr[-1])


def _grid(request: HistogramRequest, state: ClientState) -> _hist.Grid | None:
    """Return the request's grid (kept for later levels), else the kept one."""
    if request.grid_edge_ptr.shape[0]:
        _check_grid(request)
        kept = GridState(
            request.fit_id,
            np.asarray(request.grid_edges, dtype=np.float64),
            np.asarray(request.grid_edge_ptr, dtype=np.int64),
            np.asarray(request.grid_atomic, dtype=bool),
            np.asarray(request.grid_bin_ptr, dtype=np.int64),
        )
        state.put(GRID_KEY, kept)
    found = state.get(GRID_KEY, GridState)
    if found is None or found.fit_id != request.fit_id:
        return None
    return _hist.Grid(found.edges, found.edge_ptr, found.atomic, found.bin_ptr)


def _check_grid(request: HistogramRequest) -> None:
    """Refuse a grid that uint8 codes and the histogram layout cannot use."""
    edge_ptr = np.asarray(request.grid_edge_ptr, dtype=np.int64)
    bin_ptr = np.asarray(request.grid_bin_ptr, dtype=np.int64)
    edges = np.asarray(request.grid_edges, dtype=np.float64)
    n_edges, n_bins = np.diff(edge_ptr), np.diff(bin_ptr)
    numeric = n_bins > 0
    if (
        bin_ptr.shape != edge_ptr.shape
        or edge_ptr[0] != 0
        or bin_ptr[0] != 0
        or edge_ptr[-1] != edges.shape[0]
        or bin_ptr[-1] != request.grid_atomic.shape[0]
        or np.any(n_edges < 0)
        or np.any(n_bins[numeric] != n_edges[numeric] + 1)
        or np.any(n_edges[~numeric] != 0)
        or np.any(n_bins > _hist.MAX_BINS + 1)
        or not np.all(np.isfinite(edges))
    ):
        raise ValidationError(
            "FedForest request: grid_* fields do not describe a grid of finite "
            f"edges with at most {_hist.MAX_BINS + 1} bins per feature."
        )


def _codes(fit: _Fit, agreed: _hist.Grid, state: ClientState) -> np.ndarray:
    """Return the rows' bin codes, computed once per fit (memo)."""
    memo = state.memo.get(CODES_KEY)
    if isinstance(memo, tuple) and memo[0] == fit.fit_id:
        codes: np.ndarray = memo[1]
        return codes
    codes = _hist.grid_codes(fit.X, agreed)
    state.memo[CODES_KEY] = (fit.fit_id, codes)
    return codes
