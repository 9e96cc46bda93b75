"""Root-to-leaf rules of a :class:`fedtrees.tree.Tree`.

A rule is the conjunction of the conditions on one root-to-leaf path, with the
leaf's value (class distribution or mean) and support (training count). ICDTA4FL
(docs/icdta.md) aggregates client trees through these rules.

Missing values: rules describe NaN routing only where a direction was learned. The
condition on the side that receives NaN rows (``Missing.LEFT`` / ``RIGHT``) holds
for NaN too (``Condition.missing``); at a ``Missing.LARGER`` node neither condition
mentions NaN, so a row with NaN in that node's feature satisfies no rule through it
(``Tree.apply`` still routes it, to the child with the larger training count).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

import numpy as np

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees.exceptions import ValidationError
from fedtrees.tree._kinds import LEAF, Missing, NodeKind

if TYPE_CHECKING:
    from fedtrees.tree._arrays import TreeArrays

__all__ = ["CLIENT_FEATURE", "Condition", "Rule", "child_conditions", "extract_rules"]

CLIENT_FEATURE: Final = -2
"""``Condition.feature`` of a condition on the client indicator."""

Operator = Literal["<=", ">", "in", "not in"]


@dataclass(frozen=True)
class Condition:
    """One test on a path: ``x[feature] <= threshold``, ``> threshold``, or a code set.

    ``feature`` is :data:`CLIENT_FEATURE` for a test on the row's client code.
    ``missing`` (``<=`` and ``>`` only): the test also holds where the value is NaN,
    because a direction learned at fit sends missing values down this side.

    Examples
    --------
    >>> c = Condition(0, "<=", 54.5, missing=True)
    >>> c.holds(np.array([[50.0], [60.0], [np.nan]])).tolist()
    [True, False, True]
    """

    feature: int
    op: Operator
    threshold: float = math.nan
    codes: tuple[int, ...] = ()
    missing: bool = False

    def __post_init__(self) -> None:
        if self.missing and self.op not in ("<=", ">"):
            raise ValidationError(
                f"Condition: 'missing' applies to '<=' and '>' tests only. Got "
                f"missing=True with op {self.op!r}."
            )

    def holds(self, X: FloatArray, client_codes: IntArray | None = None) -> BoolArray:
        """Vectorised truth value for every row of ``X`` (categorical as codes)."""
        if self.feature == CLIENT_FEATURE:
            if client_codes is None:
                raise ValueError("A client condition needs the rows' client codes.")
            column = client_codes.astype(np.float64)
        else:
            column = X[:, self.feature]
        if self.op == "<=":
            holds = column <= self.threshold
        elif self.op == ">":
            holds = column > self.threshold
        else:
            member = np.isin(column, np.asarray(self.codes, dtype=np.float64))
            return member if self.op == "in" else ~member
        return holds | np.isnan(column) if self.missing else holds


@dataclass(frozen=True, eq=False)
class Rule:
    """A root-to-leaf conjunction, the leaf's value and its support."""

    conditions: tuple[Condition, ...]
    value: FloatArray
    support: float
    leaf: int

    def holds(self, X: FloatArray, client_codes: IntArray | None = None) -> BoolArray:
        """Rows of ``X`` that satisfy every condition."""
        result = np.ones(X.shape[0], dtype=bool)
        for condition in self.conditions:
            result &= condition.holds(X, client_codes)
        return result


def child_conditions(tree: TreeArrays, node: int) -> list[tuple[int, Condition]]:
    """Return the condition leading from ``node`` to each child, in order.

    At a numeric node with a learned missing direction, the condition of the side
    that receives NaN rows has ``missing=True``; ``Missing.LARGER`` sets nothing.
    """
    kind = tree.kind[node]
    if kind == NodeKind.LEAF:
        return []
    if kind == NodeKind.NUMERIC:
        f, t = int(tree.feature[node]), float(tree.threshold[node])
        direction = tree.missing[node]  # LARGER marks neither side
        return [
            (
                int(tree.left[node]),
                Condition(f, "<=", t, missing=bool(direction == Missing.LEFT)),
            ),
            (
                int(tree.right[node]),
                Condition(f, ">", t, missing=bool(direction == Missing.RIGHT)),
            ),
        ]
    feature = CLIENT_FEATURE if kind == NodeKind.CLIENT else int(tree.feature[node])
    start, stop = tree.branch_ptr[node], tree.branch_ptr[node + 1]
    codes, kids = tree.branch_code[start:stop], tree.branch_child[start:stop]
    out = []
    for child in dict.fromkeys(kids.tolist()):
        mine = tuple(sorted(codes[kids == child].tolist()))
        out.append((child, Condition(feature, "in", codes=mine)))
    if tree.right[node] != LEAF:
        every = tuple(sorted(codes.tolist()))
        out.append((int(tree.right[node]), Condition(feature, "not in", codes=every)))
    return out


def extract_rules(tree: TreeArrays) -> list[Rule]:
    """Every root-to-leaf rule, left to right (depth-first).

    Examples
    --------
    >>> from fedtrees.tree import NodeStats, TreeBuilder
    >>> b = TreeBuilder(n_features=1)
    >>> root = b.add_root(NodeStats.from_mean(0.5, 4))
    >>> _ = b.split_numeric(root, 0, 1.5, NodeStats.from_mean(0.0, 2),
    ...                     NodeStats.from_mean(1.0, 2))
    >>> [(r.conditions[0].op, r.support) for r in b.build().rules()]
    [('<=', 2.0), ('>', 2.0)]
    """
    rules: list[Rule] = []
    stack: list[tuple[int, tuple[Condition, ...]]] = [(0, ())]
    while stack:
        node, path = stack.pop()
        if tree.kind[node] == NodeKind.LEAF:
            value = tree.value[node].copy()
            rules.append(Rule(path, value, float(tree.count[node]), node))
            continue
        for child, condition in reversed(child_conditions(tree, node)):
            stack.append((child, (*path, condition)))
    return rules
