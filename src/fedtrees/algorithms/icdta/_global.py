"""The ICDTA4FL global tree, grown from the aggregated rules (docs/icdta.md step 5).

The root holds every rule. A node is split on the feature with the highest
information gain computed over RULES: the entropy (bits) of the multiset of the
rules' argmax classes, parent minus the size-weighted children (the paper's Eq. 1
and 2 print the negative; the gain is maximised).

**Decision (``gain=``), the children's weights.** A rule without a condition on
the split feature goes to every child, so the children's rule counts add up to
more than the node's. ``gain="quinlan"`` (default) weights child c by
``|c| / |node|``, Quinlan's information gain, which the paper's ID3 is: copies
of a rule then add entropy, so a split that duplicates rules must separate
classes to win. ``gain="paper"`` divides by the sum of the children's counts, as
Eq. 1 and 2 print: there copying rules into a pure child *lowers* the weighted
entropy, so splits that peel pure rules off while the other child keeps
everything win. The two agree when no rule is duplicated. Measured on one
client's scikit-learn CART (depth 5, every rule kept, global tree at depth 5),
agreement with the client tree on its rows: breast cancer 1.00 vs 0.92,
credit_default 1.00 vs 0.98, hotel_ac_iot 0.98 vs 0.58 (quinlan vs paper).

- ID3 (``rules.base == "id3"``): candidates are the features not used on the path
  on which at least one rule of the node has a condition. One branch per code in
  the node's conditions on that feature (ascending); a rule without a condition on
  it goes to every branch. A row whose code has no branch stops at the node and
  takes the node's value (the tree's documented behaviour for unseen categories).
- CART: features may be reused; the candidate thresholds of a feature are the
  distinct finite bounds of the node's rules on it. ``x_f <= t`` sends a rule left
  if ``low < t`` and right if ``high > t`` (a rule spanning t goes to both).
  Only thresholds with two non-empty sides are admissible.

Stop (leaf) when all rules of the node share the argmax class, when the best split
leaves every child with all the node's rules, at ``max_depth``, or when no
candidate is left. Every node's value is the summed ŷ of its rules, normalised, so
a leaf predicts the argmax of the summed ŷ (first class on ties).

Our own decisions (not in the paper):

- gains within 1e-12 of the best are ties, won by the first feature, then the
  smallest threshold;
- a node's ``count`` holds its number of RULES, not rows, and its ``impurity``
  is the rule-class entropy;
- a CART threshold outside the node's own interval on the feature (set by its
  ancestors) is not a candidate: every row of the node would go one way;
- a CART split always reduces a child (its threshold is the bound of a node rule,
  which that bound excludes from one side), so the "no reduction" stop can only
  fire for ID3.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees._validation import check_choice, check_int, invalid
from fedtrees.algorithms.icdta._ruleset import RuleSet
from fedtrees.stats import entropy
from fedtrees.tree import NodeStats, Tree, TreeBuilder

__all__ = ["GAINS", "Gain", "build_global_tree"]

_TIE: Final = 1e-12
Gain: TypeAlias = Literal["quinlan", "paper"]
GAINS: Final = ("quinlan", "paper")
Side: TypeAlias = Literal["left", "right"]


@dataclass(frozen=True)
class _Node:
    """A node still to grow: its id, rule indices, depth and region."""

    id: int
    rules: IntArray
    depth: int
    used: BoolArray  # ID3: features split on along the path
    low: FloatArray  # CART: the node's interval (low, high] on every feature
    high: FloatArray


@dataclass(frozen=True)
class _Split:
    feature: int
    threshold: float  # CART only
    codes: IntArray  # ID3 only: one branch per code, ascending
    children: list[IntArray]  # rule indices of every child


def build_global_tree(
    rules: RuleSet,
    *,
    max_depth: int,
    classes: npt.ArrayLike,
    feature_names: Sequence[str] | None = None,
    categories: Sequence[Sequence[str] | None] | None = None,
    gain: Gain = "quinlan",
) -> Tree:
    """Grow the global tree of ICDTA4FL from an aggregated rule set (docs/icdta.md, 5).

    Parameters
    ----------
    rules
        The aggregated rules (non-empty); their base decides the tree's splits.
    max_depth
        Depth limit (the clients' max_depth); 0 gives a single leaf.
    classes : array-like of shape (n_classes,)
        Class labels, in the order of ŷ's columns.
    feature_names, categories
        Stored in the tree (names used by ``to_text``).
    gain : {"quinlan", "paper"}
        How the children's entropies are weighted (the module's Decision).

    Returns
    -------
    Tree
        A classification tree; ``count`` holds the number of rules of each node.

    Raises
    ------
    ValidationError
        If the rule set is empty or ``classes`` does not match its ŷ.

    Examples
    --------
    >>> rules = RuleSet("id3", [[0, -1], [1, 0], [1, 1]], [], [],
    ...                 [[1.0, 0.0], [0.0, 1.0], [0.9, 0.1]], 2)
    >>> tree = build_global_tree(rules, max_depth=2, classes=["no", "yes"],
    ...                          feature_names=["a", "b"], gain="paper")
    >>> print(tree.to_text())  # rule 0 has no condition on b: in both b-branches
    |--- b in {0}
    |   |--- a in {0}
    |   |   |--- class: no (n=1, p=[1, 0])
    |   |--- a in {1}
    |   |   |--- class: yes (n=1, p=[0, 1])
    |--- b in {1}
    |   |--- class: no (n=2, p=[0.95, 0.05])
    >>> tree.predict([[1, 0], [0, 5]]).tolist()  # b=5 has no branch: stops at root
    ['yes', 'no']
    """
    owner = "build_global_tree"
    depth_limit = check_int(max_depth, "max_depth", owner, min_value=0)
    check_choice(gain, "gain", owner, GAINS)
    labels = _check_inputs(rules, classes, owner)
    builder = TreeBuilder(
        n_features=rules.n_features,
        classes=labels,
        feature_names=feature_names,
        categories=categories,
    )
    every = np.arange(rules.n_rules, dtype=np.int64)
    region = np.full(rules.n_features, np.inf)
    used = np.zeros(rules.n_features, dtype=bool)
    root = builder.add_root(_stats(rules, every))
    stack = [_Node(root, every, 0, used, -region, region)]
    while stack:
        node = stack.pop()
        split = _choose_split(rules, node, depth_limit, gain)
        if split is not None:
            stack.extend(reversed(_apply_split(builder, rules, node, split)))
    return builder.build()


def _check_inputs(
    rules: RuleSet, classes: npt.ArrayLike, owner: str
) -> npt.NDArray[Any]:
    if not isinstance(rules, RuleSet):
        raise invalid("rules", owner, "a RuleSet", type(rules).__name__)
    if rules.n_rules == 0:
        raise invalid(
            "rules",
            owner,
            "a non-empty RuleSet (no pair of client rules was compatible; keep "
            "fewer or more similar trees)",
            rules,
        )
    labels = np.asarray(classes)
    if labels.shape != (rules.n_classes,):
        constraint = f"{rules.n_classes} labels (one per ŷ column)"
        raise invalid("classes", owner, constraint, labels.tolist())
    return labels


def _stats(rules: RuleSet, idx: IntArray) -> NodeStats:
    """Return the node statistics: summed ŷ normalised, rule count, rule entropy."""
    summed = rules.proba[idx].sum(axis=0)
    votes = np.bincount(rules.predicted[idx], minlength=rules.n_classes)
    value = NodeStats.from_class_counts(summed).value
    return NodeStats(value, float(idx.shape[0]), float(entropy(votes)))


def _choose_split(
    rules: RuleSet, node: _Node, max_depth: int, gain: Gain
) -> _Split | None:
    """Return the best split of ``node``, or None where a stop rule applies."""
    classes = rules.predicted[node.rules]
    if node.depth >= max_depth or np.all(classes == classes[0]):
        return None
    if rules.base == "id3":
        split = _best_id3_split(rules, node, gain)
    else:
        split = _best_cart_split(rules, node, gain)
    n = node.rules.shape[0]
    if split is None or all(child.shape[0] == n for child in split.children):
        return None
    return split


def _apply_split(
    builder: TreeBuilder, rules: RuleSet, node: _Node, split: _Split
) -> list[_Node]:
    """Add the split's children to ``builder``; return them as nodes to grow."""
    f, depth = split.feature, node.depth + 1
    stats = [_stats(rules, child) for child in split.children]
    if rules.base == "id3":
        branches = [
            ([int(code)], s) for code, s in zip(split.codes, stats, strict=True)
        ]
        ids = builder.split_categorical(node.id, f, branches, default=None)
        used = node.used.copy()
        used[f] = True
        return [
            _Node(i, child, depth, used, node.low, node.high)
            for i, child in zip(ids, split.children, strict=True)
        ]
    left_id, right_id = builder.split_numeric(node.id, f, split.threshold, *stats)
    below, above = node.high.copy(), node.low.copy()
    below[f] = above[f] = split.threshold
    left, right = split.children
    return [
        _Node(left_id, left, depth, node.used, node.low, below),
        _Node(right_id, right, depth, node.used, above, node.high),
    ]


def _first_best(gains: FloatArray) -> int:
    """Index of the first gain within the tie tolerance of the best one."""
    return int(np.flatnonzero(gains >= gains.max() - _TIE)[0])


def _class_counts(
    group: IntArray, classes: IntArray, n_groups: int, n: int
) -> FloatArray:
    """Return the (n_groups, n) float counts of the (group, class) pairs."""
    flat = np.bincount(group * n + classes, minlength=n_groups * n)
    counts: FloatArray = flat.reshape(n_groups, n).astype(np.float64)
    return counts


# -- ID3 ---------------------------------------------------------------------------
def _best_id3_split(rules: RuleSet, node: _Node, gain: Gain) -> _Split | None:
    """Score every candidate feature at once from (feature, code) class counts."""
    values = rules.values[node.rules]
    classes = rules.predicted[node.rules]
    n_features, n_classes = rules.n_features, rules.n_classes
    rows, feats = np.nonzero((values >= 0) & ~node.used)
    if rows.size == 0:
        return None
    codes = values[rows, feats]
    stride = int(codes.max()) + 1
    keys, group = np.unique(feats * stride + codes, return_inverse=True)
    g_feat, g_code = keys // stride, keys % stride
    same = _class_counts(group, classes[rows], keys.size, n_classes)
    conditioned = _class_counts(feats, classes[rows], n_features, n_classes)
    votes = np.bincount(classes, minlength=n_classes).astype(np.float64)
    # A child of code v: the rules requiring v plus every rule free on the feature.
    child = same + (votes - conditioned)[g_feat]
    size = child.sum(axis=1)
    weighted = np.bincount(g_feat, size * entropy(child), minlength=n_features)
    total = np.bincount(g_feat, size, minlength=n_features)
    candidates = np.unique(g_feat)
    weights = total[candidates] if gain == "paper" else float(classes.shape[0])
    gains = entropy(votes) - weighted[candidates] / weights
    f = int(candidates[_first_best(gains)])
    branch_codes = g_code[g_feat == f]
    column = values[:, f]
    children = [node.rules[(column == v) | (column < 0)] for v in branch_codes]
    return _Split(f, np.nan, branch_codes, children)


# -- CART --------------------------------------------------------------------------
def _best_cart_split(rules: RuleSet, node: _Node, gain: Gain) -> _Split | None:
    """Scan every threshold of every feature (vectorised per feature)."""
    idx = node.rules
    onehot = np.eye(rules.n_classes)[rules.predicted[idx]]
    parent = float(entropy(onehot.sum(axis=0)))
    feats, thresholds, gains = [], [], []
    for f in range(rules.n_features):
        low, high = rules.low[idx, f], rules.high[idx, f]
        cut, scored = _threshold_gains(
            low, high, onehot, (node.low[f], node.high[f]), parent, gain
        )
        feats.append(np.full(cut.shape[0], f))
        thresholds.append(cut)
        gains.append(scored)
    all_gains = np.concatenate(gains)
    if all_gains.size == 0:
        return None
    best = _first_best(all_gains)
    f, t = int(np.concatenate(feats)[best]), float(np.concatenate(thresholds)[best])
    low, high = rules.low[idx, f], rules.high[idx, f]
    return _Split(f, t, np.zeros(0, np.int64), [idx[low < t], idx[high > t]])


def _threshold_gains(
    low: FloatArray,
    high: FloatArray,
    onehot: FloatArray,
    region: tuple[float, float],
    parent: float,
    gain: Gain,
) -> tuple[FloatArray, FloatArray]:
    """Admissible thresholds of one feature (ascending) and their gains."""
    bounds = np.concatenate([low, high])
    # Strictly inside the node's region; also drops the infinite "no bound" values.
    t = np.unique(bounds[(bounds > region[0]) & (bounds < region[1])])
    left = _count_below(low, onehot, t, "left")  # rules with low < t
    right = onehot.sum(axis=0) - _count_below(high, onehot, t, "right")  # high > t
    n_left, n_right = left.sum(axis=1), right.sum(axis=1)
    ok = (n_left > 0) & (n_right > 0)
    spread = n_left * entropy(left) + n_right * entropy(right)
    weights = n_left + n_right if gain == "paper" else float(onehot.shape[0])
    gains = parent - spread / np.where(ok, weights, 1.0)
    return t[ok], gains[ok]


def _count_below(
    bound: FloatArray, onehot: FloatArray, t: FloatArray, side: Side
) -> FloatArray:
    """Per threshold and class, the rules whose bound is < t ("left") or <= t."""
    order = np.argsort(bound, kind="stable")
    cumulative = np.zeros((bound.shape[0] + 1, onehot.shape[1]))
    np.cumsum(onehot[order], axis=0, out=cumulative[1:])
    result: FloatArray = cumulative[np.searchsorted(bound[order], t, side=side)]
    return result
