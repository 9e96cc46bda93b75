"""Averaging many trees: the prediction of every forest in fedtrees."""

from __future__ import annotations

from collections.abc import Sequence

import numpy.typing as npt

from fedtrees._typing import FloatArray
from fedtrees.exceptions import ValidationError
from fedtrees.tree._flat import FlatForest
from fedtrees.tree._model import Tree

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
    return FlatForest.of(trees).mean_value(
        X, owner="mean_value", weights=weights, client=client
    )


def vote_shares(trees: Sequence[Tree], X: npt.ArrayLike) -> FloatArray:
    """Return each class's share of the trees' votes, (n_samples, n_classes).

    Every tree votes for the class of its leaf (the first class on ties inside
    a leaf); the shares are the vote counts divided by the number of trees.
    X may hold NaN (missing values), routed as :meth:`Tree.predict` routes them.

    Examples
    --------
    >>> import numpy as np
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
    return FlatForest.of(trees, votes=True).mean_value(X, owner="vote_shares")
