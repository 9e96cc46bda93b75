"""The local forests server strategy: one round asking every client for its forest."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedtrees.algorithms._one_round import OneRoundState, OneRoundStrategy
from fedtrees.algorithms.local._payloads import ForestReply, ForestRequest
from fedtrees.federation import (
    FederationInfo,
)

__all__ = ["LocalForestStrategy", "LocalForests"]


@dataclass(frozen=True, eq=False)
class LocalForests:
    """What the server received: every client's forest reply, by client id."""

    replies: Mapping[str, ForestReply]


class LocalForestStrategy(OneRoundStrategy[ForestRequest, ForestReply]):
    """Server: one round asking every client for its local forest."""

    metric = "forests"
    reply_type = ForestReply

    def __init__(self, params: Mapping[str, Any], seed: int) -> None:
        super().__init__()
        self.params, self.seed = dict(params), seed

    def request(self, info: FederationInfo) -> ForestRequest:
        """Build the one request from the agreed schema."""
        return ForestRequest(
            params=json.dumps(self.params, sort_keys=True),
            classes=np.asarray(info.schema.classes, dtype=str),
            n_features=info.schema.n_features,
            seed=self.seed,
        )

    def result(self, state: OneRoundState[ForestRequest, ForestReply]) -> LocalForests:
        """Return the replies by client id."""
        return LocalForests(state.replies)
