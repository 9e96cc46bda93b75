"""Local, single-silo learners that the federated algorithms reuse.

They import only ``tree``, ``stats`` and ``privacy`` (DESIGN.md, "Layers"), and
return fedtrees :class:`~fedtrees.tree.Tree` objects.
"""

from fedtrees.learners._dp_tree import (
    BUDGETS,
    SCORES,
    DPTree,
    fit_dp_tree,
    gini_of_counts,
    planned_queries,
    query_epsilon,
    random_thresholds,
    split_scores,
)
from fedtrees.learners._forest import FOREST_PARAMS, fit_local_forest

__all__ = [
    "BUDGETS",
    "FOREST_PARAMS",
    "SCORES",
    "DPTree",
    "fit_dp_tree",
    "fit_local_forest",
    "gini_of_counts",
    "planned_queries",
    "query_epsilon",
    "random_thresholds",
    "split_scores",
]
