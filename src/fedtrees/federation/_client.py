"""The client runtime: the one place where a request becomes a reply.

:func:`serve` decodes the request bytes, runs the handler registered for its kind
on the client's local data, and encodes the reply. It runs inside the in-process
transport and inside the Flower ClientApp alike, so both behave the same. A
handler that raises produces an ``error`` envelope; nothing else leaves the client.

A handler registered with ``stateful=True`` also receives the client's
:class:`~fedtrees.federation.ClientState` for the run (DESIGN.md, "Per-run client
state"); the others stay pure functions of (request, local data).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fedtrees.exceptions import CodecError, LocalProtocolError
from fedtrees.federation._codec import Envelope, decode, encode
from fedtrees.federation._data import ClientData
from fedtrees.federation._payload import Payload
from fedtrees.federation._state import ClientState

__all__ = ["Handle", "dispatch", "handler", "refuse", "serve"]

Handle = Callable[[Any, ClientData, ClientState], Payload]
"""How a client answers: (request payload, local data, run state) -> reply."""

_HANDLERS: dict[str, Callable[..., Payload]] = {}
_STATEFUL: set[str] = set()
H = TypeVar("H", bound=Callable[..., Payload])


def handler(kind: str, *, stateful: bool = False) -> Callable[[H], H]:
    """Register the client handler of request ``kind``.

    ``stateful=True``: the handler is called as ``(request, data, state)`` with
    the client's :class:`~fedtrees.federation.ClientState` of the run.

    Examples
    --------
    >>> @handler("doc.ping")
    ... def ping(request, data):
    ...     return request
    """

    def register(function: H) -> H:
        existing = _HANDLERS.get(kind)
        if existing is not None and existing.__qualname__ != function.__qualname__:
            raise LocalProtocolError(f"A handler for {kind!r} is already registered.")
        _HANDLERS[kind] = function
        if stateful:
            _STATEFUL.add(kind)
        return function

    return register


def dispatch(request: Payload, data: ClientData, state: ClientState) -> Payload:
    """Run the registered handler of ``request.kind`` (with ``state`` if stateful)."""
    function = _HANDLERS.get(request.kind)
    if function is None:
        raise LocalProtocolError(f"This client has no handler for {request.kind!r}.")
    if request.kind in _STATEFUL:
        return function(request, data, state)
    return function(request, data)


def serve(
    request: bytes,
    data: ClientData,
    handle: Handle = dispatch,
    state: ClientState | None = None,
) -> bytes:
    """Answer one encoded request with one encoded reply (or error) envelope.

    ``state`` is the client's state of the run; without one, a fresh (empty)
    state is used, so stateful handlers ask for a resync.
    """
    try:
        envelope = decode(request)
    except CodecError as exc:
        return _error(-1, data.client_id, "", f"CodecError: {exc}")
    if envelope.type != "request" or envelope.payload is None:
        return _error(envelope.round, data.client_id, envelope.kind, "not a request")
    if envelope.client != data.client_id:
        reason = f"addressed to {envelope.client!r}, this client is {data.client_id!r}"
        return _error(envelope.round, data.client_id, envelope.kind, reason)
    try:
        reply = handle(
            envelope.payload, data, state if state is not None else ClientState()
        )
        return encode(
            Envelope("reply", envelope.round, data.client_id, reply.kind, reply)
        )
    except Exception as exc:  # every failure becomes an error reply
        detail = f"{type(exc).__name__}: {exc}"
        return _error(envelope.round, data.client_id, envelope.kind, detail)


def _error(round_: int, client: str, kind: str, detail: str) -> bytes:
    return encode(Envelope("error", round_, client, kind, None, detail))


def refuse(request: bytes, client: str, detail: str) -> bytes:
    """Answer a request with an error envelope (e.g. the local data cannot load)."""
    try:
        envelope = decode(request)
    except CodecError as exc:
        return _error(-1, client, "", f"CodecError: {exc}")
    return _error(envelope.round, client, envelope.kind, detail)
