"""Reading a fit's messages: record the ledger, pair replies with requests, count bytes."""

from __future__ import annotations

from typing import Any

import numpy as np

from fedtrees.federation import Federation, Ledger, Payload, decode
from fedtrees.tree import Tree


def fit_with_ledger(estimator: Any, federation: Federation) -> Ledger:
    """Fit ``estimator`` on ``federation``, keeping every message of the run."""
    ledger = Ledger(keep_messages=True)
    estimator._run = lambda fed, strategy, callbacks=(): fed.run(
        strategy, task="classification", ledger=ledger
    )
    estimator.fit_federation(federation)
    return ledger


def exchanges(ledger: Ledger) -> list[tuple[Any, Payload, Payload]]:
    """Every (message, request, reply) of the run, replies paired by round and client."""
    down = {
        (m.round, m.client): decode(m.data).payload
        for m in ledger.captured
        if m.direction == "down"
    }
    return [
        (m, down[(m.round, m.client)], decode(m.data).payload)
        for m in ledger.captured
        if m.direction == "up"
    ]


def packed_bytes(trees: list[Tree], n_classes: int) -> int:
    """ICDTA4FL's P: (49 + 8C)·n + 8(n + 1) + 16·b per tree, 8(T + 1) pointers."""
    total = 8 * (len(trees) + 1)
    for t in trees:
        n, b = t.n_nodes, t.branch_code.shape[0]
        total += (49 + 8 * n_classes) * n + 8 * (n + 1) + 16 * b
    return total


def array_bytes(payload: object) -> int:
    """Bytes of a payload's array fields (a message adds the codec's header)."""
    return sum(v.nbytes for v in vars(payload).values() if isinstance(v, np.ndarray))
