"""Replies that carry packed trees: one home for their field checks and rebuild.

Node counts of exact trees (local forests, ICDTA's and the synthetic method's
CART/ID3 trees) are checked against the client's declared bounds, and a node's
children never hold more than the node. DP trees carry noisy (clipped Laplace)
counts: neither bound holds for them, so only their structure, depth, ranges
and spent ε are checkable. None of this is a Byzantine defence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fedtrees.exceptions import ValidationError
from fedtrees.federation import Field, InvalidField, Payload, check_at_most
from fedtrees.tree import PACKED_FIELDS, NodeKind, Tree, unpack_trees

__all__ = [
    "PackedTrees",
    "check_numeric_tree",
    "check_tree_counts",
    "class_codes",
    "packed_fields",
    "rebuild_packed",
]


@dataclass(frozen=True, eq=False)
class PackedTrees(Payload):
    """Fields of a reply carrying :func:`fedtrees.tree.pack_trees` arrays."""

    node_ptr: np.ndarray
    node_kind: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    count: np.ndarray
    impurity: np.ndarray
    branch_ptr: np.ndarray
    branch_code: np.ndarray
    branch_child: np.ndarray


def packed_fields(
    n_trees: int,
    n_outputs: int,
    *,
    rows: bool = False,
    weights: bool = False,
    bound_scale: float = 1.0,
) -> dict[str, Field]:
    """Field checks of :func:`fedtrees.tree.pack_trees` arrays of ``n_trees`` trees.

    ``rows``/``weights``/``bound_scale``: node counts within the client's declared
    bounds (see :class:`fedtrees.federation.Field`); leave them off for noisy
    counts.
    """
    fields = dict.fromkeys(PACKED_FIELDS, Field.array("iu", (None,)))
    fields["node_ptr"] = Field.array("iu", (n_trees + 1,))
    fields["threshold"] = Field.array("f", (None,), finite=False)
    fields["impurity"] = Field.array("f", (None,), finite=False)
    fields["count"] = Field.array(
        "f",
        (None,),
        nonnegative=True,
        rows=rows,
        weights=weights,
        bound_scale=bound_scale,
    )
    fields["value"] = Field.array("f", (None, n_outputs))
    return fields


def check_tree_counts(tree: Tree) -> None:
    """Refuse a tree whose children hold more than their node (exact counts only).

    Every row of a node reaches at most one child, so the children's counts add
    up to at most the node's (up to float rounding of weighted counts).
    """
    owner = np.repeat(np.arange(tree.n_nodes), np.diff(tree.branch_ptr))
    parent = np.concatenate([np.arange(tree.n_nodes), np.arange(tree.n_nodes), owner])
    child = np.concatenate([tree.left, tree.right, tree.branch_child])
    keep = child >= 0
    below = np.zeros(tree.n_nodes)
    np.add.at(below, parent[keep], tree.count[child[keep]])
    check_at_most("count", below, tree.count, "the children's counts of a node")


def rebuild_packed(reply: object, **meta: Any) -> list[Tree]:
    """Rebuild the trees of a reply holding the packed fields; InvalidField if bad."""
    arrays = {name: getattr(reply, name) for name in PACKED_FIELDS}
    try:
        return unpack_trees(arrays, **meta)
    except ValidationError as exc:
        raise InvalidField("trees", str(exc)) from exc


def class_codes(classes: np.ndarray) -> np.ndarray | None:
    """Classes as codes 0..C-1 for rebuilding (None for regression)."""
    return np.arange(classes.shape[0]) if classes.size else None


def check_numeric_tree(tree: Tree, max_depth: int, name: str) -> None:
    """Refuse a received tree with other than numeric splits, or too deep."""
    split = tree.kind != NodeKind.LEAF
    if np.any(split & (tree.kind != NodeKind.NUMERIC)):
        raise InvalidField("trees", f"a {name} has numeric splits only")
    if tree.max_depth > max_depth:
        raise InvalidField("trees", f"deeper than max_depth={max_depth}")
