from __future__ import annotations

import numpy as np

from fedtrees.algorithms.toy import run_toy
from fedtrees.federation import (
    ClientData,
    Envelope,
    Federation,
    Ledger,
    decode,
    encode,
    serve,
)


def test_ledger_bytes_are_the_codec_sizes() -> None:
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(60, 2)), rng.integers(0, 3, 60)
    groups = np.repeat(["h1", "h2", "h3"], 20)
    ledger = Ledger(keep_messages=True)
    result = run_toy(
        Federation.from_groups(X, y, groups), n_bins=4, n_rounds=2, ledger=ledger
    )
    data = {
        g: ClientData.build(g, X[groups == g], y[groups == g])
        for g in ("h1", "h2", "h3")
    }
    downs = [m for m in ledger.captured if m.direction == "down"]
    assert len(downs) == len(ledger.entries)
    for entry, message in zip(ledger.entries, downs, strict=True):
        request = decode(message.data)
        # Re-encode independently: the size recorded is the codec's size.
        assert entry.bytes_down == len(
            encode(
                Envelope(
                    "request", entry.round, entry.client, entry.kind, request.payload
                )
            )
        )
        assert entry.bytes_up == len(serve(message.data, data[entry.client]))
    assert ledger.summary() == {
        "bytes_up": sum(e.bytes_up for e in ledger.entries),
        "bytes_down": sum(e.bytes_down for e in ledger.entries),
        "rounds": 4,
        "messages": 12,
    }
    assert result.ledger is ledger


def test_per_kind_and_per_round_tables() -> None:
    X, y = np.zeros((6, 1)), [0, 1, 0, 1, 0, 1]
    result = run_toy(
        Federation.from_groups(X, y, [0, 0, 1, 1, 2, 2]), n_bins=3, n_rounds=2
    )
    by_kind = result.ledger.by_kind()
    assert by_kind.index.tolist() == [
        "federation.schema",
        "toy.counts",
        "toy.histogram",
    ]
    assert by_kind["messages"].tolist() == [3, 3, 6]
    assert result.ledger.by_round().index.tolist() == [0, 1, 2, 3]
    assert "rounds=4" in repr(result.ledger)
