"""The communication ledger: every byte that travels, counted (STYLE habit 3).

A middleware (:class:`MeteredTransport`) wraps any transport and records, per
round, client and message kind, the bytes sent down (server to client), the bytes
sent up and the wall time. Byte counts are the lengths of the codec's output, so
the in-process and the Flower transports report the same numbers for the same run
(Flower's own framing, registration and heartbeats are not counted).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from fedtrees.federation._secure import RevealRequest
from fedtrees.federation._transport import Delivery, Outgoing, Transport

__all__ = [
    "CapturedMessage",
    "Ledger",
    "LedgerEntry",
    "MeteredTransport",
    "join_recordings",
    "recording",
]


@dataclass(frozen=True)
class LedgerEntry:
    """One request and its reply (if any)."""

    round: int
    client: str
    kind: str
    bytes_down: int
    bytes_up: int
    seconds: float
    status: str


@dataclass(frozen=True)
class CapturedMessage:
    """A raw message kept for audits (``Ledger(keep_messages=True)``)."""

    round: int
    client: str
    kind: str
    direction: Literal["down", "up"]
    data: bytes


class Ledger:
    """Per-round, per-client, per-kind record of a run's communication.

    Examples
    --------
    >>> ledger = Ledger()
    >>> ledger.bytes_up, ledger.bytes_down, ledger.rounds, ledger.messages
    (0, 0, 0, 0)
    """

    def __init__(self, *, keep_messages: bool = False) -> None:
        self.entries: list[LedgerEntry] = []
        self.captured: list[CapturedMessage] = []
        self.keep_messages = keep_messages
        self.masked_rounds: set[int] = set()
        """Rounds whose replies were masked (secure aggregation, docs/security.md)."""

    def record(
        self,
        round: int,
        messages: Sequence[Outgoing],
        deliveries: Mapping[str, Delivery],
    ) -> None:
        """Record one exchange (in client order, whatever order replies arrived in)."""
        for message in sorted(messages, key=lambda m: m.client):
            delivery = deliveries[message.client]
            up = len(delivery.data) if delivery.data is not None else 0
            self.entries.append(
                LedgerEntry(
                    round,
                    message.client,
                    message.kind,
                    len(message.data),
                    up,
                    delivery.seconds,
                    delivery.status,
                )
            )
            if self.keep_messages:
                self.captured.append(
                    CapturedMessage(
                        round, message.client, message.kind, "down", message.data
                    )
                )
                if delivery.data is not None:
                    self.captured.append(
                        CapturedMessage(
                            round, message.client, message.kind, "up", delivery.data
                        )
                    )

    @property
    def bytes_up(self) -> int:
        """Total bytes sent by clients."""
        return sum(e.bytes_up for e in self.entries)

    @property
    def bytes_down(self) -> int:
        """Total bytes sent to clients."""
        return sum(e.bytes_down for e in self.entries)

    @property
    def rounds(self) -> int:
        """Number of distinct rounds (round trips)."""
        return len({e.round for e in self.entries})

    @property
    def messages(self) -> int:
        """Number of requests sent (each with at most one reply)."""
        return len(self.entries)

    def to_frame(self) -> pd.DataFrame:
        """Every entry as a row; ``masked``: its reply was masked (secure rounds)."""
        columns = [
            "round",
            "client",
            "kind",
            "bytes_down",
            "bytes_up",
            "seconds",
            "status",
        ]
        frame = pd.DataFrame([e.__dict__ for e in self.entries], columns=columns)
        frame["masked"] = frame["round"].isin(sorted(self.masked_rounds)) & (
            frame["kind"] != RevealRequest.kind
        )
        return frame

    def by_kind(self) -> pd.DataFrame:
        """Messages, bytes and seconds per message kind."""
        return self._grouped("kind")

    def by_round(self) -> pd.DataFrame:
        """Messages, bytes and seconds per round."""
        return self._grouped("round")

    def _grouped(self, key: str) -> pd.DataFrame:
        frame = self.to_frame()
        return frame.groupby(key).agg(
            messages=("client", "size"),
            bytes_down=("bytes_down", "sum"),
            bytes_up=("bytes_up", "sum"),
            seconds=("seconds", "sum"),
        )

    def summary(self) -> dict[str, int]:
        """Return the totals: bytes_up, bytes_down, rounds, messages.

        ``masked_rounds`` appears when the run used secure aggregation.
        """
        out = {
            "bytes_up": self.bytes_up,
            "bytes_down": self.bytes_down,
            "rounds": self.rounds,
            "messages": self.messages,
        }
        if self.masked_rounds:
            out["masked_rounds"] = len(self.masked_rounds)
        return out

    def __repr__(self) -> str:
        totals = ", ".join(f"{k}={v}" for k, v in self.summary().items())
        return f"Ledger({totals})"


class MeteredTransport:
    """Middleware: forwards to ``inner`` and records every exchange in ``ledger``."""

    def __init__(self, inner: Transport, ledger: Ledger) -> None:
        self.inner, self.ledger = inner, ledger

    def client_ids(self) -> tuple[str, ...]:
        """Return the inner transport's clients."""
        return self.inner.client_ids()

    def exchange(
        self, round: int, messages: Sequence[Outgoing], timeout: float
    ) -> dict[str, Delivery]:
        """Exchange through the inner transport, then record sizes and times."""
        deliveries = self.inner.exchange(round, messages, timeout)
        self.ledger.record(round, messages, deliveries)
        return deliveries


_RECORDINGS: ContextVar[tuple[list[Ledger], ...]] = ContextVar(
    "fedtrees_recordings", default=()
)


@contextmanager
def recording() -> Iterator[list[Ledger]]:
    """Keep every message of the runs started inside the block.

    Each run of the round loop started inside the block (an estimator's ``fit``
    or ``fit_federation``, :func:`fedtrees.federation.run`) keeps its messages
    (``keep_messages=True``) and its ledger is appended to the yielded list as
    the run starts, so a run that fails leaves its messages too. Blocks nest;
    an inner block's runs are in the outer list as well.

    Examples
    --------
    >>> with recording() as ledgers:
    ...     pass  # fit estimators here: ledgers[i].captured holds run i's messages
    >>> ledgers
    []
    """
    ledgers: list[Ledger] = []
    token = _RECORDINGS.set((*_RECORDINGS.get(), ledgers))
    try:
        yield ledgers
    finally:
        _RECORDINGS.reset(token)


def join_recordings(ledger: Ledger) -> Ledger:
    """Return ``ledger``, keeping messages and listed if a recording is open."""
    recordings = _RECORDINGS.get()
    if recordings:
        ledger.keep_messages = True
        for ledgers in recordings:
            ledgers.append(ledger)
    return ledger
