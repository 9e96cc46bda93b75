"""The client side of one-shot synthetic data: the ``synthetic.tree`` handler.

The message and the protocol are in :mod:`._payloads`.
"""

from __future__ import annotations

import time
from typing import Final

import numpy as np

from fedtrees._random import client_key, keyed_rng
from fedtrees.algorithms._onehot import expand_features
from fedtrees.algorithms._requests import (
    MAX_ROWS,
    check_category_counts,
    check_request_size,
    request_error,
)
from fedtrees.algorithms.synthetic._payloads import TreeReply, TreeRequest, cart_params
from fedtrees.federation import ClientData, handler
from fedtrees.learners import fit_cart
from fedtrees.tree import pack_trees

__all__ = ["grow_tree"]

CART_STREAM: Final = 9


def _check_sizes(request: TreeRequest, data: ClientData) -> None:
    """Check the fields that size the fit against this client, before allocating.

    ``n_categories`` must be this client's category counts; ``class_weights``
    one weight per class when given; the leaf sizes row counts scikit-learn
    can hold.
    """
    kind = request.kind
    check_category_counts(kind, "n_categories", request.n_categories, data)
    n_classes = int(request.classes.shape[0])
    if request.class_weight == "given" and request.class_weights.shape != (n_classes,):
        raise request_error(
            kind,
            "class_weights",
            f"one weight per class, shape ({n_classes},)",
            request.class_weights.shape,
        )
    for name, low in (("min_samples_split", 2), ("min_samples_leaf", 1)):
        check_request_size(
            kind, name, getattr(request, name), MAX_ROWS, "a row count", low=low
        )


@handler("synthetic.tree")
def grow_tree(request: TreeRequest, data: ClientData) -> TreeReply:
    """Client: fit the entropy CART on the one-hot encoded local rows."""
    start = time.perf_counter()
    _check_sizes(request, data)
    X = expand_features(data.finite_matrix(), request.n_categories)
    y = data.label_codes(request.classes)
    key = client_key(data.client_id)
    tree = fit_cart(
        X,
        y,
        n_classes=int(request.classes.shape[0]),
        max_depth=request.max_depth,
        seed=int(keyed_rng(request.seed, CART_STREAM, key).integers(2**31 - 1)),
        **cart_params(request, np.unique(y)),
    )
    return TreeReply(**pack_trees([tree]), fit_seconds=time.perf_counter() - start)
