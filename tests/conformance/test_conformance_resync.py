"""Every estimator: clients that lose their kept state do not change the model.

A client that forgets its per-run state answers a resync and is sent the full
request in the same round; a protocol whose clients keep no state needs none.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedtrees.federation import Fault, Ledger, Resync, decode
from tests.conformance import checks
from tests.conformance.registry import SITES, Entry, params


def _resyncs(ledger: Ledger) -> int:
    return sum(
        isinstance(decode(m.data).payload, Resync)
        for m in ledger.captured
        if m.direction == "up"
    )


@pytest.mark.parametrize("entry", params("resync"))
def test_clients_that_forget_their_state_do_not_change_the_model(
    entry: Entry,
) -> None:
    reference, clean, _ = checks.clean_fit(entry)
    rng = np.random.default_rng(7)
    rounds = rng.integers(1, clean.rounds, size=3)
    faults = [
        Fault(str(site), "forget", round=int(r))
        for site, r in zip(rng.choice(SITES, 3), rounds, strict=True)
    ]
    model, ledger, _ = checks.fit(entry, faults)
    checks.same_model(entry, reference, model)
    assert ledger.rounds == clean.rounds  # a resync stays inside its round
    # Every client forgetting before every round: a stateful protocol resyncs.
    every = [Fault(site, "forget") for site in SITES]
    model, ledger, _ = checks.fit(entry, every)
    checks.same_model(entry, reference, model)
    assert ledger.rounds == clean.rounds
    assert (_resyncs(ledger) > 0) == entry.keeps_state
