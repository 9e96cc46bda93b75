"""Transports move encoded messages; the in-process one is the embedded default.

A transport knows nothing about algorithms: it delivers request bytes to clients
and returns, per client, the reply bytes or why there are none. The in-process
transport runs each client's runtime (:func:`fedtrees.federation.serve`) on its
:class:`ClientData`, so every request and reply crosses the boundary as bytes —
no object reference ever passes from client to server.

The in-process transport also holds each client's :class:`ClientState` for the
run (DESIGN.md, "Per-run client state").

Fault injection (tests only) makes a client drop out, answer after the timeout,
raise, reply garbage, reply a mutated (hostile) payload, or forget its state (as
a restarted site would), per client and round.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from fedtrees._validation import check_choice, check_int
from fedtrees.exceptions import ValidationError
from fedtrees.federation._client import Handle, dispatch, serve
from fedtrees.federation._codec import Envelope, decode, encode
from fedtrees.federation._data import ClientData
from fedtrees.federation._payload import Payload
from fedtrees.federation._state import ClientState

__all__ = ["Delivery", "Fault", "InProcessTransport", "Outgoing", "Transport"]

T = TypeVar("T")

Status = Literal["ok", "timeout", "unreachable"]
FaultAction = Literal["drop", "late", "raise", "garbage", "mutate", "forget"]


@dataclass(frozen=True)
class Outgoing:
    """Encoded request bytes for one client (``kind``: the request kind)."""

    client: str
    kind: str
    data: bytes


@dataclass(frozen=True)
class Delivery:
    """What came back from one client: reply bytes, or why there are none."""

    client: str
    status: Status
    data: bytes | None
    seconds: float
    detail: str = ""


class Transport(Protocol):
    """Moves encoded requests to clients and their replies back."""

    def client_ids(self) -> tuple[str, ...]:
        """Ids of the clients that can be addressed."""
        ...

    def exchange(
        self, round: int, messages: Sequence[Outgoing], timeout: float
    ) -> dict[str, Delivery]:
        """Deliver one message per client; return within about ``timeout`` seconds."""
        ...


@dataclass(frozen=True)
class Fault:
    """A fault to inject at ``client`` in ``round`` (every round when None).

    ``drop``: no reply at all; ``late``: the reply arrives after the timeout;
    ``raise``: the handler raises; ``garbage``: the reply bytes are not a message;
    ``mutate``: the reply payload is replaced by ``mutate(payload)`` (a hostile or
    broken client that still speaks the codec); ``forget``: the client's state of
    the run is cleared before it answers (it then asks for a resync).
    """

    client: str
    action: FaultAction
    round: int | None = None
    mutate: Callable[[Payload], Payload] | None = None

    def __post_init__(self) -> None:
        check_choice(
            self.action,
            "action",
            "Fault",
            ("drop", "late", "raise", "garbage", "mutate", "forget"),
        )
        if (self.action == "mutate") != (self.mutate is not None):
            raise ValidationError(
                "Fault: 'mutate' needs a mutate function, and only it."
            )

    def applies(self, client: str, round: int) -> bool:
        """Whether this fault hits ``client`` in ``round``."""
        return client == self.client and self.round in (None, round)


class InProcessTransport:
    """Clients in this process; every message is encoded to bytes and decoded again.

    Parameters
    ----------
    clients : mapping client id -> ClientData
    workers : int
        1 serves clients one after another; more serves them on a thread pool.
        Results do not depend on it (replies are keyed by client).
    faults : sequence of Fault
        Injected failures, for tests.
    """

    def __init__(
        self,
        clients: Mapping[str, ClientData],
        *,
        workers: int = 1,
        faults: Sequence[Fault] = (),
    ) -> None:
        self._clients = dict(clients)
        self._workers = check_int(workers, "workers", "InProcessTransport", min_value=1)
        self._faults = tuple(faults)
        self._states = {name: ClientState() for name in self._clients}

    def client_ids(self) -> tuple[str, ...]:
        """Return the clients' ids, sorted."""
        return tuple(sorted(self._clients))

    def on_each_site(self, function: Callable[[ClientData], T]) -> dict[str, T]:
        """Run ``function`` on every client's own data, at that client (no message)."""
        return {name: function(data) for name, data in sorted(self._clients.items())}

    def row_counts(self) -> dict[str, int]:
        """Rows per client — simulation-only knowledge, for audits and tests."""
        return {k: v.n_rows for k, v in self._clients.items()}

    def exchange(
        self, round: int, messages: Sequence[Outgoing], timeout: float
    ) -> dict[str, Delivery]:
        """Serve every message (sequentially or on threads) within ``timeout``."""
        unknown = [m.client for m in messages if m.client not in self._clients]
        if unknown:
            raise ValidationError(f"InProcessTransport: unknown clients {unknown}.")
        if self._workers == 1:
            return {m.client: self._deliver(round, m, timeout) for m in messages}
        return self._exchange_threads(round, messages, timeout)

    def _exchange_threads(
        self, round: int, messages: Sequence[Outgoing], timeout: float
    ) -> dict[str, Delivery]:
        pool = ThreadPoolExecutor(max_workers=self._workers)
        futures = {
            m.client: pool.submit(self._deliver, round, m, timeout) for m in messages
        }
        wait(list(futures.values()), timeout=timeout)
        pool.shutdown(wait=False, cancel_futures=True)
        out = {}
        for client, future in futures.items():
            if future.done() and not future.cancelled():
                out[client] = future.result()
            else:
                out[client] = Delivery(
                    client, "timeout", None, timeout, "no reply in time"
                )
        return out

    def _deliver(self, round: int, message: Outgoing, timeout: float) -> Delivery:
        fault = next(
            (f for f in self._faults if f.applies(message.client, round)), None
        )
        if fault is not None and fault.action == "drop":
            return Delivery(
                message.client, "unreachable", None, 0.0, "client dropped out"
            )
        start = time.perf_counter()
        data, state = self._clients[message.client], self._states[message.client]
        if fault is not None and fault.action == "forget":
            state.clear()
        handle: Handle = (
            _raising if fault is not None and fault.action == "raise" else dispatch
        )
        reply = serve(message.data, data, handle, state)
        if fault is not None:
            reply = _corrupt(fault, reply)
        seconds = time.perf_counter() - start
        if (fault is not None and fault.action == "late") or seconds > timeout:
            return Delivery(
                message.client, "timeout", None, seconds, "reply after the timeout"
            )
        return Delivery(message.client, "ok", reply, seconds)


def _raising(request: Payload, data: ClientData, state: ClientState) -> Payload:
    raise RuntimeError(f"injected failure in the handler of {request.kind!r}")


def _corrupt(fault: Fault, reply: bytes) -> bytes:
    if fault.action == "garbage":
        return b"\x00garbage\xff" * 3
    if fault.action == "mutate" and fault.mutate is not None:
        envelope = decode(reply)
        if envelope.payload is not None:
            changed = fault.mutate(envelope.payload)
            return encode(
                Envelope(
                    "reply", envelope.round, envelope.client, changed.kind, changed
                )
            )
    return reply
