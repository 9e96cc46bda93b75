from __future__ import annotations

import numpy as np
import pytest

from fedtrees.algorithms.toy import run_toy
from fedtrees.exceptions import LocalProtocolError, PrivacyAuditError
from fedtrees.federation import (
    ClientData,
    Federation,
    FederationInfo,
    Field,
    Ledger,
    Payload,
    ReplySpec,
    RoundPlan,
    audit_messages,
    handler,
    payload,
    run,
)

ROWS = {"a": 29, "b": 31, "c": 37}


def _federation() -> Federation:
    rng = np.random.default_rng(2)
    n = sum(ROWS.values())
    return Federation.from_groups(
        rng.normal(size=(n, 2)),
        rng.integers(0, 2, n),
        np.repeat(list(ROWS), list(ROWS.values())),
    )


def test_toy_protocol_passes_the_audit() -> None:
    fed = _federation()
    ledger = Ledger(keep_messages=True)
    run_toy(fed, n_bins=5, n_rounds=2, ledger=ledger)
    assert fed.row_counts() == ROWS
    assert audit_messages(ledger, fed.row_counts()) == 2 * ledger.messages


@payload("test.leak_reply")
class LeakReply(Payload):
    column: np.ndarray


@payload("test.leak")
class Leak(Payload):
    def expected_reply(self) -> ReplySpec:
        return ReplySpec(LeakReply, {"column": Field.array("f")})


@handler("test.leak")
def leak(request: Leak, data: ClientData) -> LeakReply:
    return LeakReply(data.matrix[:, 0])  # row-level data: exactly what must not happen


class Leaky:
    def start(self, info: FederationInfo) -> None:
        self.clients = info.clients

    def plan_round(self, round: int) -> RoundPlan | None:
        return RoundPlan.broadcast(Leak(), self.clients) if round == 1 else None

    def aggregate(self, round: int, replies: object) -> None:
        pass

    def finish(self) -> None:
        return None


def test_a_protocol_that_moves_rows_fails_the_audit() -> None:
    fed = _federation()
    ledger = Ledger(keep_messages=True)
    run(Leaky(), fed.transport, task="classification", ledger=ledger)
    with pytest.raises(
        PrivacyAuditError,
        match=r"round 1, client 'a', 'test.leak' \(up\): field 'column' has shape \(29,\)",
    ):
        audit_messages(ledger, fed.row_counts())


def test_audit_needs_captured_messages() -> None:
    with pytest.raises(LocalProtocolError, match="keep_messages=True"):
        audit_messages(Ledger(), {"a": 3})
