"""One skeleton for every server strategy: a table of phases over one state.

A fit is a sequence of rounds; each round is one *phase* of the method (an
:class:`enum.Enum` member of the method's own), answered by one :class:`Step`:

- ``ask(state) -> RoundPlan`` says what to request, from the state alone;
- ``absorb(state, replies) -> next phase`` folds the validated replies into
  the state and names the next phase (None: the fit is done).

The state is one object, complete from :meth:`PhasedStrategy.begin` (built
from the agreed :class:`~fedtrees.federation.FederationInfo`): nothing in it
is an Optional filled in later. A method's strategy subclasses
:class:`PhasedStrategy` and gives the three pieces: how the state begins, the
table of steps, and the result; the driver's optional hooks (secure
aggregation, expected rounds, round metrics) are declared on
:class:`~fedtrees.federation.ServerStrategy` with defaults. The table is
written out in the method's module — no step is looked up by a built name —
so a reader finds the paper's rounds, in order, in one place.

"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from fedtrees.exceptions import LocalProtocolError
from fedtrees.federation import FederationInfo, Payload, RoundPlan, ServerStrategy

__all__ = ["PhasedStrategy", "Step"]

S = TypeVar("S")
"""The type of a strategy's state."""
P = TypeVar("P", bound=enum.Enum)
"""The type of a strategy's phases."""


@dataclass(frozen=True)
class Step(Generic[S, P]):
    """One phase of a protocol: what it asks, and how its replies are folded.

    ``ask(state)`` returns the round's requests (a
    :class:`~fedtrees.federation.RoundPlan`), or None when the phase has
    nothing to ask and the fit is over. ``absorb(state, replies)`` folds the
    validated replies (keyed by client) into ``state`` and returns the next
    phase, or None when the fit is done.
    """

    ask: Callable[[S], RoundPlan | None]
    absorb: Callable[[S, Mapping[str, Payload]], P | None]


class PhasedStrategy(ServerStrategy, Generic[S, P]):
    """A server strategy built from a table of :class:`Step` per phase.

    Subclasses give :meth:`begin` (the state, complete), :meth:`steps` (the
    table), :attr:`first` (the first phase, or :meth:`first_phase` when it
    depends on the state) and :meth:`result`. The round loop's four methods
    are implemented here once.
    """

    first: P
    """The phase of round 1 (a class attribute of the subclass)."""

    def __init__(self) -> None:
        self._state: S | None = None
        self._table: Mapping[P, Step[S, P]] = {}
        self.phase: P | None = None
        """The phase of the next round (None: done)."""
        self.last_phase: P | None = None
        """The phase of the last round absorbed (None: none yet), e.g. for
        :meth:`round_metrics` that report after some phases only."""

    # -- what a method gives ---------------------------------------------------------
    @abc.abstractmethod
    def begin(self, info: FederationInfo) -> S:
        """Return the fit's state, complete, from the agreed info."""

    @abc.abstractmethod
    def steps(self) -> Mapping[P, Step[S, P]]:
        """Return the table of steps, one per phase."""

    @abc.abstractmethod
    def result(self, state: S) -> Any:
        """Return the run's result from the final state."""

    def first_phase(self, state: S) -> P | None:
        """Return the phase of round 1 (default: :attr:`first`)."""
        return self.first

    # -- the state --------------------------------------------------------------------
    @property
    def state(self) -> S:
        """The fit's state (built by :meth:`start`)."""
        if self._state is None:
            raise LocalProtocolError(f"{type(self).__name__}: start() was not called.")
        return self._state

    # -- the round loop's protocol -----------------------------------------------------
    def start(self, info: FederationInfo) -> None:
        """Build the state and the table; the next round is the first phase."""
        self._state = self.begin(info)
        self._table = self.steps()
        self.phase = self.first_phase(self._state)

    def plan_round(self, round: int) -> RoundPlan | None:
        """Return the current phase's requests, or None when the fit is done."""
        if self.phase is None:
            return None
        plan = self._table[self.phase].ask(self.state)
        if plan is None:
            self.phase = None
        return plan

    def aggregate(self, round: int, replies: Mapping[str, Payload]) -> None:
        """Let the current phase fold ``replies`` and name the next phase."""
        if self.phase is None:
            raise LocalProtocolError(
                f"{type(self).__name__}: replies arrived after the last phase."
            )
        self.last_phase = self.phase
        self.phase = self._table[self.phase].absorb(self.state, replies)

    def finish(self) -> Any:
        """Return the run's result."""
        return self.result(self.state)
