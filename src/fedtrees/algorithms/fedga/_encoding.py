"""FedGA-Tree's structure encoding (docs/fedga.md, paper Sec. III-A, Fig. 2).

A *structure* is an int64 string of length ``2**d - 1`` (``d`` the depth): the
pre-order (depth-first, left before right) layout of the full binary tree with
``d`` levels of decision nodes. Entry ``p`` holds the feature index of the
decision node at position ``p``, or ``NIL = -1`` (a leaf, or no node at all).
Decoding keeps the connected tree from the root: the children of a nil
position are ignored ("detached subtrees are omitted", Sec. III-A). The leaves
of a decoded tree are the nil positions reached from the root and the (virtual)
children of reached positions of the last level.

Position arithmetic. In the pre-order layout of a full tree of depth ``d``, the
subtree rooted at a position of level ``l`` (root: level 0) fills the
``2**(d - l) - 1`` consecutive positions starting at it. So the children of
position ``p`` at level ``l < d - 1`` are::

    left(p)  = p + 1
    right(p) = p + 1 + (2**(d - l - 1) - 1) = p + 2**(d - l - 1)

(the right child comes after the whole left subtree); positions of the last
level ``l = d - 1`` have no children in the string.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

import numpy as np
import numpy.typing as npt

from fedtrees._typing import IntArray
from fedtrees._validation import is_integral
from fedtrees.exceptions import ValidationError
from fedtrees.tree import NodeKind, Tree

__all__ = [
    "NIL",
    "DecodedStructure",
    "child_positions",
    "decision_nodes",
    "decode",
    "edit_distance",
    "encode",
    "random_structure",
    "reachable_mask",
    "structure_depth",
    "structure_length",
]

NIL: Final = -1
"""The nil entry of a structure: no decision node at this position."""

MAX_DEPTH: Final = 24
"""Largest supported depth (a string of 16.7 million entries)."""


def structure_length(depth: int) -> int:
    """Length ``2**depth - 1`` of the strings of this depth.

    Examples
    --------
    >>> structure_length(3)
    7
    """
    _check_depth(depth)
    return (1 << depth) - 1


def structure_depth(structure: npt.ArrayLike) -> int:
    """Return the depth ``d`` of a string of length ``2**d - 1``.

    Raises
    ------
    ValidationError
        If the length is not ``2**d - 1`` for a ``d`` in ``[1, 24]``.

    Examples
    --------
    >>> structure_depth([0, -1, 1])
    2
    """
    length = int(np.asarray(structure).shape[-1])
    depth = int(math.log2(length + 1)) if length > 0 else 0
    if length < 1 or (1 << depth) - 1 != length or depth > MAX_DEPTH:
        raise ValidationError(
            "A FedGA structure must have length 2**d - 1 for a depth d in "
            f"[1, {MAX_DEPTH}]. Got length {length} instead."
        )
    return depth


@lru_cache(maxsize=32)
def child_positions(depth: int) -> tuple[IntArray, IntArray, IntArray]:
    """Left child, right child and level of every position of a depth-``d`` string.

    Returns
    -------
    left, right : int64 arrays of shape (2**depth - 1,)
        ``p + 1`` and ``p + 2**(depth - level - 1)``; ``-1`` on the last level.
    level : int64 array of shape (2**depth - 1,)
        Level of each position (the root has level 0).

    The arrays are cached per depth and read-only.

    Examples
    --------
    >>> left, right, level = child_positions(3)
    >>> left.tolist(), right.tolist(), level.tolist()
    ([1, 2, -1, -1, 5, -1, -1], [4, 3, -1, -1, 6, -1, -1], [0, 1, 2, 2, 1, 2, 2])
    """
    _check_depth(depth)
    level = _levels(depth)
    positions = np.arange(level.shape[0], dtype=np.int64)
    last = level == depth - 1
    left = np.where(last, NIL, positions + 1)
    right = np.where(last, NIL, positions + (1 << np.maximum(depth - level - 1, 0)))
    for array in (left, right, level):
        array.setflags(write=False)
    return left, right, level


def _levels(depth: int) -> IntArray:
    """Level of every pre-order position: ``L(d) = [0, L(d-1) + 1, L(d-1) + 1]``."""
    level = np.zeros(1, dtype=np.int64)
    for _ in range(depth - 1):
        level = np.concatenate([[0], level + 1, level + 1])
    return level


def reachable_mask(structure: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """Which positions are decision nodes connected to the root.

    Position ``p`` is reachable iff it is not nil and its parent is reachable
    (the root: iff it is not nil). Computed level by level, without a Python
    loop over positions.

    Examples
    --------
    >>> reachable_mask([0, -1, 2, 3, 1, 1, 1]).tolist()
    [True, False, False, False, True, True, True]
    """
    array = as_structure(structure)
    depth = structure_depth(array)
    left, right, level = child_positions(depth)
    reach = np.zeros(array.shape[0], dtype=np.bool_)
    reach[0] = array[0] != NIL
    for lvl in range(depth - 1):
        parents = np.flatnonzero((level == lvl) & reach)
        for children in (left[parents], right[parents]):
            reach[children] = array[children] != NIL
    return reach


@dataclass(frozen=True)
class DecodedStructure:
    """The connected tree of a structure: its decision nodes in pre-order.

    Node ``i`` (0 the root) is the decision node at string position
    ``position[i]``; ``left[i]``/``right[i]`` index its decision-node children,
    or are ``-1`` where that child is a leaf. Empty arrays mean the root is nil
    (the tree is a single leaf).

    Attributes
    ----------
    depth : int
        Depth of the string (number of levels of decision positions).
    position, feature, level, parent, left, right : int64 arrays of shape (n_decision,)
        String position, feature index, level (root 0), parent node (``-1``
        for the root) and child decision nodes of each decision node.
    """

    depth: int
    position: IntArray
    feature: IntArray
    level: IntArray
    parent: IntArray
    left: IntArray
    right: IntArray

    @property
    def n_decision(self) -> int:
        """Number of decision nodes."""
        return int(self.position.shape[0])


def decode(structure: npt.ArrayLike, depth: int) -> DecodedStructure:
    """Decode a structure into its connected tree (docs/fedga.md, Encoding).

    Parameters
    ----------
    structure : int array of shape (2**depth - 1,)
        Feature indices or ``-1`` (nil), in pre-order.
    depth : int
        The depth the string was built for (checked against its length).

    Raises
    ------
    ValidationError
        If the length does not match ``depth`` or an entry is below ``-1``.

    Examples
    --------
    Fig. 2 of the paper with feature 2 replaced by nil: the detached subtree
    below position 1 is omitted.

    >>> tree = decode([0, -1, 3, 1, 1, -1, 2], 3)
    >>> tree.position.tolist(), tree.feature.tolist()
    ([0, 4, 6], [0, 1, 2])
    >>> tree.left.tolist(), tree.right.tolist(), tree.parent.tolist()
    ([-1, -1, -1], [1, 2, -1], [-1, 0, 1])
    """
    array = as_structure(structure)
    if structure_depth(array) != depth:
        raise ValidationError(
            f"The structure's length must be 2**depth - 1 = {(1 << depth) - 1} for "
            f"depth {depth}. Got length {array.shape[0]} instead."
        )
    reach = reachable_mask(array)
    position = np.flatnonzero(reach).astype(np.int64)
    index = np.full(array.shape[0], NIL, dtype=np.int64)
    index[position] = np.arange(position.shape[0])
    left_pos, right_pos, level = child_positions(depth)
    left = np.where(left_pos[position] >= 0, index[left_pos[position]], NIL)
    right = np.where(right_pos[position] >= 0, index[right_pos[position]], NIL)
    parent = np.full(position.shape[0], NIL, dtype=np.int64)
    has_left, has_right = left >= 0, right >= 0
    parent[left[has_left]] = np.flatnonzero(has_left)
    parent[right[has_right]] = np.flatnonzero(has_right)
    return DecodedStructure(
        depth, position, array[position].copy(), level[position], parent, left, right
    )


def encode(tree: Tree, depth: int) -> IntArray:
    """Encode a numeric tree: its split features in place, thresholds dropped.

    A tree shallower than ``depth`` is padded with nil (Fig. 2). This is the
    "local structure" a client sends (Algorithm 1, step 12).

    Parameters
    ----------
    tree : Tree
        A tree of numeric splits and leaves (e.g. from
        :func:`fedtrees.learners.fit_cart`).
    depth : int
        Depth of the string; at least the tree's number of decision levels.

    Raises
    ------
    ValidationError
        If the tree has a categorical or client split, or is deeper than
        ``depth``.

    Examples
    --------
    >>> from fedtrees.learners import fit_cart
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> encode(fit_cart(X, np.array([0, 1, 1, 1]), n_classes=2, max_depth=2,
    ...                 seed=0), 3).tolist()
    [1, 0, -1, -1, -1, -1, -1]
    """
    _check_depth(depth)
    if np.any((tree.kind != NodeKind.NUMERIC) & (tree.kind != NodeKind.LEAF)):
        raise ValidationError(
            "encode needs a tree of numeric splits and leaves only. Got a tree with "
            "categorical or client splits: encode categorical features as codes."
        )
    left_pos, right_pos, _ = child_positions(depth)
    structure = np.full((1 << depth) - 1, NIL, dtype=np.int64)
    stack = [(0, 0, 0)]  # (tree node, string position, level)
    while stack:
        node, position, level = stack.pop()
        if tree.kind[node] != NodeKind.NUMERIC:
            continue
        if level >= depth:
            raise ValidationError(
                f"encode: the tree has decision nodes at depth {level}, deeper than "
                f"the string's depth {depth}. Pass depth >= {tree.max_depth}."
            )
        structure[position] = tree.feature[node]
        children = (int(tree.left[node]), int(tree.right[node]))
        positions = (int(left_pos[position]), int(right_pos[position]))
        stack.extend(
            (c, p, level + 1) for c, p in zip(children, positions, strict=True)
        )
    return structure


def random_structure(
    rng: np.random.Generator, depth: int, n_features: int, nil_rate: float
) -> IntArray:
    """Draw a random structure: the *Initializer* (Sec. III-A, Algorithm 1 step 21).

    Every position first gets a feature drawn uniformly from ``0..n_features-1``;
    then ``round(nil_rate * (2**depth - 1))`` positions, drawn uniformly without
    replacement, are set to nil.

    **Decision** (the paper says "a portion r_l of the already selected decision
    nodes"): the portion is taken over all ``2**depth - 1`` positions (all were
    selected as decision nodes), rounded to the nearest count, so with the
    default ``r_l = 0.01`` shallow strings (fewer than 50 positions) stay full.

    Examples
    --------
    >>> s = random_structure(np.random.default_rng(0), 4, 3, 0.2)
    >>> s.shape, int((s == -1).sum()), bool(s.max() < 3)
    ((15,), 3, True)
    """
    _check_depth(depth)
    if n_features < 1:
        raise ValidationError(
            f"random_structure needs n_features >= 1. Got {n_features!r} instead."
        )
    if not 0.0 <= nil_rate <= 1.0:
        raise ValidationError(
            f"The 'nil_rate' of random_structure must be in [0, 1]. Got {nil_rate!r}."
        )
    length = (1 << depth) - 1
    structure = rng.integers(0, n_features, size=length, dtype=np.int64)
    n_nil = round(nil_rate * length)
    structure[rng.choice(length, size=n_nil, replace=False)] = NIL
    return structure


def decision_nodes(structure: npt.ArrayLike) -> int:
    """Count the decision nodes of the decoded tree (the paper's Fig. 4a metric).

    Examples
    --------
    >>> decision_nodes([0, -1, 3, 1, 1, -1, 2])
    3
    """
    return int(np.count_nonzero(reachable_mask(structure)))


def edit_distance(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Return the normalized tree edit distance of two structures of one depth.

    **Decision** (the paper, Sec. IV, does not define it beyond "normalized tree
    edit distance between the lists of hashed decision features"): compare the
    decoded trees position by position. Over the union ``U`` of the positions
    reachable in ``a`` or in ``b``, count those whose effective label differs
    (the feature if reachable, nil otherwise) and divide by ``|U|``. Each such
    position costs one relabel, insertion or deletion of a node in place, so
    the result is in ``[0, 1]``: 0 for identical decoded trees, 1 when no
    decision node is shared. Two single-leaf trees are at distance 0.

    Examples
    --------
    >>> edit_distance([0, 1, 2], [0, 1, -1])
    0.3333333333333333
    >>> edit_distance([0, -1, 5], [0, 2, 2])  # detached 5 is not a node
    0.6666666666666666
    """
    left, right = as_structure(a), as_structure(b)
    if left.shape != right.shape:
        raise ValidationError(
            "edit_distance needs two structures of the same depth. Got lengths "
            f"{left.shape[0]} and {right.shape[0]}."
        )
    reach_a, reach_b = reachable_mask(left), reachable_mask(right)
    union = reach_a | reach_b
    if not union.any():
        return 0.0
    label_a = np.where(reach_a, left, NIL)[union]
    label_b = np.where(reach_b, right, NIL)[union]
    return float(np.count_nonzero(label_a != label_b) / label_a.shape[0])


def as_structure(structure: npt.ArrayLike) -> IntArray:
    """Check and convert one structure to a 1-D int64 array (entries >= -1)."""
    array = np.asarray(structure)
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise ValidationError(
            "A FedGA structure must be a 1-D integer array. Got an array of shape "
            f"{array.shape} and dtype {array.dtype} instead."
        )
    if array.size and array.min() < NIL:
        raise ValidationError(
            "A FedGA structure holds feature indices or -1 (nil). Got the entry "
            f"{int(array.min())} instead."
        )
    return array.astype(np.int64, copy=False)


def _check_depth(depth: int) -> None:
    if not is_integral(depth) or not 1 <= depth <= MAX_DEPTH:
        raise ValidationError(
            f"The depth of a FedGA structure must be an integer in [1, {MAX_DEPTH}]. "
            f"Got {depth!r} instead."
        )
