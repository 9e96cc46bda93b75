"""Reading captured messages for the audits: decode, list fields, sort findings."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import fields
from typing import Final, TypeVar

from fedtrees.audit._report import Finding, PerRow
from fedtrees.exceptions import CodecError, LocalProtocolError
from fedtrees.federation import (
    CapturedMessage,
    ClientData,
    Envelope,
    Federation,
    Ledger,
    Payload,
    decode,
)

__all__ = [
    "answered",
    "check_recorded",
    "client_data",
    "declared_fields",
    "decoded",
    "finding",
    "payload_fields",
    "sorted_findings",
]

_DECODE_ERRORS: Final = (CodecError, ValueError, TypeError, RecursionError)
_Request = TypeVar("_Request", bound=Payload)


def answered(
    ledger: Ledger, request_type: type[_Request]
) -> Iterator[tuple[str, _Request, Payload]]:
    """Yield ``(client, request, reply)`` for every answered request of a type.

    What a server holds of a recorded run (``Ledger(keep_messages=True)``, or
    :func:`recording`): each request of ``request_type`` it sent, paired by
    round and client with the payload that came back, in round then client
    order. A request without a reply (an error, a dropout) is left out.
    """
    requests: dict[tuple[int, str], _Request] = {}
    replies: dict[tuple[int, str], Payload] = {}
    for message in ledger.captured:
        payload = decode(message.data).payload
        key = (message.round, message.client)
        if message.direction == "down" and isinstance(payload, request_type):
            requests[key] = payload
        elif message.direction == "up" and payload is not None:
            replies[key] = payload
    for key, request in sorted(requests.items()):
        if key in replies:
            yield key[1], request, replies[key]


def check_recorded(ledger: Ledger, owner: str) -> None:
    if not ledger.keep_messages:
        raise LocalProtocolError(
            f"{owner} needs a run recorded with Ledger(keep_messages=True)."
        )


def client_data(
    clients: Federation | Mapping[str, ClientData],
) -> Mapping[str, ClientData]:
    if isinstance(clients, Federation):
        return clients.on_each_site(lambda d: d)
    return clients


def declared_fields(per_row: PerRow | None) -> dict[str, frozenset[str]]:
    return {kind: frozenset(names) for kind, names in (per_row or {}).items()}


def decoded(message: CapturedMessage, undecodable: list[Finding]) -> Envelope | None:
    try:
        return decode(message.data)
    except _DECODE_ERRORS as error:
        undecodable.append(
            finding(message, message.kind, "*", f"cannot be decoded ({error})")
        )
        return None


def payload_fields(payload: Payload | None) -> Iterator[tuple[str, object]]:
    if payload is not None:
        for f in fields(payload):  # type: ignore[arg-type]
            yield f.name, getattr(payload, f.name)


def finding(message: CapturedMessage, kind: str, name: str, what: str) -> Finding:
    return Finding(message.round, message.client, kind, message.direction, name, what)


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.round, f.client, f.direction, f.kind))
