"""Local, single-silo learners that the federated algorithms reuse.

They import only ``tree``, ``stats`` and ``privacy`` (DESIGN.md, "Layers"), and
return fedtrees :class:`~fedtrees.tree.Tree` objects.
"""

from fedtrees.learners._forest import FOREST_PARAMS, fit_local_forest

__all__ = ["FOREST_PARAMS", "fit_local_forest"]
