"""The value audit: no client row, column or label vector inside any message."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import pandas as pd

from fedtrees.audit._messages import (
    check_recorded,
    client_data,
    declared_fields,
    decoded,
    finding,
    payload_fields,
    sorted_findings,
)
from fedtrees.audit._report import AuditReport, Finding, PerRow
from fedtrees.audit._search import MIN_RUN, Needles
from fedtrees.federation import (
    CapturedMessage,
    ClientData,
    Envelope,
    Federation,
    Ledger,
    MaskedReply,
    Payload,
)

__all__ = [
    "AGREEMENT_KINDS",
    "ERROR_DISCLOSURES",
    "REPLY_DISCLOSURES",
    "find_client_values",
]

AGREEMENT_KINDS: Final = ("federation.schema_reply",)
"""Payload kinds in which category values may travel (the opening agreement)."""

ERROR_DISCLOSURES: Final[Mapping[str, str]] = {
    "federation.schema": "a client holding a value outside the declared categories "
    "or a label outside the declared classes fails the agreement: its failure "
    "says such a value exists (not which, nor in how many rows)",
    "fedga.init": "a site with fewer rows than the cross-validation folds fails "
    "FedGA's first round: its failure says n < cv_folds (not n)",
    "fedga.join": "a late joiner with fewer rows than the cross-validation folds "
    "fails to join: its failure says n < cv_folds (not n)",
}
"""What an error reveals by existing, by request kind (its text names nothing)."""

REPLY_DISCLOSURES: Final[Mapping[str, str]] = {
    "fedga.tree": "the site's reply holds its personal tree: thresholds (each "
    "between two of its training values at a node), leaf values (class shares or "
    "mean targets) and every node's training row count, so the exact size of its "
    "training part, which the Laplace noise on its size does not cover",
}
"""What a reply releases by design, by request kind (listed in the notes)."""


def find_client_values(
    ledger: Ledger,
    clients: Federation | Mapping[str, ClientData],
    *,
    per_row: PerRow | None = None,
    categories_allowed_in: Collection[str] = AGREEMENT_KINDS,
) -> AuditReport:
    """Value audit: no client row, column or label vector inside any message.

    Parameters
    ----------
    ledger : Ledger
        A run recorded with ``Ledger(keep_messages=True)``.
    clients : Federation or mapping of ClientData
        The clients of that run (an in-process federation, or their data).
    per_row : mapping, optional
        Payload kind -> fields that send per-row values by design: not searched,
        listed in :attr:`AuditReport.per_row_by_design`.
    categories_allowed_in : collection of str, default :data:`AGREEMENT_KINDS`
        Payload kinds that may carry category values (pass ``()`` when the
        categories are declared public and none should leave a client). Where
        they appear is always listed in :attr:`AuditReport.category_values`.

    Raises
    ------
    PrivacyAuditError
        Listing every row, column, sorted column or label vector found (round,
        client, kind, direction, field, whose data), category values outside
        ``categories_allowed_in`` and every message that cannot be decoded.
    """
    check_recorded(ledger, "find_client_values")
    data = client_data(clients)
    tally = _Tally(Needles.build(data), declared_fields(per_row))
    undecodable: list[Finding] = []
    errors: list[Finding] = []
    disclosed: list[str] = []
    for message in ledger.captured:
        envelope = decoded(message, undecodable)
        if envelope is not None and envelope.payload is not None:
            tally.message(message, envelope.payload, categories_allowed_in)
            if message.direction == "up":
                disclosed += _disclosure(message, REPLY_DISCLOSURES)
                tally.reply(envelope.payload.kind)
        elif envelope is not None and envelope.type == "error":
            errors += _error_findings(message, envelope, data.get(message.client))
            disclosed += _disclosure(message, ERROR_DISCLOSURES)
    return AuditReport(
        messages=tally.messages,
        fields=tally.fields,
        per_row_by_design=tuple(sorted(tally.by_design)),
        category_values={c: frozenset(k) for c, k in sorted(tally.categories.items())},
        undecodable=tuple(undecodable),
        findings=tuple(sorted_findings(tally.findings + errors + undecodable)),
        notes=tuple(dict.fromkeys((*tally.needles.notes, *disclosed))),
        masked_replies=tally.masked,
        plain_replies=tally.plain,
    ).raise_if_failed("The value audit")


def _error_findings(
    m: CapturedMessage, envelope: Envelope, data: ClientData | None
) -> list[Finding]:
    """Label or category values, or the row count, named by an error's text."""
    if data is None:
        return []
    text = envelope.error
    words = set(re.findall(r"[^\s'\"(),:;\[\]{}]+", text))
    values = {str(v) for v in pd.unique(data.y.astype(str))}
    for names in data.categories:
        values.update(names or ())
    named = sorted(v for v in values & words if len(v) >= 3 and not _number(v))
    found = [f"names the client's value {v!r} in its text" for v in named]
    if data.n_rows >= MIN_RUN and re.search(rf"(?<![\d.]){data.n_rows}(?![\d.])", text):
        found.append(f"names the client's row count {data.n_rows} in its text")
    return [finding(m, envelope.kind, "error", what) for what in found]


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _disclosure(m: CapturedMessage, declared: Mapping[str, str]) -> list[str]:
    """Return the note of a message that reveals something by design, if declared."""
    what = declared.get(m.kind)
    if what is None:
        return []
    return [f"round {m.round}, client {m.client!r}, {m.kind!r}: by design, {what}"]


@dataclass
class _Tally:
    """What the value audit has checked and found so far."""

    needles: Needles
    declared: Mapping[str, frozenset[str]]
    messages: int = 0
    fields: int = 0
    masked: int = 0
    plain: int = 0
    findings: list[Finding] = field(default_factory=list)
    by_design: set[str] = field(default_factory=set)
    categories: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    cache: dict[tuple[str, bytes], list[str]] = field(default_factory=dict)

    def message(
        self, m: CapturedMessage, payload: Payload, allowed: Collection[str]
    ) -> None:
        """Search every field of one decoded message (identical arrays once)."""
        kind = payload.kind
        self.messages += 1
        for name, value in payload_fields(payload):
            self.fields += 1
            if name in self.declared.get(kind, ()):
                self.by_design.add(f"{kind}.{name}")
            elif isinstance(value, np.ndarray):
                self._array(m, kind, name, value, allowed)

    def reply(self, kind: str) -> None:
        """Count a decoded reply: a masked vector, or any other (plain)."""
        if kind == MaskedReply.kind:
            self.masked += 1
        else:
            self.plain += 1

    def _array(
        self,
        m: CapturedMessage,
        kind: str,
        name: str,
        value: np.ndarray,
        allowed: Collection[str],
    ) -> None:
        key = (value.dtype.str + str(value.shape), value.tobytes())
        if key not in self.cache:
            self.cache[key] = self.needles.search(value)
        self.findings += [finding(m, kind, name, what) for what in self.cache[key]]
        for client in self.needles.category_owners(value):
            self.categories[client].add(f"category values in {kind}")
            if kind not in allowed:
                what = f"holds category values of client {client!r}"
                self.findings.append(finding(m, kind, name, what))
