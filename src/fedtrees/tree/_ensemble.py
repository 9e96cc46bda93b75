"""Averaging many trees: the prediction of every forest in fedtrees."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import check_matrix
from fedtrees.exceptions import ValidationError
from fedtrees.tree._kernels import numeric_votes
from fedtrees.tree._kinds import LEAF, NodeKind
from fedtrees.tree._model import Tree
from fedtrees.tree._structure import missing_goes_left

__all__ = ["mean_value", "vote_shares"]


def mean_value(
    trees: Sequence[Tree],
    X: npt.ArrayLike,
    *,
    weights: npt.ArrayLike | None = None,
    client: object = None,
) -> FloatArray:
    """Return the (weighted) mean of the trees' leaf values, (n_samples, n_outputs).

    ``weights`` (one per tree, >= 0, not all zero) default to equal weights;
    ``client`` is passed to every tree's routing (client-indicator splits).

    Examples
    --------
    >>> from fedtrees.tree import NodeStats, TreeBuilder
    >>> def stump(mean):
    ...     b = TreeBuilder(n_features=1)
    ...     b.add_root(NodeStats.from_mean(mean, 1.0))
    ...     return b.build()
    >>> mean_value([stump(0.0), stump(3.0)], [[1.0]], weights=[2, 1]).tolist()
    [[1.0]]
    """
    if not trees:
        raise ValidationError("mean_value needs at least one tree.")
    w = np.full(len(trees), 1.0) if weights is None else np.asarray(weights, float)
    if w.shape != (len(trees),) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValidationError(
            f"mean_value: weights must be {len(trees)} finite values >= 0."
        )
    if w.sum() <= 0:
        raise ValidationError("mean_value: the tree weights sum to zero.")
    matrix = np.asarray(X, dtype=np.float64)
    total = np.zeros((matrix.shape[0], trees[0].value.shape[1]))
    for tree, weight in zip(trees, w, strict=True):
        if weight:
            total += weight * tree.predict_value(matrix, client)
    out: FloatArray = total / w.sum()
    return out


def vote_shares(trees: Sequence[Tree], X: npt.ArrayLike) -> FloatArray:
    """Return each class's share of the trees' votes, (n_samples, n_classes).

    Every tree votes for the class of its leaf (the first class on ties inside
    a leaf); the shares are the vote counts divided by the number of trees.
    X may hold NaN (missing values), routed as :meth:`Tree.predict` routes them.

    Examples
    --------
    >>> from fedtrees.tree import NodeStats, TreeBuilder
    >>> def stump(counts):
    ...     b = TreeBuilder(n_features=1, classes=np.array(["a", "b"]))
    ...     b.add_root(NodeStats.from_class_counts(counts))
    ...     return b.build()
    >>> vote_shares([stump([3, 1]), stump([0, 2]), stump([5, 4])], [[0.0]]).tolist()
    [[0.6666666666666666, 0.3333333333333333]]
    """
    if not trees:
        raise ValidationError("vote_shares needs at least one tree.")
    matrix = np.asarray(X, dtype=np.float64)
    n_classes = trees[0].value.shape[1]
    if all(_numeric_only(tree) for tree in trees):
        matrix = check_matrix(
            matrix, "X", "vote_shares", n_features=trees[0].n_features, allow_nan=True
        )
        votes = _compiled_votes(trees, matrix, n_classes)
    else:
        votes = np.zeros((matrix.shape[0], n_classes))
        rows = np.arange(matrix.shape[0])
        for tree in trees:
            votes[rows, np.argmax(tree.predict_value(matrix), axis=1)] += 1.0
    out: FloatArray = votes / len(trees)
    return out


def _numeric_only(tree: Tree) -> bool:
    """Whether every node is a numeric split or a leaf (the compiled vote's trees)."""
    kinds = tree.kind
    return bool(np.all((kinds == NodeKind.NUMERIC) | (kinds == NodeKind.LEAF)))


def _compiled_votes(trees: Sequence[Tree], X: FloatArray, n_classes: int) -> FloatArray:
    """Concatenate the trees (global node ids) and run the compiled vote."""
    if len({tree.n_features for tree in trees}) != 1:
        raise ValidationError("vote_shares: the trees route different feature counts.")
    sizes = np.asarray([tree.n_nodes for tree in trees], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])

    def joined(name: str) -> IntArray:
        parts = [
            np.where(getattr(t, name) >= 0, getattr(t, name) + o, LEAF)
            for t, o in zip(trees, offsets, strict=True)
        ]
        return np.concatenate(parts).astype(np.int64)

    votes: FloatArray = numeric_votes(
        np.ascontiguousarray(X),
        offsets,
        np.concatenate([np.maximum(t.feature, 0) for t in trees]).astype(np.int64),
        np.concatenate([t.threshold for t in trees]).astype(np.float64),
        joined("left"),
        joined("right"),
        np.concatenate([missing_goes_left(t) for t in trees]),
        np.concatenate([np.argmax(t.value, axis=1) for t in trees]).astype(np.int64),
        n_classes,
    )
    return votes
