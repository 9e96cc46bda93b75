"""Local, single-silo learners that the federated algorithms reuse.

They import only ``tree``, ``stats`` and ``privacy`` (docs/design.md, "Layers"), and
return fedtrees :class:`~fedtrees.tree.Tree` objects.
"""

from fedtrees.learners._dp_tree import (
    BUDGETS,
    MAX_DEPTH,
    SCORES,
    DPTree,
    fit_dp_tree,
    gini_of_counts,
    planned_queries,
    query_epsilon,
    random_thresholds,
    split_scores,
    validate_plan,
)
from fedtrees.learners._forest import (
    FOREST_PARAMS,
    fit_cart,
    fit_local_forest,
    float32_scaled,
    float32_unscaled,
)
from fedtrees.learners._id3 import default_max_depth, fit_id3
from fedtrees.learners._id3_counts import Layout, value_class_counts
from fedtrees.learners._id3_growth import (
    TIE_TOLERANCE,
    Id3Growth,
    check_significance,
    split_p_value,
)

__all__ = [
    "BUDGETS",
    "FOREST_PARAMS",
    "MAX_DEPTH",
    "SCORES",
    "TIE_TOLERANCE",
    "DPTree",
    "Id3Growth",
    "Layout",
    "check_significance",
    "default_max_depth",
    "fit_cart",
    "fit_dp_tree",
    "fit_id3",
    "fit_local_forest",
    "float32_scaled",
    "float32_unscaled",
    "gini_of_counts",
    "planned_queries",
    "query_epsilon",
    "random_thresholds",
    "split_p_value",
    "split_scores",
    "validate_plan",
    "value_class_counts",
]
