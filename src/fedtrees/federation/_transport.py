"""Transports move encoded messages; the in-process one is the embedded default.

A transport knows nothing about algorithms: it delivers request bytes to clients
and returns, per client, the reply bytes or why there are none. The in-process
transport runs each client's runtime (:func:`fedtrees.federation.serve`) on its
:class:`ClientData`, so every request and reply crosses the boundary as bytes —
no object reference ever passes from client to server.

The in-process transport also holds each client's :class:`ClientState` for the
run (per-run client state, :mod:`fedtrees.federation._state`).

Every message is served in a daemon worker thread, and every message has its own
deadline: ``timeout`` seconds of its handler's work from its start, the time its
thread spends compiling kernels not counted (:mod:`fedtrees._compile_time`: a
compile is work under way, minutes on a loaded machine where the installed
kernels cannot serve, never a hang). **Decision:** in
process the clients share this machine's workers and are served a few at a time,
so one deadline for the whole round would blame whichever honest client was
served last (10,000 one-row clients cannot all be served in 60 s); a real site
runs its own handler, and so does each message here. A client whose handler
has not returned by its deadline is a ``timeout`` delivery. A running handler
cannot be stopped, so a late one is fenced off instead: a new worker serves the
clients queued behind it, its reply is discarded, and the client is given a
fresh state (it resyncs if asked again), so a late write into the old state
object changes nothing the run still uses. The wall time of a round therefore
grows with the clients served one after another (``workers`` at a time).

Fault injection (tests only) makes a client drop out, answer after the timeout,
raise, reply garbage, reply a mutated (hostile) payload, or forget its state (as
a restarted site would), per client and round.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from fedtrees._compile_time import compile_seconds
from fedtrees._validation import check_choice, check_int
from fedtrees.exceptions import ValidationError
from fedtrees.federation._client import Handle, dispatch, serve
from fedtrees.federation._codec import Envelope, decode, encode
from fedtrees.federation._data import ClientData
from fedtrees.federation._payload import Payload
from fedtrees.federation._state import ClientState

__all__ = ["Delivery", "Fault", "InProcessTransport", "Outgoing", "Transport"]

T = TypeVar("T")

Status = Literal["ok", "timeout", "unreachable", "malformed"]
"""``malformed``: something came back, but not a message (the transport says why)."""
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
        """Deliver one message per client, each given ``timeout`` seconds.

        Clients that run side by side (Flower) share one deadline: the call
        returns within about ``timeout``. A transport that serves clients in
        turn (in process) starts each one's deadline when it serves it.
        """
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
        How many handlers of one round may run at once: 1 serves the clients one
        after another (in request order), more serves them side by side. Results
        do not depend on it (replies are keyed by client, states are per client).
        Each handler has ``timeout`` seconds from its own start; one that hangs
        costs only its own client (a new worker serves the clients queued
        behind it). A handler that outlived its deadline may still be running
        when the next round starts: it cannot be stopped, but its reply is
        discarded and its client's state replaced, so it cannot affect the run.
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

    @property
    def workers(self) -> int:
        """How many handlers of one round may run at once."""
        return self._workers

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
        """Serve every message on worker threads, each within its own deadline.

        A client whose handler has not returned within ``timeout`` seconds of its
        own start gets a ``timeout`` delivery and a fresh state.
        """
        unknown = [m.client for m in messages if m.client not in self._clients]
        if unknown:
            raise ValidationError(
                f"InProcessTransport: round {round} addresses unknown clients "
                f"{unknown}; the clients are {list(self.client_ids())}."
            )

        def serve_one(message: Outgoing, state: ClientState) -> Delivery:
            return self._deliver(round, message, timeout, state)

        served = _Round(round, messages, timeout, serve_one, self._states)
        deliveries = served.run(self._workers)
        for client, delivery in deliveries.items():
            if delivery.status == "timeout":
                self._states[client] = ClientState()  # fence off a late handler
        return deliveries

    def _deliver(
        self, round: int, message: Outgoing, timeout: float, state: ClientState
    ) -> Delivery:
        """Serve one message with the client's ``state`` (runs in a worker)."""
        fault = next(
            (f for f in self._faults if f.applies(message.client, round)), None
        )
        if fault is not None and fault.action == "drop":
            return Delivery(
                message.client, "unreachable", None, 0.0, "client dropped out"
            )
        start, began = time.perf_counter(), _Start.now()
        data = self._clients[message.client]
        if fault is not None and fault.action == "forget":
            state.clear()
        handle: Handle = (
            _raising if fault is not None and fault.action == "raise" else dispatch
        )
        reply = serve(message.data, data, handle, state)
        if fault is not None:
            reply = _corrupt(fault, reply)
        seconds = time.perf_counter() - start
        work = began.work(time.monotonic())  # compiling is not counted
        if (fault is not None and fault.action == "late") or work > timeout:
            return Delivery(
                message.client, "timeout", None, seconds, "reply after the timeout"
            )
        return Delivery(message.client, "ok", reply, seconds)


class _Round:
    """One round's messages, served by worker threads, each within its own deadline.

    Workers take messages in request order. A message's deadline is ``timeout``
    seconds after its handler starts, plus the time its thread spends compiling
    kernels meanwhile: clients served one after another do not
    share one deadline (10,000 one-row clients each get their own), and a
    handler that passes its deadline is given up — its client gets a
    ``timeout`` delivery and a new worker takes its place, so the clients queued
    behind it are still served. A given-up handler that finishes later finds
    its client settled and drops its delivery.
    """

    def __init__(
        self,
        round: int,
        messages: Sequence[Outgoing],
        timeout: float,
        serve: Callable[[Outgoing, ClientState], Delivery],
        states: Mapping[str, ClientState],
    ) -> None:
        self.round, self.timeout = round, timeout
        self.serve, self.states = serve, states
        self.clients = [m.client for m in messages]
        self.waiting = deque(messages)
        self.running: dict[str, _Start] = {}  # client -> when its handler started
        self.done: dict[str, Delivery] = {}
        self.failure: BaseException | None = None
        self.closed = False
        self.changed = threading.Condition()

    def run(self, workers: int) -> dict[str, Delivery]:
        """Serve the messages; return a delivery per client, in request order."""
        for _ in range(min(workers, len(self.clients))):
            self._start_worker()
        with self.changed:
            while True:
                pause = self._give_up_overdue()  # may settle the last client
                if len(self.done) == len(self.clients) or self.failure is not None:
                    break
                self.changed.wait(timeout=pause)
            self.closed = True
            if self.failure is not None:
                raise self.failure
            return {client: self.done[client] for client in self.clients}

    def _give_up_overdue(self) -> float | None:
        """Settle the handlers past their deadline; return seconds to the next one."""
        now = time.monotonic()
        for client, started in list(self.running.items()):
            if started.work(now) >= self.timeout:
                del self.running[client]
                detail = (
                    f"no reply within the round's {self.timeout:g} s timeout "
                    "(its handler was still running)"
                )
                self.done[client] = Delivery(
                    client, "timeout", None, self.timeout, detail
                )
                if self.waiting:
                    self._start_worker()  # its worker is held: another serves on
        if not self.running:
            return None
        return max(self.timeout - max(s.work(now) for s in self.running.values()), 0.0)

    def _start_worker(self) -> None:
        threading.Thread(
            target=self._work, name=f"fedtrees-round-{self.round}", daemon=True
        ).start()

    def _work(self) -> None:
        while True:
            with self.changed:
                if self.closed or not self.waiting:
                    return
                message = self.waiting.popleft()
                self.running[message.client] = _Start.now()
                self.changed.notify_all()  # the round now watches its deadline
                state = self.states[message.client]
            try:
                delivery = self.serve(message, state)
            except BaseException as exc:  # re-raised by the round, never lost
                with self.changed:
                    if not self.closed:
                        self.failure = exc
                        self.changed.notify_all()
                return
            with self.changed:
                if self.running.pop(message.client, None) is None:
                    return  # given up: the round settled it, and replaced this worker
                self.done[message.client] = delivery
                self.changed.notify_all()


@dataclass(frozen=True)
class _Start:
    """When a handler started, on which thread, and that thread's compile time then."""

    at: float  # time.monotonic()
    thread: int
    compiled: float

    @classmethod
    def now(cls) -> _Start:
        """Return the start of a handler on the current thread."""
        thread = threading.get_ident()
        at = time.monotonic()
        return cls(at, thread, compile_seconds(thread, at))

    def work(self, now: float) -> float:
        """Seconds of the handler's work by ``now``: compiling kernels not counted."""
        return now - self.at - (compile_seconds(self.thread, now) - self.compiled)


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
