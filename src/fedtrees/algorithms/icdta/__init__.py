"""ICDTA4FL: one global tree aggregated from client trees' rules (docs/icdta.md).

One round of local trees, one round of cross-scores, the server's rule
aggregation and global tree, one round handing the tree and rules back
(:class:`ICDTAClassifier`; the protocol in :mod:`._payloads`).
"""

from fedtrees.algorithms.icdta import _handlers  # registers the client handlers
from fedtrees.algorithms.icdta._estimator import ICDTAClassifier
from fedtrees.algorithms.icdta._filter import TreeFilter, tree_scores
from fedtrees.algorithms.icdta._global import build_global_tree
from fedtrees.algorithms.icdta._handlers import score_labels
from fedtrees.algorithms.icdta._rules import RuleSet, aggregate, compatible, merge_rules
from fedtrees.algorithms.icdta._strategy import ICDTAStrategy

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

del _handlers
