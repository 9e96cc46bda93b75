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
