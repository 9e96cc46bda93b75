"""The DP forest server strategy: one round asking every client for its DP tree."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedtrees.algorithms._one_round import OneRoundState, OneRoundStrategy
from fedtrees.algorithms._ranges import resolve_ranges
from fedtrees.algorithms.dpforest._payloads import DPTreeReply, DPTreeRequest
from fedtrees.federation import (
    FederationInfo,
)
from fedtrees.learners import validate_plan

__all__ = ["DPTreeStrategy", "DPTrees"]


@dataclass(frozen=True, eq=False)
class DPTrees:
    """What the server received: the request and every client's reply."""

    request: DPTreeRequest
    replies: Mapping[str, DPTreeReply]


class DPTreeStrategy(OneRoundStrategy[DPTreeRequest, DPTreeReply]):
    """Server: one round asking every client for its DP tree."""

    metric = "trees"
    reply_type = DPTreeReply

    def __init__(
        self, settings: Mapping[str, Any], declared_ranges: object, owner: str
    ) -> None:
        super().__init__()
        self.settings, self.declared, self.owner = (
            dict(settings),
            declared_ranges,
            owner,
        )

    def request(self, info: FederationInfo) -> DPTreeRequest:
        """Resolve the declared ranges on the agreed schema; build the request."""
        ranges = resolve_ranges(self.declared, info, self.owner)
        s = self.settings
        validate_plan(
            s["epsilon"], s["max_depth"], ranges.shape[0], s["budget"], self.owner
        )
        return DPTreeRequest(
            ranges=ranges, classes=np.asarray(info.schema.classes, dtype=str), **s
        )

    def result(self, state: OneRoundState[DPTreeRequest, DPTreeReply]) -> DPTrees:
        """Return the request and the replies by client id."""
        return DPTrees(state.request, state.replies)
