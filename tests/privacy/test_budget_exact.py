"""Spent ε never exceeds the configured ε, not even by one ulp (issue 12, item 8).

The DP tree's per-query share is the largest float ``s`` whose plan ``N × s``,
summed exactly (as rationals), is at most ε; a strict accountant sums every spend
exactly and refuses anything over the budget. Over a grid of ε, depths and both
budgets: ``spent <= ε`` exactly, and ``spent == ε`` or one ulp below it (an
equal float share cannot always add up to ε exactly).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from fedtrees.exceptions import PrivacyBudgetExceeded
from fedtrees.learners import fit_dp_tree, planned_queries, query_epsilon
from fedtrees.privacy import PrivacyAccountant
from fedtrees.privacy._accountant import even_share

EPSILONS = (1e-3, 0.01, 0.1, 0.3, 1 / 3, 0.7, 1.0, 2.5, 10.0)
DEPTHS = tuple(range(1, 13))
BUDGETS = ("paper", "parallel")
RANGES = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])


def _rows() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(40, 3))
    return X, (X[:, 0] + 0.3 * X[:, 1] > 0.6).astype(np.int64)


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_a_tree_spends_its_epsilon_and_never_more(epsilon: float, budget: str) -> None:
    X, y = _rows()
    for depth in DEPTHS:
        accountant = PrivacyAccountant(epsilon, owner="client 'A'", strict=True)
        grown = fit_dp_tree(
            X,
            y,
            2,
            epsilon=epsilon,
            max_depth=depth,
            ranges=RANGES,
            accountant=accountant,
            thresholds_rng=np.random.default_rng([depth, 1]),
            noise_rng=np.random.default_rng([depth, 2]),
            budget=budget,  # type: ignore[arg-type]
        )
        exact = sum(s.queries * Fraction(s.epsilon) for s in accountant.spends)
        assert exact <= Fraction(epsilon), (epsilon, depth, budget)
        spent = accountant.epsilon_spent
        assert spent <= epsilon
        assert spent in (epsilon, math.nextafter(epsilon, 0.0)), (depth, spent)
        assert grown.epsilon_spent == spent


@pytest.mark.hostile("correct")
def test_the_reported_case_no_longer_overspends() -> None:
    # budget="parallel", epsilon=0.1, depth 7, 3 features: 22 queries of 0.1/22
    # summed to 0.10000000000000002 before.
    n = planned_queries(7, 3, "parallel")
    assert n * Fraction(0.1 / n) > Fraction(0.1)  # the float share overspends
    share = query_epsilon(0.1, 7, 3, "parallel")
    assert n * Fraction(share) <= Fraction(0.1)
    assert (n * Fraction(math.nextafter(share, 1.0))) > Fraction(0.1)  # the largest


@pytest.mark.parametrize("n", [1, 3, 22, 113, 1216, 2**40 * 38])
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_even_share_is_the_largest_share_that_fits(epsilon: float, n: int) -> None:
    share = even_share(epsilon, n)
    assert n * Fraction(share) <= Fraction(epsilon)
    assert n * Fraction(math.nextafter(share, math.inf)) > Fraction(epsilon)


def test_a_strict_accountant_refuses_one_ulp_over_the_budget() -> None:
    accountant = PrivacyAccountant(0.1, owner="client 'A'", strict=True)
    accountant.spend(0.1 / 22, label="counts", queries=21)
    with pytest.raises(PrivacyBudgetExceeded, match="client 'A' cannot spend"):
        accountant.spend(0.1 / 22, label="counts")  # one ulp over 0.1 in total
    assert accountant.n_queries == 21  # the refused spend is not recorded
    lenient = PrivacyAccountant(0.1, owner="client 'B'")  # float slack (default)
    lenient.spend(0.1 / 22, label="counts", queries=22)
    assert lenient.epsilon_spent > 0.1  # why the DP tree uses a strict one


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("epsilon", [0.1, 1 / 3, 0.7, 2.5])
@pytest.mark.parametrize("depth", [3, 7])
def test_federated_id3_clients_never_report_more_than_epsilon(
    epsilon: float, depth: int
) -> None:
    """Each level's share and each table's share are even shares (exact sums)."""
    from fedtrees import FederatedID3Classifier

    rng = np.random.default_rng(1)
    codes = rng.integers(0, 3, size=(240, 4))
    y = (codes[:, 0] + codes[:, 1] > 2).astype(int)
    X = pd.DataFrame(
        {f"c{j}": pd.Categorical(np.array(list("pqr"))[codes[:, j]]) for j in range(4)}
    )
    model = FederatedID3Classifier(
        epsilon=epsilon, max_depth=depth, random_state=0
    ).fit(X, y, groups=np.repeat(["a", "b", "c"], 80))
    for spent in model.epsilon_queried_.values():
        assert Fraction(spent) <= Fraction(epsilon)
