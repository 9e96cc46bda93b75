"""Federated forest of ε-DP client trees (docs/dpforest.md; paper 001).

One round: each client grows an ε-DP random-threshold tree
(:func:`fedtrees.learners.fit_dp_tree`) and sends it; the forest votes.

Importing the package registers its client handlers; every other name loads
on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from fedtrees._lazy import lazy_names
from fedtrees.algorithms.dpforest import _handlers  # registers the client handlers

__all__ = [
    "DPForestClassifier",
    "DPTreeReply",
    "DPTreeRequest",
    "DPTreeStrategy",
    "memorization_matrix",
    "memorization_rate",
    "resolve_ranges",
]

_HOMES: Final[dict[str, str]] = {
    "DPForestClassifier": "fedtrees.algorithms.dpforest._estimator",
    "DPTreeReply": "fedtrees.algorithms.dpforest._payloads",
    "DPTreeRequest": "fedtrees.algorithms.dpforest._payloads",
    "DPTreeStrategy": "fedtrees.algorithms.dpforest._strategy",
    "memorization_matrix": "fedtrees.algorithms.dpforest._memorization",
    "memorization_rate": "fedtrees.algorithms.dpforest._memorization",
    "resolve_ranges": "fedtrees.algorithms._ranges",
}
"""Every public name and the module that defines it."""

if TYPE_CHECKING:
    from fedtrees.algorithms._ranges import resolve_ranges
    from fedtrees.algorithms.dpforest._estimator import DPForestClassifier
    from fedtrees.algorithms.dpforest._memorization import (
        memorization_matrix,
        memorization_rate,
    )
    from fedtrees.algorithms.dpforest._payloads import DPTreeReply, DPTreeRequest
    from fedtrees.algorithms.dpforest._strategy import DPTreeStrategy

del _handlers

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
