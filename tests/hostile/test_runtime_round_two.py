"""Runtime faults, round two (issue 24).

- Client ids that collide once written as strings: ``from_clients({1: ..,
  "1": ..})`` used to keep one client (half the rows vanished) where
  ``from_groups`` refused; one rule now refuses both, naming the two keys.
- Many in-process clients served one after another used to share one round
  deadline, and whichever honest client came last was blamed for the
  timeout; each handler now has its own deadline.

A malformed Flower reply is in ``test_flower_unpack.py``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from fedtrees.exceptions import RemoteProtocolError, ValidationError
from fedtrees.federation import (
    ClientData,
    Federation,
    FederationInfo,
    Payload,
    ReplySpec,
    RoundPlan,
    ServerStrategy,
    handler,
    payload,
    run,
)

X = np.arange(8.0).reshape(4, 2)
Y = np.array([0, 1, 0, 1])


# -- client ids ----------------------------------------------------------------------
def _from_clients(keys: list[object]) -> Federation:
    return Federation.from_clients(
        {k: (X[2 * i : 2 * i + 2], Y[:2]) for i, k in enumerate(keys)}
    )


def _from_groups(keys: list[object]) -> Federation:
    return Federation.from_groups(X, Y, np.array(keys * 2, dtype=object))


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("build", "what"),
    [(_from_clients, "keys"), (_from_groups, "groups values")],
    ids=["from_clients", "from_groups"],
)
@pytest.mark.parametrize(
    ("keys", "reason"),
    [
        ([1, "1"], r"1 and '1' are distinct but both become client '1'"),
        ([True, "True"], r"True and 'True' are distinct but both become client"),
    ],
    ids=["int-and-str", "bool-and-str"],
)
def test_keys_that_collide_as_client_ids_are_refused_by_both_constructors(
    build: Any, what: str, keys: list[object], reason: str
) -> None:
    owner = build.__name__.lstrip("_")
    with pytest.raises(
        ValidationError, match=rf"Federation\.{owner}: the {what} {reason}"
    ):
        build(keys)


@pytest.mark.hostile("clear_error")
def test_equal_group_values_that_print_differently_are_refused() -> None:
    with pytest.raises(
        ValidationError,
        match=r"the groups values 1 and 1.0 are equal but become two clients, '1' "
        r"and '1.0'",
    ):
        _from_groups([1, 1.0])


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("build", [_from_clients, _from_groups])
def test_distinct_keys_keep_every_client(build: Any) -> None:
    federation = build([1, 2])
    assert federation.clients == ("1", "2")
    assert sum(federation.row_counts().values()) == 4


# -- one deadline per handler, in process ----------------------------------------------
@payload("test.round_two_nap_reply")
class NapReply(Payload):
    rows: int


@payload("test.round_two_nap")
class Nap(Payload):
    """Every client sleeps ``seconds`` before it answers."""

    seconds: float

    def expected_reply(self) -> ReplySpec:
        return ReplySpec(NapReply, {})


@handler("test.round_two_nap")
def _nap(request: Nap, data: ClientData) -> NapReply:
    time.sleep(request.seconds)
    return NapReply(data.n_rows)


class Naps(ServerStrategy):
    def __init__(self, seconds: float) -> None:
        self.seconds, self.replies = seconds, 0

    def start(self, info: FederationInfo) -> None:
        self.clients = info.clients

    def plan_round(self, round: int) -> RoundPlan | None:
        return (
            RoundPlan.broadcast(Nap(self.seconds), self.clients) if round == 1 else None
        )

    def aggregate(self, round: int, replies: Mapping[str, Payload]) -> None:
        self.replies = len(replies)

    def finish(self) -> int:
        return self.replies


@pytest.mark.hostile("correct")
def test_one_row_clients_served_in_turn_each_get_their_own_deadline() -> None:
    # Served one after another: 40 x 0.06 s, over the 2 s timeout; each handler
    # has 1.94 s to spare, so a loaded machine does not make an honest one late.
    n, timeout = 40, 2.0
    federation = Federation.from_groups(
        np.arange(n, dtype=float)[:, None], np.arange(n) % 2, np.arange(n)
    )
    start = time.monotonic()
    result = federation.run(Naps(0.06), task="classification", timeout=timeout)
    assert result.result == n  # every client answered; none was blamed
    assert time.monotonic() - start > timeout


@pytest.mark.hostile("clear_error")
def test_a_slow_handler_is_still_its_own_clients_timeout() -> None:
    federation = Federation.from_groups(X, Y, ["a", "b", "a", "b"])
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'a', round 1, 'test.round_two_nap': field 'reply' did not "
        r"arrive in time \(no reply within the round's 0.2 s timeout",
    ):
        run(Naps(0.6), federation.transport, task="classification", timeout=0.2)
