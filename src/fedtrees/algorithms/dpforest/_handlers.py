"""The DP forest client handler: grows one ε-DP tree on the local rows.

Registered with :func:`fedtrees.federation.handler` on import (messages:
:mod:`._payloads`).
"""

from __future__ import annotations

from typing import Final

from fedtrees._random import client_key, keyed_rng
from fedtrees.algorithms.dpforest._payloads import DPTreeReply, DPTreeRequest
from fedtrees.federation import (
    ClientData,
    handler,
)
from fedtrees.learners import fit_dp_tree
from fedtrees.privacy import PrivacyAccountant
from fedtrees.tree import pack_trees

__all__ = ["grow_tree"]


THRESHOLD_STREAM: Final = 5


@handler("dpforest.tree")
def grow_tree(request: DPTreeRequest, data: ClientData) -> DPTreeReply:
    """Client: grow the DP tree on the local rows, spending its own ε.

    The tree's whole ε is charged to the site's budget first (if it declared
    one), as the tree's accountant charges the whole plan. The noise and the
    sampler are the site's own (:meth:`ClientData.noise_rng`); the candidate
    thresholds come from the request's seed (**Decision**: they are drawn
    uniformly from the public ranges, independently of the rows, so knowing
    them is no part of the privacy argument — the tree shows the chosen ones
    anyway — and the server may keep them reproducible).
    """
    key = client_key(data.client_id)
    X, labels = data.finite_matrix(), data.label_codes(request.classes)
    data.charge_privacy(request.epsilon, f"{request.kind}: one DP tree")
    accountant = PrivacyAccountant(
        request.epsilon, owner=f"client {data.client_id!r}", strict=True
    )
    grown = fit_dp_tree(
        X,
        labels,
        int(request.classes.shape[0]),
        epsilon=request.epsilon,
        max_depth=request.max_depth,
        ranges=request.ranges,
        accountant=accountant,
        thresholds_rng=keyed_rng(request.seed, THRESHOLD_STREAM, key),
        noise_rng=data.noise_rng(request),
        budget=request.budget,  # type: ignore[arg-type]
        score=request.score,  # type: ignore[arg-type]
        sampler=data.noise.sampler,
    )
    return DPTreeReply(
        **pack_trees([grown.tree]),
        epsilon_spent=grown.epsilon_spent,
        n_queries=grown.n_queries,
    )
