"""An audit that cannot be fooled (issue 12, item 4).

Shape guessing missed a client's rows flattened to (n·F,) or padded to (n + 1,),
flagged a legitimate FedForest array of 41 entries because a client had 41 rows,
and stopped at the first undecodable message. The size audit (n vs 2n + 1 rows)
and the value audit (rows, columns, sorted columns, labels, category values)
catch every leak below, pass the honest run, and report garbage by round and
client.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from fedtrees import FedForestClassifier
from fedtrees.algorithms.toy import run_toy
from fedtrees.audit import (
    audit_row_scaling,
    compare_message_sizes,
    find_client_values,
    row_scaled_pair,
)
from fedtrees.exceptions import PrivacyAuditError, RemoteProtocolError
from fedtrees.federation import (
    CapturedMessage,
    ClientData,
    Fault,
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
)
from tests.audit_helpers import estimator_fit


def _bytes(column: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(column).view(np.uint8)  # one value per byte


LEAKS: dict[str, Callable[[ClientData], np.ndarray]] = {
    "flattened": lambda d: d.matrix.reshape(-1),  # (n·F,): rows one after another
    "flattened_by_column": lambda d: d.matrix.T.reshape(-1),
    "padded": lambda d: np.append(d.matrix[:, 1], 0.0),  # (n + 1,)
    "sorted_column": lambda d: np.sort(d.matrix[:, 2]),  # a sketch of all values
    "float32": lambda d: d.matrix[:, 0].astype(np.float32),
    "labels": lambda d: d.y.to_numpy().astype(np.float64),
    "rows_in_a_corner": lambda d: np.pad(d.matrix[:3], 2).astype(np.float32),
    "raw_bytes": lambda d: np.append(7, _bytes(d.matrix[:, 1])).astype(np.float32),
}
FOUND = {
    "flattened": r"holds \d+ row\(s\) of client 'a'",
    "flattened_by_column": "holds column 'x0' of client 'a'",
    "padded": "holds column 'x1' of client 'a'",
    "sorted_column": "holds column 'x2' of client 'a', sorted",
    "float32": "holds column 'x0' of client 'a'",
    "labels": "holds the labels of client 'a'",
    "rows_in_a_corner": r"holds 3 row\(s\) of client 'a'",
    "raw_bytes": r"holds column 'x1' of client 'a' \(as raw float64 bytes\)",
}


@payload("test.hostile_leak_reply")
class LeakReply(Payload):
    values: np.ndarray


@payload("test.hostile_leak")
class Leak(Payload):
    how: str

    def expected_reply(self) -> ReplySpec:
        return ReplySpec(LeakReply, {"values": Field.array("f")})


@handler("test.hostile_leak")
def leak(request: Leak, data: ClientData) -> LeakReply:
    return LeakReply(LEAKS[request.how](data))


class Leaky(ServerStrategy):
    def __init__(self, how: str) -> None:
        self.how = how

    def start(self, info: FederationInfo) -> None:
        self.clients = info.clients

    def plan_round(self, round: int) -> RoundPlan | None:
        return RoundPlan.broadcast(Leak(self.how), self.clients) if round == 1 else None

    def aggregate(self, round: int, replies: object) -> None:
        pass

    def finish(self) -> None:
        return None


def _leaky_fit(how: str) -> Callable[[Federation], Ledger]:
    def fit(fed: Federation) -> Ledger:
        ledger = Ledger(keep_messages=True)
        fed.run(Leaky(how), task="classification", ledger=ledger)
        return ledger

    return fit


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    sizes = [29, 31, 37]
    X = rng.normal(size=(sum(sizes), 3))
    y = (X[:, 0] > 0).astype(np.int64)
    return X, y, np.repeat(["a", "b", "c"], sizes)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("how", sorted(LEAKS))
def test_the_value_audit_finds_a_leak_whatever_its_shape(how: str) -> None:
    X, y, groups = _data()
    fed = Federation.from_groups(X, y, groups)
    ledger = _leaky_fit(how)(fed)
    with pytest.raises(
        PrivacyAuditError,
        match=rf"round 1, client 'a', 'test.hostile_leak_reply' \(up\): field "
        rf"'values' {FOUND[how]}",
    ):
        find_client_values(ledger, fed)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("how", ["flattened", "padded", "sorted_column", "labels"])
def test_the_size_audit_finds_a_field_that_grows_with_the_rows(how: str) -> None:
    X, y, groups = _data()
    small, large = row_scaled_pair(X, y, groups)
    assert small.row_counts() == {"a": 29, "b": 31, "c": 37}
    assert large.row_counts() == {"a": 59, "b": 63, "c": 75}
    ledgers = _leaky_fit(how)(small), _leaky_fit(how)(large)
    with pytest.raises(
        PrivacyAuditError,
        match=r"round 1, client 'b', 'test.hostile_leak_reply' \(up\): field "
        r"'values' has shape \(\d+,\) with n rows but \(\d+,\) with 2n \+ 1 rows",
    ):
        compare_message_sizes(*ledgers)


def test_a_field_declared_per_row_is_listed_not_blamed() -> None:
    X, y, groups = _data()
    declared = {"test.hostile_leak_reply": ["values"]}
    report = audit_row_scaling(_leaky_fit("padded"), X, y, groups, per_row=declared)
    assert report.per_row_by_design == ("test.hostile_leak_reply.values",)
    assert report.messages == 3 * 2 * 3 * 2  # sizes, then each run's values
    assert not report.findings


@pytest.mark.hostile("clear_error")
def test_both_audits_report_together() -> None:
    X, y, groups = _data()
    with pytest.raises(PrivacyAuditError, match="The size audit") as caught:
        audit_row_scaling(_leaky_fit("padded"), X, y, groups)
    text = str(caught.value)
    assert text.count("The value audit") == 2  # the n-row and the 2n + 1-row run
    assert "'values' has shape (38,) with n rows but (76,) with 2n + 1 rows" in text
    assert "holds column 'x1' of client 'c'" in text


@payload("test.chunk_reply")
class ChunkReply(Payload):
    values: np.ndarray
    more: bool


@payload("test.chunk")
class Chunk(Payload):
    index: int

    def expected_reply(self) -> ReplySpec:
        return ReplySpec(ChunkReply, {"values": Field.array("f", (4,))})


@handler("test.chunk")
def chunk(request: Chunk, data: ClientData) -> ChunkReply:
    column = np.append(data.matrix[:, 0], np.zeros(4 * (request.index + 1)))
    start = 4 * request.index
    return ChunkReply(column[start : start + 4], start + 4 < data.n_rows)


class Chunked(ServerStrategy):
    """Uploads column 0 four values a round, as long as any client has more."""

    def start(self, info: FederationInfo) -> None:
        self.clients, self.more = info.clients, True

    def plan_round(self, round: int) -> RoundPlan | None:
        return (
            RoundPlan.broadcast(Chunk(round - 1), self.clients) if self.more else None
        )

    def aggregate(self, round: int, replies: dict[str, ChunkReply]) -> None:
        self.more = any(r.more for r in replies.values())

    def finish(self) -> None:
        return None


@pytest.mark.hostile("clear_error")
def test_rows_sent_in_fixed_size_chunks_change_the_number_of_rounds() -> None:
    # Every field keeps its size and no message holds MIN_RUN values of a column;
    # only the number of rounds betrays the rows.
    X, y, groups = _data()
    small, large = row_scaled_pair(X, y, groups)
    ledgers = []
    for fed in (small, large):
        ledgers.append(Ledger(keep_messages=True))
        fed.run(Chunked(), task="classification", ledger=ledgers[-1])
    find_client_values(ledgers[0], small)  # too short a run to be seen
    with pytest.raises(
        PrivacyAuditError,
        match=r"the run has 11 rounds with n rows but 20 with 2n \+ 1 rows; round "
        r"11, client 'a', 'test.chunk' \(down\): field '\*' is sent only in the "
        r"run with 2n \+ 1 rows",
    ):
        compare_message_sizes(*ledgers)


@pytest.mark.hostile("correct")
def test_a_client_row_count_equal_to_an_array_length_is_no_finding() -> None:
    # 37/41/43 rows: FedForest's quantile mode sends arrays of 41 entries (here
    # thresholds and bin statistics), which shape guessing took for client 'b''s rows.
    rng = np.random.default_rng(2)
    sizes = [37, 41, 43]
    X = rng.normal(size=(sum(sizes), 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    fed = Federation.from_groups(X, y, np.repeat(["a", "b", "c"], sizes))
    ledger = estimator_fit(
        lambda: FedForestClassifier(candidates="quantile", random_state=0)
    )(fed)
    lengths = {
        n
        for m in ledger.captured
        for v in vars(_payload(m)).values()
        if isinstance(v, np.ndarray)
        for n in v.shape
    }
    assert set(sizes) & lengths  # a legitimate array has a client's row count
    report = find_client_values(ledger, fed)
    assert report.messages == len(ledger.captured)
    assert not report.findings


def _payload(message: CapturedMessage) -> Payload:
    from fedtrees.federation import decode

    result = decode(message.data).payload
    assert result is not None
    return result


@pytest.mark.hostile("clear_error")
def test_a_garbage_reply_is_reported_by_round_and_client() -> None:
    X, y, groups = _data()
    fed = Federation.from_groups(X, y, groups, faults=[Fault("b", "garbage", 2)])
    ledger = Ledger(keep_messages=True)
    with pytest.raises(RemoteProtocolError, match="'b'"):
        run_toy(fed, n_rounds=2, ledger=ledger)
    assert any(m.round == 2 and m.client == "b" for m in ledger.captured)
    with pytest.raises(
        PrivacyAuditError,
        match=r"round 2, client 'b', 'toy.histogram' \(up\): field '\*' cannot be "
        r"decoded \(Malformed fedtrees message",
    ) as caught:
        find_client_values(ledger, fed)
    assert str(caught.value).count("cannot be decoded") == 1  # the rest was audited
    with pytest.raises(PrivacyAuditError, match=r"round 2, client 'b'.*cannot be"):
        compare_message_sizes(ledger, ledger)  # the size audit reports it too


def _categorical() -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    n = 60
    X = pd.DataFrame(
        {
            "ward": pd.Categorical(rng.choice(["Ada Byron", "Max Planck"], n)),
            "age": rng.normal(50, 10, n),
        }
    )
    return X, (X["age"] > 50).to_numpy().astype(int), np.repeat(["a", "b"], n // 2)


def test_category_values_are_reported_in_the_agreement() -> None:
    X, y, groups = _categorical()
    fed = Federation.from_groups(X, y, groups)
    ledger = Ledger(keep_messages=True)
    run_toy(fed, feature=1, n_rounds=1, ledger=ledger)
    report = find_client_values(ledger, fed)
    assert report.category_values == {
        c: {"category values in federation.schema_reply"} for c in "ab"
    }


@pytest.mark.hostile("clear_error")
def test_category_values_outside_the_allowed_messages_fail_the_audit() -> None:
    X, y, groups = _categorical()
    fed = Federation.from_groups(X, y, groups)
    ledger = Ledger(keep_messages=True)
    run_toy(fed, feature=1, n_rounds=1, ledger=ledger)
    with pytest.raises(
        PrivacyAuditError,
        match=r"round 0, client 'a', 'federation.schema_reply' \(up\): field "
        r"'categories' holds category values of client 'a'",
    ):
        find_client_values(ledger, fed, categories_allowed_in=())
