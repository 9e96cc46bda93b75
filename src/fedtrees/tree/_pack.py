"""Many trees as one set of flat arrays: what a message carrying trees holds.

A payload may hold only scalars and arrays, so methods that send whole trees
(local forests, DP trees, rule sources) send :func:`pack_trees`'s arrays: every
tree's node arrays concatenated, ``node_ptr`` marking where each tree starts.
Child indices and branch pointers stay local to their tree. The receiver rebuilds
the trees with :func:`unpack_trees`, which checks every invariant again (the
sender may be hostile) and names the tree that is malformed.

The packed format carries no missing-value directions: every method that sends
trees this way learns none, so :func:`pack_trees` refuses a tree with one and
:func:`unpack_trees` gives every node ``Missing.LARGER``.

Examples
--------
>>> from sklearn.tree import DecisionTreeClassifier
>>> from fedtrees.tree import Tree
>>> tree = Tree.from_sklearn(DecisionTreeClassifier().fit([[0], [1]], [0, 1]))
>>> arrays = pack_trees([tree, tree])
>>> arrays["node_ptr"].tolist()
[0, 3, 6]
>>> unpack_trees(arrays, n_features=1, classes=tree.classes)[1] == tree
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from fedtrees.exceptions import ValidationError
from fedtrees.tree._kinds import Missing
from fedtrees.tree._model import Tree

__all__ = ["PACKED_FIELDS", "pack_trees", "unpack_trees"]

_NODE_FIELDS: Final = (
    "node_kind",
    "feature",
    "threshold",
    "left",
    "right",
    "value",
    "count",
    "impurity",
)
PACKED_FIELDS: Final = (
    "node_ptr",
    *_NODE_FIELDS,
    "branch_ptr",
    "branch_code",
    "branch_child",
)
"""The arrays of a packed forest, in a fixed order."""


def pack_trees(trees: Sequence[Tree]) -> dict[str, npt.NDArray[Any]]:
    """Concatenate the arrays of ``trees`` (at least one; same number of outputs).

    ``branch_ptr`` holds each tree's own ``n_nodes + 1`` pointers (so
    ``n_nodes_total + n_trees`` entries); metadata (classes, names) is not packed:
    both sides know it from the agreed schema.

    Raises
    ------
    ValidationError
        If ``trees`` is empty, or a tree has a learned missing-value direction
        (its ``missing`` holds ``LEFT`` or ``RIGHT``), which the packed arrays
        cannot carry.
    """
    if not trees:
        raise ValidationError("pack_trees needs at least one tree.")
    for index, tree in enumerate(trees):
        learned = np.flatnonzero(tree.missing != Missing.LARGER)
        if learned.size:
            raise ValidationError(
                f"pack_trees: tree {index} has a learned missing-value direction "
                f"(field 'missing' at node {int(learned[0])}), which packed trees "
                "do not carry; only trees whose nodes are all Missing.LARGER can "
                "be packed."
            )
    sizes = np.asarray([t.n_nodes for t in trees], dtype=np.int64)
    out: dict[str, npt.NDArray[Any]] = {
        "node_ptr": np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    }
    for name in _NODE_FIELDS:
        out[name] = np.concatenate([getattr(t, _attribute(name)) for t in trees])
    for name in ("branch_ptr", "branch_code", "branch_child"):
        out[name] = np.concatenate([getattr(t, name) for t in trees])
    return out


def unpack_trees(
    arrays: Mapping[str, npt.NDArray[Any]],
    *,
    n_features: int,
    classes: npt.ArrayLike | None = None,
    feature_names: tuple[str, ...] | None = None,
    categories: tuple[tuple[str, ...] | None, ...] | None = None,
    clients: tuple[str, ...] | None = None,
) -> list[Tree]:
    """Rebuild the trees packed by :func:`pack_trees`, each one validated.

    Every node of the rebuilt trees is ``Missing.LARGER`` (nothing else is packed).

    Raises
    ------
    ValidationError
        If the arrays do not describe well-formed trees; the message names the
        field or the tree (0-based) that is wrong.
    """
    ptr = np.asarray(arrays["node_ptr"])
    n_total = _check_pointers(ptr, np.asarray(arrays["node_kind"]).shape[0])
    branch_ptr = np.asarray(arrays["branch_ptr"])
    if branch_ptr.shape != (n_total + ptr.shape[0] - 1,):
        raise ValidationError(
            "Packed trees: 'branch_ptr' needs one entry per node plus one per tree."
        )
    label_array = None if classes is None else np.asarray(classes)
    trees: list[Tree] = []
    branch_start = 0
    for t in range(ptr.shape[0] - 1):
        lo, hi = int(ptr[t]), int(ptr[t + 1])
        own_ptr = branch_ptr[lo + t : hi + t + 1]
        n_branches = int(own_ptr[-1]) if own_ptr.size else 0
        try:
            trees.append(
                Tree(
                    **{_attribute(n): arrays[n][lo:hi] for n in _NODE_FIELDS},
                    branch_ptr=own_ptr,
                    branch_code=arrays["branch_code"][
                        branch_start : branch_start + n_branches
                    ],
                    branch_child=arrays["branch_child"][
                        branch_start : branch_start + n_branches
                    ],
                    n_features=n_features,
                    classes=label_array,
                    feature_names=feature_names,
                    categories=categories,
                    clients=clients,
                )
            )
        except ValidationError as exc:
            raise ValidationError(f"Packed tree {t}: {exc}") from exc
        branch_start += n_branches
    if branch_start != np.asarray(arrays["branch_code"]).shape[0]:
        raise ValidationError(
            "Packed trees: 'branch_code' holds entries no tree points to."
        )
    return trees


def _attribute(name: str) -> str:
    """Tree attribute of a packed field (``node_kind`` avoids payloads' ``kind``)."""
    return "kind" if name == "node_kind" else name


def _check_pointers(ptr: npt.NDArray[Any], n_total: int) -> int:
    if (
        ptr.ndim != 1
        or ptr.shape[0] < 2
        or ptr[0] != 0
        or ptr[-1] != n_total
        or np.any(np.diff(ptr) < 1)
    ):
        raise ValidationError(
            "Packed trees: 'node_ptr' must rise strictly from 0 to the number of "
            "nodes (every tree has at least one node)."
        )
    return n_total
