"""The histogram engine's pieces against brute-force numpy references.

Grid agreement and codes, the client histogram kernel (vs ``np.add.at`` over a
node's rows), the row partition (vs routing every row), pooled sums (vs a
dense sum over clients), subtraction (vs the larger child's own histogram) and
the split search (vs every threshold and both missing directions scored with
:func:`fedtrees.stats.proxy_gains`, and vs :func:`fedtrees.stats.fisher_splits`).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtrees.algorithms.histogram import (
    MISSING,
    Bins,
    CodeSplits,
    Grid,
    Histograms,
    NodeRows,
    RowStats,
    agree_grid,
    bin_codes,
    client_histograms,
    declared_grid,
    partition,
    pool,
    search,
    sketch_columns,
    subtract,
    type1_points,
)
from fedtrees.exceptions import ValidationError
from fedtrees.stats import (
    exact_candidates,
    fisher_splits,
    mixtures_by_client,
    proxy_gains,
    quantile_sketches,
)

NUM = np.array([False])


# -- grid and codes ---------------------------------------------------------------
def test_exact_grid_has_one_bin_per_pooled_value(rng) -> None:
    clients = [
        rng.integers(0, 50, size=(40, 1)).astype(float),
        rng.integers(30, 120, size=(70, 1)).astype(float) / 2,
    ]
    sketches = [sketch_columns(x, NUM, 255) for x in clients]
    grid = agree_grid(sketches, NUM, np.array([0]), 255)
    pooled = np.unique(np.concatenate(clients))
    np.testing.assert_array_equal(grid.feature_edges(0), exact_candidates([pooled]))
    codes = bin_codes(pooled[:, None], grid)[:, 0]
    np.testing.assert_array_equal(codes, np.arange(pooled.shape[0]))


def test_inexact_grid_is_the_pooled_mixture_of_client_sketches() -> None:
    # A complete client (3 values) counts as the sketch it would send.
    max_bins = 16
    a = np.repeat([0.0, 5.0, 9.0], [100, 150, 50])[:, None]
    b = np.linspace(-3.0, 12.0, 1000)[:, None]
    grid = agree_grid([sketch_columns(x, NUM, max_bins) for x in (a, b)], NUM,
                      np.array([0]), max_bins)  # fmt: skip
    reference = [
        quantile_sketches(x[:, 0], np.zeros(x.shape[0], np.int64), 1, max_bins)
        for x in (a, b)
    ]
    points = np.stack([p for _, p in reference])
    counts = np.stack([c for c, _ in reference])
    expected = mixtures_by_client(points, counts, max_bins)[0]
    np.testing.assert_array_equal(grid.feature_edges(0), expected[~np.isnan(expected)])
    assert grid.n_bins[0] <= max_bins


@given(
    values=st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=60),
    m=st.integers(2, 20),
    seed=st.integers(0, 1000),
)
def test_type1_points_follow_the_quantile_sketch_rule(values, m, seed) -> None:
    v = np.sort(np.asarray(values))
    w = np.random.default_rng(seed).integers(1, 4, v.shape[0]).astype(float)
    _, reference = quantile_sketches(v, np.zeros(v.shape[0], np.int64), 1, m, w)
    ours = type1_points(v, w, m)
    n = min(m, v.shape[0])
    if n == m:  # the sketch caps m at the rows; ours repeats points instead
        np.testing.assert_array_equal(ours, reference[0])
    assert np.all(np.diff(ours) >= 0)
    assert (ours[0], ours[-1]) == (v[0], v[-1])


@given(
    values=st.lists(
        st.one_of(st.floats(-3, 3, allow_nan=False), st.just(float("nan"))),
        min_size=1,
        max_size=40,
    ),
    edges=st.lists(st.floats(-3, 3, allow_nan=False), min_size=1, max_size=8),
)
def test_codes_follow_the_threshold_convention(values, edges) -> None:
    e = np.unique(edges)
    grid = Grid.from_lists([e], [0])
    x = np.asarray(values)
    codes = bin_codes(x[:, None], grid)[:, 0].astype(np.int64)
    present = ~np.isnan(x)
    assert np.all(codes[~present] == MISSING)
    for m in range(e.shape[0]):  # x <= edge_m  iff  code <= m
        np.testing.assert_array_equal(x[present] <= e[m], codes[present] <= m)


def test_categorical_codes_and_missing() -> None:
    grid = Grid.from_lists([None], [3])
    codes = bin_codes(np.array([[2.0], [np.nan], [0.0]]), grid)
    assert codes[:, 0].tolist() == [2, MISSING, 0]
    with pytest.raises(ValidationError, match="outside the 3 agreed categories"):
        bin_codes(np.array([[3.0]]), grid)


def test_missing_values_stay_out_of_the_grid() -> None:
    x = np.array([[1.0], [np.nan], [2.0], [np.nan]])
    s = sketch_columns(x, NUM, 8)
    assert s.counts.tolist() == [2.0]
    grid = agree_grid([s], NUM, np.array([0]), 8)
    assert grid.feature_edges(0).tolist() == [1.5]


@pytest.mark.parametrize(
    ("edges", "match"),
    [
        ([1.0, 1.0], "strictly increasing"),
        ([2.0, 1.0], "strictly increasing"),
        ([1.0, np.inf], "finite"),
        ([np.nan], "finite"),
        ([], "non-empty"),
        (np.arange(10.0), "at most max_bins - 1 = 4 edges"),
    ],
)
def test_declared_edges_are_checked(edges, match) -> None:
    with pytest.raises(ValidationError, match=rf"bin_edges\['age'\].*{match}"):
        declared_grid({"age": edges}, ["age"], NUM, 5, "Owner")


def test_declared_edges_name_unknown_and_categorical_columns() -> None:
    with pytest.raises(ValidationError, match="names column 'bmi'"):
        declared_grid({"bmi": [1.0]}, ["age"], NUM, 5, "Owner")
    with pytest.raises(ValidationError, match="categorical column 'ward'"):
        declared_grid({0: [1.0]}, ["ward"], np.array([True]), 5, "Owner")


# -- a random forest state for the client kernels -----------------------------------
def _state(rng, n=120, n_features=4, trees=3):
    """Codes, weights and a partition of rows into a few open nodes per tree."""
    codes = rng.integers(0, 6, size=(n, n_features)).astype(np.uint8)
    codes[rng.random((n, n_features)) < 0.1] = MISSING
    weight = rng.integers(0, 3, size=(trees, n)).astype(float)
    rows = NodeRows.build(weight)
    # split every root on feature 0 at code 2 (missing left), then left child
    # on a category set of feature 1 (missing right)
    feature = np.full(trees + 4 * trees, -1)
    kind = np.zeros(feature.shape[0], np.int8)
    left = np.full(feature.shape[0], -1)
    right = np.full(feature.shape[0], -1)
    limit = np.zeros(feature.shape[0], np.int64)
    missing_left = np.zeros(feature.shape[0], bool)
    set_index = np.full(feature.shape[0], -1)
    sets = np.zeros((trees, 256), bool)
    sets[:, [1, 3]] = True
    for b in range(trees):
        kids = trees + 4 * b + np.arange(4)
        feature[b], kind[b], limit[b], missing_left[b] = 0, 1, 2, True
        left[b], right[b] = kids[0], kids[1]
        g = kids[0]
        feature[g], kind[g], set_index[g] = 1, 2, b
        left[g], right[g] = kids[2], kids[3]
    glob = CodeSplits(np.arange(feature.shape[0]), kind, feature, limit, missing_left,
                      set_index, sets, np.zeros(feature.shape[0], bool), left,
                      right)  # fmt: skip  # every node by id: read by _route
    pending = rows.pending(kind > 0, left, right)
    splits = CodeSplits(pending, kind[pending], feature[pending], limit[pending],
                        missing_left[pending], set_index[pending], sets,
                        np.zeros(pending.shape[0], bool), left[pending],
                        right[pending])  # fmt: skip
    partition(rows, np.ascontiguousarray(codes.T), splits)
    open_nodes = np.sort(np.concatenate([right[:trees], left[left[:trees]],
                                         right[left[:trees]]]))  # fmt: skip
    order = np.argsort(rows.tree[open_nodes], kind="stable")
    return codes, weight, rows, glob, open_nodes[order]


def _route(codes, splits, i, b):
    """Brute force: the node row i reaches in tree b."""
    g = b
    while splits.kind[g] > 0:
        c = int(codes[i, splits.feature[g]])
        if splits.kind[g] == 1:
            go = splits.missing_left[g] if c == MISSING else c <= splits.bin_limit[g]
        else:
            go = splits.left_sets[splits.set_index[g], c]
        g = splits.left[g] if go else splits.right[g]
    return g


def test_roots_hold_each_trees_present_rows_in_order(rng) -> None:
    weight = rng.integers(0, 3, size=(7, 40)).astype(float)
    weight[3] = 0.0  # a tree without rows
    rows = NodeRows.build(weight)
    absent = weight == 0.0
    np.testing.assert_array_equal(rows.perm, np.argsort(absent, axis=1, kind="stable"))
    np.testing.assert_array_equal(rows.stop, (~absent).sum(axis=1))


def test_partition_puts_every_row_in_the_node_it_reaches(rng) -> None:
    codes, weight, rows, splits, open_nodes = _state(rng)
    for g in open_nodes:
        b = rows.tree[g]
        segment = rows.perm[b, rows.start[g] : rows.stop[g]]
        expected = [i for i in range(codes.shape[0])
                    if weight[b, i] > 0 and _route(codes, splits, i, b) == g]  # fmt: skip
        assert segment.tolist() == expected  # increasing row order


@pytest.mark.parametrize("mode", ["classes", "moments", "vectors"])
def test_client_histograms_equal_add_at_over_node_rows(rng, mode) -> None:
    codes, weight, rows, _, open_nodes = _state(rng)
    n = codes.shape[0]
    if mode == "classes":
        labels = rng.integers(0, 3, n)
        row_stats = RowStats.classes(labels, 3)
        per_row = np.eye(3)[labels]
    elif mode == "moments":
        y = rng.normal(size=n)
        row_stats = RowStats.moments(y)
        per_row = np.stack([np.ones(n), y, y * y], axis=1)
    else:
        per_row = rng.normal(size=(n, 2))
        row_stats = RowStats.vectors(per_row)
    pairs = np.stack([rng.permutation(4)[:2] for _ in open_nodes])
    pairs[0, 1] = -1
    totals, h = client_histograms(
        rows, open_nodes, pairs, np.ascontiguousarray(codes.T), weight, row_stats
    )
    ptr = h.ptr
    for s, g in enumerate(open_nodes):
        b = rows.tree[g]
        members = rows.perm[b, rows.start[g] : rows.stop[g]]
        w = weight[b, members][:, None] * per_row[members]
        np.testing.assert_allclose(totals[s], w.sum(axis=0), rtol=1e-12, atol=1e-12)
        for k in range(2):
            p = s * 2 + k
            dense = np.zeros((256, per_row.shape[1]))
            if pairs[s, k] >= 0:
                np.add.at(dense, codes[members, pairs[s, k]], w)
            used = np.flatnonzero(np.bincount(codes[members, pairs[s, k]],
                                              minlength=256) if pairs[s, k] >= 0
                                  else np.zeros(256))  # fmt: skip
            got = h.codes[ptr[p] : ptr[p + 1]]
            assert got.tolist() == used.tolist()
            np.testing.assert_allclose(h.stats[ptr[p] : ptr[p + 1]], dense[used],
                                       rtol=1e-12, atol=1e-12)  # fmt: skip


# -- server: pool and subtract ------------------------------------------------------
def _random_histograms(rng, n_pairs, width=2, empty=0.3):
    counts, codes, stats = [], [], []
    for _ in range(n_pairs):
        m = 0 if rng.random() < empty else int(rng.integers(1, 12))
        c = np.sort(rng.choice(256, m, replace=False))
        counts.append(m)
        codes.append(c)
        stats.append(rng.integers(1, 5, size=(m, width)).astype(float))
    return Histograms(np.asarray(counts, np.int64),
                      np.concatenate([np.zeros(0), *codes]).astype(np.uint8),
                      np.concatenate([np.zeros((0, width)), *stats]))  # fmt: skip


def _dense(h, n_pairs, pairs=None):
    width = h.stats.shape[1]
    out = np.zeros((n_pairs, 256, width))
    pair = np.repeat(np.arange(h.n_pairs) if pairs is None else pairs, h.counts)
    np.add.at(out, (pair, h.codes.astype(np.int64)), h.stats)
    return out


@settings(max_examples=30)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 6))
def test_pooled_bins_are_the_sum_over_clients(seed, k) -> None:
    rng = np.random.default_rng(seed)
    n_pairs = 9
    parts = []
    for _ in range(k):
        pairs = np.sort(
            rng.choice(n_pairs, int(rng.integers(0, n_pairs)), replace=False)
        )
        parts.append((pairs, _random_histograms(rng, pairs.shape[0])))
    pooled = pool(parts, n_pairs, 2)
    expected = sum(_dense(h, n_pairs, p) for p, h in parts)
    np.testing.assert_array_equal(_dense(pooled, n_pairs), expected)
    assert np.all(np.diff(pooled.codes.astype(int))[np.diff(np.repeat(
        np.arange(n_pairs), pooled.counts)) == 0] > 0)  # fmt: skip


@pytest.mark.parametrize(
    ("codes", "stats"),
    [(np.int16, np.int32), (np.uint16, np.float32), (np.int64, np.uint64),
     (np.uint8, np.int8), (np.uint8, np.float16)],
)  # fmt: skip
def test_replies_in_other_dtypes_pool_and_check_as_the_kernels_dtypes(
    rng, codes, stats
) -> None:
    """A reply's fields allow any integer or float dtype of the same values."""
    parts = [(np.arange(5), _random_histograms(rng, 5)) for _ in range(3)]
    odd = [
        (p, Histograms(h.counts.astype(np.int32), h.codes.astype(codes),
                       h.stats.astype(stats)))
        for p, h in parts
    ]  # fmt: skip
    assert all(h.stats.dtype in (np.float64, np.uint8) for _, h in odd)
    np.testing.assert_array_equal(
        _dense(pool(odd, 5, 2), 5), _dense(pool(parts, 5, 2), 5)
    )
    features = np.zeros(5, np.int64)
    for (_, h), (_, g) in zip(odd, parts, strict=True):
        np.testing.assert_array_equal(
            h.checked_sums(features, np.array([256])),
            g.checked_sums(features, np.array([256])),
        )


def test_subtraction_gives_the_larger_child(rng) -> None:
    n_pairs = 7
    small = _random_histograms(rng, n_pairs)
    large = _random_histograms(rng, n_pairs)
    parent = pool([(np.arange(n_pairs), small), (np.arange(n_pairs), large)],
                  n_pairs, 2)  # fmt: skip
    derived = subtract(Bins.of(parent), Bins.of(small), -1)
    np.testing.assert_array_equal(derived.counts, large.counts)
    np.testing.assert_array_equal(derived.codes, large.codes)
    np.testing.assert_array_equal(derived.stats, large.stats)


# -- split search -------------------------------------------------------------------
def _brute_numeric(codes, stats, parent, min_leaf, criterion):
    """Every candidate of one pair as (proxy, bin, direction), in scan order.

    Thresholds ascending; where missing rows exist, right before left.
    """
    regular = codes != MISSING
    missing = stats[~regular].sum(axis=0)
    has = bool((~regular).any())
    cum = np.cumsum(stats[regular], axis=0)
    out = []
    n_reg = int(regular.sum())
    for t in range(n_reg):
        if t == n_reg - 1 and not has:
            break
        options = [(cum[t], 0 if has else -1)]
        if has and t < n_reg - 1:
            options.append((cum[t] + missing, 1))
        for left, direction in options:
            score = proxy_gains(parent, left[None], criterion, 0.0)[0]
            n_left = left[0] if criterion == "squared_error" else left.sum()
            n_all = parent[0] if criterion == "squared_error" else parent.sum()
            slack = 1e-9 * max(n_all, 1.0)
            if n_left < min_leaf - slack or n_all - n_left < min_leaf - slack:
                score = -np.inf
            out.append((score, int(codes[regular][t]), direction))
    return out


@settings(max_examples=60)
@given(seed=st.integers(0, 100_000), criterion=st.sampled_from(
    ["gini", "entropy", "squared_error"]))  # fmt: skip
def test_numeric_search_equals_brute_force(seed, criterion) -> None:
    rng = np.random.default_rng(seed)
    n_nodes, fp = 3, 2
    parts, parents = [], []
    for _ in range(n_nodes * fp):
        m = int(rng.integers(1, 10))
        codes = np.sort(rng.choice(254, m, replace=False))
        if rng.random() < 0.5:
            codes = np.append(codes, MISSING)
        if criterion == "squared_error":
            w = rng.integers(1, 4, codes.shape[0]).astype(float)
            y = rng.normal(size=codes.shape[0])
            stats = np.stack([w, w * y, w * y * y], axis=1)
        else:
            stats = rng.integers(0, 4, size=(codes.shape[0], 2)).astype(float)
            stats[stats.sum(axis=1) == 0, 0] = 1.0
        parts.append((codes.astype(np.uint8), stats))
    h = Histograms(np.array([c.shape[0] for c, _ in parts]),
                   np.concatenate([c for c, _ in parts]),
                   np.concatenate([s for _, s in parts]))  # fmt: skip
    # every pair of a node must sum to its node: use pair 0's sum as the parent
    for s in range(n_nodes):
        parents.append(parts[s * fp][1].sum(axis=0))
    parent = np.stack(parents)
    pair_feature = np.tile(np.arange(fp), (n_nodes, 1))
    ptr = h.ptr
    min_leaf = rng.integers(1, 3, n_nodes).astype(float)
    found = search(Bins.of(h), pair_feature, np.zeros(fp, bool), parent, min_leaf,
                   criterion)  # fmt: skip
    for s in range(n_nodes):
        # every candidate of the node, pairs in order: (proxy, slot, bin, direction)
        candidates = [
            (score, k, b, d)
            for k in range(fp)
            for score, b, d in _brute_numeric(
                h.codes[ptr[s * fp + k] : ptr[s * fp + k + 1]],
                h.stats[ptr[s * fp + k] : ptr[s * fp + k + 1]],
                parent[s],
                min_leaf[s],
                criterion,
            )
        ]
        scores = np.array([c[0] for c in candidates] or [-np.inf])
        best = scores.max()
        if not np.isfinite(best):
            assert found.num_slot[s] == -1
            continue
        chosen = (found.num_slot[s], found.num_bin[s], found.num_missing[s])
        tied = [c[1:] for c in candidates if np.isclose(c[0], best, rtol=1e-12)]
        assert chosen == tied[0]  # the first best (scan order), up to rounding
        np.testing.assert_array_equal(  # its left statistics, summed bin by bin
            found.num_left[s],
            _left_of(h, ptr, s * fp + chosen[0], chosen[1], chosen[2]),
        )


def _left_of(h, ptr, p, b, direction):
    codes, stats = h.codes[ptr[p] : ptr[p + 1]], h.stats[ptr[p] : ptr[p + 1]]
    left = (codes <= b) | ((codes == MISSING) & (direction == 1))
    out = np.zeros(stats.shape[1])
    for row in stats[left]:
        out += row
    return out


def test_missing_direction_by_hand() -> None:
    # 4 rows of class 0 at code 0, 4 of class 1 at code 1, 3 missing of class 1:
    # the threshold after code 0 sends missing right, with class 1.
    codes = np.array([0, 1, MISSING], np.uint8)
    stats = np.array([[4.0, 0.0], [0.0, 4.0], [0.0, 3.0]])
    found = search(Bins(codes, stats, np.array([0]), np.array([3])), np.array([[0]]),
                   NUM, np.array([[4.0, 7.0]]), np.array([1.0]), "gini")  # fmt: skip
    assert (found.num_bin[0], found.num_missing[0]) == (0, 0)
    assert found.num_left[0].tolist() == [4.0, 0.0]
    # missing of class 0 go left instead
    stats[2] = [3.0, 0.0]
    found = search(Bins(codes, stats, np.array([0]), np.array([3])), np.array([[0]]),
                   NUM, np.array([[7.0, 4.0]]), np.array([1.0]), "gini")  # fmt: skip
    assert (found.num_bin[0], found.num_missing[0]) == (0, 1)
    assert found.num_left[0].tolist() == [7.0, 0.0]
    # no missing rows: the direction is the larger child's (-1)
    found = search(Bins(codes[:2], stats[:2], np.array([0]), np.array([2])),
                   np.array([[0]]), NUM, np.array([[4.0, 4.0]]), np.array([1.0]),
                   "gini")  # fmt: skip
    assert found.num_missing[0] == -1


def test_missing_only_split_sends_every_present_row_left() -> None:
    codes = np.array([3, MISSING], np.uint8)
    stats = np.array([[5.0, 0.0], [0.0, 5.0]])
    found = search(Bins(codes, stats, np.array([0]), np.array([2])), np.array([[0]]),
                   NUM, np.array([[5.0, 5.0]]), np.array([1.0]), "gini")  # fmt: skip
    assert (found.num_bin[0], found.num_missing[0]) == (3, 0)
    grid = Grid.from_lists([np.arange(3.0)], [0])  # 4 bins: code 3 is the last
    assert grid.threshold(np.array([0]), found.num_bin)[0] == np.finfo(float).max


@settings(max_examples=40)
@given(seed=st.integers(0, 100_000), classes=st.sampled_from([2, 3]))
def test_categorical_search_equals_fisher_splits(seed, classes) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 9))
    codes = np.sort(rng.choice(np.r_[np.arange(20), MISSING], m, replace=False))
    stats = rng.integers(0, 5, size=(m, classes)).astype(float)
    stats[stats.sum(axis=1) == 0, 0] = 1.0
    parent = stats.sum(axis=0)
    bins = Bins(codes.astype(np.uint8), stats, np.array([0]), np.array([m]))
    found = search(bins, np.array([[0]]), np.array([True]), parent[None],
                   np.array([1.0]), "gini")  # fmt: skip
    order, left = fisher_splits(stats, "gini")
    scores = proxy_gains(parent, left, "gini", 0.0)
    if not np.isfinite(scores).any():
        assert found.cat_slot[0] == -1
        return
    cut = int(np.argmax(scores))
    assert set(np.flatnonzero(found.cat_set[0])) == set(codes[order[: cut + 1]])
    np.testing.assert_allclose(found.cat_left[0], left[cut])


@pytest.mark.parametrize("criterion", ["gini", "second_order"])
def test_a_large_level_searched_on_threads_equals_one_thread(
    criterion: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fedtrees.algorithms.histogram import _search
    from fedtrees.algorithms.histogram._histograms import Bins

    rng = np.random.default_rng(3)
    n_nodes, fp = 90, 20  # 1800 pairs: above the threshold, several chunks
    codes, lo, hi = [], [], []
    for _ in range(n_nodes * fp):
        present = np.flatnonzero(rng.random(16) < 0.6).astype(np.uint8)
        lo.append(sum(map(len, codes)))
        codes.append(present)
        hi.append(lo[-1] + present.shape[0])
    flat = np.concatenate(codes)
    width = 3 if criterion == "second_order" else 2  # (g, h, w) or class counts
    stats = rng.integers(0, 9, size=(flat.shape[0], width)).astype(float)
    if criterion == "second_order":
        stats[:, 0] -= 4.0  # gradients of both signs, hessians >= 0
    bins = Bins(flat, stats, np.array(lo), np.array(hi))
    pairs = np.tile(np.arange(fp), (n_nodes, 1))
    categorical = np.arange(fp) % 4 == 0
    parent = np.array(
        [stats[lo[s * fp] : hi[s * fp]].sum(axis=0) for s in range(n_nodes)]
    )
    min_leaf = np.ones(n_nodes)

    threaded = _search.search(
        bins, pairs, categorical, parent, min_leaf, criterion, 1.0
    )
    monkeypatch.setattr(_search, "PARALLEL_PAIRS", 10**9)
    single = _search.search(bins, pairs, categorical, parent, min_leaf, criterion, 1.0)

    for name in ("num_score", "num_slot", "num_bin", "num_missing", "num_left",
                 "cat_score", "cat_slot", "cat_left", "cat_set"):  # fmt: skip
        np.testing.assert_array_equal(getattr(threaded, name), getattr(single, name))
    assert np.isfinite(single.num_score).any()
    assert np.isfinite(single.cat_score).any()


# -- secure aggregation: the dense layout, the fine grid ---------------------------
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_a_dense_vector_reads_back_as_the_sites_own_histograms(seed: int) -> None:
    from fedtrees.algorithms.histogram import DenseLayout, NodeRows, RowStats

    rng = np.random.default_rng(seed)
    n, n_features, n_classes = int(rng.integers(1, 60)), 3, 2
    feature_bins = rng.integers(1, 6, n_features)
    columns = np.stack([rng.integers(0, k, n) for k in feature_bins]).astype(np.uint8)
    columns[rng.random(columns.shape) < 0.2] = 255  # missing values
    rows = NodeRows.build(np.ones((1, n)))
    # the root (one open node): two features, or one and a padding slot
    pairs = np.array([[0, 2]]) if rng.random() < 0.5 else np.array([[1, -1]])
    stats, h = client_histograms(
        rows, np.array([0]), pairs, columns, np.ones((1, n)),
        RowStats.classes(rng.integers(0, n_classes, n), n_classes),
    )  # fmt: skip
    layout = DenseLayout(pairs, feature_bins, n_classes)
    vector = layout.dense(stats, h)
    assert vector.shape == (layout.length,)
    back_stats, back = layout.sparse(vector)
    assert np.array_equal(back_stats, stats)
    assert np.array_equal(back.counts, h.counts)
    assert np.array_equal(back.codes, h.codes)
    assert np.array_equal(back.stats, h.stats)


@pytest.mark.parametrize(
    ("ranges", "reason"),
    [
        (np.zeros((2, 2)), "per feature"),
        (np.array([[0.0, 1.0], [0.0, 1.0], [1.0, 1.0]]), "low < high"),
        (np.array([[0.0, 1.0], [np.nan, 1.0], [0.0, 1.0]]), "finite"),
        (np.array([["a", "b"]] * 3), "numeric"),
    ],
)
def test_fine_histograms_refuse_bad_ranges_by_name(
    ranges: np.ndarray, reason: str
) -> None:
    from fedtrees.algorithms.histogram import fine_histograms
    from fedtrees.federation import InvalidField

    X = np.zeros((4, 3))
    with pytest.raises(InvalidField, match=reason) as info:
        fine_histograms(X, ranges, np.array([True, True, True]), np.ones(4))
    assert info.value.field == "ranges"


def test_fine_grid_cuts_at_most_max_bins_at_fine_boundaries() -> None:
    from fedtrees.algorithms.histogram import FINE_BINS, fine_edges, fine_histograms

    x = np.random.default_rng(0).normal(size=(5000, 1))
    ranges = np.array([[-5.0, 5.0]])
    fine = fine_histograms(x, ranges, np.array([True]), np.ones(5000))
    edges = fine_edges(fine.ravel(), np.array([True]), ranges, 16)[0]
    assert 1 <= edges.shape[0] <= 15
    assert np.all(np.diff(edges) > 0)
    step = 10.0 / FINE_BINS
    assert np.allclose((edges + 5.0) / step, np.round((edges + 5.0) / step))
    shares = np.searchsorted(np.sort(x[:, 0]), edges) / 5000
    assert np.all(np.abs(shares - np.arange(1, 16)[: edges.shape[0]] / 16) < 0.01)


def test_merged_grid_refuses_a_numeric_column_without_edges() -> None:
    from fedtrees.algorithms.histogram import merged_grid
    from fedtrees.exceptions import LocalProtocolError

    with pytest.raises(LocalProtocolError, match="numeric column 1"):
        merged_grid({0: np.array([1.0])}, {}, np.array([False, False]), [0, 0])
