"""Per-level client time of FedForest's kernels: routing (old) vs ClientRows (new).

    python benchmarks/bench_fedforest_rows.py [--rows 10000] [--depth 12]

One client with 10,000 rows x 20 numeric features, 50 bootstrapped trees grown
level by level to depth 12 with random splits (threshold = a random row of the
node; a node closes when it has < 2 rows or at random, 10 %). A level is what a
client does for one sketch and one evaluate request: old = route + node
statistics + sketch + category statistics, then route + bins + node statistics;
new = split + the same kernels over segments. Outputs are checked equal.

Times are the process's CPU time (best of ``--repeat`` per kernel; routing and
splitting run once), so other load on a shared machine does not count; run with
``NUMBA_NUM_THREADS=1`` for single-thread work, ``--wall`` for wall time.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _table import print_frame

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's tests/
from tests.algorithms import fedforest_reference as old

from fedtrees.algorithms.fedforest import _kernels
from fedtrees.algorithms.fedforest._rows import (
    ClientRows,
    padded_bins,
    ragged_thresholds,
)

N_FEATURES, N_TREES, FP, Q, CLASSES = 20, 50, 4, 32, 2


REPEAT = 3
CLOCK = time.process_time  # CPU time: robust on a shared machine


def timed(
    clock: dict[str, float], name: str, fn: Callable[[], Any], repeat: int = 0
) -> Any:
    """Add fn's best wall time of ``repeat or REPEAT`` runs to ``clock[name]``."""
    best = np.inf
    for _ in range(repeat or REPEAT):
        start = CLOCK()
        out = fn()
        best = min(best, CLOCK() - start)
    clock[name] = clock.get(name, 0.0) + best
    return out


class Forest:
    """Global node table grown with random splits; kept as growing arrays."""

    def __init__(self) -> None:
        self.feature = np.full(N_TREES, -1, dtype=np.int64)
        self.threshold = np.zeros(N_TREES)
        self.left = np.full(N_TREES, -1, dtype=np.int64)
        self.right = np.full(N_TREES, -1, dtype=np.int64)
        self.tree = np.arange(N_TREES, dtype=np.int64)
        self.open = np.arange(N_TREES, dtype=np.int64)

    def table(self) -> tuple[Any, ...]:
        n = self.feature.shape[0]
        ptr = np.zeros(n + 1, dtype=np.int64)
        return (self.feature, self.threshold, self.left, self.right, ptr, ptr[:0])

    def grow(self, rng: np.random.Generator, X: Any, rows: ClientRows) -> None:
        size = rows.stop[self.open] - rows.start[self.open]
        chosen = (size >= 2) & (rng.random(self.open.shape[0]) >= 0.1)
        split, tree = self.open[chosen], self.tree[self.open[chosen]]
        pick = rows.start[split] + rng.integers(0, size[chosen])
        feature = rng.integers(0, N_FEATURES, split.shape[0])
        self.feature[split] = feature
        self.threshold[split] = X[rows.perm[tree, pick], feature]
        n = self.feature.shape[0]
        children = n + np.arange(2 * split.shape[0])
        self.left[split], self.right[split] = children[0::2], children[1::2]
        self.feature = np.concatenate([self.feature, np.full(children.size, -1)])
        self.threshold = np.concatenate([self.threshold, np.zeros(children.size)])
        self.left = np.concatenate([self.left, np.full(children.size, -1)])
        self.right = np.concatenate([self.right, np.full(children.size, -1)])
        self.tree = np.concatenate([self.tree, np.repeat(tree, 2)])
        self.open = children


def level(
    d: dict[str, Any], forest: Forest, node: Any, rows: ClientRows, rng: Any
) -> tuple[dict[str, float], dict[str, float], int]:
    """Time one level's requests both ways; return (old clock, new clock, n_open)."""
    X, w, is_cat, codes, targets = d["X"], d["w"], d["is_cat"], d["codes"], d["y"]
    table = forest.table()
    open_nodes = forest.open
    n_open = open_nodes.shape[0]
    pairs = np.stack([rng.permutation(N_FEATURES)[:FP] for _ in range(n_open)])
    open_slot = np.full(forest.feature.shape[0], -1, dtype=np.int64)
    open_slot[open_nodes] = np.arange(n_open)
    tree_of = forest.tree[open_nodes]
    ranges = np.stack(
        [
            np.searchsorted(tree_of, np.arange(N_TREES), side=s)
            for s in ("left", "right")
        ],
        axis=1,
    ).astype(np.int64)
    task = (codes, targets, True)
    o: dict[str, float] = {}
    n: dict[str, float] = {}

    def route() -> None:
        _kernels.route(node, w, X, 0, *table, is_cat)

    timed(o, "route", route, repeat=1)
    stats, counts = timed(
        o,
        "stats",
        lambda: old.node_statistics(node, w, open_slot, ranges, n_open, *task, CLASSES),
    )
    n_points = np.where(pairs >= 0, np.minimum(Q, counts)[:, None] + 1, 0)
    n_points[counts == 0] = 0
    out_ptr = np.concatenate([[0], np.cumsum(n_points.ravel())]).astype(np.int64)
    sk = (Q, out_ptr, int(out_ptr[-1]))
    points = timed(o, "sketch", lambda: old.sketch_points(
        node, w, d["order"], d["pos"], d["sval"], open_slot, ranges, pairs, is_cat,
        counts, *sk,
    ))  # fmt: skip
    cat = timed(o, "category", lambda: old.category_statistics(
        node, w, X, open_slot, ranges, pairs, is_cat, *task, n_open, 1, CLASSES
    ))  # fmt: skip
    timed(o, "route", route, repeat=1)
    padded = np.full((n_open, FP, Q + 1), np.nan)
    padded[np.arange(Q + 1)[None, None, :] < n_points[..., None]] = points
    thresholds = np.ascontiguousarray(padded[..., 1:-1])
    n_thr = (~np.isnan(thresholds)).sum(axis=-1).astype(np.int64)
    bins = timed(o, "bins", lambda: old.evaluate_bins(
        node, w, X, open_slot, ranges, pairs, is_cat, thresholds, n_thr, *task, CLASSES
    ))  # fmt: skip
    timed(
        o,
        "stats",
        lambda: old.node_statistics(node, w, open_slot, ranges, n_open, *task, CLASSES),
    )

    pending = rows.pending(table[0], table[2], table[3])
    timed(n, "route", lambda: rows.split(X, is_cat, 0, pending, *table), repeat=1)
    new_stats, new_counts = timed(
        n, "stats", lambda: rows.node_statistics(open_nodes, w, *task, CLASSES)
    )
    new_points = timed(n, "sketch", lambda: rows.sketch_points(
        open_nodes, pairs, is_cat, d["pos"], d["sval"], w, new_counts, *sk
    ))  # fmt: skip
    new_cat = timed(n, "category", lambda: rows.category_statistics(
        open_nodes, X, pairs, is_cat, w, *task, 1, CLASSES
    ))  # fmt: skip
    thr_ptr, thr = ragged_thresholds(thresholds)
    new_bins = timed(n, "bins", lambda: rows.evaluate_bins(
        open_nodes, X, pairs, is_cat, thr_ptr, thr, w, *task, CLASSES
    ))  # fmt: skip
    timed(n, "stats", lambda: rows.node_statistics(open_nodes, w, *task, CLASSES))
    new_bins = padded_bins(new_bins, thr_ptr, thresholds.shape)
    for got, want in zip(
        (new_stats, new_counts, new_points, new_cat, new_bins),
        (stats, counts, points, cat, bins),
        strict=True,
    ):
        assert np.array_equal(got, want)
    return o, n, n_open


def data(rows: int, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    X = np.ascontiguousarray(rng.normal(size=(rows, N_FEATURES)))
    X[:, :5] = np.round(X[:, :5], 1)  # some ties
    order = np.ascontiguousarray(np.argsort(X, axis=0, kind="stable").T)
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.arange(rows)[None, :], axis=1)
    draws = rng.integers(0, rows, (N_TREES, rows))
    w = np.stack([np.bincount(r, minlength=rows) for r in draws]).astype(np.float64)
    return {
        "X": X,
        "order": order.astype(np.int64),
        "pos": pos.astype(np.int64),
        "sval": np.ascontiguousarray(np.take_along_axis(X.T, order, axis=1)),
        "w": w,
        "is_cat": np.zeros(N_FEATURES, dtype=bool),
        "codes": rng.integers(0, CLASSES, rows).astype(np.int64),
        "y": np.zeros(rows),
    }


def run(n_rows: int, depth: int) -> pd.DataFrame:
    d = data(n_rows)
    rng = np.random.default_rng(1)
    forest = Forest()
    node = np.repeat(np.arange(N_TREES, dtype=np.int64)[:, None], n_rows, axis=1)
    rows = ClientRows.build(d["w"])
    records = []
    for depth_now in range(depth + 1):
        if forest.open.size == 0:
            break
        o, n, n_open = level(d, forest, node, rows, rng)
        records.append(
            {
                "level": depth_now,
                "open": n_open,
                "old ms": 1e3 * sum(o.values()),
                "new ms": 1e3 * sum(n.values()),
                **{f"old {k}": 1e3 * v for k, v in o.items()},
                **{f"new {k}": 1e3 * v for k, v in n.items()},
            }
        )
        if depth_now < depth:
            forest.grow(rng, d["X"], rows)
    frame = pd.DataFrame(records)
    total = frame.drop(columns="level").sum().to_dict()
    frame = pd.concat([frame, pd.DataFrame([{"level": "all", **total}])])
    frame["speedup"] = frame["old ms"] / frame["new ms"]
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=3, help="best of, per kernel")
    parser.add_argument("--wall", action="store_true", help="wall, not CPU, time")
    args = parser.parse_args()
    global REPEAT, CLOCK
    REPEAT = args.repeat
    CLOCK = time.perf_counter if args.wall else time.process_time
    run(2_000, 3)  # warm up (compile / load the numba caches)
    title = f"ms per level, {args.rows} rows x {N_FEATURES} features, {N_TREES} trees"
    print_frame(run(args.rows, args.depth).round(2), title, width=200)


if __name__ == "__main__":
    main()
