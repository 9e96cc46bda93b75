"""One home for the server side of one-round methods (each client replies once).

The DP forest, the synthetic-data method and the local baselines ask every
client once, after the agreement, for the model it fits on its own rows
(:attr:`OneRoundPhase.LOCAL_MODELS`); what the server then does with the
models is each method's :meth:`~fedtrees.algorithms._phased.PhasedStrategy.result`.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Generic, TypeVar

from fedtrees.algorithms._phased import PhasedStrategy, Step
from fedtrees.federation import FederationInfo, Payload, RoundPlan, as_reply

__all__ = ["OneRoundPhase", "OneRoundState", "OneRoundStrategy"]

Q = TypeVar("Q", bound=Payload)
"""The type of the one request."""
A = TypeVar("A", bound=Payload)
"""The type of its replies."""


class OneRoundPhase(enum.Enum):
    """The one round of a one-round method."""

    LOCAL_MODELS = "local_models"
    """Every client fits its model on its own rows and sends it up."""


@dataclass(eq=False)
class OneRoundState(Generic[Q, A]):
    """The clients, the one request (built at the agreement) and the replies."""

    clients: tuple[str, ...]
    request: Q
    replies: dict[str, A] = field(default_factory=dict)
    """The validated replies, by client id in client order."""


class OneRoundStrategy(
    PhasedStrategy[OneRoundState[Q, A], OneRoundPhase], Generic[Q, A]
):
    """Broadcast one request after the agreement; keep every validated reply.

    A subclass builds the request from the agreed info in :meth:`request`,
    names its replies' type in :attr:`reply_type` and what it counts in
    :attr:`metric`, and returns its result from ``result(state)``.
    """

    first = OneRoundPhase.LOCAL_MODELS
    metric: ClassVar[str] = "replies"
    reply_type: type[A]
    """The payload type of the replies (checked by the round loop)."""

    @abc.abstractmethod
    def request(self, info: FederationInfo) -> Q:
        """Return the one request, built on the agreed info."""

    def begin(self, info: FederationInfo) -> OneRoundState[Q, A]:
        """Remember the clients; build the request."""
        return OneRoundState(info.clients, self.request(info))

    def steps(self) -> Mapping[OneRoundPhase, Step[OneRoundState[Q, A], OneRoundPhase]]:
        """Return the table: the one round."""
        return {OneRoundPhase.LOCAL_MODELS: Step(self._ask, self._absorb)}

    def expected_rounds(self) -> int:
        """Return 1: a single round after the agreement."""
        return 1

    def round_metrics(self, round: int) -> dict[str, float]:
        """Return the number of replies received so far."""
        return {self.metric: float(len(self.state.replies))}

    def _ask(self, st: OneRoundState[Q, A]) -> RoundPlan:
        return RoundPlan.broadcast(st.request, st.clients)

    def _absorb(
        self, st: OneRoundState[Q, A], replies: Mapping[str, Payload]
    ) -> OneRoundPhase | None:
        """Keep every reply (validated by the round loop against the request)."""
        st.replies = {c: as_reply(replies[c], self.reply_type) for c in sorted(replies)}
        return None
