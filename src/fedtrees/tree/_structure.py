"""Structural checks and derived arrays of :class:`fedtrees.tree.Tree`.

A tree may come from an untrusted document (``Tree.from_dict``) or a remote client,
so every invariant that routing relies on is checked here, vectorised over nodes:
children have larger indices than their parent (so routing terminates), every node
but the root has exactly one parent, and values are well formed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from fedtrees._typing import BoolArray, IntArray
from fedtrees._validation import is_integral
from fedtrees.exceptions import ValidationError
from fedtrees.tree._kinds import LEAF, Missing, NodeKind

if TYPE_CHECKING:
    from fedtrees.tree._arrays import TreeArrays

_INT_FIELDS = ("feature", "left", "right", "branch_ptr", "branch_code", "branch_child")
_FLOAT_FIELDS = ("threshold", "count", "impurity")
_SUM_TOLERANCE = 1e-9
_PER_NODE_FIELDS = (
    "feature",
    "threshold",
    "left",
    "right",
    "count",
    "impurity",
    "missing",
)


def error(message: str) -> ValidationError:
    """Return the error raised for a malformed tree."""
    return ValidationError(f"Invalid Tree: {message}.")


def coerce_arrays(tree: TreeArrays) -> dict[str, Any]:
    """Return read-only, contiguous copies of the tree's arrays (canonical dtypes)."""
    out: dict[str, Any] = {"kind": _frozen(tree.kind, np.int8, "kind")}
    for name in _INT_FIELDS:
        out[name] = _frozen(getattr(tree, name), np.int64, name)
    for name in _FLOAT_FIELDS:
        out[name] = _frozen(getattr(tree, name), np.float64, name)
    out["value"] = _frozen(tree.value, np.float64, "value")
    if tree.missing is None:  # no direction learned anywhere
        n = out["kind"].shape[0] if out["kind"].ndim == 1 else 0
        out["missing"] = _frozen(np.full(n, Missing.LARGER), np.int8, "missing")
    else:
        out["missing"] = _frozen(tree.missing, np.int8, "missing")
    if tree.classes is not None:
        out["classes"] = _frozen_labels(tree.classes)
    return out


def _frozen(array: object, dtype: type[Any], name: str) -> npt.NDArray[Any]:
    try:
        result = np.array(array, dtype=dtype, copy=True, order="C")
    except (TypeError, ValueError, OverflowError) as exc:
        raise error(f"field {name!r} is not convertible to {np.dtype(dtype)}") from exc
    result.flags.writeable = False
    return result


def _frozen_labels(classes: object) -> npt.NDArray[Any]:
    labels = np.array(classes, copy=True)
    if labels.dtype.kind == "O":
        if not all(isinstance(c, str) for c in labels.ravel()):
            raise error("classes must be numbers, booleans or strings")
        labels = labels.astype(str)
    if labels.dtype.kind not in "iufbU":
        raise error(f"classes have unsupported dtype {labels.dtype}")
    labels.flags.writeable = False
    return labels


def validate(tree: TreeArrays) -> None:
    """Raise :class:`ValidationError` naming the first broken invariant."""
    _check_lengths(tree)
    _check_kinds(tree)
    _check_branches(tree)
    _check_single_parent(tree)
    _check_values(tree)
    _check_metadata(tree)


def _check_lengths(tree: TreeArrays) -> None:
    n = tree.kind.shape[0]
    if tree.kind.ndim != 1 or n == 0:
        raise error(
            "a tree needs at least one node ('kind' must be a non-empty 1-D array)"
        )
    for name in _PER_NODE_FIELDS:
        array = getattr(tree, name)
        if array.shape != (n,):
            raise error(f"field {name!r} has shape {array.shape}, expected ({n},)")
    if tree.value.ndim != 2 or tree.value.shape[0] != n or tree.value.shape[1] == 0:
        raise error(
            f"field 'value' has shape {tree.value.shape}, expected ({n}, n_outputs)"
        )
    if tree.branch_ptr.shape != (n + 1,):
        raise error(
            f"field 'branch_ptr' has shape {tree.branch_ptr.shape}, expected ({n + 1},)"
        )
    if tree.branch_code.shape != tree.branch_child.shape or tree.branch_code.ndim != 1:
        raise error(
            "fields 'branch_code' and 'branch_child' must be 1-D of equal length"
        )
    if not is_integral(tree.n_features):
        raise error(f"n_features must be an int, got {tree.n_features!r}")
    if tree.n_features < 1:
        raise error(f"n_features must be >= 1, got {tree.n_features}")


def _check_kinds(tree: TreeArrays) -> None:
    kind, idx, n = tree.kind, np.arange(tree.kind.shape[0]), tree.kind.shape[0]
    if not np.isin(kind, [k.value for k in NodeKind]).all():
        raise error("field 'kind' holds an unknown node kind")
    leaf, num = kind == NodeKind.LEAF, kind == NodeKind.NUMERIC
    tabled = (kind == NodeKind.CATEGORICAL) | (kind == NodeKind.CLIENT)
    sizes = np.diff(tree.branch_ptr)
    _require(
        leaf, (tree.left == LEAF) & (tree.right == LEAF), "leaves must have no children"
    )
    _require(
        leaf | (kind == NodeKind.CLIENT),
        tree.feature == LEAF,
        "leaves and client nodes have feature -1",
    )
    has_feature = num | (kind == NodeKind.CATEGORICAL)
    in_range = (tree.feature >= 0) & (tree.feature < tree.n_features)
    _require(has_feature, in_range, "split features must lie in [0, n_features)")
    _require(num, np.isfinite(tree.threshold), "numeric splits need a finite threshold")
    _require(~num, np.isnan(tree.threshold), "only numeric splits carry a threshold")
    child_ok = (
        (tree.left > idx) & (tree.left < n) & (tree.right > idx) & (tree.right < n)
    )
    _require(num, child_ok, "children must have larger indices than their parent")
    _require(
        ~tabled, sizes == 0, "only categorical and client splits have branch entries"
    )
    _require(
        tabled, (tree.left == LEAF) & (sizes > 0), "categorical splits need branches"
    )
    default_ok = (tree.right == LEAF) | ((tree.right > idx) & (tree.right < n))
    _require(tabled, default_ok, "default branches must point to a later node or be -1")
    _check_missing(tree, num)


def _check_missing(tree: TreeArrays, num: BoolArray) -> None:
    directions = [m.value for m in Missing]
    if not np.isin(tree.missing, directions).all():
        raise error(
            "field 'missing' holds an unknown direction (allowed: "
            "-1 Missing.LARGER, 0 Missing.RIGHT, 1 Missing.LEFT)"
        )
    _require(
        ~num,
        tree.missing == Missing.LARGER,
        "field 'missing' may hold LEFT or RIGHT only at numeric splits; other "
        "nodes need Missing.LARGER (-1)",
    )


def _require(where: BoolArray, condition: BoolArray, message: str) -> None:
    bad = np.flatnonzero(where & ~condition)
    if bad.size:
        raise error(f"{message} (node {int(bad[0])})")


def _check_branches(tree: TreeArrays) -> None:
    ptr, n = tree.branch_ptr, tree.kind.shape[0]
    if ptr[0] != 0 or ptr[-1] != tree.branch_code.shape[0] or np.any(np.diff(ptr) < 0):
        raise error("'branch_ptr' must rise from 0 to the number of branch entries")
    owner = branch_owner(tree)
    if np.any(tree.branch_code < 0):
        raise error("branch codes must be >= 0")
    if np.any((tree.branch_child <= owner) | (tree.branch_child >= n)):
        raise error("branch children must have larger indices than their parent")
    if _repeated_pairs(owner, tree.branch_code):
        raise error("a code appears twice in one node's branch table")
    client_entries = tree.kind[owner] == NodeKind.CLIENT
    if client_entries.any():
        if tree.clients is None:
            raise error("client splits need the 'clients' list")
        if np.any(tree.branch_code[client_entries] >= len(tree.clients)):
            raise error("a client split names an unknown client code")


def _repeated_pairs(owner: IntArray, code: IntArray) -> bool:
    """Whether a (node, code) pair repeats (codes are >= 0, checked before)."""
    stride = int(code.max(initial=0)) + 1
    if stride * (int(owner.max(initial=0)) + 1) < 2**62:  # one key: a 1-D unique
        keys = owner * stride + code
        return bool(np.unique(keys).shape[0] != keys.shape[0])
    pairs = np.stack([owner, code], axis=1)  # huge codes: no overflow risk
    return bool(np.unique(pairs, axis=0).shape[0] != pairs.shape[0])


def branch_owner(tree: TreeArrays) -> IntArray:
    """Node index owning each branch entry."""
    return np.repeat(np.arange(tree.kind.shape[0]), np.diff(tree.branch_ptr))


def parent_child_pairs(tree: TreeArrays) -> tuple[IntArray, IntArray]:
    """Return the unique (parent, child) edges, sorted by parent then child."""
    idx = np.arange(tree.kind.shape[0])
    num = tree.kind == NodeKind.NUMERIC
    has_default = (tree.kind != NodeKind.NUMERIC) & (tree.right != LEAF)
    parents = np.concatenate([idx[num], idx[num], idx[has_default], branch_owner(tree)])
    children = np.concatenate(
        [tree.left[num], tree.right[num], tree.right[has_default], tree.branch_child]
    )
    n = tree.kind.shape[0]
    keys = np.unique(parents * n + children)  # sorted by parent, then child
    return keys // n, keys % n


def _check_single_parent(tree: TreeArrays) -> None:
    _, children = parent_child_pairs(tree)
    parents_of = np.bincount(children, minlength=tree.kind.shape[0])
    if parents_of[0] != 0:
        raise error("the root (node 0) cannot be a child")
    orphans = np.flatnonzero(parents_of[1:] != 1)
    if orphans.size:
        node = int(orphans[0]) + 1
        raise error(
            f"node {node} has {int(parents_of[node])} parents; exactly 1 expected"
        )


def _check_values(tree: TreeArrays) -> None:
    if not np.all(np.isfinite(tree.count)) or np.any(tree.count < 0):
        raise error("'count' must be finite and >= 0")
    if np.any(np.isinf(tree.impurity)):
        raise error("'impurity' must be finite or NaN")
    if not np.all(np.isfinite(tree.value)):
        raise error("'value' must be finite")
    if tree.classes is None:
        if tree.value.shape[1] != 1:
            raise error("a regression tree has exactly one output column")
        return
    if tree.classes.ndim != 1 or tree.classes.shape[0] != tree.value.shape[1]:
        raise error("'classes' must list one label per column of 'value'")
    if np.unique(tree.classes).shape[0] != tree.classes.shape[0]:
        raise error("'classes' must be unique")
    sums = tree.value.sum(axis=1)
    if np.any(tree.value < 0) or np.any(np.abs(sums - 1.0) > _SUM_TOLERANCE):
        raise error("class distributions in 'value' must be >= 0 and sum to 1")


def _check_metadata(tree: TreeArrays) -> None:
    f = tree.n_features
    names = tree.feature_names
    if names is not None and (
        len(names) != f or not all(isinstance(s, str) for s in names)
    ):
        raise error(f"'feature_names' must be {f} strings")
    cats = tree.categories
    if cats is not None:
        if len(cats) != f:
            raise error(f"'categories' must have one entry per feature ({f})")
        for entry in cats:
            if entry is not None and not all(isinstance(s, str) for s in entry):
                raise error("category names must be strings")
    clients = tree.clients
    if clients is not None and (
        not all(isinstance(c, str) for c in clients)
        or len(set(clients)) != len(clients)
    ):
        raise error("'clients' must be unique strings")


def node_depths(tree: TreeArrays) -> IntArray:
    """Depth of every node, computed level by level (vectorised over nodes)."""
    parents, children = parent_child_pairs(tree)
    parent_of = np.full(tree.kind.shape[0], -1, dtype=np.int64)
    parent_of[children] = parents
    depth = np.zeros(tree.kind.shape[0], dtype=np.int64)
    # Children have larger indices, so one pass in index order would do; this loop
    # runs once per level instead of once per node.
    level = np.zeros(tree.kind.shape[0], dtype=bool)
    level[0] = True
    d = 0
    while level.any():
        depth[level] = d
        level = np.isin(parent_of, np.flatnonzero(level))
        d += 1
    return depth


def missing_goes_left(tree: TreeArrays) -> BoolArray:
    """Whether a NaN row goes left at each node (False at non-numeric nodes).

    A learned direction (``LEFT`` / ``RIGHT``) is taken as is; ``LARGER`` resolves
    to the child with the larger training ``count``, ``right`` on a tie.
    """
    num = tree.kind == NodeKind.NUMERIC
    left, right = np.where(num, tree.left, 0), np.where(num, tree.right, 0)
    larger_left = num & (tree.count[left] > tree.count[right])
    learned_left: BoolArray = tree.missing == Missing.LEFT
    resolved: BoolArray = np.where(
        tree.missing == Missing.LARGER, larger_left, learned_left
    )
    return resolved


def children_csr(tree: TreeArrays) -> tuple[IntArray, IntArray]:
    """Distinct children of every node as (ptr, children), children ascending."""
    parents, children = parent_child_pairs(tree)
    ptr = np.zeros(tree.kind.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(parents, minlength=tree.kind.shape[0]), out=ptr[1:])
    return ptr, children
