"""ICDTA4FL: one global tree aggregated from client trees' rules (docs/icdta.md).

One round of local trees, one round of cross-scores, the server's rule
aggregation and global tree, one round handing the tree and rules back
(:class:`ICDTAClassifier`; the protocol in :mod:`._payloads`).

Importing the package registers its client handlers; every other name loads
on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from fedtrees._lazy import lazy_names
from fedtrees.algorithms.icdta import _handlers  # registers the client handlers

__all__ = [
    "ICDTAClassifier",
    "ICDTAStrategy",
    "RuleSet",
    "TreeFilter",
    "aggregate",
    "build_global_tree",
    "compatible",
    "merge_rules",
    "score_labels",
    "tree_scores",
]

_HOMES: Final[dict[str, str]] = {
    "ICDTAClassifier": "fedtrees.algorithms.icdta._estimator",
    "ICDTAStrategy": "fedtrees.algorithms.icdta._strategy",
    "RuleSet": "fedtrees.algorithms.icdta._rules",
    "TreeFilter": "fedtrees.algorithms.icdta._filter",
    "aggregate": "fedtrees.algorithms.icdta._rules",
    "build_global_tree": "fedtrees.algorithms.icdta._global",
    "compatible": "fedtrees.algorithms.icdta._rules",
    "merge_rules": "fedtrees.algorithms.icdta._rules",
    "score_labels": "fedtrees.algorithms.icdta._handlers",
    "tree_scores": "fedtrees.algorithms.icdta._filter",
}
"""Every public name and the module that defines it."""

if TYPE_CHECKING:
    from fedtrees.algorithms.icdta._estimator import ICDTAClassifier
    from fedtrees.algorithms.icdta._filter import TreeFilter, tree_scores
    from fedtrees.algorithms.icdta._global import build_global_tree
    from fedtrees.algorithms.icdta._handlers import score_labels
    from fedtrees.algorithms.icdta._rules import (
        RuleSet,
        aggregate,
        compatible,
        merge_rules,
    )
    from fedtrees.algorithms.icdta._strategy import ICDTAStrategy

del _handlers

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
