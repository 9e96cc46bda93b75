"""The client runtime: the one place where a request becomes a reply.

:func:`serve` decodes the request bytes, runs the handler registered for its kind
on the client's local data, and encodes the reply. It runs inside the in-process
transport and inside the Flower ClientApp alike, so both behave the same. A
handler that raises produces an ``error`` envelope; nothing else leaves the client.

**Decision (what an error envelope says):** it travels to the server, so it
may state no row count and no data value (:mod:`fedtrees.algorithms._requests`).
fedtrees' own errors (:class:`~fedtrees.exceptions.FedTreesError`, and the
``InvalidField`` of a request a client checks) are written that way and travel
as they are, as does scikit-learn's refusal of a parameter the request set; any
other exception — numpy's, pandas',
scikit-learn's, whose messages state shapes, sample counts and values
(``n_samples=3``, ``index 7 is out of bounds for axis 0 with size 5``) — travels
as its type and the fedtrees line that raised it only
(:func:`describe_error`); its full text goes to the client's own log
(``logging`` logger ``fedtrees.client``).

A handler registered with ``stateful=True`` also receives the client's
:class:`~fedtrees.federation.ClientState` for the run (docs/runtime.md, "Per-run client
state"); the others stay pure functions of (request, local data).
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from typing import Any, Final, TypeVar

from fedtrees.exceptions import CodecError, FedTreesError, LocalProtocolError
from fedtrees.federation._checks import InvalidField
from fedtrees.federation._codec import MAX_MESSAGE_BYTES, Envelope, decode, encode
from fedtrees.federation._data import ClientData
from fedtrees.federation._payload import Payload
from fedtrees.federation._state import ClientState

__all__ = ["Handle", "describe_error", "dispatch", "handler", "refuse", "serve"]

LOGGER: Final = logging.getLogger("fedtrees.client")
"""Where a client logs the full text of an error whose text it does not send."""

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
    *,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> bytes:
    """Answer one encoded request with one encoded reply (or error) envelope.

    Never raises: whatever the bytes, the answer is a reply or an ``error``
    envelope that says what went wrong (a malformed or over-long request, a
    request for another client, a handler that failed or returned something that
    is not a payload, a reply that cannot be encoded).

    Parameters
    ----------
    request : bytes
        The encoded request.
    data : ClientData
        This client's local data.
    handle : callable
        ``(request payload, data, state) -> reply payload``; the registered
        handlers by default.
    state : ClientState, optional
        The client's state of the run; without one, a fresh (empty) state is
        used, so stateful handlers ask for a resync.
    max_message_bytes : int
        The longest request this client reads, in bytes; a longer one is
        refused before it is decoded (default 128 MiB).
    """
    client = data.client_id
    try:
        envelope = _read_request(request, client, max_message_bytes)
    except _Refused as refused:
        return refused.reply
    try:
        reply = handle(
            envelope.payload, data, state if state is not None else ClientState()
        )
    except Exception as exc:  # every failure becomes an error reply
        return _error(envelope.round, client, envelope.kind, describe_error(exc))
    return _encode_reply(envelope, client, reply)


class _Refused(Exception):
    """Internal: the request is refused with this encoded error envelope."""

    def __init__(self, reply: bytes) -> None:
        super().__init__("refused")
        self.reply = reply


def _read_request(request: bytes, client: str, max_message_bytes: int) -> Envelope:
    """Decode a request addressed to ``client``, or raise :class:`_Refused`."""
    too_long = _over_limit(request, max_message_bytes)
    if too_long:
        raise _Refused(_error(-1, client, "", too_long))
    try:
        envelope = decode(request)
    except CodecError as exc:
        raise _Refused(_error(-1, client, "", f"CodecError: {exc}")) from None
    if envelope.type != "request" or envelope.payload is None:
        reason = f"not a request: a {envelope.type!r} envelope"
        raise _Refused(_error(envelope.round, client, envelope.kind, reason))
    if envelope.client != client:
        reason = f"addressed to {envelope.client!r}, this client is {client!r}"
        raise _Refused(_error(envelope.round, client, envelope.kind, reason))
    return envelope


def _over_limit(request: object, max_message_bytes: int) -> str:
    """Say why ``request`` is over the size limit ("" when it is not)."""
    if not isinstance(request, bytes | bytearray | memoryview):
        return ""  # decode names the type
    size = memoryview(request).nbytes
    if size <= max_message_bytes:
        return ""
    return (
        f"CodecError: the request is {size} bytes, over this client's limit of "
        f"{max_message_bytes} bytes (max_message_bytes)"
    )


def _encode_reply(request: Envelope, client: str, reply: object) -> bytes:
    """Encode the handler's reply, or an error envelope saying why it cannot be."""
    if not isinstance(reply, Payload):
        reason = (
            f"LocalProtocolError: the handler of {request.kind!r} returned a "
            f"{type(reply).__name__}, not a payload"
        )
        return _error(request.round, client, request.kind, reason)
    try:
        return encode(Envelope("reply", request.round, client, reply.kind, reply))
    except Exception as exc:  # e.g. an object array: say which field
        detail = f"the reply could not be encoded: {describe_error(exc)}"
        return _error(request.round, client, request.kind, detail)


def describe_error(exc: BaseException) -> str:
    """Say what failed at a client, as the server may read it (module docstring).

    A :class:`~fedtrees.exceptions.FedTreesError` (or an ``InvalidField`` of a
    request the client checks, or scikit-learn's ``InvalidParameterError``,
    which names a parameter the request set) travels as ``"Type: message"``;
    any other exception as its type and the innermost fedtrees line that raised
    it, its message withheld (and logged here, with its traceback).

    Examples
    --------
    >>> describe_error(LocalProtocolError("no handler"))
    'LocalProtocolError: no handler'
    >>> text = describe_error(ValueError("n_samples=3 should be >= n_splits=5"))
    >>> text.startswith("ValueError (its message is withheld"), "n_samples" in text
    (True, False)
    """
    name = type(exc).__name__
    if isinstance(exc, FedTreesError | InvalidField) or _parameter_error(exc):
        try:
            return f"{name}: {exc}"
        except Exception:  # an exception whose message itself fails
            return f"{name}: (its message cannot be shown)"
    LOGGER.warning("A client handler failed: %s", name, exc_info=exc)
    return (
        f"{name}{_raised_at(exc)} (its message is withheld: it may state row counts "
        "or data values; the client logs it)"
    )


def _parameter_error(exc: BaseException) -> bool:
    """Whether ``exc`` is scikit-learn's refusal of a parameter (no data in it).

    Its text names the estimator, the parameter and the value the request gave
    (``The 'max_depth' parameter of ... Got -1 instead.``).
    """
    kind = type(exc)
    return kind.__name__ == "InvalidParameterError" and kind.__module__.startswith(
        "sklearn."
    )


def _raised_at(exc: BaseException) -> str:
    """Return " in <fedtrees module>, line <n>" of the innermost fedtrees frame."""
    where = ""
    for frame, line in traceback.walk_tb(exc.__traceback__):
        module = str(frame.f_globals.get("__name__", ""))
        if module == "fedtrees" or module.startswith("fedtrees."):
            where = f" in {module}, line {line}"
    return where


def _error(round_: int, client: str, kind: str, detail: str) -> bytes:
    return encode(Envelope("error", round_, client, kind, None, detail))


def refuse(
    request: bytes | None,
    client: str,
    detail: str,
    *,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> bytes:
    """Answer a request with an error envelope (e.g. the local data cannot load).

    Never raises; an over-long or malformed request is answered with the reason
    it cannot be read instead (``max_message_bytes`` as in :func:`serve`).
    ``request=None``: the transport could not even extract the request's bytes
    (``detail`` says why); the answer then names no round and no kind.
    """
    if request is None:
        return _error(-1, client, "", detail)
    too_long = _over_limit(request, max_message_bytes)
    if too_long:
        return _error(-1, client, "", too_long)
    try:
        envelope = decode(request)
    except CodecError as exc:
        return _error(-1, client, "", f"CodecError: {exc}")
    return _error(envelope.round, client, envelope.kind, detail)
