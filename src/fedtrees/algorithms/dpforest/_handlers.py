"""The DP forest client handler: grows one ε-DP tree on the local rows.

Registered with :func:`fedtrees.federation.handler` on import (messages:
:mod:`._payloads`).
"""

from __future__ import annotations

import warnings
from typing import Final

import numpy as np

from fedtrees._random import client_key, keyed_rng
from fedtrees._typing import FloatArray
from fedtrees.algorithms.dpforest._payloads import DPTreeReply, DPTreeRequest
from fedtrees.exceptions import OutOfRangeWarning
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
    X = _within_ranges(data, X, request.ranges)
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


def _within_ranges(
    data: ClientData, matrix: FloatArray, ranges: np.ndarray
) -> FloatArray:
    """Clip every column into its declared range, warning here if any was outside.

    **Decision (rows outside the declared ranges):** clip, with a warning at the
    site naming it and the columns, as DP libraries do with declared bounds. The
    thresholds are drawn inside the ranges, so a row beyond one goes to the same
    side of every threshold, clipped or not: the tree is the same, and a site whose
    rows all lie outside a range learns nothing from that column — which the
    warning tells its operator instead of leaving the forest to score at the
    majority rate in silence. Refusing would tell the server that some row lies
    outside; the warning stays at the site (its console or log), and the reply is
    the one clipped rows give (clipping is a per-row map: the sensitivity, and so
    the noise, is unchanged). A malformed ``ranges`` is left to
    :func:`fedtrees.learners.fit_dp_tree`, which names it.
    """
    bounds = np.asarray(ranges, dtype=np.float64)
    if bounds.shape != (matrix.shape[1], 2):
        return matrix
    low, high = bounds[:, 0], bounds[:, 1]
    outside = np.flatnonzero(((matrix < low) | (matrix > high)).any(axis=0))
    if outside.size:
        columns = [str(data.X.columns[int(j)]) for j in outside]
        warnings.warn(
            f"Client {data.client_id!r}: columns {columns} hold values outside the "
            "declared feature_ranges; they were clipped into them for this DP tree "
            "(a row beyond a range goes to one side of every threshold, so such a "
            "column cannot split it). Declare ranges that cover the site's data. "
            "This warning stays at the site.",
            OutOfRangeWarning,
            stacklevel=2,
        )
    clipped: FloatArray = np.clip(matrix, low, high)
    return clipped
