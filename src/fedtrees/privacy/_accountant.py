"""A privacy budget accountant held by one party (STYLE habit 9).

Each party (a client, or the server) owns its accountant; it is passed in, never
global. Composition is sequential (basic): the ε and δ of the spends add up.
A spend that would exceed the budget raises :class:`PrivacyBudgetExceeded` before
anything is released — :meth:`PrivacyAccountant.release` checks, records, and only
then draws the noise.

Spent ε is summed exactly (the ``Fraction`` of every float spend). With
``strict=True`` a spend fits only if that exact sum stays within the budget, so
``epsilon_spent <= epsilon`` holds exactly; split a budget over ``n`` queries with
:func:`even_share` (the largest float share whose ``n``-fold exact sum fits). The
default (``strict=False``) keeps a relative slack of ``1e-9`` for callers that
split budgets by float division (``n`` spends of ``ε/n`` may exceed ε by ulps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray
from fedtrees._validation import check_float, check_int, invalid
from fedtrees.exceptions import PrivacyBudgetExceeded
from fedtrees.privacy._mechanisms import Laplace

__all__ = ["PrivacyAccountant", "Spend", "even_share"]

_RELATIVE_SLACK: Final = 1e-9
"""Floating-point slack (``strict=False``): ``N`` spends of ``ε/N`` may sum to
``ε(1 + N·2^-53)``."""


def even_share(epsilon: float, n: int) -> float:
    """Return the largest float ``s`` with ``n × s <= epsilon`` exactly.

    ``epsilon / n`` rounded to nearest may be one ulp above the exact quotient,
    and then ``n`` spends of it exceed ``epsilon``; this share never does, and
    ``n × s`` falls short of ``epsilon`` by less than two ulps of ``epsilon``.

    Examples
    --------
    >>> s = even_share(0.1, 113)
    >>> from fractions import Fraction
    >>> 113 * Fraction(s) <= Fraction(0.1), s == 0.1 / 113
    (True, False)
    """
    eps = check_float(epsilon, "epsilon", "even_share", min_value=0.0)
    count = check_int(n, "n", "even_share", min_value=1)
    share = eps / count
    if count * Fraction(share) > Fraction(eps):
        share = math.nextafter(share, 0.0)
    return share


@dataclass(frozen=True)
class Spend:
    """One recorded release of ``queries`` queries costing ``epsilon`` each."""

    epsilon: float
    delta: float
    label: str
    queries: int = 1


class PrivacyAccountant:
    """Tracks (ε, δ) spent by one party against its budget.

    Parameters
    ----------
    epsilon : float > 0 (inf allowed: no limit)
        Total ε budget of the party.
    delta : float in [0, 1)
        Total δ budget.
    owner : str
        Who holds it (used in messages), e.g. ``"client 'Cleveland'"``.
    strict : bool, default False
        Exact budget check: a spend fits only if the exact sum of all spends is
        at most the budget (no floating-point slack); see the module docstring.

    Examples
    --------
    >>> acc = PrivacyAccountant(1.0, owner="client 'A'")
    >>> acc.spend(0.6, label="root counts")
    >>> acc.spend(0.6, label="split counts")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.PrivacyBudgetExceeded: client 'A' cannot spend epsilon=0.6 ...
    >>> acc.epsilon_spent, acc.n_spends
    (0.6, 1)
    """

    def __init__(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        owner: str = "party",
        strict: bool = False,
    ) -> None:
        self.epsilon_budget = check_float(
            epsilon,
            "epsilon",
            "PrivacyAccountant",
            min_value=0.0,
            min_inclusive=False,
            allow_inf=True,
        )
        self.delta_budget = check_float(
            delta, "delta", "PrivacyAccountant", min_value=0.0
        )
        if self.delta_budget >= 1.0:
            raise invalid("delta", "PrivacyAccountant", "a float in [0, 1)", delta)
        self.owner = owner
        self.strict = bool(strict)
        self._spends: list[Spend] = []
        # Exact running totals: floats are dyadic rationals, so a Fraction sum is
        # exact and float() of it is correctly rounded (as math.fsum), in O(1).
        self._epsilon_total = Fraction(0)
        self._delta_total = Fraction(0)
        self._unbounded = False  # an epsilon=inf (noise-free) release was recorded

    @property
    def spends(self) -> tuple[Spend, ...]:
        """Every release so far, in order."""
        return tuple(self._spends)

    @property
    def n_spends(self) -> int:
        """Number of releases so far."""
        return len(self._spends)

    @property
    def n_queries(self) -> int:
        """Number of queries answered so far (a release may hold several)."""
        return sum(s.queries for s in self._spends)

    @property
    def epsilon_spent(self) -> float:
        """Total ε spent (exactly rounded sum; inf after a noise-free release)."""
        if self._unbounded:
            return math.inf
        return float(self._epsilon_total)

    @property
    def delta_spent(self) -> float:
        """Total δ spent."""
        return float(self._delta_total)

    @property
    def epsilon_remaining(self) -> float:
        """Budget left (never negative)."""
        return max(self.epsilon_budget - self.epsilon_spent, 0.0)

    def check(
        self, epsilon: float, delta: float = 0.0, label: str = "", queries: int = 1
    ) -> None:
        """Raise :class:`PrivacyBudgetExceeded` if this spend would not fit."""
        eps = check_float(
            epsilon, "epsilon", "PrivacyAccountant.spend", min_value=0.0, allow_inf=True
        )
        dlt = check_float(delta, "delta", "PrivacyAccountant.spend", min_value=0.0)
        n = check_int(queries, "queries", "PrivacyAccountant.spend", min_value=1)
        if self.strict and not math.isinf(eps):
            self._check_exact(eps, n, label)
        eps, dlt = eps * n, dlt * n
        if not _fits(self.epsilon_spent, eps, self.epsilon_budget):
            raise PrivacyBudgetExceeded(
                f"{self.owner} cannot spend epsilon={eps:g} on {label!r}: "
                f"{self.epsilon_spent:g} of its epsilon budget {self.epsilon_budget:g} "
                f"is spent, {self.epsilon_remaining:g} remains."
            )
        if not _fits(self.delta_spent, dlt, self.delta_budget):
            raise PrivacyBudgetExceeded(
                f"{self.owner} cannot spend delta={dlt:g} on {label!r}: "
                f"{self.delta_spent:g} of its delta budget {self.delta_budget:g} "
                "is spent."
            )

    def _check_exact(self, epsilon: float, queries: int, label: str) -> None:
        """Strict mode: the exact sum after this spend must fit the budget."""
        if math.isinf(self.epsilon_budget):
            return
        total = self._epsilon_total + queries * Fraction(epsilon)
        if self._unbounded or total > Fraction(self.epsilon_budget):
            raise PrivacyBudgetExceeded(
                f"{self.owner} cannot spend {queries} * epsilon={epsilon!r} on "
                f"{label!r}: the exact total would exceed its epsilon budget "
                f"{self.epsilon_budget!r} ({self.epsilon_spent!r} spent)."
            )

    def spend(
        self, epsilon: float, delta: float = 0.0, label: str = "", queries: int = 1
    ) -> None:
        """Record ``queries`` spends of (epsilon, delta) after checking they fit.

        Sequential composition: they cost ``queries × epsilon`` (exact sums).
        """
        self.check(epsilon, delta, label, queries)
        self._spends.append(Spend(float(epsilon), float(delta), label, int(queries)))
        if math.isinf(epsilon):
            self._unbounded = True
        else:
            self._epsilon_total += int(queries) * Fraction(float(epsilon))
        self._delta_total += int(queries) * Fraction(float(delta))

    def release(
        self,
        mechanism: Laplace,
        value: npt.ArrayLike,
        rng: np.random.Generator | None,
        label: str = "",
        queries: int = 1,
    ) -> FloatArray:
        """Spend ``queries × mechanism.epsilon`` and return the noisy ``value``.

        ``value`` may stack several queries (e.g. one histogram per node and
        feature, ``queries`` of them): each entry gets independent noise. The
        budget is checked and recorded *before* the noise is drawn, so a refused
        release leaves no output at all.
        """
        self.spend(mechanism.epsilon, 0.0, label, queries)
        return mechanism.sample(value, rng)

    def __repr__(self) -> str:
        return (
            f"PrivacyAccountant(owner={self.owner!r}, "
            f"epsilon_spent={self.epsilon_spent:g}/{self.epsilon_budget:g}, "
            f"n_spends={self.n_spends})"
        )


def _fits(spent: float, extra: float, budget: float) -> bool:
    if math.isinf(budget):
        return True
    return spent + extra <= budget * (1.0 + _RELATIVE_SLACK)
