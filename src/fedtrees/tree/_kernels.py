"""A compiled vote of many numeric trees (numba).

Why compiled: the synthetic-data server (README, synthetic data) labels 365,000 rows
by the vote of 200 client trees. Routing them with the vectorised numpy
:meth:`Tree.predict_value`, tree by tree, took 10.2 s on our 2-core machine
(gathers of one row and feature per step, and one validation per tree); this
loop walks each (row, tree) pair down a few nodes, in parallel over rows.

numba does not check bounds: :func:`fedtrees.tree._ensemble.vote_shares`
builds the arrays from validated trees.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from fedtrees._compiling import boolean, f64, i64, kernel, ro

__all__ = ["numeric_votes"]


@kernel(
    (
        ro(f64, 2),
        ro(i64),
        ro(i64),
        ro(f64),
        ro(i64),
        ro(i64),
        ro(boolean),
        ro(i64),
        i64,
    ),
    parallel=True,
)
def numeric_votes(
    X: np.ndarray,
    roots: np.ndarray,
    feature: np.ndarray,
    threshold: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    missing_left: np.ndarray,
    leaf_class: np.ndarray,
    n_classes: int,
) -> np.ndarray:  # pragma: no cover - compiled
    """Votes (n_rows, n_classes) of trees whose nodes are numeric splits or leaves.

    Node ids are global over the concatenated trees; ``left[node] < 0`` marks a
    leaf, which votes for ``leaf_class[node]``. A NaN value goes left where
    ``missing_left[node]`` (the tree's ``missing`` direction, already resolved).
    """
    n = X.shape[0]
    votes = np.zeros((n, n_classes))
    for i in nb.prange(n):
        for t in range(roots.shape[0]):
            node = roots[t]
            while left[node] >= 0:
                x = X[i, feature[node]]
                go_left = missing_left[node] if np.isnan(x) else x <= threshold[node]
                node = left[node] if go_left else right[node]
            votes[i, leaf_class[node]] += 1.0
    return votes
