"""The arrays of a :class:`fedtrees.tree.Tree`: what every tree module reads.

:class:`TreeArrays` holds the fields of a tree and the shape properties that
need nothing else; :class:`fedtrees.tree.Tree` (in :mod:`._model`) adds the
checks at construction, prediction, rules, rendering and persistence on top,
each delegating to its module. Those modules take a :class:`TreeArrays`, so
they import this module and never the one of ``Tree``: the tree package has
no import cycle (``tests/test_import_cycles.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, IntArray
from fedtrees.tree._kinds import NodeKind

__all__ = ["TreeArrays"]


@dataclass(frozen=True, eq=False)
class TreeArrays:
    """The flat arrays of a tree, node 0 the root (see :class:`fedtrees.tree.Tree`).

    Built only as a :class:`~fedtrees.tree.Tree`, which checks them.
    """

    kind: npt.NDArray[np.int8]
    feature: IntArray
    threshold: FloatArray
    left: IntArray
    right: IntArray
    branch_ptr: IntArray
    branch_code: IntArray
    branch_child: IntArray
    value: FloatArray
    count: FloatArray
    impurity: FloatArray
    n_features: int
    classes: npt.NDArray[Any] | None = None
    feature_names: tuple[str, ...] | None = None
    categories: tuple[tuple[str, ...] | None, ...] | None = None
    clients: tuple[str, ...] | None = None
    # The constructor takes an array-like or None (all LARGER); Tree.__post_init__
    # always stores a read-only int8 array, which is the type readers see.
    missing: npt.NDArray[np.int8] = None  # type: ignore[assignment]

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return int(self.kind.shape[0])

    @property
    def n_leaves(self) -> int:
        """Number of leaves."""
        return int(np.count_nonzero(self.kind == NodeKind.LEAF))

    @property
    def is_classifier(self) -> bool:
        """Whether leaves hold class distributions (True) or means (False)."""
        return self.classes is not None
