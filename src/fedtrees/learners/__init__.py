"""Local, single-silo learners that the federated algorithms reuse.

They import only ``tree``, ``stats`` and ``privacy`` (docs/design.md, "Layers"), and
return fedtrees :class:`~fedtrees.tree.Tree` objects. The names load on first
use (PEP 562): only the CART adapter and the local forest import scikit-learn,
so a client that grows ID3 or ε-DP trees does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from fedtrees._lazy import lazy_names

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

_HOMES: Final[dict[str, str]] = {
    "BUDGETS": "fedtrees.learners._dp_tree",
    "DPTree": "fedtrees.learners._dp_tree",
    "FOREST_PARAMS": "fedtrees.learners._forest",
    "Id3Growth": "fedtrees.learners._id3_growth",
    "Layout": "fedtrees.learners._id3_counts",
    "MAX_DEPTH": "fedtrees.learners._dp_tree",
    "SCORES": "fedtrees.learners._dp_tree",
    "TIE_TOLERANCE": "fedtrees.learners._id3_growth",
    "check_significance": "fedtrees.learners._id3_growth",
    "default_max_depth": "fedtrees.learners._id3",
    "fit_cart": "fedtrees.learners._forest",
    "fit_dp_tree": "fedtrees.learners._dp_tree",
    "fit_id3": "fedtrees.learners._id3",
    "fit_local_forest": "fedtrees.learners._forest",
    "float32_scaled": "fedtrees.learners._forest",
    "float32_unscaled": "fedtrees.learners._forest",
    "gini_of_counts": "fedtrees.learners._dp_tree",
    "planned_queries": "fedtrees.learners._dp_tree",
    "query_epsilon": "fedtrees.learners._dp_tree",
    "random_thresholds": "fedtrees.learners._dp_tree",
    "split_p_value": "fedtrees.learners._id3_growth",
    "split_scores": "fedtrees.learners._dp_tree",
    "validate_plan": "fedtrees.learners._dp_tree",
    "value_class_counts": "fedtrees.learners._id3_counts",
}
"""Every public name and the module that defines it."""

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
