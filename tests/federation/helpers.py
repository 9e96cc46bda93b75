"""Small strategies for runtime tests."""

from __future__ import annotations

from collections.abc import Mapping

from fedtrees.federation import FederationInfo, Payload, RoundPlan, ServerStrategy


class NullStrategy(ServerStrategy):
    """Agrees, then stops: exercises round 0 only."""

    def __init__(self) -> None:
        self.info: FederationInfo | None = None

    def start(self, info: FederationInfo) -> None:
        self.info = info

    def plan_round(self, round: int) -> RoundPlan | None:
        return None

    def aggregate(self, round: int, replies: Mapping[str, Payload]) -> None:
        raise AssertionError("no rounds were planned")

    def finish(self) -> FederationInfo | None:
        return self.info
