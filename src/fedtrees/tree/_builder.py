"""Grow a :class:`fedtrees.tree.Tree` node by node.

Learners (local and federated) describe each node once, with its statistics, and
turn leaves into splits; :meth:`TreeBuilder.build` assembles the flat arrays. New
nodes are appended, so children always get larger indices than their parent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray
from fedtrees._validation import invalid
from fedtrees.exceptions import ValidationError
from fedtrees.tree._kinds import LEAF, Missing, NodeKind
from fedtrees.tree._model import Tree

__all__ = ["NodeStats", "TreeBuilder"]


@dataclass(frozen=True)
class NodeStats:
    """What a node stores: its value row, training count and impurity."""

    value: FloatArray
    count: float
    impurity: float = math.nan

    @classmethod
    def from_class_counts(
        cls, counts: npt.ArrayLike, impurity: float = math.nan
    ) -> NodeStats:
        """Class distribution ``counts / sum`` (uniform if all counts are 0).

        Examples
        --------
        >>> NodeStats.from_class_counts([3.0, 1.0]).value
        array([0.75, 0.25])
        """
        array = np.asarray(counts, dtype=np.float64)
        total = float(array.sum())
        if total > 0:
            value = array / total
        else:
            value = np.full(array.shape, 1.0 / array.shape[0])
        return cls(value, total, impurity)

    @classmethod
    def from_mean(
        cls, mean: float, count: float, impurity: float = math.nan
    ) -> NodeStats:
        """Regression node with this mean and training count."""
        return cls(np.array([float(mean)]), float(count), impurity)


class TreeBuilder:
    """Accumulates nodes, then builds an immutable :class:`Tree`.

    Examples
    --------
    >>> b = TreeBuilder(n_features=1, classes=np.array(["no", "yes"]))
    >>> root = b.add_root(NodeStats.from_class_counts([2, 2]))
    >>> left, right = b.split_numeric(
    ...     root, 0, 0.5, NodeStats.from_class_counts([2, 0]),
    ...     NodeStats.from_class_counts([0, 2]))
    >>> b.build().predict([[0.0], [1.0]]).tolist()
    ['no', 'yes']
    """

    def __init__(
        self,
        *,
        n_features: int,
        classes: npt.ArrayLike | None = None,
        feature_names: Sequence[str] | None = None,
        categories: Sequence[Sequence[str] | None] | None = None,
        clients: Sequence[str] | None = None,
    ) -> None:
        self._meta: dict[str, Any] = {
            "n_features": n_features,
            "classes": None if classes is None else np.asarray(classes),
            "feature_names": None if feature_names is None else tuple(feature_names),
            "categories": None
            if categories is None
            else tuple(None if c is None else tuple(c) for c in categories),
            "clients": None if clients is None else tuple(clients),
        }
        self._kind: list[int] = []
        self._feature: list[int] = []
        self._threshold: list[float] = []
        self._left: list[int] = []
        self._right: list[int] = []
        self._missing: list[int] = []
        self._stats: list[NodeStats] = []
        self._branches: list[list[tuple[int, int]]] = []

    @property
    def n_nodes(self) -> int:
        """Number of nodes added so far."""
        return len(self._kind)

    def add_root(self, stats: NodeStats) -> int:
        """Add the root (node 0) as a leaf."""
        if self._kind:
            raise ValidationError("TreeBuilder.add_root: the tree already has a root.")
        return self._add_leaf(stats)

    def split_numeric(
        self,
        node: int,
        feature: int,
        threshold: float,
        left: NodeStats,
        right: NodeStats,
        *,
        missing: Missing | int = Missing.LARGER,
    ) -> tuple[int, int]:
        """Turn leaf ``node`` into ``x[feature] <= threshold``; return the children.

        ``missing`` is where a NaN value goes: a direction learned at fit
        (``Missing.LEFT`` / ``Missing.RIGHT``), or ``Missing.LARGER`` (default: the
        child with the larger training count, right on a tie).
        """
        try:
            direction = Missing(missing)
        except ValueError:
            raise invalid(
                "missing",
                "TreeBuilder.split_numeric",
                "a Missing (LEFT=1, RIGHT=0 or LARGER=-1)",
                missing,
            ) from None
        self._claim(node, NodeKind.NUMERIC, feature)
        self._threshold[node] = float(threshold)
        self._missing[node] = direction
        left_id, right_id = self._add_leaf(left), self._add_leaf(right)
        self._left[node], self._right[node] = left_id, right_id
        return left_id, right_id

    def split_categorical(
        self,
        node: int,
        feature: int,
        branches: Sequence[tuple[Sequence[int], NodeStats]],
        default: NodeStats | None,
    ) -> list[int]:
        """Split on a categorical feature: each branch lists the codes it receives.

        Other codes go to the ``default`` child, or stop at ``node`` if it is None.
        A CART set split is one branch (the left set) plus a default (the rest).
        """
        self._claim(node, NodeKind.CATEGORICAL, feature)
        return self._add_branches(node, branches, default)

    def split_client(
        self,
        node: int,
        branches: Sequence[tuple[Sequence[int], NodeStats]],
        default: NodeStats | None,
    ) -> list[int]:
        """Split on the client indicator (codes index ``clients``)."""
        if self._meta["clients"] is None:
            raise ValidationError(
                "TreeBuilder.split_client needs the builder's 'clients' list."
            )
        self._claim(node, NodeKind.CLIENT, LEAF)
        return self._add_branches(node, branches, default)

    def build(self) -> Tree:
        """Assemble and validate the tree."""
        sizes = [len(b) for b in self._branches]
        ptr = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=ptr[1:])
        entries = [entry for branch in self._branches for entry in branch]
        return Tree(
            kind=np.array(self._kind, dtype=np.int8),
            feature=np.array(self._feature, dtype=np.int64),
            threshold=np.array(self._threshold, dtype=np.float64),
            left=np.array(self._left, dtype=np.int64),
            right=np.array(self._right, dtype=np.int64),
            branch_ptr=ptr,
            branch_code=np.array([e[0] for e in entries], dtype=np.int64),
            branch_child=np.array([e[1] for e in entries], dtype=np.int64),
            value=np.stack([s.value for s in self._stats]),
            count=np.array([s.count for s in self._stats], dtype=np.float64),
            impurity=np.array([s.impurity for s in self._stats], dtype=np.float64),
            missing=np.array(self._missing, dtype=np.int8),
            **self._meta,
        )

    def _add_leaf(self, stats: NodeStats) -> int:
        self._kind.append(NodeKind.LEAF)
        self._feature.append(LEAF)
        self._threshold.append(math.nan)
        self._left.append(LEAF)
        self._right.append(LEAF)
        self._missing.append(Missing.LARGER)
        self._stats.append(stats)
        self._branches.append([])
        return len(self._kind) - 1

    def _claim(self, node: int, kind: NodeKind, feature: int) -> None:
        if not 0 <= node < len(self._kind) or self._kind[node] != NodeKind.LEAF:
            raise ValidationError(
                f"TreeBuilder: node {node} is not an existing leaf, so it cannot be "
                "split."
            )
        self._kind[node] = kind
        self._feature[node] = int(feature)

    def _add_branches(
        self,
        node: int,
        branches: Sequence[tuple[Sequence[int], NodeStats]],
        default: NodeStats | None,
    ) -> list[int]:
        children = []
        for codes, stats in branches:
            child = self._add_leaf(stats)
            children.append(child)
            self._branches[node].extend((int(code), child) for code in codes)
        if default is not None:
            self._right[node] = self._add_leaf(default)
            children.append(self._right[node])
        return children
