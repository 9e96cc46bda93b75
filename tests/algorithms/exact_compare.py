"""Walk a fedtrees tree and a fitted scikit-learn tree side by side."""

from __future__ import annotations

from typing import Any

import numpy as np

from fedtrees.tree import NodeKind, Tree


def divergences(
    ours: Tree, sk: Any, a: int = 0, b: int = 0, path: str = ""
) -> list[tuple[str, str, int, int]]:
    """Nodes where the trees differ (same structure => empty list)."""
    our_leaf = ours.kind[a] == NodeKind.LEAF
    sk_leaf = sk.children_left[b] == -1
    if our_leaf or sk_leaf:
        return [] if our_leaf == sk_leaf else [(path or "root", "leaf/split", a, b)]
    if ours.feature[a] != sk.feature[b] or ours.threshold[a] != sk.threshold[b]:
        return [(path or "root", "split", a, b)]
    return divergences(
        ours, sk, int(ours.left[a]), int(sk.children_left[b]), path + "L"
    ) + divergences(ours, sk, int(ours.right[a]), int(sk.children_right[b]), path + "R")


def is_exact_tie(ours: Tree, sk: Any, a: int, b: int) -> bool:
    """Whether a divergence is an exact tie: a (numerically) pure node, or equal gains."""
    if ours.impurity[a] <= 1e-12 and sk.impurity[b] <= 1e-12:
        return True
    if ours.kind[a] == NodeKind.LEAF or sk.children_left[b] == -1:
        return False

    def gain(
        imp: np.ndarray, count: np.ndarray, node: int, left: int, right: int
    ) -> float:
        return float(
            imp[node]
            - (count[left] * imp[left] + count[right] * imp[right]) / count[node]
        )

    our_gain = gain(ours.impurity, ours.count, a, int(ours.left[a]), int(ours.right[a]))
    sk_gain = gain(
        sk.impurity,
        sk.weighted_n_node_samples,
        b,
        int(sk.children_left[b]),
        int(sk.children_right[b]),
    )
    return bool(np.isclose(our_gain, sk_gain, rtol=1e-9, atol=1e-12))


def partition_divergences(
    ours: Tree, sk: Any, X: np.ndarray, a: int = 0, b: int = 0, path: str = ""
) -> list[tuple[str, int, int]]:
    """Nodes where the trees split the training rows ``X`` differently.

    A histogram tree's threshold is the edge closing the last non-empty bin,
    scikit-learn's the midpoint to the next present value: both send the same
    rows left. Walks both trees, following the rows, and reports the first node
    of every branch where the rows go to different sides or only one tree
    splits (exact ties included; :func:`is_exact_tie` judges those).
    """
    rows = np.ones(X.shape[0], dtype=bool)
    return _walk(ours, sk, X, rows, a, b, path)


def _walk(
    ours: Tree, sk: Any, X: np.ndarray, rows: np.ndarray, a: int, b: int, path: str
) -> list[tuple[str, int, int]]:
    our_leaf = ours.kind[a] == NodeKind.LEAF
    sk_leaf = sk.children_left[b] == -1
    if our_leaf or sk_leaf:
        return [] if our_leaf == sk_leaf else [(path or "root", a, b)]
    mine = rows & (X[:, ours.feature[a]] <= ours.threshold[a])
    theirs = rows & (X[:, sk.feature[b]] <= sk.threshold[b])
    if not np.array_equal(mine, theirs):
        return [(path or "root", a, b)]
    return _walk(
        ours, sk, X, mine, int(ours.left[a]), int(sk.children_left[b]), path + "L"
    ) + _walk(
        ours, sk, X, rows & ~mine, int(ours.right[a]), int(sk.children_right[b]),
        path + "R",
    )  # fmt: skip
