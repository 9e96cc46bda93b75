"""Federated forest of ε-DP client trees (docs/dpforest.md; paper 001).

One round: each client grows an ε-DP random-threshold tree
(:func:`fedtrees.learners.fit_dp_tree`) and sends it; the forest votes.
"""

from fedtrees.algorithms._ranges import resolve_ranges
from fedtrees.algorithms.dpforest import _handlers  # registers the client handler
from fedtrees.algorithms.dpforest._estimator import DPForestClassifier
from fedtrees.algorithms.dpforest._memorization import (
    memorization_matrix,
    memorization_rate,
)
from fedtrees.algorithms.dpforest._payloads import DPTreeReply, DPTreeRequest
from fedtrees.algorithms.dpforest._strategy import DPTreeStrategy

__all__ = [
    "DPForestClassifier",
    "DPTreeReply",
    "DPTreeRequest",
    "DPTreeStrategy",
    "memorization_matrix",
    "memorization_rate",
    "resolve_ranges",
]

del _handlers
