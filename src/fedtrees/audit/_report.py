"""What an audit found: one finding per message and field, and the report."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Final

from fedtrees.exceptions import PrivacyAuditError

__all__ = ["AuditReport", "Finding", "PerRow"]

PerRow = Mapping[str, Collection[str]]
"""Fields that carry per-row values by design: payload kind -> field names."""

_MAX_LISTED: Final = 60


@dataclass(frozen=True)
class Finding:
    """One thing found in one message."""

    round: int
    client: str
    kind: str
    direction: str
    field: str
    found: str

    def __str__(self) -> str:
        return (
            f"round {self.round}, client {self.client!r}, {self.kind!r} "
            f"({self.direction}): field {self.field!r} {self.found}"
        )


@dataclass(frozen=True)
class AuditReport:
    """What an audit checked and found.

    Attributes
    ----------
    messages : int
        Messages decoded and checked.
    fields : int
        Fields checked (summed over messages).
    per_row_by_design : tuple of str
        ``"kind.field"`` of the declared per-row fields seen (sizes that grow
        with the rows, or values not searched, by design).
    category_values : dict
        ``client -> {"category values in <kind>", ...}``: the messages that hold
        that client's category values.
    undecodable : tuple of Finding
        Messages that could not be decoded (also counted in ``findings``).
    findings : tuple of Finding
        Everything that fails the audit.
    notes : tuple of str
        What could not be checked, and numeric dtypes that widened with the rows.
    masked_replies, plain_replies : int
        Replies decoded by the value audit whose payload is a masked vector
        (``federation.masked_reply``, secure aggregation) and any other reply;
        error envelopes count as neither.
    """

    messages: int = 0
    fields: int = 0
    per_row_by_design: tuple[str, ...] = ()
    category_values: Mapping[str, frozenset[str]] = field(default_factory=dict)
    undecodable: tuple[Finding, ...] = ()
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    masked_replies: int = 0
    plain_replies: int = 0

    def merge(self, other: AuditReport) -> AuditReport:
        """Both reports' counts, fields, findings and notes together."""
        categories: dict[str, frozenset[str]] = dict(self.category_values)
        for client, kinds in other.category_values.items():
            categories[client] = categories.get(client, frozenset()) | kinds
        return AuditReport(
            self.messages + other.messages,
            self.fields + other.fields,
            tuple(sorted({*self.per_row_by_design, *other.per_row_by_design})),
            categories,
            self.undecodable + other.undecodable,
            self.findings + other.findings,
            tuple(dict.fromkeys(self.notes + other.notes)),
            self.masked_replies + other.masked_replies,
            self.plain_replies + other.plain_replies,
        )

    def raise_if_failed(self, what: str) -> AuditReport:
        """Return ``self``, or raise :class:`PrivacyAuditError` listing the findings."""
        if not self.findings:
            return self
        listed = [str(f) for f in self.findings[:_MAX_LISTED]]
        more = len(self.findings) - len(listed)
        raise PrivacyAuditError(
            f"{what} failed with {len(self.findings)} finding(s): "
            + "; ".join(listed)
            + (f"; and {more} more" if more else "")
        )
