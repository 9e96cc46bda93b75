from __future__ import annotations

import numpy as np
import pytest

from fedtrees.algorithms.toy import run_toy
from fedtrees.audit import audit_row_scaling, find_client_values
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
    ServerStrategy,
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


def _toy(fed: Federation) -> Ledger:
    ledger = Ledger(keep_messages=True)
    run_toy(fed, n_bins=5, n_rounds=2, ledger=ledger)
    return ledger


def test_toy_protocol_passes_the_audit() -> None:
    fed = _federation()
    ledger = _toy(fed)
    assert fed.row_counts() == ROWS
    report = find_client_values(ledger, fed)
    assert report.messages == 2 * ledger.messages
    assert not report.findings


def test_toy_protocol_sizes_do_not_follow_the_rows() -> None:
    rng = np.random.default_rng(2)
    n = sum(ROWS.values())
    groups = np.repeat(list(ROWS), list(ROWS.values()))
    X, y = rng.normal(size=(n, 2)), rng.integers(0, 2, n)
    report = audit_row_scaling(_toy, X, y, groups)
    # both runs, every message: the size audit, then the value audit of each run
    assert report.messages == 3 * 2 * 3 * 4
    assert report.per_row_by_design == ()


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


class Leaky(ServerStrategy):
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
        match=r"round 1, client 'a', 'test.leak_reply' \(up\): field 'column' "
        r"holds column 'x0' of client 'a'",
    ):
        find_client_values(ledger, fed)


def test_audit_needs_captured_messages() -> None:
    with pytest.raises(LocalProtocolError, match="keep_messages=True"):
        find_client_values(Ledger(), _federation())
