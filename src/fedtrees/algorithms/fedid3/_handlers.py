"""The Federated-ID3 client handler: counts the local rows of a level.

Registered with :func:`fedtrees.federation.handler` on import (messages and
the privacy accounting: :mod:`._payloads`).
"""

from __future__ import annotations

import math

import numpy as np

from fedtrees._typing import FloatArray
from fedtrees._validation import check_epsilon
from fedtrees.algorithms._requests import request_error
from fedtrees.algorithms.fedid3._payloads import LevelReply, LevelRequest
from fedtrees.federation import (
    ClientData,
    handler,
)
from fedtrees.learners import value_class_counts
from fedtrees.privacy import Laplace, PrivacyAccountant

__all__ = ["count_level"]


@handler("fedid3.level")
def count_level(request: LevelRequest, data: ClientData) -> LevelReply:
    """Client: count the local rows per (open node, feature, value, class).

    The binning (which sizes every count table) is checked against this
    client's columns, and the open nodes against the structure, before any
    table is allocated.
    """
    codes = request.codes(data)
    tree = request.structure()
    _check_open(request, tree.n_nodes, codes.shape[1])
    layout = request.layout
    slot = layout.slots(tree.apply(codes), tree.n_nodes)
    labels = data.label_codes(request.classes)
    counts = value_class_counts(codes.astype(np.int64), labels, slot, layout)
    if request.exact:  # a noise-free release: no finite site budget allows it
        data.charge_privacy(
            math.inf, f"{request.kind}: level {request.level}, exact counts"
        )
        return LevelReply(counts=counts, epsilon_spent=math.inf)
    return _noisy(request, data, counts)


def _check_open(request: LevelRequest, n_nodes: int, n_features: int) -> None:
    """Open nodes of the structure, one row of ``allowed`` flags (F) each."""
    kind, nodes = request.kind, request.open_nodes
    if (
        nodes.ndim != 1
        or nodes.dtype.kind not in "iu"
        or np.any(nodes < 0)
        or np.any(nodes >= n_nodes)
    ):
        raise request_error(
            kind, "open_nodes", f"node ids of the structure, in [0, {n_nodes})", nodes
        )
    shape = (nodes.shape[0], n_features)
    if request.allowed.shape != shape or request.allowed.dtype.kind != "b":
        raise request_error(
            kind, "allowed", f"flags of shape {shape}", request.allowed.shape
        )


def _noisy(request: LevelRequest, data: ClientData, counts: FloatArray) -> LevelReply:
    """Release the level's tables through the client's accountant (:mod:`._payloads`).

    The level's share ε/d is charged to the site's budget first (if declared):
    each level is a new release; the replayed earlier levels were charged when
    they were answered. The noise is the site's own
    (:meth:`ClientData.noise_rng`), never keyed by the request's seed or level
    alone: the server knows those.
    """
    check_epsilon(request.query_epsilon, f"request {request.kind!r} (per table)")
    accountant = PrivacyAccountant(
        request.plan_epsilon, owner=f"client {data.client_id!r}", strict=True
    )  # ε, or ε·sqrt(r) under a noise reduction r (honest accounting, _payloads)
    if request.level:  # the levels answered before (the handler keeps no state)
        accountant.spend(
            request.level_epsilon, label="earlier levels", queries=request.level
        )
    accountant.check(request.query_epsilon, queries=request.tables_per_node)
    data.charge_privacy(request.level_epsilon, f"{request.kind}: level {request.level}")
    noisy = accountant.release(
        Laplace(epsilon=request.query_epsilon, sampler=data.noise.sampler),
        counts,
        data.noise_rng(request),
        label=f"level {request.level} count tables",
        queries=request.tables_per_node,
    )
    return LevelReply(counts=noisy, epsilon_spent=accountant.epsilon_spent)
