"""Building blocks of FedForest ``candidates="hist"`` against naive references.

Grid agreement, uint8 codes, the histogram kernel (vs ``np.add.at``), histogram
subtraction, exact pooled gains on the grid (vs ``best_numeric`` on brute-force
bins), the refinement flag, and the per-node rank-error guarantee (Thm 3.1,
ALGORITHMS.md §1.1) with disjoint supports, ties, small clients and nodes that
sit inside one or two grid bins.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedtrees.algorithms.fedforest._hist import (
    Grid,
    agree_grid,
    client_histograms,
    dense_histograms,
    grid_candidates,
    grid_codes,
    grid_sketch,
    grid_thresholds,
    histogram_layout,
    needs_sketch,
    rank_error,
    refine_candidates,
    refine_sketches,
    sibling_histograms,
    subtraction_is_exact,
)
from fedtrees.exceptions import ValidationError
from fedtrees.stats import exact_candidates, mixtures_by_client, quantile_sketches
from fedtrees.stats._splits import best_numeric


# -- helpers ----------------------------------------------------------------------
def _agree(columns_per_client, max_bins=255, weights=None, is_categorical=None):
    """Grid from each client's (n_k, F) rows, as the federation would agree it."""
    sketches = [
        grid_sketch(
            x,
            max_bins,
            is_categorical=is_categorical,
            sample_weight=None if weights is None else weights[k],
        )
        for k, x in enumerate(columns_per_client)
    ]
    return agree_grid(
        [s.points for s in sketches],
        [s.counts for s in sketches],
        [s.complete for s in sketches],
        max_bins,
        weights_per_client=[s.weights for s in sketches],
        is_categorical=is_categorical,
    )


def _node_mass(grid, values, weights, j=0):
    codes = np.searchsorted(grid.feature_edges(j), values, side="left")
    return np.bincount(codes, weights, minlength=grid.n_bins[j])


def _hist_candidates(grid, node_values, node_weights, q):
    """Candidate set the strategy uses for one pair: grid ∪ refined if flagged."""
    values = np.concatenate(node_values)
    weights = np.concatenate(node_weights)
    mass = _node_mass(grid, values, weights)
    pairs = np.array([[0]])
    padded = np.zeros(grid.max_edges + 1)
    padded[: mass.shape[0]] = mass
    flagged = needs_sketch(padded[None, None, :, None], grid, pairs, q, True)[0, 0]
    candidates = grid.feature_edges(0)
    if flagged:
        sketches = [
            refine_sketches(v, np.zeros(v.shape[0], np.int64), 1, q, w)
            for v, w in zip(node_values, node_weights, strict=True)
        ]
        points = np.stack([p for _, p in sketches])
        counts = np.stack([c for c, _ in sketches])
        refined = refine_candidates(points, counts, q)[0]
        candidates = np.union1d(candidates, refined[~np.isnan(refined)])
    return candidates, flagged


def _paper_candidates(node_values, q):
    """The quantile mode's candidates: capped sketches, inverted at l/q."""
    points = np.full((len(node_values), 1, q + 1), np.nan)
    counts = np.zeros((len(node_values), 1))
    for k, v in enumerate(node_values):
        c, p = quantile_sketches(v, np.zeros(v.shape[0], np.int64), 1, q)
        points[k], counts[k] = p, c
    out = mixtures_by_client(points, counts, q)[0]
    return out[~np.isnan(out)]


# -- grid agreement ---------------------------------------------------------------
def test_grid_is_exact_and_atomic_for_few_pooled_values(rng):
    clients = [
        rng.integers(0, 50, size=(40, 1)).astype(float),
        rng.integers(30, 120, size=(70, 1)).astype(float) / 2,
    ]
    grid = _agree(clients)
    pooled = np.unique(np.concatenate(clients))
    np.testing.assert_array_equal(grid.feature_edges(0), exact_candidates([pooled]))
    assert grid.feature_atomic(0).all()
    codes = np.searchsorted(grid.feature_edges(0), pooled, side="left")
    np.testing.assert_array_equal(codes, np.arange(pooled.shape[0]))


def test_grid_of_more_values_is_the_pooled_mixture():
    # A complete client (3 values, 300 rows) and a sketched one (1000 values):
    # the complete client counts as the sketch it would send at max_bins.
    max_bins = 16
    a = np.repeat([0.0, 5.0, 9.0], [100, 150, 50])[:, None]
    b = np.linspace(-3.0, 12.0, 1000)[:, None]
    grid = _agree([a, b], max_bins)
    sketches = [
        quantile_sketches(x[:, 0], np.zeros(x.shape[0], np.int64), 1, max_bins)
        for x in (a, b)
    ]
    points = np.stack([p for _, p in sketches])
    counts = np.stack([c for c, _ in sketches])
    expected = mixtures_by_client(points, counts, max_bins)[0]
    np.testing.assert_array_equal(grid.feature_edges(0), expected[~np.isnan(expected)])
    assert grid.n_bins[0] <= max_bins
    assert not grid.feature_atomic(0).any()


def test_grid_union_above_max_bins_is_sketched():
    a, b = np.arange(3.0)[:, None], np.arange(3.0, 6.0)[:, None]
    grid = _agree([a, b], max_bins=4)
    assert grid.n_bins[0] <= 4
    assert not grid.feature_atomic(0).any()


def test_categorical_features_get_no_grid(rng):
    x = np.column_stack([rng.normal(size=20), rng.integers(0, 3, 20)])
    grid = _agree([x], is_categorical=np.array([False, True]))
    assert grid.n_bins.tolist() == [20, 0]
    assert grid.feature_edges(1).shape == (0,)
    assert grid_codes(x, grid)[:, 1].tolist() == [0] * 20


def test_mixed_feature_without_weights_raises():
    a = grid_sketch(np.zeros((5, 1)), max_bins=2)
    b = grid_sketch(np.arange(5.0)[:, None], max_bins=2)
    with pytest.raises(ValidationError, match="weights_per_client"):
        agree_grid(
            [a.points, b.points], [a.counts, b.counts], [a.complete, b.complete], 2
        )


# -- codes ------------------------------------------------------------------------
@given(
    st.lists(st.floats(-5, 5), min_size=1, max_size=40),
    st.lists(st.floats(-5, 5), min_size=0, max_size=10, unique=True),
)
def test_codes_follow_the_bin_convention(values, edges):
    e = np.sort(np.asarray(edges, dtype=float))
    grid = Grid.from_lists([e])
    x = np.asarray(values)
    codes = grid_codes(x[:, None], grid)[:, 0]
    assert codes.dtype == np.uint8
    np.testing.assert_array_equal(codes, (x[:, None] > e[None, :]).sum(axis=1))
    for c in range(e.shape[0]):  # left of edge c  <=>  x <= edge c
        np.testing.assert_array_equal(codes <= c, x <= e[c])


# -- histograms -------------------------------------------------------------------
def _layout(rng, n, n_trees, n_nodes):
    """A row partition: random node of every row per tree, stable segments."""
    node_tree = np.repeat(np.arange(n_trees), n_nodes)
    weight = rng.poisson(1.0, size=(n_trees, n)).astype(float)
    local = rng.integers(0, n_nodes, size=(n_trees, n))
    perm = np.zeros((n_trees, n), dtype=np.int64)
    start = np.zeros(n_trees * n_nodes, dtype=np.int64)
    stop = np.zeros(n_trees * n_nodes, dtype=np.int64)
    for b in range(n_trees):
        present = np.flatnonzero(weight[b] > 0)
        order = present[np.argsort(local[b, present], kind="stable")]
        perm[b, : order.shape[0]] = order
        sizes = np.bincount(local[b, present], minlength=n_nodes)
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        start[b * n_nodes : (b + 1) * n_nodes] = bounds[:-1]
        stop[b * n_nodes : (b + 1) * n_nodes] = bounds[1:]
    return perm, start, stop, node_tree, weight


def _brute_histograms(
    perm, start, stop, nodes, node_tree, pairs, codes, weight, stats, grid
):
    out = []
    for s, g in enumerate(nodes):
        b = node_tree[g]
        rows = perm[b, start[g] : stop[g]]
        for j in pairs[s]:
            if j < 0 or grid.n_bins[j] == 0:
                continue
            h = np.zeros((grid.n_bins[j], stats.shape[1]))
            np.add.at(h, codes[rows, j], weight[b, rows, None] * stats[rows])
            out.append(h)
    return np.concatenate(out) if out else np.zeros((0, stats.shape[1]))


def _problem(rng, n=300, n_trees=3, n_nodes=4, classification=True):
    X = np.column_stack(
        [rng.normal(size=n), rng.integers(0, 4, n), rng.uniform(size=n).round(2)]
    )
    is_cat = np.array([False, True, False])
    grid = _agree([X[: n // 2], X[n // 2 :]], max_bins=16, is_categorical=is_cat)
    codes = grid_codes(X, grid)
    perm, start, stop, node_tree, weight = _layout(rng, n, n_trees, n_nodes)
    nodes = rng.permutation(n_trees * n_nodes)[: n_trees * n_nodes - 2]
    pairs = np.stack([rng.permutation([0, 1, 2, -1])[:3] for _ in nodes])
    classes = rng.integers(0, 3, n) if classification else np.zeros(0, np.int64)
    targets = rng.normal(size=n) if not classification else np.zeros(n)
    width = 3
    if classification:
        stats = np.eye(width)[classes]
    else:
        stats = np.column_stack([np.ones(n), targets, targets**2])
    return {
        "perm": perm,
        "start": start,
        "stop": stop,
        "open_nodes": nodes,
        "node_tree": node_tree,
        "pair_feature": pairs,
        "codes": codes,
        "weight": weight,
        "classes": classes,
        "targets": targets,
        "width": width,
        "grid": grid,
    }, stats


@pytest.mark.parametrize("classification", [True, False])
def test_histogram_kernel_equals_add_at(rng, classification):
    args, stats = _problem(rng, classification=classification)
    hist, ptr = client_histograms(**args)
    expected = _brute_histograms(
        args["perm"],
        args["start"],
        args["stop"],
        args["open_nodes"],
        args["node_tree"],
        args["pair_feature"],
        args["codes"],
        args["weight"],
        stats,
        args["grid"],
    )
    np.testing.assert_array_equal(
        ptr, histogram_layout(args["pair_feature"], args["grid"])
    )
    if classification:
        np.testing.assert_array_equal(hist, expected)
    else:
        np.testing.assert_allclose(hist, expected, rtol=1e-12, atol=1e-12)


def test_histogram_rejects_codes_beyond_the_grid(rng):
    args, _ = _problem(rng)
    codes = args["codes"].copy()
    codes[0, 0] = 200
    with pytest.raises(ValidationError, match="codes"):
        client_histograms(**{**args, "codes": codes})


def test_subtraction_reproduces_the_larger_child(rng):
    # Node 0 is the parent; nodes 1 (left) and 2 (right) partition its rows.
    args, _ = _problem(rng, n=400, n_trees=1, n_nodes=3)
    start, stop = args["start"], args["stop"]
    parent_start, parent_stop = start[0], stop[2]
    start = np.array([parent_start, start[0], start[2]])
    stop = np.array([parent_stop, stop[1], stop[2]])
    common = dict(args, start=start, stop=stop, node_tree=np.zeros(3, np.int64))
    pairs = np.array([[0, 2, 1]])
    hists = [
        client_histograms(
            **{**common, "open_nodes": np.array([g]), "pair_feature": pairs}
        )[0]
        for g in range(3)
    ]
    parent, left, right = hists
    assert subtraction_is_exact(args["weight"], classification=True)
    np.testing.assert_array_equal(parent, left + right)
    smaller, larger = (
        (left, right) if stop[1] - start[1] <= stop[2] - start[2] else (right, left)
    )
    np.testing.assert_array_equal(sibling_histograms(parent, smaller), larger)


def test_subtraction_is_refused_where_inexact():
    assert not subtraction_is_exact(np.ones((1, 4)), classification=False)
    assert not subtraction_is_exact(np.array([[1.0, 0.5]]), classification=True)
    with pytest.raises(ValidationError, match="smaller"):
        sibling_histograms(np.zeros((2, 3)), np.zeros((3, 3)))


# -- pooled gains on the grid -------------------------------------------------------
@pytest.mark.parametrize(
    ("classification", "criterion"), [(True, "gini"), (False, "squared_error")]
)
def test_pooled_grid_gains_equal_best_numeric_on_brute_bins(classification, criterion):
    rng = np.random.default_rng(7)
    args, stats = _problem(rng, n=500, classification=classification)
    # Two clients = two disjoint halves of the rows (same partition, own weights).
    halves = np.arange(500) < 250
    pooled = None
    for half in (halves, ~halves):
        hist, ptr = client_histograms(**{**args, "weight": args["weight"] * half})
        pooled = hist if pooled is None else pooled + hist
    grid, pairs, nodes = args["grid"], args["pair_feature"], args["open_nodes"]
    dense = dense_histograms(pooled, ptr, pairs, grid)
    brute = np.zeros_like(dense)
    for s, g in enumerate(nodes):
        b = args["node_tree"][g]
        rows = args["perm"][b, args["start"][g] : args["stop"][g]]
        for k, j in enumerate(pairs[s]):
            if j >= 0 and grid.n_bins[j] > 0:
                w = args["weight"][b, rows, None] * stats[rows]
                np.add.at(brute[s, k], args["codes"][rows, j], w)
    np.testing.assert_allclose(dense, brute, rtol=1e-12, atol=1e-9)
    parent = brute[:, 0].sum(axis=1)  # every pair sums to the node statistics
    thresholds = grid_thresholds(grid, pairs)
    min_leaf = np.ones(nodes.shape[0])
    got = best_numeric(parent, dense, thresholds, pairs, criterion, min_leaf)
    want = best_numeric(parent, brute, thresholds, pairs, criterion, min_leaf)
    np.testing.assert_array_equal(got.feature, want.feature)
    np.testing.assert_array_equal(got.threshold, want.threshold)
    np.testing.assert_allclose(got.gain, want.gain, rtol=1e-9)


@pytest.mark.parametrize(
    ("classification", "criterion"), [(True, "gini"), (False, "squared_error")]
)
def test_merged_empty_bins_give_the_dense_grid_split_and_flags(
    classification, criterion
):
    """The strategy's ``grid_candidates`` (non-empty bins only) chooses what the
    dense grid chooses — the same gain, feature and edge — and flags as
    ``needs_sketch``."""
    rng = np.random.default_rng(11)
    args, _ = _problem(rng, n=400, classification=classification)
    hist, ptr = client_histograms(**args)
    grid, pairs = args["grid"], args["pair_feature"]
    dense = dense_histograms(hist, ptr, pairs, grid)
    index = np.flatnonzero(np.any(hist != 0, axis=1))
    todo = np.arange(pairs.shape[0])
    bins, thresholds, flagged = grid_candidates(
        index, hist[index], ptr, todo, pairs, grid, 8, classification
    )
    parent = dense[:, 0].sum(axis=1)
    min_leaf = np.ones(pairs.shape[0])
    got = best_numeric(parent, bins, thresholds, pairs, criterion, min_leaf)
    want = best_numeric(
        parent, dense, grid_thresholds(grid, pairs), pairs, criterion, min_leaf
    )
    np.testing.assert_array_equal(got.feature, want.feature)
    np.testing.assert_array_equal(got.threshold, want.threshold)
    np.testing.assert_allclose(got.gain, want.gain, rtol=1e-9)
    expected = needs_sketch(dense, grid, pairs, 8, classification)
    np.testing.assert_array_equal(flagged, expected)


def test_grid_thresholds_are_padded():
    grid = Grid.from_lists(
        [np.array([1.0, 2.0]), np.zeros(0), np.array([5.0])],
        [np.ones(3, bool), np.zeros(0, bool), np.ones(2, bool)],
    )
    out = grid_thresholds(grid, [[0, 1, 2], [2, -1, -1]])
    assert out.shape == (2, 3, 2)
    np.testing.assert_array_equal(out[0, 0], [1.0, 2.0])
    assert np.isnan(out[0, 1]).all()
    np.testing.assert_array_equal(out[1, 0], [5.0, np.nan])


# -- refinement flag ----------------------------------------------------------------
def test_needs_sketch_flags_only_heavy_non_atomic_bins():
    grid = Grid.from_lists(
        [np.array([1.0, 2.0]), np.array([1.0, 2.0])],
        [np.array([True, False, False]), np.array([False, False, False])],
    )
    pooled = np.zeros((2, 2, 3, 2))
    pooled[0, :, 0] = [6.0, 0.0]  # 60 % of the node in bin 0: atomic for feature 0
    pooled[0, :, 1] = [2.0, 0.0]
    pooled[0, :, 2] = [0.0, 2.0]
    pooled[1, :, :, 0] = 1.0  # one third per bin, not above 1/2
    flags = needs_sketch(pooled, grid, [[0, 1], [0, -1]], q=2, classification=True)
    assert flags.tolist() == [[False, True], [False, False]]


# -- the guarantee ----------------------------------------------------------------
def test_rank_error_by_hand():
    v, w = np.array([1.0, 2.0, 3.0, 4.0]), np.ones(4)
    assert rank_error([1.5], v, w, q=4) == pytest.approx(0.25)  # 0.5 -> 0.25 or 1
    assert rank_error([1.5, 2.5, 3.5], v, w, q=4) == 0.0
    # Atoms: F jumps 0 -> 0.2 -> 0.8 -> 1 at 1, 2, 3; levels strictly inside a
    # jump (0.1, 0.3..0.7, 0.9) are ignored, no threshold reaches them.
    v, w = np.array([1.0, 2.0, 2.0, 2.0, 3.0]), np.ones(5)
    assert rank_error([], v, w, q=4) == 0.0
    assert rank_error([1.5, 2.5], v, w, q=10) == 0.0
    assert rank_error([1.5], v, w, q=10) == pytest.approx(0.2)  # level 0.8
    assert rank_error([1.5], v, np.array([0, 1, 1, 1, 0.0]), q=4) == 0.0


_KINDS = ("continuous", "ties", "disjoint", "atom_mix")


@st.composite
def _federation(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n_clients = draw(st.integers(1, 5))
    kind = draw(st.sampled_from(_KINDS))
    q = draw(st.sampled_from([2, 4, 8, 32]))
    max_bins = draw(st.sampled_from([2, 8, 255]))
    values, weights = [], []
    for k in range(n_clients):
        n = (
            int(rng.integers(0, 3 * q))
            if draw(st.booleans())
            else int(rng.integers(1, 400))
        )
        if kind == "continuous":
            v = rng.normal(loc=k, size=n)
        elif kind == "ties":
            v = rng.integers(0, int(rng.integers(1, 8)), n).astype(float)
        elif kind == "disjoint":  # each client's values in its own interval
            v = rng.uniform(10.0 * k, 10.0 * k + 1.0, n)
        else:
            v = np.where(rng.random(n) < 0.4, 0.0, rng.normal(size=n))
        values.append(v)
        bootstrap = draw(st.booleans())
        weights.append(rng.poisson(1.0, n).astype(float) if bootstrap else np.ones(n))
    window = sorted(rng.uniform(0, 1, 2)) if draw(st.booleans()) else None
    return values, weights, q, max_bins, window


def _node_sample(values, weights, window):
    """Rows of the node: all, or a window of the pooled ranks (after other splits)."""
    if window is None:
        return values, weights
    lo, hi = np.quantile(np.concatenate(values), window)
    inside = [(v >= lo) & (v <= hi) for v in values]
    node_values = [v[m] for v, m in zip(values, inside, strict=True)]
    return node_values, [w[m] for w, m in zip(weights, inside, strict=True)]


@given(_federation())
def test_hist_candidates_keep_rank_error_within_one_over_q(federation):
    values, weights, q, max_bins, window = federation
    if sum(w.sum() for w in weights) == 0:
        return
    grid = _agree([v[:, None] for v in values], max_bins, weights=weights)
    node_values, node_weights = _node_sample(values, weights, window)
    pooled_v, pooled_w = np.concatenate(node_values), np.concatenate(node_weights)
    if pooled_w.sum() == 0:
        return
    candidates, _ = _hist_candidates(grid, node_values, node_weights, q)
    assert rank_error(candidates, pooled_v, pooled_w, q) <= 1.0 / q + 1e-9


def test_disjoint_supports_at_a_node_inside_one_grid_bin():
    # A coarse root grid (4 bins over 3 clients); after splits elsewhere the node
    # holds only the middle client's interval plus a sliver of the next one,
    # all inside one or two grid bins: flagged, refined, within 1/q.
    rng = np.random.default_rng(3)
    values = [rng.uniform(10.0 * k, 10.0 * k + 1.0, 200 + 50 * k) for k in range(3)]
    weights = [np.ones(v.shape[0]) for v in values]
    grid = _agree([v[:, None] for v in values], max_bins=4, weights=weights)
    node_values = [v[(v >= 10.0) & (v <= 20.3)] for v in values]
    node_weights = [np.ones(v.shape[0]) for v in node_values]
    mass = _node_mass(grid, np.concatenate(node_values), np.concatenate(node_weights))
    assert np.count_nonzero(mass) <= 2
    q = 32
    candidates, flagged = _hist_candidates(grid, node_values, node_weights, q)
    assert flagged
    pooled_v, pooled_w = np.concatenate(node_values), np.concatenate(node_weights)
    assert rank_error(grid.feature_edges(0), pooled_v, pooled_w, q) > 1.0 / q
    assert rank_error(candidates, pooled_v, pooled_w, q) <= 1.0 / q + 1e-9


def test_unflagged_exact_grid_needs_no_refinement():
    values = [np.array([0.0, 1.0, 1.0, 2.0]), np.array([2.0, 3.0, 5.0])]
    weights = [np.ones(4), np.ones(3)]
    grid = _agree([v[:, None] for v in values], weights=weights)
    candidates, flagged = _hist_candidates(grid, values, weights, q=32)
    assert not flagged
    assert rank_error(candidates, np.concatenate(values), np.ones(7), q=32) == 0.0


@pytest.mark.parametrize(
    ("values", "q"),
    [
        # every client has >= q rows; a candidate lands on the atom at 0.3
        ([[-1.0, -1.0, -0.4, 0.0, 0.2, 0.7], [0.3, 0.3, 0.3, 0.8]], 4),
        # clients with fewer than q rows (sketches capped at their row count)
        ([[0.0, 1.0], [0.3, 0.8]], 8),
    ],
)
def test_quantile_mode_sketch_can_miss_the_bound_refinement_does_not(values, q):
    # Why the refinement sketch is uncapped, at resolution 2q (refine_sketches).
    values = [np.asarray(v) for v in values]
    pooled = np.concatenate(values)
    w = np.ones(pooled.shape[0])
    assert rank_error(_paper_candidates(values, q), pooled, w, q) > 1.0 / q
    sketches = [
        refine_sketches(v, np.zeros(v.shape[0], np.int64), 1, q) for v in values
    ]
    refined = refine_candidates(
        np.stack([p for _, p in sketches]), np.stack([c for c, _ in sketches]), q
    )[0]
    assert rank_error(refined[~np.isnan(refined)], pooled, w, q) <= 1.0 / q + 1e-9


def test_a_regression_client_in_no_tree_answers_an_empty_histogram():
    """Found by the fold test's random federations: with ``client_fraction`` a
    client may take part in no tree; its empty histogram of moments must still
    be floats (``np.bincount`` of no rows is int64), not a refused reply."""
    from fedtrees import FedForestRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = X[:, 0] + rng.normal(scale=0.1, size=120)
    model = FedForestRegressor(
        n_estimators=1, max_depth=2, candidates="hist", client_fraction=0.3
    )
    model.fit(X, y, groups=np.arange(120) % 3)  # one site takes part, two do not
    assert model.score(X, y) > 0.5
