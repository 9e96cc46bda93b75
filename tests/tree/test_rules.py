from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedtrees.exceptions import ValidationError
from fedtrees.tree import (
    CLIENT_FEATURE,
    Condition,
    Missing,
    NodeKind,
    NodeStats,
    Tree,
    TreeBuilder,
)
from tests.tree.helpers import random_tree, random_X


@given(seed=st.integers(0, 10_000))
def test_rules_partition_the_input_space(seed: int) -> None:
    tree = random_tree(seed, clients=None)
    X = random_X(seed + 5, tree, 80)
    rules = tree.rules()
    assert len(rules) == tree.n_leaves
    hits = np.stack([rule.holds(X) for rule in rules])
    nodes = tree.apply(X)
    reached_leaf = tree.kind[nodes] == NodeKind.LEAF
    # Every row that reaches a leaf satisfies exactly that leaf's rule.
    assert np.all(hits[:, reached_leaf].sum(axis=0) == 1)
    leaf_of_rule = np.array([rule.leaf for rule in rules])
    np.testing.assert_array_equal(
        leaf_of_rule[hits[:, reached_leaf].argmax(axis=0)], nodes[reached_leaf]
    )
    # Rows that stop at an internal node (unseen category) satisfy no rule.
    assert np.all(hits[:, ~reached_leaf].sum(axis=0) == 0)


@given(seed=st.integers(0, 10_000))
def test_rule_values_and_supports_are_the_leaves(seed: int) -> None:
    tree = random_tree(seed, n_classes=0)
    for rule in tree.rules():
        np.testing.assert_array_equal(rule.value, tree.value[rule.leaf])
        assert rule.support == tree.count[rule.leaf]
        assert len(rule.conditions) == tree.node_depth[rule.leaf]


def test_client_rules_agree_with_apply() -> None:
    tree = random_tree(
        3, categorical=(), clients=("a", "b", "c"), p_split=1.0, max_depth=3
    )
    X = random_X(4, tree, 60)
    codes = np.random.default_rng(0).integers(0, 3, 60)
    rules = tree.rules()
    assert any(c.feature == CLIENT_FEATURE for r in rules for c in r.conditions)
    hits = np.stack([r.holds(X, codes) for r in rules])
    nodes = tree.apply(X, client=np.array(["a", "b", "c"], dtype=object)[codes])
    at_leaf = tree.kind[nodes] == NodeKind.LEAF
    assert np.all(hits[:, at_leaf].sum(axis=0) == 1)
    assert np.all(hits[:, ~at_leaf].sum(axis=0) == 0)
    leaves = np.array([r.leaf for r in rules])
    np.testing.assert_array_equal(
        leaves[hits[:, at_leaf].argmax(axis=0)], nodes[at_leaf]
    )


@given(seed=st.integers(0, 10_000))
def test_rules_agree_with_apply_on_nan_rows_at_learned_nodes(seed: int) -> None:
    # Every numeric split has a learned direction: the rules still partition
    # the input space, NaN included.
    tree = random_tree(seed, missing=(Missing.LEFT, Missing.RIGHT))
    X = random_X(seed + 5, tree, 80, nan_fraction=0.3)
    rules = tree.rules()
    hits = np.stack([rule.holds(X) for rule in rules])
    nodes = tree.apply(X)
    at_leaf = tree.kind[nodes] == NodeKind.LEAF
    assert np.all(hits[:, at_leaf].sum(axis=0) == 1)
    assert np.all(hits[:, ~at_leaf].sum(axis=0) == 0)
    leaves = np.array([rule.leaf for rule in rules])
    np.testing.assert_array_equal(
        leaves[hits[:, at_leaf].argmax(axis=0)], nodes[at_leaf]
    )


@given(seed=st.integers(0, 10_000))
def test_rules_leave_nan_at_larger_nodes_undescribed(seed: int) -> None:
    tree = random_tree(
        seed, missing=(Missing.LEFT, Missing.RIGHT, Missing.LARGER), p_split=0.9
    )
    X = random_X(seed + 6, tree, 80, nan_fraction=0.3)
    rules = tree.rules()
    hits = np.stack([rule.holds(X) for rule in rules])
    nodes = tree.apply(X)
    # A row satisfies at most one rule, and that rule's leaf is where apply ends.
    assert np.all(hits.sum(axis=0) <= 1)
    described = hits.any(axis=0)
    leaves = np.array([rule.leaf for rule in rules])
    np.testing.assert_array_equal(
        leaves[hits[:, described].argmax(axis=0)], nodes[described]
    )
    # A row is left out exactly when its path meets NaN at a LARGER node (or it
    # stops at an internal node).
    expected = np.array([_described(tree, x) for x in X])
    np.testing.assert_array_equal(described, expected)


def _described(tree: Tree, x: np.ndarray) -> bool:
    """Walk one row; False if it meets NaN at a LARGER numeric node or stops early."""
    node = 0
    while tree.kind[node] != NodeKind.LEAF:
        if tree.kind[node] == NodeKind.NUMERIC:
            value = x[tree.feature[node]]
            if np.isnan(value):
                if tree.missing[node] == Missing.LARGER:
                    return False
                left = tree.missing[node] == Missing.LEFT
            else:
                left = value <= tree.threshold[node]
            node = tree.left[node] if left else tree.right[node]
            continue
        start, stop = tree.branch_ptr[node], tree.branch_ptr[node + 1]
        table = dict(
            zip(
                tree.branch_code[start:stop], tree.branch_child[start:stop], strict=True
            )
        )
        v = x[tree.feature[node]]
        nxt = table.get(None if np.isnan(v) else int(v), tree.right[node])
        if nxt == -1:
            return False
        node = nxt
    return True


def test_child_conditions_mark_the_learned_side_only() -> None:
    b = TreeBuilder(n_features=2)
    root = b.add_root(NodeStats.from_mean(1.0, 6))
    left, _ = b.split_numeric(
        root,
        0,
        0.0,
        NodeStats.from_mean(0.0, 4),
        NodeStats.from_mean(2.0, 2),
        missing=Missing.RIGHT,
    )
    b.split_numeric(
        left, 1, -1.0, NodeStats.from_mean(0.0, 1), NodeStats.from_mean(0.5, 3)
    )
    tree = b.build()
    rules = tree.rules()
    assert [[(c.op, c.missing) for c in r.conditions] for r in rules] == [
        [("<=", False), ("<=", False)],
        [("<=", False), (">", False)],
        [(">", True)],
    ]
    X = np.array([[np.nan, 0.0], [-2.0, -2.0], [0.5, 0.0], [-2.0, np.nan]])
    assert [r.holds(X).tolist() for r in rules] == [
        [False, True, False, False],
        [False, False, False, False],  # row 3: NaN at the LARGER node, no rule
        [True, False, True, False],
    ]
    assert tree.apply(X).tolist() == [2, 3, 2, 4]  # row 3: the larger child (3 > 1)


def test_missing_applies_to_threshold_conditions_only() -> None:
    with pytest.raises(ValidationError, match="'missing' applies to '<=' and '>'"):
        Condition(0, "in", codes=(1,), missing=True)
    column = np.array([[np.nan], [1.0]])
    assert Condition(0, ">", 0.0).holds(column).tolist() == [False, True]
    assert Condition(0, ">", 0.0, missing=True).holds(column).tolist() == [True, True]
