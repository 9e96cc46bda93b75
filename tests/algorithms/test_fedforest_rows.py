"""ClientRows kernels are bit-identical to the routing kernels of ``_kernels``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from fedtrees.algorithms.fedforest._kernels import SPLIT_CLIENT, SPLIT_NONE, route
from fedtrees.algorithms.fedforest._rows import (
    ClientRows,
    padded_bins,
    ragged_thresholds,
)
from fedtrees.exceptions import ValidationError
from tests.algorithms import fedforest_reference as old

N_TREES, N_FEATURES, FP, N_CAND, N_CAT, N_CLASSES, CODE = 5, 5, 3, 6, 4, 3, 1
IS_CAT = np.array([False, False, True, False, False])


@dataclass
class Forest:
    """A global node table grown at random, level by level."""

    feature: list[int] = field(default_factory=lambda: [-1] * N_TREES)
    threshold: list[float] = field(default_factory=lambda: [0.0] * N_TREES)
    left: list[int] = field(default_factory=lambda: [-1] * N_TREES)
    right: list[int] = field(default_factory=lambda: [-1] * N_TREES)
    tree: list[int] = field(default_factory=lambda: list(range(N_TREES)))
    sets: list[list[int]] = field(default_factory=lambda: [[] for _ in range(N_TREES)])
    open: list[int] = field(default_factory=lambda: list(range(N_TREES)))
    client_split: bool = False

    def table(self) -> tuple[Any, ...]:
        ptr = np.concatenate([[0], np.cumsum([len(s) for s in self.sets])])
        codes = np.array([c for s in self.sets for c in s], dtype=np.int64)
        return (
            np.array(self.feature, dtype=np.int64),
            np.array(self.threshold),
            np.array(self.left, dtype=np.int64),
            np.array(self.right, dtype=np.int64),
            ptr.astype(np.int64),
            codes,
        )

    def open_nodes(self) -> Any:
        nodes = np.array(self.open, dtype=np.int64)
        return nodes[np.lexsort((nodes, np.array(self.tree)[nodes]))]

    def grow(self, rng: np.random.Generator, X: Any) -> None:
        """Close some open nodes, split the others on random tests."""
        still_open = []
        for g in self.open:
            if rng.random() < 0.2:
                continue  # a leaf: its rows drop out for good
            if not self.client_split and rng.random() < 0.2:
                f, codes, self.client_split = SPLIT_CLIENT, [0, CODE], True
            else:
                f = int(rng.integers(N_FEATURES))
                codes = list(rng.choice(N_CAT, 2, replace=False)) if IS_CAT[f] else []
            self.feature[g], self.sets[g] = f, [int(c) for c in codes]
            self.threshold[g] = float(X[rng.integers(X.shape[0]), max(f, 0)])
            for side in ("left", "right"):
                getattr(self, side)[g] = len(self.feature)
                still_open.append(len(self.feature))
                self.feature.append(-1)
                self.threshold.append(0.0)
                self.left.append(-1)
                self.right.append(-1)
                self.tree.append(self.tree[g])
                self.sets.append([])
        self.open = still_open


def _data(seed: int, non_integer: bool) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(150, 400))
    X = rng.normal(size=(n, N_FEATURES))
    X[:, 1] = np.round(X[:, 1])  # heavy ties
    X[:, 3] = np.round(X[:, 3], 1)
    X[:, 2] = rng.integers(0, N_CAT, n)
    order = np.ascontiguousarray(np.argsort(X, axis=0, kind="stable").T)
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.arange(n)[None, :], axis=1)
    weight = np.stack(
        [np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(N_TREES)]
    ).astype(np.float64)
    weight[-1] = 0.0  # a tree this client does not take part in
    if non_integer:
        weight *= rng.uniform(0.1, 3.0, size=weight.shape)
    return {
        "X": X,
        "order": order.astype(np.int64),
        "pos": pos.astype(np.int64),
        "sval": np.ascontiguousarray(np.take_along_axis(X.T, order, axis=1)),
        "weight": weight,
        "codes": rng.integers(0, N_CLASSES, n).astype(np.int64),
        "targets": rng.normal(size=n) * 10.0,
    }


def _slots(forest: Forest, open_nodes: Any) -> tuple[Any, Any]:
    """``open_slot`` and per-tree ranges, as ``_client._slots`` builds them."""
    open_slot = np.full(len(forest.feature), -1, dtype=np.int64)
    open_slot[open_nodes] = np.arange(open_nodes.shape[0])
    tree_of = np.array(forest.tree)[open_nodes]
    trees = np.arange(N_TREES)
    ranges = np.stack(
        [
            np.searchsorted(tree_of, trees, side="left"),
            np.searchsorted(tree_of, trees, side="right"),
        ],
        axis=1,
    )
    return open_slot, ranges.astype(np.int64)


def _requests(rng: np.random.Generator, d: dict[str, Any], n_open: int) -> Any:
    """Random distinct features per open node (some unused) and candidates."""
    pairs = np.stack([rng.permutation(N_FEATURES)[:FP] for _ in range(n_open)])
    pairs[rng.random(pairs.shape) < 0.15] = -1
    thresholds = np.full((n_open, FP, N_CAND), np.nan)
    for s, k in np.ndindex(n_open, FP):
        j = pairs[s, k]
        if j < 0 or IS_CAT[j]:
            continue
        m = int(rng.integers(0, N_CAND + 1))
        picks = d["X"][rng.integers(0, d["X"].shape[0], m), j]  # ties with rows
        fresh = rng.random(m) < 0.3
        picks[fresh] = rng.normal(size=int(fresh.sum()))
        thresholds[s, k, :m] = np.sort(picks)
    return pairs.astype(np.int64), thresholds


def _same(a: Any, b: Any) -> None:
    assert a.dtype == b.dtype
    assert a.shape == b.shape
    assert np.array_equal(a, b, equal_nan=True)


def _check_points(d, rows, forest, open_nodes, slots, pairs, counts, q, w) -> None:
    numeric = (pairs >= 0) & ~IS_CAT[np.maximum(pairs, 0)] & (counts[:, None] > 0)
    n_points = np.where(numeric, np.minimum(q, counts)[:, None] + 1, 0)
    out_ptr = np.concatenate([[0], np.cumsum(n_points.ravel())]).astype(np.int64)
    args = (q, out_ptr, int(out_ptr[-1]))
    want = old.sketch_points(
        slots[2], w, d["order"], d["pos"], d["sval"], slots[0], slots[1], pairs,
        IS_CAT, counts, *args,
    )  # fmt: skip
    got = rows.sketch_points(
        open_nodes, pairs, IS_CAT, d["pos"], d["sval"], w, counts, *args
    )
    _same(got, want)


def _check_level(d, rows, forest, node, rng, classification) -> None:
    open_nodes = forest.open_nodes()
    open_slot, ranges = _slots(forest, open_nodes)
    slots = (open_slot, ranges, node)
    n_open, width = open_nodes.shape[0], N_CLASSES if classification else 3
    w, codes, targets = d["weight"], d["codes"], d["targets"]
    task = (codes, targets, classification)
    want, counts = old.node_statistics(node, w, open_slot, ranges, n_open, *task, width)
    got, got_counts = rows.node_statistics(open_nodes, w, *task, width)
    _same(got, want)
    _same(got_counts, counts)
    pairs, thresholds = _requests(rng, d, n_open)
    for q in (3, 32):
        _check_points(d, rows, forest, open_nodes, slots, pairs, counts, q, w)
    present = np.where(w > 0, 1.0, 0.0)  # exact mode
    q = max(int(counts.max(initial=1)), 1)
    _check_points(d, rows, forest, open_nodes, slots, pairs, counts, q, present)
    for p in (pairs, np.where(IS_CAT[np.maximum(pairs, 0)], -1, pairs)):
        want = old.category_statistics(
            node, w, d["X"], open_slot, ranges, p, IS_CAT, *task, n_open, N_CAT, width
        )
        got = rows.category_statistics(
            open_nodes, d["X"], p, IS_CAT, w, *task, N_CAT, width
        )
        _same(got, want)
    n_thr = (~np.isnan(thresholds)).sum(axis=-1).astype(np.int64)
    want = old.evaluate_bins(
        node, w, d["X"], open_slot, ranges, pairs, IS_CAT, thresholds, n_thr, *task,
        width,
    )  # fmt: skip
    thr_ptr, thr = ragged_thresholds(thresholds)
    got = rows.evaluate_bins(
        open_nodes, d["X"], pairs, IS_CAT, thr_ptr, thr, w, *task, width
    )
    assert got.shape == (thr_ptr[-1] + n_open * FP, width)
    _same(padded_bins(got, thr_ptr, thresholds.shape), want)


def _check_segments(rows: ClientRows, node: Any, weight: Any, forest: Forest) -> None:
    """Every unsplit node's segment is exactly its present rows, in row order."""
    covered = np.zeros(weight.shape, dtype=int)
    for g, f in enumerate(forest.feature):
        if f != -1:
            continue
        b = forest.tree[g]
        seg = rows.perm[b, rows.start[g] : rows.stop[g]]
        _same(seg, np.flatnonzero((node[b] == g) & (weight[b] != 0)))
        covered[b, seg] += 1
    assert np.array_equal(covered, (weight != 0).astype(int))
    every_row = np.broadcast_to(np.arange(node.shape[1]), node.shape)
    assert np.array_equal(np.sort(rows.perm, axis=1), every_row)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("classification", [True, False])
@pytest.mark.parametrize("non_integer", [False, True])
def test_rows_kernels_are_bit_identical(
    seed: int, classification: bool, non_integer: bool
) -> None:
    d = _data(seed, non_integer)
    rng = np.random.default_rng([seed, 1])
    forest = Forest()
    node = np.repeat(np.arange(N_TREES)[:, None], d["X"].shape[0], axis=1)
    rows = ClientRows.build(d["weight"])
    for _ in range(5):
        _check_segments(rows, node, d["weight"], forest)
        _check_level(d, rows, forest, node, rng, classification)
        forest.grow(rng, d["X"])
        table = forest.table()
        feature, _, left, right, _, _ = table
        route(node, d["weight"], d["X"], CODE, *table, IS_CAT)
        pending = rows.pending(feature != SPLIT_NONE, left, right)
        rows.split(d["X"], IS_CAT, CODE, pending, *table)
    assert forest.client_split or seed != 0


def test_split_catches_up_over_several_levels() -> None:
    """One call with every pending split equals one call per level."""
    d = _data(7, non_integer=True)
    rng = np.random.default_rng(7)
    forest = Forest()
    node = np.repeat(np.arange(N_TREES)[:, None], d["X"].shape[0], axis=1)
    stepwise = ClientRows.build(d["weight"])
    for _ in range(4):
        forest.grow(rng, d["X"])
        table = forest.table()
        feature, _, left, right, _, _ = table
        pending = stepwise.pending(feature != SPLIT_NONE, left, right)
        stepwise.split(d["X"], IS_CAT, CODE, pending, *table)
    at_once = ClientRows.build(d["weight"])
    pending = at_once.pending(feature != SPLIT_NONE, left, right)
    at_once.split(d["X"], IS_CAT, CODE, pending, *table)
    route(node, d["weight"], d["X"], CODE, *table, IS_CAT)
    for rows in (stepwise, at_once):
        _check_segments(rows, node, d["weight"], forest)
    with pytest.raises(ValidationError, match="do not extend"):
        at_once.split(d["X"], IS_CAT, CODE, np.array([0]), *table)


def test_no_categorical_pair_reads_no_row() -> None:
    rows = ClientRows.build(np.ones((1, 3)))
    rows.perm[:] = -(10**9)  # would crash or fail if any row were read
    out = rows.category_statistics(
        np.array([0]), np.zeros((3, 2)), np.array([[0, -1]]), np.array([False, True]),
        np.ones((1, 3)), np.zeros(3, np.int64), np.zeros(3), True, 4, 2,
    )  # fmt: skip
    _same(out, np.zeros((1, 2, 4, 2)))
