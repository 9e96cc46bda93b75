from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from fedtrees.exceptions import PrivacyBudgetExceeded, ValidationError
from fedtrees.privacy import ClippedLaplace, Laplace, PrivacyAccountant

DRAWS: list[int] = []


@dataclass(frozen=True)
class RecordingLaplace(Laplace):
    """A Laplace mechanism that records every time noise is drawn."""

    def sample(self, value: object, rng: np.random.Generator | None) -> np.ndarray:
        DRAWS.append(1)
        return super().sample(value, rng)  # type: ignore[arg-type]


def test_overspend_is_refused_before_any_noise_is_drawn() -> None:
    DRAWS.clear()
    acc = PrivacyAccountant(1.0, owner="client 'A'")
    rng = np.random.default_rng(0)
    acc.release(RecordingLaplace(0.75), [1.0], rng, label="root")
    state = rng.bit_generator.state
    with pytest.raises(
        PrivacyBudgetExceeded, match=r"client 'A' cannot spend epsilon=0\.5 on 'split'"
    ):
        acc.release(RecordingLaplace(0.5), [1.0], rng, label="split")
    assert DRAWS == [1]  # the refused release drew nothing
    assert rng.bit_generator.state == state  # and consumed no randomness
    assert acc.epsilon_spent == 0.75
    assert [s.label for s in acc.spends] == ["root"]


@pytest.mark.parametrize(("depth", "features"), [(5, 38), (10, 38), (3, 7), (1, 1)])
def test_spent_epsilon_equals_budget_after_the_planned_queries(
    depth: int, features: int
) -> None:
    # The DP tree's accounting: 2^d * F queries of epsilon / (2^d * F) each.
    epsilon, n_queries = 1.0, 2**depth * features
    acc = PrivacyAccountant(epsilon)
    for _ in range(n_queries):
        acc.spend(epsilon / n_queries, label="counts")
    assert acc.n_spends == n_queries
    assert acc.epsilon_spent == pytest.approx(epsilon, rel=1e-12)
    with pytest.raises(PrivacyBudgetExceeded, match="cannot spend"):
        acc.spend(1e-6)


def test_delta_budget_and_unlimited_budget() -> None:
    acc = PrivacyAccountant(1.0, delta=1e-5)
    acc.spend(0.1, delta=1e-5)
    with pytest.raises(PrivacyBudgetExceeded, match="delta"):
        acc.spend(0.1, delta=1e-6)
    free = PrivacyAccountant(math.inf)
    free.release(ClippedLaplace(2.0), [0.0], np.random.default_rng(0))
    assert free.epsilon_spent == 2.0
    assert free.epsilon_remaining == math.inf


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0.0,), "'epsilon' parameter of PrivacyAccountant"),
        ((-1.0,), "'epsilon' parameter of PrivacyAccountant"),
        (
            (1.0, 1.0),
            r"'delta' parameter of PrivacyAccountant must be a float in \[0, 1\)",
        ),
        ((1.0, -0.1), "'delta' parameter of PrivacyAccountant"),
    ],
)
def test_invalid_budgets(args: tuple[float, ...], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        PrivacyAccountant(*args)


def test_negative_spend_is_refused() -> None:
    with pytest.raises(
        ValidationError, match=r"'epsilon' parameter of PrivacyAccountant\.spend"
    ):
        PrivacyAccountant(1.0).spend(-0.1)


def test_repr_reports_the_spend() -> None:
    acc = PrivacyAccountant(2.0, owner="server")
    acc.spend(0.5)
    assert "epsilon_spent=0.5/2" in repr(acc)


def test_noise_free_release_needs_an_unlimited_budget() -> None:
    x = np.array([3.0])
    free = PrivacyAccountant(math.inf)
    np.testing.assert_array_equal(free.release(Laplace(math.inf), x, None), x)
    assert free.epsilon_spent == math.inf
    with pytest.raises(PrivacyBudgetExceeded, match="cannot spend epsilon=inf"):
        PrivacyAccountant(10.0).release(Laplace(math.inf), x, None)
