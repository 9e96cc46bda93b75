"""The fitted boosted model: fedtrees Trees of leaf weights, and raw predictions.

Each grown tree becomes a regression :class:`~fedtrees.tree.Tree` whose leaves
hold their weight (``−η·G/(H+λ)``), whose counts are the pooled training
weights, and whose numeric thresholds are the grid's edges (codes ``<= b`` go
left exactly when values ``<=`` bin b's closing edge do); missing values
follow the learned direction; a categorical set lists the grid's codes (the
missing category is the tree's code ``K``). The raw prediction of a row is the
starting margin plus the sum of its leaves' weights over the iterations.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from fedtrees._typing import FloatArray
from fedtrees.algorithms.fedgbdt._decisions import KIND_CATEGORICAL
from fedtrees.algorithms.fedgbdt._grow import SPLIT, Iteration
from fedtrees.algorithms.histogram import MISSING, Grid
from fedtrees.tree import Missing, NodeStats, Tree, TreeBuilder

__all__ = ["raw_predictions", "staged_raw", "to_trees"]


def to_trees(
    iterations: Sequence[Iteration], grid: Grid, meta: dict[str, Any]
) -> list[list[Tree]]:
    """One Tree per output per iteration, in value space (module docstring)."""
    return [[_tree(it, k, grid, meta) for k in range(it.n_trees)] for it in iterations]


def _tree(it: Iteration, root: int, grid: Grid, meta: dict[str, Any]) -> Tree:
    builder = TreeBuilder(
        n_features=meta["n_features"], feature_names=meta["feature_names"],
        categories=meta["categories"],
    )  # fmt: skip

    def stats(g: int) -> NodeStats:
        return NodeStats.from_mean(float(it.value[g]), float(it.stats[g, 2]))

    todo = [(root, builder.add_root(stats(root)))]
    while todo:
        g, at = todo.pop()
        if it.status[g] != SPLIT:
            continue
        left, right = int(it.left[g]), int(it.right[g])
        f = int(it.feature[g])
        if it.kind[g] == KIND_CATEGORICAL:
            k = int(grid.n_bins[f])
            codes = it.sets[g]
            tree_codes = sorted({k if c == MISSING else int(c) for c in codes})
            ids = builder.split_categorical(
                at, f, [(tree_codes, stats(left))], stats(right)
            )
            a, b = ids[0], ids[1]
        else:
            threshold = float(grid.threshold(np.array([f]), np.array([it.bin[g]]))[0])
            a, b = builder.split_numeric(
                at, f, threshold, stats(left), stats(right),
                missing=Missing.LEFT if it.missing_left[g] else Missing.RIGHT,
            )  # fmt: skip
        todo += [(left, a), (right, b)]
    return builder.build()


def raw_predictions(
    trees: Sequence[Sequence[Tree]], margin: FloatArray, X: FloatArray
) -> FloatArray:
    """Return the margin plus every iteration's leaf weights, (n, outputs)."""
    out = np.repeat(np.asarray(margin, np.float64)[None, :], X.shape[0], axis=0)
    for staged in staged_raw(trees, margin, X):
        out = staged
    return out


def staged_raw(
    trees: Sequence[Sequence[Tree]], margin: FloatArray, X: FloatArray
) -> Iterator[FloatArray]:
    """Yield the raw predictions after each iteration."""
    out = np.repeat(np.asarray(margin, np.float64)[None, :], X.shape[0], axis=0)
    for per_output in trees:
        for k, tree in enumerate(per_output):
            out[:, k] += tree.predict_value(X)[:, 0]
        yield out.copy()
