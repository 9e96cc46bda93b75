"""Reading a fit's messages: record the ledger, pair replies with requests, count bytes."""

from __future__ import annotations

from typing import Any

import numpy as np

from fedtrees.audit import recording
from fedtrees.federation import Federation, Ledger, Payload, decode
from fedtrees.tree import Tree


def fit_with_ledger(estimator: Any, federation: Federation) -> Ledger:
    """Fit ``estimator`` on ``federation``, keeping every message of the run."""
    with recording() as ledgers:
        estimator.fit_federation(federation)
    (ledger,) = ledgers
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


def check_sketch_sizes(reply: Any, q: int, fp: int) -> np.ndarray:
    """docs/fedforest.md, "What travels (protocol v2)": min(q, r) + 1 points of 8 bytes per pair where r > 0; return r.

    Without bootstrap a node's weight (``counts``) is the client's rows there.
    """
    r = np.asarray(reply.counts, dtype=np.int64)
    want = np.where(r > 0, np.minimum(q, r) + 1, 0)
    assert np.array_equal(reply.n_points, np.repeat(want[:, None], fp, axis=1))
    assert reply.points.nbytes == 8 * fp * int(want.sum())
    return r


def check_bin_sizes(reply: Any, count: np.ndarray, r: np.ndarray, width: int) -> None:
    """docs/fedforest.md, "What travels (protocol v2)": at most min(count + 1, r) non-zero bins per pair, whole counts in
    uint8 (rows <= 255), every pair's bins holding its node's r rows."""
    index = reply.bin_index.astype(np.int64)
    pair = np.repeat(np.arange(count.size), count.ravel() + 1)[index]
    bins = np.bincount(pair, minlength=count.size).reshape(count.shape)
    assert np.all(bins <= np.minimum(count + 1, r[:, None]))
    assert reply.bin_stats.dtype == np.uint8
    assert reply.bin_stats.shape[1] == width
    per_pair = np.zeros((count.size, width), np.int64)
    np.add.at(per_pair, pair, reply.bin_stats.astype(np.int64))
    assert np.array_equal(per_pair.sum(axis=1), np.repeat(r, count.shape[1]))
