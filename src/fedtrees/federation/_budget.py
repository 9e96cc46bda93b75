"""A site's own privacy budget: a total ε, and every DP release charged to it.

Without it, a DP request is bounded only by the ε the request itself names (its
handler's :class:`~fedtrees.privacy.PrivacyAccountant`): a re-run job, or a
request asking ε = 1e9, would be answered and nothing at the site would add them
up. A site may therefore declare a :class:`SiteBudget`: the total ε it will ever
release, and a store of the charges made against it (:class:`BudgetFile` keeps
them in a file across runs and processes). Every DP handler charges its
request's ε to the site (:meth:`ClientData.charge_privacy
<fedtrees.federation.ClientData.charge_privacy>`) *before* drawing any noise; a
charge that would exceed the total raises :class:`PrivacyBudgetExceeded` naming
the site's budget, which the site's runtime sends to the server as its error
reply. The handler's own accountant then spends within the charge.

- **Decision (what is charged):** every answered DP request, again on every run:
  a re-run draws fresh noise (its seed is the server's choice). An ε = ∞
  (noise-free) request never fits a finite budget. A charge is recorded when
  the site commits to answering, so a handler that fails afterwards stays
  charged: the record may over-count, never under-count.
- **Decision (where it lives):** beside :class:`ClientData`, in the site runtime,
  not in ``privacy/``: the in-process :class:`~fedtrees.federation.Federation`
  and the Flower site both build it from plain settings (a total and a path),
  and ``federation`` imports nothing from ``privacy`` (the layers of the
  architecture). Its file store (:mod:`fedtrees.federation._budget_file`) is the
  one file ``federation`` writes outside ``flower/``: the in-process sites, which
  must not need Flower, keep their ledger too.
- Sums are exact (``Fraction`` of every float charge, as the accountant's), with
  the accountant's relative slack of 1e-9 so that three charges of 0.1 fit a
  total of 0.3.
"""

from __future__ import annotations

import math
import numbers
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from typing import Final, Protocol

from fedtrees._validation import check_float
from fedtrees.exceptions import PrivacyBudgetExceeded

__all__ = ["BudgetCharge", "BudgetStore", "MemoryBudgetStore", "SiteBudget"]

_RELATIVE_SLACK: Final = Fraction(1, 10**9)
"""As :class:`~fedtrees.privacy.PrivacyAccountant` (``strict=False``)."""


@dataclass(frozen=True)
class BudgetCharge:
    """One DP release charged to a site: its ε, the request, the run, when (UTC)."""

    epsilon: float
    request: str
    run: str | None
    time: str


Decide = Callable[[tuple[BudgetCharge, ...]], BudgetCharge]
"""Given a site's charges so far, return the new charge (or raise to refuse)."""


class BudgetStore(Protocol):
    """Where a site's charges are kept (in memory, or a file: :class:`BudgetFile`)."""

    def charges(self, site: str) -> tuple[BudgetCharge, ...]:
        """Every charge of ``site`` so far, in order."""
        ...

    def append(self, site: str, decide: Decide) -> BudgetCharge:
        """Append ``decide(charges of site)`` as one step no other charge interleaves.

        If ``decide`` raises, nothing is recorded and the exception propagates.
        """
        ...


class MemoryBudgetStore:
    """Charges kept in this process, for as long as the store lives.

    Examples
    --------
    >>> store = MemoryBudgetStore()
    >>> store.append("a", lambda done: BudgetCharge(0.5, "doc", None, "now")).epsilon
    0.5
    >>> len(store.charges("a")), store.charges("b")
    (1, ())
    """

    def __init__(self) -> None:
        self._charges: dict[str, tuple[BudgetCharge, ...]] = {}
        self._lock = threading.Lock()

    def charges(self, site: str) -> tuple[BudgetCharge, ...]:
        """Every charge of ``site`` so far, in order."""
        with self._lock:
            return self._charges.get(site, ())

    def append(self, site: str, decide: Decide) -> BudgetCharge:
        """Append ``decide(charges of site)`` under this store's lock."""
        with self._lock:
            done = self._charges.get(site, ())
            charge = decide(done)
            self._charges[site] = (*done, charge)
            return charge


class SiteBudget:
    """The total ε one site releases, over every run, and the store of its charges.

    Parameters
    ----------
    site : str
        The site's client id (it names the budget in every refusal).
    epsilon : float > 0, finite
        The site's total ε: the sum of the ε of every DP release it answers.
    store : BudgetStore, optional
        Where the charges are kept; a :class:`BudgetFile` keeps them across
        processes and runs. Default: a new :class:`MemoryBudgetStore` (the spend
        lives as long as this object).
    run : str, optional
        The run the charges belong to (Flower's run id), recorded with each.

    Examples
    --------
    >>> budget = SiteBudget("Cleveland", 1.5)
    >>> budget.charge(1.0, "dpforest.tree")
    >>> budget.charge(1.0, "dpforest.tree")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.PrivacyBudgetExceeded: Site 'Cleveland' privacy budget: ...
    >>> budget.epsilon_spent, budget.epsilon_remaining
    (1.0, 0.5)
    """

    def __init__(
        self,
        site: str,
        epsilon: float,
        store: BudgetStore | None = None,
        *,
        run: str | None = None,
    ) -> None:
        self.site = str(site)
        self.epsilon = check_float(
            epsilon, "epsilon", "SiteBudget", min_value=0.0, min_inclusive=False
        )
        self.store: BudgetStore = MemoryBudgetStore() if store is None else store
        self.run = run

    def charges(self) -> tuple[BudgetCharge, ...]:
        """Every release charged to this site so far, in order."""
        return self.store.charges(self.site)

    @property
    def epsilon_spent(self) -> float:
        """The ε charged so far (exactly rounded sum)."""
        return float(_total(self.charges()))

    @property
    def epsilon_remaining(self) -> float:
        """The ε left (never negative)."""
        return max(self.epsilon - self.epsilon_spent, 0.0)

    def charge(self, epsilon: float, request: str) -> None:
        """Charge one release of ``epsilon`` for ``request`` (its kind and part).

        Raises
        ------
        PrivacyBudgetExceeded
            Before anything is recorded or released, if the charge would take
            the site's spend above its total (an ε that is not a positive number
            never fits), naming the site's total, its spend and the request.
        """
        asked = _as_epsilon(epsilon)

        def decide(done: tuple[BudgetCharge, ...]) -> BudgetCharge:
            spent = _total(done)
            if not _fits(spent, asked, self.epsilon):
                raise PrivacyBudgetExceeded(
                    self._refusal(float(spent), len(done), asked, request)
                )
            return BudgetCharge(asked, request, self.run, _now())

        self.store.append(self.site, decide)

    def _refusal(self, spent: float, n: int, asked: float, request: str) -> str:
        why = (
            "a noise-free release, which no finite budget allows"
            if math.isinf(asked)
            else "not a positive epsilon"
            if not asked > 0.0
            else "more than the budget has left"
        )
        return (
            f"Site {self.site!r} privacy budget: total epsilon={self.epsilon:g}, "
            f"spent {spent:g} over {n} release(s); this request ({request}) asks "
            f"epsilon={asked:g}, {why}: refused. The site's operator sets the "
            "total; answered releases stay charged across runs."
        )

    def __repr__(self) -> str:
        return (
            f"SiteBudget(site={self.site!r}, epsilon={self.epsilon:g}, "
            f"store={type(self.store).__name__})"
        )


def _as_epsilon(epsilon: object) -> float:
    """Return the requested ε as a float (NaN for a non-number: it never fits)."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        return math.nan
    return float(epsilon)


def _total(charges: tuple[BudgetCharge, ...]) -> Fraction:
    return sum((Fraction(c.epsilon) for c in charges), Fraction(0))


def _fits(spent: Fraction, asked: float, total: float) -> bool:
    if not (asked > 0.0 and math.isfinite(asked)):
        return False
    return spent + Fraction(asked) <= Fraction(total) * (1 + _RELATIVE_SLACK)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
