"""The ε-DP random-threshold tree (docs/dpforest.md) against an independent reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedtrees.exceptions import ValidationError
from fedtrees.learners import (
    fit_dp_tree,
    planned_queries,
    query_epsilon,
    random_thresholds,
)
from fedtrees.learners._dp_tree import UNUSED
from fedtrees.privacy import PrivacyAccountant
from fedtrees.tree import NodeKind, Tree

RANGES = np.array([[-3.0, 3.0], [-3.0, 3.0], [0.0, 1.0]])


def _data(seed: int, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=n), rng.normal(size=n), rng.uniform(size=n)])
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64) + (X[:, 2] > 0.8)
    return X, y


def _fit(X, y, epsilon, depth, budget="paper", seed=0, n_classes=3):  # type: ignore[no-untyped-def]
    accountant = PrivacyAccountant(epsilon, owner="test")
    grown = fit_dp_tree(
        X,
        y,
        n_classes,
        epsilon=epsilon,
        max_depth=depth,
        ranges=RANGES,
        accountant=accountant,
        thresholds_rng=np.random.default_rng([seed, 1]),
        noise_rng=np.random.default_rng([seed, 2]),
        budget=budget,
    )
    return grown, accountant


def _levels_with_splits(tree: Tree) -> int:
    split = tree.kind != NodeKind.LEAF
    return len(set(tree.node_depth[split].tolist()))


@pytest.mark.parametrize("budget", ["paper", "parallel"])
@pytest.mark.parametrize(("epsilon", "depth"), [(1.0, 3), (10.0, 5), (0.3, 2)])
def test_spent_budget_equals_epsilon_and_queries_are_counted(
    budget: str, epsilon: float, depth: int
) -> None:
    X, y = _data(1)
    grown, accountant = _fit(X, y, epsilon, depth, budget)
    tree, F = grown.tree, X.shape[1]
    internal = int((tree.kind != NodeKind.LEAF).sum())
    # Queries counted from the tree itself: the root histogram, then F per split
    # node (paper) or F per level that has splits (parallel composition).
    made = 1 + F * (internal if budget == "paper" else _levels_with_splits(tree))
    assert grown.n_queries == made
    eps_q = query_epsilon(epsilon, depth, F, budget)  # type: ignore[arg-type]
    used = [s for s in accountant.spends if s.label != UNUSED]
    assert sum(s.queries for s in used) == made
    assert all(s.epsilon == eps_q for s in accountant.spends)
    assert made <= planned_queries(depth, F, budget)  # type: ignore[arg-type]
    assert accountant.n_queries == planned_queries(depth, F, budget)  # type: ignore[arg-type]
    assert accountant.epsilon_spent == pytest.approx(epsilon, rel=1e-12)
    assert grown.epsilon_spent == accountant.epsilon_spent


def test_per_query_budgets_follow_the_two_accountings() -> None:
    assert query_epsilon(10.0, 5, 38, "paper") == 10.0 / (2**5 * 38)
    assert query_epsilon(10.0, 5, 38, "parallel") == 10.0 / (1 + 5 * 38)
    assert math.isinf(query_epsilon(math.inf, 5, 38, "paper"))


def _gini(counts: np.ndarray) -> float:
    total = counts.sum()
    if total <= 0:  # an empty node: the uniform distribution's impurity
        return 1.0 - 1.0 / counts.shape[0]
    return 1.0 - float(((counts / total) ** 2).sum())


def _reference(X, y, depth_limit, seed, n_classes=3):  # type: ignore[no-untyped-def]
    """Noise-free Algorithms 1-3, node by node (breadth first, heap positions)."""
    rng = np.random.default_rng([seed, 1])
    nodes = [(0, np.arange(len(y)))]  # (heap position, row indices)
    splits, leaves = {}, {}
    for depth in range(depth_limit + 1):
        counts = {p: np.bincount(y[r], minlength=n_classes) for p, r in nodes}
        to_split = [
            (p, r) for p, r in nodes if _gini(counts[p]) != 0 and depth < depth_limit
        ]
        for p, r in nodes:
            if (p, r) not in to_split:
                leaves[(depth, p)] = int(np.argmax(counts[p]))
        if not to_split:
            break
        level = rng.uniform(RANGES[:, 0], RANGES[:, 1], size=(2**depth, X.shape[1]))
        nxt = []
        for p, r in to_split:
            scores = []
            for f in range(X.shape[1]):
                left = X[r, f] <= level[p, f]
                cl = np.bincount(y[r][left], minlength=n_classes)
                cr = counts[p] - cl
                scores.append((_gini(cl) + _gini(cr)) / 2)
            f = int(np.argmin(scores))
            splits[(depth, p)] = (f, level[p, f])
            left = X[r, f] <= level[p, f]
            nxt += [(2 * p, r[left]), (2 * p + 1, r[~left])]
        nodes = nxt
    return splits, leaves


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_noise_free_tree_equals_an_independent_reference(seed: int) -> None:
    X, y = _data(seed + 10)
    depth = 4
    grown, _ = _fit(X, y, math.inf, depth, seed=seed)
    splits, leaves = _reference(X, y, depth, seed)
    tree = grown.tree
    # Walk our tree with heap positions and compare node by node.
    seen_splits, seen_leaves = {}, {}
    stack = [(0, 0, 0)]  # (node id, depth, heap position)
    while stack:
        node, d, p = stack.pop()
        if tree.kind[node] == NodeKind.LEAF:
            seen_leaves[(d, p)] = int(np.argmax(tree.value[node]))
        else:
            seen_splits[(d, p)] = (int(tree.feature[node]), float(tree.threshold[node]))
            stack += [
                (tree.left[node], d + 1, 2 * p),
                (tree.right[node], d + 1, 2 * p + 1),
            ]
    assert seen_splits == splits
    assert seen_leaves == leaves


def test_thresholds_are_drawn_per_heap_position_inside_the_ranges() -> None:
    level = random_thresholds(np.random.default_rng(0), RANGES, 3)
    assert level.shape == (8, 3)
    assert np.all(level >= RANGES[:, 0])
    assert np.all(level <= RANGES[:, 1])


def test_counts_are_clipped_never_negative() -> None:
    X, y = _data(4)
    for seed in range(5):
        grown, _ = _fit(X, y, 0.05, 4, seed=seed)
        assert np.all(grown.tree.count >= 0)
        assert np.all(grown.tree.value >= 0)


def test_stopping_looks_at_noisy_counts_only() -> None:
    # Every true label is 0: the authors' code would stop at the root (true
    # purity). Here the root's noisy counts of classes 1 and 2 are rarely exactly
    # 0, so the tree splits anyway — no decision outside the budget.
    X, _ = _data(5)
    y = np.zeros(X.shape[0], dtype=np.int64)
    depths = [_fit(X, y, 1.0, 3, seed=s)[0].tree.max_depth for s in range(5)]
    assert max(depths) > 0
    noise_free = _fit(X, y, math.inf, 3)[0].tree
    assert noise_free.n_nodes == 1  # without noise, a pure root is a leaf


def _accuracy(epsilon: float, seed: int) -> float:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(2000, 3))
    X[:, 2] = rng.uniform(size=2000)
    y = (X[:, 0] > 0).astype(np.int64)  # balanced
    grown, _ = _fit(X, y, epsilon, 4, seed=seed, n_classes=2)
    return float(np.mean(grown.tree.predict(X) == y))


def test_accuracy_is_chance_at_tiny_epsilon_and_noise_free_at_huge_epsilon() -> None:
    seeds = range(12)
    tiny = np.mean([_accuracy(0.01, s) for s in seeds])
    huge = np.mean([_accuracy(1e6, s) for s in seeds])
    free = np.mean([_accuracy(math.inf, s) for s in seeds])
    assert abs(tiny - 0.5) < 0.1
    assert abs(huge - free) < 0.05
    assert free > 0.8


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"max_depth": 0}, "max_depth"),
        ({"ranges": RANGES[:2]}, "ranges"),
        ({"ranges": RANGES[:, ::-1]}, "min < max"),
        ({"budget": "loose"}, "budget"),
    ],
)
def test_bad_settings_are_refused(change: dict, match: str) -> None:
    X, y = _data(6)
    kwargs = {
        "epsilon": 1.0,
        "max_depth": 3,
        "ranges": RANGES,
        "accountant": PrivacyAccountant(10.0),
        "thresholds_rng": np.random.default_rng(0),
        "noise_rng": np.random.default_rng(1),
    }
    kwargs.update(change)
    with pytest.raises(ValidationError, match=match):
        fit_dp_tree(X, y, 3, **kwargs)  # type: ignore[arg-type]


def test_a_client_without_rows_is_refused() -> None:
    with pytest.raises(ValidationError, match="at least one row"):
        _fit(np.zeros((0, 3)), np.zeros(0, dtype=np.int64), 1.0, 3)


def test_a_tree_reports_its_own_cost_on_a_shared_accountant() -> None:
    X, y = _data(7)
    accountant = PrivacyAccountant(10.0, owner="test")
    accountant.spend(4.0, label="an earlier release")
    grown = fit_dp_tree(
        X,
        y,
        3,
        epsilon=2.0,
        max_depth=3,
        ranges=RANGES,
        accountant=accountant,
        thresholds_rng=np.random.default_rng(0),
        noise_rng=np.random.default_rng(1),
    )
    assert grown.epsilon_spent == pytest.approx(2.0, rel=1e-12)
    assert accountant.epsilon_spent == pytest.approx(6.0, rel=1e-12)
