"""One home for the server side of one-round methods (each client replies once)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from fedtrees.federation import FederationInfo, Payload, RoundPlan, ServerStrategy

__all__ = ["OneRoundStrategy"]


class OneRoundStrategy(ServerStrategy):
    """Broadcast one request after the agreement; keep every validated reply.

    A subclass builds :attr:`request` in :meth:`start` (calling
    ``super().start(info)``), names what it counts in :attr:`metric` and returns
    its result from ``finish``.
    """

    metric: ClassVar[str] = "replies"

    def __init__(self) -> None:
        self.request: Payload | None = None
        self.clients: tuple[str, ...] = ()
        self.replies: dict[str, Payload] = {}

    def start(self, info: FederationInfo) -> None:
        """Remember the clients; subclasses then build the request."""
        self.clients = info.clients

    def expected_rounds(self) -> int:
        """Return 1: a single round after the agreement."""
        return 1

    def plan_round(self, round: int) -> RoundPlan | None:
        """Round 1: every client answers the request; then done."""
        if round > 1 or self.request is None:
            return None
        return RoundPlan.broadcast(self.request, self.clients)

    def aggregate(self, round: int, replies: Mapping[str, Payload]) -> None:
        """Keep every reply (validated by the round loop against the request)."""
        self.replies.update(replies)

    def round_metrics(self, round: int) -> dict[str, float]:
        """Return the number of replies received so far."""
        return {self.metric: float(len(self.replies))}

    def sorted_replies(self) -> dict[str, Payload]:
        """Return the replies by client id, in client order."""
        return dict(sorted(self.replies.items()))
