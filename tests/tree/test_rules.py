from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from fedtrees.tree import CLIENT_FEATURE, NodeKind
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
