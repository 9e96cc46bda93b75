"""Building blocks of ``candidates="hist"``: a global grid, histograms, refinement.

Beyond the paper (ALGORITHMS.md §1.1 defines ``"quantile"``, ``"exact"`` and
``"uniform"``); the pieces here are pure functions the strategy and the client
handlers wire together:

1. **Grid agreement, once at the root.** Client: :func:`grid_sketch` — per numeric
   feature, all distinct values with their weights when there are at most
   ``max_bins`` (``complete``), else the type-1 quantile sketch of
   ``min(max_bins, n) + 1`` points (the rule of
   :func:`fedtrees.stats.quantile_sketches`).
   Server: :func:`agree_grid` — exact atomic bins around the pooled distinct
   values when every client is complete and the union is small, else the pooled
   mixture inverted at ``l/max_bins`` (:func:`fedtrees.stats.mixtures_by_client`;
   client quantiles are never averaged).
2. **Codes.** :func:`grid_codes`: one ``uint8`` bin code per (row, numeric feature).
3. **Histograms.** :func:`client_histograms`: per (open node, numeric feature, bin)
   class counts or moments, in the ragged layout of :func:`histogram_layout`.
   :func:`sibling_histograms` derives the larger child's histogram as parent −
   smaller child where that is exact (:func:`subtraction_is_exact`).
4. **Exact pooled gains on the grid.** The server sums the clients' histograms,
   :func:`dense_histograms` pads them for :func:`fedtrees.stats._splits.best_numeric`
   with the thresholds of :func:`grid_thresholds`.
5. **Refinement.** :func:`needs_sketch` flags the pairs whose grid could leave a
   rank error above ``1/q`` at the node; the strategy runs the quantile mode's
   sketch and evaluate rounds for those pairs only and keeps the better split.
   :func:`rank_error` measures the guarantee (Thm 3.1) against pooled node data.

**Decision (root grid).** The grid is agreed once per fit from each client's own
rows (optionally sample-weighted, never the per-tree bootstrap weights): every
tree shares it, so the codes are computed once.

**Decision (bin convention).** Bin of ``x`` = the number of edges ``< x``: a row
goes left of edge ``e`` iff ``x <= e``, as :func:`fedtrees.algorithms.fedforest.
_kernels.evaluate_bins` and :func:`fedtrees.stats.digitize`. Codes are ``uint8``,
so ``max_bins <= 256``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees._validation import check_int, invalid
from fedtrees.algorithms.fedforest import _hist_kernels as kernels
from fedtrees.stats import exact_candidates, mixtures_by_client

__all__ = [
    "MAX_BINS",
    "Grid",
    "GridSketch",
    "agree_grid",
    "client_histograms",
    "dense_histograms",
    "grid_candidates",
    "grid_codes",
    "grid_sketch",
    "grid_thresholds",
    "histogram_layout",
    "needs_sketch",
    "rank_error",
    "refine_candidates",
    "refine_sketches",
    "sibling_histograms",
    "subtraction_is_exact",
]

MAX_BINS: Final = 255
_EXACT_INTEGERS: Final = 2.0**53  # float64 sums of whole numbers are exact below


# -- the grid ---------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Grid:
    """Per-feature bin edges, ragged and flat (wire-safe arrays only).

    Attributes
    ----------
    edges : array of shape (n_edges_total,)
        Sorted distinct edges of feature ``j`` at ``edge_ptr[j]:edge_ptr[j+1]``.
    edge_ptr : int array of shape (n_features + 1,)
    atomic : bool array of shape (n_bins_total,)
        Whether the bin holds exactly one pooled distinct value; feature ``j``'s
        bins at ``bin_ptr[j]:bin_ptr[j+1]``.
    bin_ptr : int array of shape (n_features + 1,)
        A numeric feature with ``e`` edges has ``e + 1`` bins; a categorical
        feature has no grid (0 bins, 0 edges).
    """

    edges: FloatArray
    edge_ptr: IntArray
    atomic: BoolArray
    bin_ptr: IntArray

    @classmethod
    def from_lists(
        cls, edges: list[FloatArray], atomic: list[BoolArray] | None = None
    ) -> Grid:
        """Build a grid from per-feature edges (``None``-free; empty = no grid).

        Pass ``atomic`` as per-feature flags; by default no bin is atomic. A
        feature with an empty ``atomic`` array is categorical (no bins).

        Examples
        --------
        >>> g = Grid.from_lists([np.array([1.0, 2.0])])
        >>> g.n_bins.tolist(), g.max_edges
        ([3], 2)
        """
        flags = (
            atomic
            if atomic is not None
            else [np.zeros(e.shape[0] + 1, dtype=bool) for e in edges]
        )
        edge_ptr = np.concatenate([[0], np.cumsum([e.shape[0] for e in edges])])
        bin_ptr = np.concatenate([[0], np.cumsum([a.shape[0] for a in flags])])
        return cls(
            np.concatenate([np.zeros(0), *edges]).astype(np.float64),
            edge_ptr.astype(np.int64),
            np.concatenate([np.zeros(0, bool), *flags]).astype(bool),
            bin_ptr.astype(np.int64),
        )

    @property
    def n_features(self) -> int:
        """Number of features (numeric and categorical)."""
        return int(self.bin_ptr.shape[0] - 1)

    @property
    def n_bins(self) -> IntArray:
        """Bins per feature, shape (n_features,); 0 for categorical features."""
        counts: IntArray = np.diff(self.bin_ptr)
        return counts

    @property
    def max_edges(self) -> int:
        """The largest number of edges of any feature."""
        return int(np.diff(self.edge_ptr).max(initial=0))

    def feature_edges(self, j: int) -> FloatArray:
        """Edges of feature ``j``."""
        return self.edges[self.edge_ptr[j] : self.edge_ptr[j + 1]]

    def feature_atomic(self, j: int) -> BoolArray:
        """Atomic flags of feature ``j``'s bins."""
        return self.atomic[self.bin_ptr[j] : self.bin_ptr[j + 1]]


@dataclass(frozen=True, eq=False)
class GridSketch:
    """A client's root summary of every feature for the grid agreement.

    Attributes
    ----------
    points : array of shape (n_features, max_bins + 1)
        ``complete``: sorted distinct values; else type-1 quantile points.
        NaN-padded (all NaN for categorical features and empty clients).
    weights : array of shape (n_features, max_bins + 1)
        ``complete``: the weight of each distinct value; else NaN.
    counts : array of shape (n_features,)
        Weighted row count (0 for categorical features).
    complete : bool array of shape (n_features,)
    """

    points: FloatArray
    weights: FloatArray
    counts: FloatArray
    complete: BoolArray


def grid_sketch(
    X: npt.ArrayLike,
    max_bins: int = MAX_BINS,
    *,
    is_categorical: npt.ArrayLike | None = None,
    sample_weight: npt.ArrayLike | None = None,
) -> GridSketch:
    """Client part of the grid agreement (ALGORITHMS.md §1.1, beyond the paper).

    **Decision (complete clients).** A feature with at most ``max_bins`` distinct
    values (of positive weight) is sent exactly: its values and their weights —
    the client's exact CDF, no larger than a sketch. Otherwise the client sends
    its weighted type-1 sketch of ``min(max_bins, n) + 1`` points.

    Parameters
    ----------
    X : array of shape (n_rows, n_features)
        The client's rows (finite).
    max_bins : int in [2, 256]
    is_categorical : bool array of shape (n_features,), optional
    sample_weight : array of shape (n_rows,), optional

    Examples
    --------
    >>> s = grid_sketch([[1.0], [2.0], [2.0]], max_bins=4)
    >>> s.complete.tolist(), s.points[0, :2].tolist(), s.weights[0, :2].tolist()
    ([True], [1.0, 2.0], [1.0, 2.0])
    """
    max_bins = check_int(
        max_bins, "max_bins", "grid_sketch", min_value=2, max_value=256
    )
    matrix = np.asarray(X, dtype=np.float64)
    if matrix.ndim != 2:
        raise invalid("X", "grid_sketch", "a 2-D array", matrix.shape)
    n, n_features = matrix.shape
    cat = _categorical(is_categorical, n_features, "grid_sketch")
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, float)
    points = np.full((n_features, max_bins + 1), np.nan)
    weights = np.full((n_features, max_bins + 1), np.nan)
    counts = np.zeros(n_features)
    complete = np.ones(n_features, dtype=bool)
    present = w > 0
    for j in np.flatnonzero(~cat):
        order = np.argsort(matrix[present, j], kind="stable")
        v, vw = matrix[present, j][order], w[present][order]
        counts[j] = vw.sum()
        first = np.flatnonzero(np.diff(v, prepend=-np.inf) > 0)
        if first.shape[0] <= max_bins:
            points[j, : first.shape[0]] = v[first]
            weights[j, : first.shape[0]] = np.add.reduceat(vw, first) if v.size else 0
        else:  # the same type-1 rule as the quantile mode's client kernels
            complete[j] = False
            m = min(max_bins, v.shape[0])
            bounds = np.array([0, v.shape[0]], dtype=np.int64)
            points[j, : m + 1] = kernels.type1_points(v, vw, bounds, m)[0]
    return GridSketch(points, weights, counts, complete)


def _categorical(
    is_categorical: npt.ArrayLike | None, n_features: int, owner: str
) -> BoolArray:
    if is_categorical is None:
        return np.zeros(n_features, dtype=bool)
    cat = np.asarray(is_categorical, dtype=bool)
    if cat.shape != (n_features,):
        raise invalid("is_categorical", owner, f"shape ({n_features},)", cat.shape)
    return cat


def agree_grid(
    points_per_client: npt.ArrayLike,
    counts_per_client: npt.ArrayLike,
    complete_per_client: npt.ArrayLike,
    max_bins: int = MAX_BINS,
    *,
    weights_per_client: npt.ArrayLike | None = None,
    is_categorical: npt.ArrayLike | None = None,
) -> Grid:
    """Server part of the grid agreement: at most ``max_bins`` bins per feature.

    Per numeric feature: if every client with rows is complete and the pooled
    distinct values number at most ``max_bins``, the edges are scikit-learn's
    midpoints between them (:func:`fedtrees.stats.exact_candidates`) and each bin
    holding one pooled value is atomic (all of them, unless a float32 gap below
    1e-7 merged two values, as scikit-learn does). Otherwise the edges are the
    distinct values of the pooled mixture inverted at ``l/max_bins``,
    ``l = 1..max_bins-1`` (ALGORITHMS.md §1.1's quantile inversion), no bin atomic.

    **Decision (complete clients in a sketched feature).** The server turns a
    complete client's exact (values, weights) into its type-1 sketch at
    resolution ``max_bins`` (what a client with as many rows would send), so
    the mixture is weighted correctly.

    Parameters
    ----------
    points_per_client : array of shape (n_clients, n_features, L)
        Every client's :attr:`GridSketch.points`.
    counts_per_client : array of shape (n_clients, n_features)
    complete_per_client : bool array of shape (n_clients, n_features)
    max_bins : int in [2, 256]
    weights_per_client : array of shape (n_clients, n_features, L), optional
        Every client's :attr:`GridSketch.weights`; needed only when a feature
        mixes complete and sketched clients (or exceeds ``max_bins`` values).
    is_categorical : bool array of shape (n_features,), optional

    Raises
    ------
    ValidationError
        Malformed shapes, or ``weights_per_client`` missing where needed.

    Examples
    --------
    >>> a, b = grid_sketch([[1.0], [3.0]]), grid_sketch([[2.0]])
    >>> grid = agree_grid([a.points, b.points], [a.counts, b.counts],
    ...                   [a.complete, b.complete])
    >>> grid.feature_edges(0).tolist(), grid.feature_atomic(0).tolist()
    ([1.5, 2.5], [True, True, True])
    """
    owner = "agree_grid"
    max_bins = check_int(max_bins, "max_bins", owner, min_value=2, max_value=256)
    pts = np.asarray(points_per_client, dtype=np.float64)
    counts = np.asarray(counts_per_client, dtype=np.float64)
    complete = np.asarray(complete_per_client, dtype=bool)
    if pts.ndim != 3 or counts.shape != pts.shape[:2] or complete.shape != counts.shape:
        raise invalid(
            "points_per_client",
            owner,
            "shape (n_clients, n_features, L) matching counts and complete",
            pts.shape,
        )
    cat = _categorical(is_categorical, pts.shape[1], owner)
    weights = (
        None if weights_per_client is None else np.asarray(weights_per_client, float)
    )
    edges: list[FloatArray] = [np.zeros(0)] * pts.shape[1]
    atomic: list[BoolArray] = [np.zeros(0, bool)] * pts.shape[1]
    sketched = []
    for j in np.flatnonzero(~cat):
        present = counts[:, j] > 0
        values = np.unique(pts[present, j][~np.isnan(pts[present, j])])
        if complete[present, j].all() and values.shape[0] <= max_bins:
            edges[j] = exact_candidates([values])
            atomic[j] = (
                np.bincount(
                    np.searchsorted(edges[j], values, side="left"),
                    minlength=edges[j].shape[0] + 1,
                )
                == 1
            )
        else:
            sketched.append(j)
    if sketched:
        cols = np.asarray(sketched)
        mixed = _mixture_edges(
            pts[:, cols],
            counts[:, cols],
            complete[:, cols],
            None if weights is None else weights[:, cols],
            max_bins,
        )
        for j, e in zip(cols, mixed, strict=True):
            edges[j], atomic[j] = e, np.zeros(e.shape[0] + 1, dtype=bool)
    return Grid.from_lists(edges, atomic)


def _mixture_edges(
    pts: FloatArray,
    counts: FloatArray,
    complete: BoolArray,
    weights: FloatArray | None,
    max_bins: int,
) -> list[FloatArray]:
    """Pooled mixture inverted at ``l/max_bins`` for the sketched features.

    ``pts``, ``counts``, ``complete`` and ``weights`` hold those features only.
    """
    n_clients, n_cols, width = pts.shape
    sketches = np.full((n_clients, n_cols, max_bins + 1), np.nan)
    sketched = ~complete
    sketches[sketched, : min(width, max_bins + 1)] = pts[sketched, : max_bins + 1]
    exact = np.argwhere(complete & (counts > 0))
    if exact.shape[0] and weights is None:
        raise invalid(
            "weights_per_client",
            "agree_grid",
            "given when a feature mixes complete and sketched clients",
            None,
        )
    for k, c in exact:
        assert weights is not None
        keep = ~np.isnan(pts[k, c])
        sketches[k, c] = _type1_points(pts[k, c][keep], weights[k, c][keep], max_bins)
    inverted = mixtures_by_client(sketches, counts, max_bins)
    return [row[~np.isnan(row)] for row in inverted]


def _type1_points(values: FloatArray, weights: FloatArray, m: int) -> FloatArray:
    """Type-1 weighted quantiles at ``l/m``, ``l = 0..m``, of sorted distinct values.

    The same rule as the client kernels: the first value whose cumulative weight
    ``c`` satisfies ``c * m >= l * total``.
    """
    cumulative = np.cumsum(weights)
    first = np.searchsorted(
        cumulative * m, np.arange(m + 1) * cumulative[-1], side="left"
    )
    result: FloatArray = values[np.minimum(first, values.shape[0] - 1)]
    return result


# -- client: codes and histograms -------------------------------------------------
def grid_codes(X: npt.ArrayLike, grid: Grid) -> npt.NDArray[np.uint8]:
    """Bin code of every (row, numeric feature): the number of edges ``< x``.

    Categorical columns get code 0 (they have no grid).

    Returns
    -------
    uint8 array of shape (n_rows, n_features)

    Examples
    --------
    >>> grid = Grid.from_lists([np.array([1.0, 2.0])])
    >>> grid_codes([[0.5], [1.0], [1.5], [9.0]], grid).ravel().tolist()
    [0, 0, 1, 2]
    """
    matrix = np.asarray(X, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[1] != grid.n_features:
        raise invalid(
            "X", "grid_codes", f"shape (n_rows, {grid.n_features})", matrix.shape
        )
    codes = np.zeros(matrix.shape, dtype=np.uint8)
    for j in np.flatnonzero(grid.n_bins > 0):
        edges = grid.feature_edges(int(j))
        codes[:, j] = np.searchsorted(edges, matrix[:, j], side="left")
    return codes


def histogram_layout(pair_feature: npt.ArrayLike, grid: Grid) -> IntArray:
    """Offsets of every (open node, considered feature) pair's histogram.

    **Decision (ragged layout).** Pair ``(s, k)`` of ``pair_feature`` (n_open, fp)
    owns rows ``ptr[s * fp + k] : ptr[s * fp + k + 1]`` of the flat
    ``(ptr[-1], width)`` histogram, one row per grid bin of its feature;
    categorical features and ``-1`` padding own none. The layout depends only on
    the request and the grid, so client histograms add row by row.

    Examples
    --------
    >>> grid = Grid.from_lists([np.array([1.0]), np.zeros(0)], [np.ones(2, bool),
    ...                        np.zeros(0, bool)])
    >>> histogram_layout([[0, 1], [-1, 0]], grid).tolist()
    [0, 2, 2, 2, 4]
    """
    pairs = np.asarray(pair_feature, dtype=np.int64)
    sizes = np.where(pairs >= 0, grid.n_bins[np.maximum(pairs, 0)], 0)
    ptr: IntArray = np.concatenate([[0], np.cumsum(sizes.ravel())]).astype(np.int64)
    return ptr


def client_histograms(
    perm: IntArray,
    start: IntArray,
    stop: IntArray,
    open_nodes: IntArray,
    node_tree: IntArray,
    pair_feature: IntArray,
    codes: npt.NDArray[np.uint8],
    weight: FloatArray,
    classes: IntArray,
    targets: FloatArray,
    width: int,
    grid: Grid,
) -> tuple[FloatArray, IntArray]:
    """Grid histograms of every numeric (open node, feature) pair (client side).

    Parameters
    ----------
    perm : int array of shape (n_trees, n)
        Per tree, the rows grouped by node (:class:`._rows.ClientRows`).
    start, stop : int arrays indexed by global node id
        Node g's present rows are ``perm[node_tree[g], start[g]:stop[g]]``, in
        increasing row order; the kernel adds them in that order.
    open_nodes : int array of shape (n_open,)
        Nodes to scan. Any nodes will do: to subtract, pass the smaller siblings
        with the features their larger sibling considers.
    node_tree : int array indexed by global node id
    pair_feature : int array of shape (n_open, fp)
        Considered features, ``-1`` padding; categorical ones are skipped.
    codes : uint8 array of shape (n, n_features)
        :func:`grid_codes` with the same ``grid``.
    weight : array of shape (n_trees, n)
        Bootstrap × sample weights; 0 = absent.
    classes : int array of shape (n,)
        Class codes (classification); ignored otherwise.
    targets : array of shape (n,)
        Targets (regression); ignored otherwise.
    width : int
        Number of classes, or 3 for regression: moments ``(w, w·y, w·y²)``. The
        task is regression iff ``targets`` has rows and ``width == 3`` and
        ``classes`` is empty.
    grid : Grid

    Returns
    -------
    hist : array of shape (ptr[-1], width)
    ptr : int array of shape (n_open * fp + 1,)
        :func:`histogram_layout`.
    """
    classification = classes.shape[0] > 0
    _check_histogram_inputs(
        perm, start, stop, open_nodes, node_tree, pair_feature, codes, weight, grid
    )
    if classification and (
        classes.shape[0] != perm.shape[1] or classes.max(initial=0) >= width
    ):
        raise invalid("classes", "client_histograms", f"codes in [0, {width})", "other")
    ptr = histogram_layout(pair_feature, grid)
    hist = kernels.node_histograms(
        perm,
        start,
        stop,
        open_nodes,
        node_tree,
        pair_feature,
        grid.n_bins == 0,
        codes,
        weight,
        classes if classification else np.zeros(1, np.int64),
        targets if not classification else np.zeros(1),
        classification,
        width,
        ptr,
    )
    return hist, ptr


def _check_histogram_inputs(
    perm: IntArray,
    start: IntArray,
    stop: IntArray,
    open_nodes: IntArray,
    node_tree: IntArray,
    pair_feature: IntArray,
    codes: npt.NDArray[np.uint8],
    weight: FloatArray,
    grid: Grid,
) -> None:
    """Refuse inputs the (unchecked) kernel would read out of bounds."""
    owner = "client_histograms"
    n_trees, n = perm.shape
    if codes.dtype != np.uint8 or codes.shape != (n, grid.n_features):
        raise invalid(
            "codes", owner, f"uint8 of shape ({n}, {grid.n_features})", codes.shape
        )
    if weight.shape != perm.shape:
        raise invalid("weight", owner, f"shape {perm.shape}", weight.shape)
    if pair_feature.ndim != 2 or pair_feature.shape[0] != open_nodes.shape[0]:
        raise invalid("pair_feature", owner, "shape (n_open, fp)", pair_feature.shape)
    if pair_feature.size and pair_feature.max() >= grid.n_features:
        raise invalid("pair_feature", owner, f"features < {grid.n_features}", "other")
    n_nodes = start.shape[0]
    if stop.shape[0] != n_nodes or node_tree.shape[0] != n_nodes:
        raise invalid("stop", owner, f"{n_nodes} entries like start", stop.shape)
    if open_nodes.size and (open_nodes.min() < 0 or open_nodes.max() >= n_nodes):
        raise invalid("open_nodes", owner, f"node ids in [0, {n_nodes})", "other")
    seg_start, seg_stop, seg_tree = (
        start[open_nodes],
        stop[open_nodes],
        node_tree[open_nodes],
    )
    if np.any((seg_start < 0) | (seg_stop > n) | (seg_start > seg_stop)) or np.any(
        (seg_tree < 0) | (seg_tree >= n_trees)
    ):
        raise invalid(
            "start", owner, f"segments within [0, {n}] of known trees", "other"
        )
    if n and codes.size and np.any(codes.max(axis=0) >= np.maximum(grid.n_bins, 1)):
        raise invalid(
            "codes", owner, "bin codes below each feature's bin count", "other"
        )


def subtraction_is_exact(weight: FloatArray, classification: bool) -> bool:
    """Whether parent − smaller child reproduces the larger child bit for bit.

    **Decision (histogram subtraction).** Used only for classification with
    whole-number weights (bootstrap counts × integer sample weights) whose total
    stays below 2**53: the class counts are then integers held exactly in
    float64, so subtraction is exact and the result does not depend on which
    child was scanned. Regression moments (``w·y``, ``w·y²``) are rounded sums:
    parent − smaller would differ from the scanned larger child in the last bits,
    so the client scans both children there.

    Examples
    --------
    >>> subtraction_is_exact(np.array([[0.0, 2.0, 1.0]]), True)
    True
    >>> subtraction_is_exact(np.array([[0.5, 1.0]]), True)
    False
    """
    return bool(
        classification
        and np.all(weight == np.floor(weight))
        and float(weight.sum(axis=1).max(initial=0.0)) < _EXACT_INTEGERS
    )


def sibling_histograms(parent: FloatArray, smaller: FloatArray) -> FloatArray:
    """Return the larger child's histograms as ``parent − smaller`` (client side).

    Where it pays: the client keeps each open node's histograms until its
    children are evaluated; for a split node and a feature both children need,
    it scans only the child with fewer present rows and derives the other, so a
    level touches at most half of its rows for those features. Call only where
    :func:`subtraction_is_exact` holds.

    Parameters
    ----------
    parent, smaller : arrays of the same shape (..., n_bins, width)

    Examples
    --------
    >>> sibling_histograms(np.array([[3.0, 1.0]]), np.array([[1.0, 1.0]])).tolist()
    [[2.0, 0.0]]
    """
    if parent.shape != smaller.shape:
        raise invalid(
            "smaller", "sibling_histograms", f"shape {parent.shape}", smaller.shape
        )
    larger: FloatArray = parent - smaller
    return larger


# -- server: pooled gains and refinement ------------------------------------------
def dense_histograms(
    hist: FloatArray, ptr: IntArray, pair_feature: IntArray, grid: Grid
) -> FloatArray:
    """Pad ragged (pooled) histograms into ``(n_open, fp, max_edges + 1, width)``.

    The ``bins`` input of :func:`fedtrees.stats._splits.best_numeric` with
    :func:`grid_thresholds`: bin ``m`` of a pair holds the rows between edges
    ``m-1`` and ``m``; padding bins are zero, padding thresholds NaN.
    """
    n_open, fp = pair_feature.shape
    out = np.zeros((n_open * fp, grid.max_edges + 1, hist.shape[1]))
    sizes = np.diff(ptr)
    pair = np.repeat(np.arange(n_open * fp), sizes)
    within = np.arange(hist.shape[0]) - np.repeat(ptr[:-1], sizes)
    out[pair, within] = hist
    return out.reshape(n_open, fp, grid.max_edges + 1, hist.shape[1])


def grid_thresholds(grid: Grid, pair_feature: npt.ArrayLike) -> FloatArray:
    """Candidate thresholds of every pair: its feature's edges, NaN-padded.

    Returns
    -------
    array of shape (n_open, fp, max_edges)
        NaN for categorical features, ``-1`` padding and unused slots.

    Examples
    --------
    >>> grid = Grid.from_lists([np.array([1.0, 2.0]), np.array([5.0])])
    >>> grid_thresholds(grid, [[1, -1]]).tolist()
    [[[5.0, nan], [nan, nan]]]
    """
    pairs = np.asarray(pair_feature, dtype=np.int64)
    table = _padded(grid.edges, grid.edge_ptr, grid.max_edges, np.nan)
    out: FloatArray = np.where(
        (pairs >= 0)[..., None], table[np.maximum(pairs, 0)], np.nan
    )
    return out


def _padded(
    flat: npt.NDArray[np.generic], ptr: IntArray, width: int, fill: object
) -> npt.NDArray[np.generic]:
    """Per-feature rows of a ragged flat array, padded with ``fill``."""
    sizes = np.diff(ptr)
    table = np.full((sizes.shape[0], width), fill, dtype=flat.dtype)
    rows = np.repeat(np.arange(sizes.shape[0]), sizes)
    table[rows, np.arange(flat.shape[0]) - np.repeat(ptr[:-1], sizes)] = flat
    return table


def needs_sketch(
    pooled: FloatArray,
    grid: Grid,
    pair_feature: npt.ArrayLike,
    q: int,
    classification: bool,
) -> BoolArray:
    """Pairs whose grid alone could miss the ``1/q`` rank-error guarantee.

    **Decision (refinement).** A numeric pair needs a per-node sketch iff a
    non-atomic bin holds more than ``1/q`` of the node's pooled weight. Otherwise
    every level ``l/q`` lies within ``1/(2q)`` of the cumulative weight at an edge,
    or strictly inside an atomic bin — a single value's jump, which no threshold
    can split (Thm 3.1's bound then holds on the grid alone). Flagged pairs get
    the quantile mode's sketch and evaluate rounds; the strategy keeps the better
    of the grid split and the refined one.

    Parameters
    ----------
    pooled : array of shape (n_open, fp, max_edges + 1, width)
        :func:`dense_histograms` of the pooled histograms.
    classification : bool
        Weight of a bin: the sum of its class counts, else its moment ``w``.

    Returns
    -------
    bool array of shape (n_open, fp)
    """
    q = check_int(q, "q", "needs_sketch", min_value=2)
    pairs = np.asarray(pair_feature, dtype=np.int64)
    mass = pooled.sum(axis=-1) if classification else pooled[..., 0]
    atomic = _padded(grid.atomic, grid.bin_ptr, grid.max_edges + 1, False)
    is_atomic = np.where((pairs >= 0)[..., None], atomic[np.maximum(pairs, 0)], True)
    total = mass.sum(axis=-1, keepdims=True)
    heavy = (mass * q > total) & ~is_atomic
    numeric = (pairs >= 0) & (grid.n_bins[np.maximum(pairs, 0)] > 0)
    flagged: BoolArray = heavy.any(axis=-1) & numeric
    return flagged


def refine_sketches(
    values: npt.ArrayLike,
    group: npt.ArrayLike,
    n_groups: int,
    q: int,
    sample_weight: npt.ArrayLike | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Client part of the refinement: type-1 sketches at resolution ``2q``, uncapped.

    **Decision (refinement sketch).** For flagged pairs the client sends
    ``2q + 1`` points ``Q(l/2q)`` whatever its row count at the node (points
    repeat when it has fewer rows). The quantile mode's sketch (``q + 1``
    points, ``min(q, rows) + 1`` for a small client) guarantees
    ``sup|F − F̂| <= Σ_k w_k/m_k``, which exceeds ``1/q`` with small clients, and
    even at ``1/q`` a candidate that lands on an atom of F can miss its level
    by up to ``2/q`` (both are shown by the tests). With ``m = 2q`` for every
    client, ``sup|F − F̂| <= 1/(2q)`` and inverting at ``l/(2q)`` leaves every
    level ``l/q`` within ``1/q`` of a candidate's rank (:func:`refine_candidates`).
    Twice the quantile mode's sketch size, for flagged pairs only.

    Parameters
    ----------
    values : array of shape (n,)
        Node values of the flagged pairs' features, one entry per (row, pair).
    group : int array of shape (n,)
        The flagged pair of each value, in ``[0, n_groups)``.
    q : int >= 2
    sample_weight : array of shape (n,), optional
        Weights ``>= 0``; rows of weight 0 are absent.

    Returns
    -------
    counts : array of shape (n_groups,)
    points : array of shape (n_groups, 2q + 1)
        All NaN for a group without rows.

    Examples
    --------
    >>> counts, points = refine_sketches([3.0, 1.0], [0, 0], 1, q=2)
    >>> counts.tolist(), points.tolist()
    ([2.0], [[1.0, 1.0, 1.0, 3.0, 3.0]])
    """
    owner = "refine_sketches"
    q = check_int(q, "q", owner, min_value=2)
    n_groups = check_int(n_groups, "n_groups", owner, min_value=1)
    v = np.asarray(values, dtype=np.float64)
    g = np.asarray(group, dtype=np.int64)
    w = np.ones(v.shape) if sample_weight is None else np.asarray(sample_weight, float)
    if v.ndim != 1 or g.shape != v.shape or w.shape != v.shape:
        raise invalid("group", owner, f"1-D arrays of shape {v.shape}", g.shape)
    if g.size and (g.min() < 0 or g.max() >= n_groups):
        raise invalid("group", owner, f"indices in [0, {n_groups})", "other indices")
    if not (np.all(np.isfinite(v)) and np.all(np.isfinite(w)) and np.all(w >= 0)):
        raise invalid("values", owner, "finite, with finite weights >= 0", "other")
    keep = w > 0
    v, g, w = v[keep], g[keep], w[keep]
    order = np.lexsort((v, g))
    counts = np.bincount(g, weights=w, minlength=n_groups).astype(np.float64)
    start = np.concatenate([[0], np.cumsum(np.bincount(g, minlength=n_groups))])
    points: FloatArray = kernels.type1_points(v[order], w[order], start, 2 * q)
    return counts, points


def refine_candidates(points: FloatArray, counts: FloatArray, q: int) -> FloatArray:
    """Server part of the refinement: the pooled mixture inverted at ``l/(2q)``.

    Parameters
    ----------
    points : array of shape (n_clients, n_flagged, 2q + 1)
        Every client's :func:`refine_sketches` (client-major, as replies stack).
    counts : array of shape (n_clients, n_flagged)

    Returns
    -------
    array of shape (n_flagged, 2q - 1)
        Sorted distinct candidates, NaN-padded (:func:`fedtrees.stats.
        mixtures_by_client`; client quantiles are never averaged).

    Examples
    --------
    >>> c0, p0 = refine_sketches([0.0, 1.0, 2.0, 3.0], [0, 0, 0, 0], 1, q=2)
    >>> c1, p1 = refine_sketches([10.0, 11.0], [0, 0], 1, q=2)
    >>> cands = refine_candidates(np.stack([p0, p1]), np.stack([c0, c1]), q=2)
    >>> cands.round(6).tolist()
    [[0.5, 2.0, 10.0]]
    """
    q = check_int(q, "q", "refine_candidates", min_value=2)
    return mixtures_by_client(points, counts, 2 * q)


# -- the guarantee ----------------------------------------------------------------
def rank_error(
    candidates: npt.ArrayLike, values: npt.ArrayLike, weights: npt.ArrayLike, q: int
) -> float:
    """Largest distance from a level ``l/q`` to an achievable pooled rank.

    With F the weighted empirical CDF of the pooled node sample, the achievable
    ranks are ``F(c)`` for the candidates ``c`` (split ``x <= c``) plus 0 and 1
    (no split). For ``l = 1..q-1`` the error at ``l/q`` is its distance to the
    nearest achievable rank; levels strictly inside an atom's jump
    ``(F(v^-), F(v))`` are ignored: no threshold can reach them, the exact
    candidates neither. Thm 3.1 (ALGORITHMS.md §1.1) bounds the result by ``1/q``.

    Examples
    --------
    >>> rank_error([2.5], [1.0, 2.0, 3.0, 4.0], [1.0, 1.0, 1.0, 1.0], q=2)
    0.0
    >>> rank_error([], [1.0, 2.0, 3.0, 4.0], [1.0, 1.0, 1.0, 1.0], q=2)
    0.5
    """
    c = np.sort(np.asarray(candidates, dtype=np.float64))
    v = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    keep = w > 0
    distinct, inverse = np.unique(v[keep], return_inverse=True)
    cdf = np.cumsum(np.bincount(inverse, w[keep])) / w[keep].sum()
    below = np.concatenate([[0.0], cdf[:-1]])
    reached = np.searchsorted(distinct, c, side="right")  # values <= c
    ranks = np.concatenate([[0.0, 1.0], np.concatenate([[0.0], cdf])[reached]])
    levels = np.arange(1, q) / q
    inside = (
        (below[None, :] < levels[:, None]) & (levels[:, None] < cdf[None, :])
    ).any(axis=1)
    error = np.abs(levels[:, None] - ranks[None, :]).min(axis=1)
    return float(np.where(inside, 0.0, error).max(initial=0.0))


def grid_candidates(
    index: IntArray,
    stats: FloatArray,
    ptr: IntArray,
    todo: IntArray,
    pair_feature: IntArray,
    grid: Grid,
    q: int,
    classification: bool,
) -> tuple[FloatArray, FloatArray, BoolArray]:
    """Pooled non-zero grid bins of the ``todo`` nodes as split-search inputs.

    **Decision (empty bins merged).** Only bins holding rows are kept, in order;
    the candidate after a kept bin is the grid edge that closes it (every edge up
    to the next kept bin gives the same partition of the node's rows). Sizes then
    follow the node's rows, not the 255 bins: ``W`` is the most non-empty bins of
    any pair, so the server never holds nodes x features x 255 bins.

    Parameters
    ----------
    index, stats : the pooled non-zero bins (sorted ids in the level's
        :func:`histogram_layout` ``ptr``) and their statistics.
    todo : positions (rows of ``pair_feature``) of the nodes to split.

    Returns
    -------
    bins : (n_todo, fp, W, width)
        The ``bins`` of :func:`fedtrees.stats._splits.best_numeric`.
    thresholds : (n_todo, fp, W - 1)
        Sorted candidate edges, NaN-padded.
    flagged : bool (n_todo, fp)
        :func:`needs_sketch`'s rule on the same bins (a non-atomic bin above
        ``1/q`` of the node's weight).
    """
    fp = pair_feature.shape[1]
    width = stats.shape[1] if stats.ndim == 2 else 1
    position = np.full(pair_feature.shape[0], -1)
    position[todo] = np.arange(todo.shape[0])
    pair = np.searchsorted(ptr, index, side="right") - 1
    row = position[pair // fp] if pair.size else pair
    keep = row >= 0
    pair, index, values, row = pair[keep], index[keep], stats[keep], row[keep]
    local = row * fp + pair % fp
    rank = np.arange(local.shape[0]) - np.searchsorted(local, local, side="left")
    n_kept = np.bincount(local, minlength=todo.shape[0] * fp)
    W = max(int(n_kept.max(initial=0)), 1)
    bins = np.zeros((todo.shape[0] * fp, W, width))
    bins[local, rank] = values
    feature = pair_feature.ravel()[pair]
    within = index - ptr[pair]
    last = rank == n_kept[local] - 1
    thresholds = np.full((todo.shape[0] * fp, max(W - 1, 1)), np.nan)
    inner = ~last
    thresholds[local[inner], rank[inner]] = grid.edges[
        grid.edge_ptr[feature[inner]] + within[inner]
    ]
    mass = values.sum(axis=1) if classification else values[:, 0]
    total = np.bincount(local, weights=mass, minlength=todo.shape[0] * fp)
    heavy = (mass * q > total[local]) & ~grid.atomic[grid.bin_ptr[feature] + within]
    flagged = np.zeros(todo.shape[0] * fp, dtype=bool)
    flagged[local[heavy]] = True
    shape = (todo.shape[0], fp)
    return (
        bins.reshape(*shape, W, width),
        thresholds[:, : W - 1].reshape(*shape, W - 1),
        flagged.reshape(shape),
    )
