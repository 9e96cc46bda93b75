"""Replies that carry packed trees: one home for their field checks and rebuild."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fedtrees.exceptions import ValidationError
from fedtrees.federation import Field, InvalidField, Payload
from fedtrees.tree import PACKED_FIELDS, NodeKind, Tree, unpack_trees

__all__ = [
    "PackedTrees",
    "check_numeric_tree",
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


def packed_fields(n_trees: int, n_outputs: int) -> dict[str, Field]:
    """Field checks of :func:`fedtrees.tree.pack_trees` arrays of ``n_trees`` trees."""
    fields = dict.fromkeys(PACKED_FIELDS, Field.array("iu", (None,)))
    fields["node_ptr"] = Field.array("iu", (n_trees + 1,))
    fields["threshold"] = Field.array("f", (None,), finite=False)
    fields["impurity"] = Field.array("f", (None,), finite=False)
    fields["count"] = Field.array("f", (None,), nonnegative=True)
    fields["value"] = Field.array("f", (None, n_outputs))
    return fields


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
