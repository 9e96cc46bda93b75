"""ICDTA4FL's client handlers: fit, evaluate and global (docs/icdta.md).

The messages and the protocol are in :mod:`._payloads`.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from fedtrees._random import client_key, keyed_rng
from fedtrees._typing import IntArray
from fedtrees.algorithms._metrics import client_scores
from fedtrees.algorithms.icdta._payloads import (
    EvaluateRequest,
    FitRequest,
    GlobalReply,
    GlobalRequest,
    ScoresReply,
    TreeReply,
)
from fedtrees.federation import ClientData, handler
from fedtrees.learners import fit_id3
from fedtrees.tree import pack_trees

__all__ = ["fit_tree", "score_global", "score_labels", "score_trees"]

CART_STREAM: Final = 7


@handler("icdta.fit")
def fit_tree(request: FitRequest, data: ClientData) -> TreeReply:
    """Client: train the local ID3 or CART tree on the local rows."""
    X, y = request.codes(data), request.labels(data)
    n_classes = int(request.classes.shape[0])
    if request.base == "id3":
        tree = fit_id3(
            X, y, n_classes, arity=request.arity, max_depth=request.max_depth
        )
    else:
        from fedtrees.learners import fit_cart  # scikit-learn: only a CART needs it

        key = client_key(data.client_id)
        seed = int(keyed_rng(request.seed, CART_STREAM, key).integers(2**31 - 1))
        tree = fit_cart(
            X, y, n_classes=n_classes, max_depth=request.max_depth, seed=seed
        )
    return TreeReply(**pack_trees([tree]))


@handler("icdta.evaluate")
def score_trees(request: EvaluateRequest, data: ClientData) -> ScoresReply:
    """Client: score every other client's tree on the local rows."""
    if str(request.owners[request.recipient]) != data.client_id:
        raise ValueError("the request names another client as its recipient")
    X, y = request.codes(data), request.labels(data)
    scores = np.full(request.owners.shape[0], np.nan)
    for i, tree in enumerate(request.trees(request)):
        if i != request.recipient:
            scores[i] = score_labels(y, tree.predict(X), request.metric)
    return ScoresReply(scores=scores)


@handler("icdta.global")
def score_global(request: GlobalRequest, data: ClientData) -> GlobalReply:
    """Client: keep the global tree and rules; score the tree on the local rows."""
    (tree,) = request.trees(request)
    X, y = request.codes(data), request.labels(data)
    return GlobalReply(score=score_labels(y, tree.predict(X), request.metric))


def score_labels(y: IntArray, predicted: IntArray, metric: str) -> float:
    """Accuracy, or macro-F1 over the classes present in ``y`` or the predictions.

    One client's :func:`fedtrees.algorithms._metrics.client_scores`.

    Examples
    --------
    >>> score_labels(np.array([0, 1, 1]), np.array([0, 1, 0]), "accuracy")
    0.6666666666666666
    >>> round(score_labels(np.array([0, 1, 1]), np.array([0, 1, 0]), "f1_macro"), 4)
    0.6667
    """
    accuracy, f1 = client_scores(y, predicted, np.zeros(y.shape[0], dtype=np.int64))
    return float(accuracy[0] if metric == "accuracy" else f1[0])
