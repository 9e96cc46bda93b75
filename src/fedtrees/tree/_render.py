"""Text rendering of a :class:`fedtrees.tree.Tree` (like sklearn's export_text)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from fedtrees._validation import check_int
from fedtrees.tree._kinds import NodeKind
from fedtrees.tree._rules import CLIENT_FEATURE, Condition, child_conditions

if TYPE_CHECKING:
    from fedtrees.tree._arrays import TreeArrays

__all__ = ["export_text", "format_condition"]


def export_text(
    tree: TreeArrays, *, decimals: int = 3, show_counts: bool = True
) -> str:
    """Render ``tree`` as indented text, one line per edge and per leaf.

    Features, categories, classes and clients are shown by name when the tree
    knows them. A missing-value direction learned at fit is shown on the branch
    that receives NaN rows (``age <= 54.5 or missing``); ``Missing.LARGER`` (no
    direction learned) is not shown.

    Examples
    --------
    >>> from fedtrees.tree import Missing, NodeStats, TreeBuilder
    >>> b = TreeBuilder(n_features=1, feature_names=["age"], classes=["no", "yes"])
    >>> root = b.add_root(NodeStats.from_class_counts([3, 3]))
    >>> _ = b.split_numeric(root, 0, 54.5, NodeStats.from_class_counts([3, 1]),
    ...                     NodeStats.from_class_counts([0, 2]))
    >>> print(b.build().to_text())
    |--- age <= 54.5
    |   |--- class: no (n=4, p=[0.75, 0.25])
    |--- age > 54.5
    |   |--- class: yes (n=2, p=[0, 1])

    With a direction learned at fit (here: missing ages went right):

    >>> b = TreeBuilder(n_features=1, feature_names=["age"], classes=["no", "yes"])
    >>> root = b.add_root(NodeStats.from_class_counts([3, 3]))
    >>> _ = b.split_numeric(root, 0, 54.5, NodeStats.from_class_counts([3, 1]),
    ...                     NodeStats.from_class_counts([0, 2]),
    ...                     missing=Missing.RIGHT)
    >>> print(b.build().to_text(show_counts=False))
    |--- age <= 54.5
    |   |--- class: no
    |--- age > 54.5 or missing
    |   |--- class: yes
    """
    decimals = check_int(decimals, "decimals", "export_text", min_value=0)
    if tree.kind[0] == NodeKind.LEAF:
        return "|--- " + _leaf_text(tree, 0, decimals, show_counts)
    lines: list[str] = []
    # Iterative pre-order walk over edges: (child, depth, condition leading to it).
    stack = [(child, 0, cond) for child, cond in reversed(child_conditions(tree, 0))]
    while stack:
        node, depth, condition = stack.pop()
        lines.append(
            "|   " * depth + "|--- " + format_condition(tree, condition, decimals)
        )
        if tree.kind[node] == NodeKind.LEAF:
            leaf = _leaf_text(tree, node, decimals, show_counts)
            lines.append("|   " * (depth + 1) + "|--- " + leaf)
            continue
        stack.extend(
            (child, depth + 1, cond)
            for child, cond in reversed(child_conditions(tree, node))
        )
    return "\n".join(lines)


def format_condition(tree: TreeArrays, condition: Condition, decimals: int = 3) -> str:
    """Human-readable form of ``condition`` using the tree's names.

    A condition that also receives missing values ends in ``" or missing"``.

    Examples
    --------
    >>> from fedtrees.tree import Condition, NodeStats, TreeBuilder
    >>> b = TreeBuilder(n_features=1, feature_names=["age"])
    >>> _ = b.add_root(NodeStats.from_mean(0.0, 1))
    >>> format_condition(b.build(), Condition(0, "<=", 54.5, missing=True))
    'age <= 54.5 or missing'
    """
    if condition.feature == CLIENT_FEATURE:
        name = "client"
        labels = tree.clients
    else:
        names = tree.feature_names
        name = names[condition.feature] if names else f"x{condition.feature}"
        labels = tree.categories[condition.feature] if tree.categories else None
    if condition.op in ("<=", ">"):
        text = f"{name} {condition.op} {_number(condition.threshold, decimals)}"
        return text + " or missing" if condition.missing else text
    shown = [_category(labels, c) for c in condition.codes]
    return f"{name} {condition.op} {{{', '.join(shown)}}}"


def _category(labels: Sequence[str] | None, code: int) -> str:
    """Return a category's name; code K of K named categories is the missing one."""
    if labels is None:
        return str(code)
    if code == len(labels):
        return "missing"
    return labels[code] if code < len(labels) else str(code)


def _leaf_text(tree: TreeArrays, node: int, decimals: int, show_counts: bool) -> str:
    value = tree.value[node]
    count = f"n={_number(float(tree.count[node]), decimals)}"
    if tree.classes is None:
        text = f"value: {_number(float(value[0]), decimals)}"
        return f"{text} ({count})" if show_counts else text
    label = tree.classes[int(np.argmax(value))]
    text = f"class: {label}"
    if not show_counts:
        return text
    probs = ", ".join(_number(float(p), decimals) for p in value)
    return f"{text} ({count}, p=[{probs}])"


def _number(x: float, decimals: int) -> str:
    text = f"{x:.{decimals}f}".rstrip("0").rstrip(".") if decimals else f"{x:.0f}"
    return "0" if text in ("-0", "") else text
