"""The local forests server strategy: one round asking every client for its forest."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedtrees.algorithms._one_round import OneRoundStrategy
from fedtrees.algorithms.local._payloads import ForestReply, ForestRequest
from fedtrees.federation import (
    FederationInfo,
)

__all__ = ["LocalForestStrategy", "LocalForests"]


@dataclass(frozen=True, eq=False)
class LocalForests:
    """What the server received: every client's forest reply, by client id."""

    replies: Mapping[str, ForestReply]


class LocalForestStrategy(OneRoundStrategy):
    """Server: one round asking every client for its local forest."""

    metric = "forests"

    def __init__(self, params: Mapping[str, Any], seed: int) -> None:
        super().__init__()
        self.params, self.seed = dict(params), seed

    def start(self, info: FederationInfo) -> None:
        """Build the one request from the agreed schema."""
        super().start(info)
        self.request = ForestRequest(
            params=json.dumps(self.params, sort_keys=True),
            classes=np.asarray(info.schema.classes, dtype=str),
            n_features=info.schema.n_features,
            seed=self.seed,
        )

    def finish(self) -> LocalForests:
        """Return the replies by client id."""
        return LocalForests(self.sorted_replies())  # type: ignore[arg-type]
