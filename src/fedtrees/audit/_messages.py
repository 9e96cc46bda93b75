"""Reading captured messages for the audits: decode, list fields, sort findings."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import fields
from typing import Final

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
    "check_recorded",
    "client_data",
    "declared_fields",
    "decoded",
    "finding",
    "payload_fields",
    "sorted_findings",
]

_DECODE_ERRORS: Final = (CodecError, ValueError, TypeError, RecursionError)


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
