"""Per-run client state in the round loop: resync in the same round, encode once."""

from __future__ import annotations

import numpy as np
import pytest

from fedtrees.exceptions import RemoteProtocolError
from fedtrees.federation import (
    ClientData,
    ClientState,
    InProcessTransport,
    Ledger,
    MeteredTransport,
    Payload,
    ReplySpec,
    Resync,
    RoundPlan,
    _codec,
    handler,
    payload,
)
from fedtrees.federation._driver import _Loop


@payload("test.count")
class CountReply(Payload):
    """How many requests this client's state has seen."""

    seen: int


@payload("test.counted")
class CountedRequest(Payload):
    """A request that needs the client's kept version ``version`` (-1: full)."""

    version: int

    def expected_reply(self) -> ReplySpec:
        """Any count."""
        return ReplySpec(CountReply, {})


@handler("test.counted", stateful=True)
def counted(
    request: CountedRequest, data: ClientData, state: ClientState
) -> CountReply | Resync:
    kept = state.get("count", CountReply)
    if request.version >= 0 and (kept is None or kept.seen != request.version):
        return Resync("no such version")
    seen = (kept.seen if kept is not None and request.version >= 0 else 0) + 1
    state.put("count", CountReply(seen))
    return CountReply(seen)


def _loop(**faults: object) -> _Loop:
    data = {
        c: ClientData.build(c, np.zeros((3, 1)), np.array([0, 1, 0])) for c in "abc"
    }
    transport = InProcessTransport(data, faults=list(faults.values()))  # type: ignore[arg-type]
    return _Loop(MeteredTransport(transport, Ledger()), 10.0, 1)


def test_a_client_that_lost_its_state_gets_the_full_request_in_the_same_round() -> None:
    from fedtrees.federation import Fault

    loop = _loop(forget=Fault("b", "forget", round=2))
    full = lambda client: CountedRequest(-1)  # noqa: E731
    loop.round(1, RoundPlan.broadcast(CountedRequest(-1), "abc", resync=full))
    outcome = loop.round(2, RoundPlan.broadcast(CountedRequest(1), "abc", resync=full))
    seen = {c: r.seen for c, r in outcome.replies.items()}  # type: ignore[attr-defined]
    assert seen == {"a": 2, "b": 1, "c": 2}  # b started again from its full form
    entries = [e for e in loop.transport.ledger.entries if e.round == 2]
    assert sorted(e.client for e in entries) == ["a", "b", "b", "c"]


def test_a_resync_the_round_cannot_give_or_a_second_one_fails_by_name() -> None:
    loop = _loop()
    with pytest.raises(RemoteProtocolError, match=r"'a'.*cannot give"):
        loop.round(1, RoundPlan.broadcast(CountedRequest(5), "abc"))
    again = lambda client: CountedRequest(7)  # noqa: E731
    with pytest.raises(RemoteProtocolError, match=r"'a'.*resync twice"):
        loop.round(1, RoundPlan.broadcast(CountedRequest(5), "abc", resync=again))


def test_a_payload_shared_by_clients_is_encoded_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    original = _codec._encode_body

    def counting(envelope: _codec.Envelope) -> object:
        calls.append(envelope.kind)
        return original(envelope)

    monkeypatch.setattr(_codec, "_encode_body", counting)
    loop = _loop()
    shared = CountedRequest(-1)
    loop.round(1, RoundPlan.broadcast(shared, "abc"))
    assert calls.count("test.counted") == 1
    calls.clear()
    own = {c: CountedRequest(-1) for c in "abc"}  # equal, but three objects
    loop.round(2, RoundPlan(own))
    assert calls.count("test.counted") == 3
