"""The size audit: no field of any message changes its size with the row count."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import numpy as np

from fedtrees.audit._messages import (
    check_recorded,
    declared_fields,
    decoded,
    finding,
    payload_fields,
    sorted_findings,
)
from fedtrees.audit._report import AuditReport, Finding, PerRow
from fedtrees.federation import (
    CapturedMessage,
    Envelope,
    Ledger,
)

__all__ = ["compare_message_sizes"]


def compare_message_sizes(
    small: Ledger, large: Ledger, *, per_row: PerRow | None = None
) -> AuditReport:
    """Size audit: no field of any message changes its size with the row count.

    Parameters
    ----------
    small, large : Ledger
        Runs of the same protocol with ``keep_messages=True`` on clients with
        ``n`` and ``2n + 1`` rows (see :func:`row_scaled_pair`).
    per_row : mapping, optional
        Payload kind -> fields that send per-row values by design; their growth
        is listed in :attr:`AuditReport.per_row_by_design`, not blamed.

    Raises
    ------
    PrivacyAuditError
        Listing every field whose size differs, every message or round present
        in one run only, and every message that cannot be decoded.
    LocalProtocolError
        If a run was not recorded with ``Ledger(keep_messages=True)``.
    """
    check_recorded(small, "compare_message_sizes")
    check_recorded(large, "compare_message_sizes")
    declared = declared_fields(per_row)
    a, b = _keyed(small), _keyed(large)
    findings = _unpaired(a, b)
    undecodable: list[Finding] = []
    by_design: set[str] = set()
    notes: list[str] = []
    n_fields = 0
    for key in a.keys() & b.keys():
        pair = [decoded(m, undecodable) for m in (a[key], b[key])]
        if pair[0] is None or pair[1] is None:
            continue
        found, n = _compare_envelopes(a[key], pair[0], pair[1], declared, by_design)
        findings += found
        notes += _widened(pair[0], pair[1])
        n_fields += n
    return AuditReport(
        messages=len(a.keys() & b.keys()),
        fields=n_fields,
        per_row_by_design=tuple(sorted(by_design)),
        undecodable=tuple(undecodable),
        findings=tuple(sorted_findings(findings + undecodable)),
        notes=tuple(dict.fromkeys(notes)),
    ).raise_if_failed("The size audit (n vs 2n + 1 rows)")


_Key = tuple[int, str, str, str, int]


def _keyed(ledger: Ledger) -> dict[_Key, CapturedMessage]:
    seen: Counter[tuple[int, str, str, str]] = Counter()
    out: dict[_Key, CapturedMessage] = {}
    for m in ledger.captured:
        base = (m.round, m.client, m.kind, m.direction)
        out[(*base, seen[base])] = m
        seen[base] += 1
    return out


def _unpaired(
    a: dict[_Key, CapturedMessage], b: dict[_Key, CapturedMessage]
) -> list[Finding]:
    findings = []
    rounds = [len({k[0] for k in keyed}) for keyed in (a, b)]
    if rounds[0] != rounds[1]:
        findings.append(
            Finding(
                0,
                "*",
                "*",
                "*",
                "*",
                f"the run has {rounds[0]} rounds with n rows but {rounds[1]} "
                "with 2n + 1 rows",
            )
        )
    for keyed, other, which in ((a, b, "n"), (b, a, "2n + 1")):
        for key in sorted(keyed.keys() - other.keys()):
            m = keyed[key]
            findings.append(
                Finding(
                    m.round,
                    m.client,
                    m.kind,
                    m.direction,
                    "*",
                    f"is sent only in the run with {which} rows",
                )
            )
    return findings


def _compare_envelopes(
    m: CapturedMessage,
    small: Envelope,
    large: Envelope,
    declared: Mapping[str, frozenset[str]],
    by_design: set[str],
) -> tuple[list[Finding], int]:
    if (small.type, small.kind) != (large.type, large.kind):
        what = (
            f"is {small.type} {small.kind!r} with n rows but {large.type} "
            f"{large.kind!r} with 2n + 1 rows"
        )
        return [finding(m, small.kind, "*", what)], 0
    findings = []
    pairs = list(
        zip(payload_fields(small.payload), payload_fields(large.payload), strict=True)
    )
    for (name, a), (_, b) in pairs:
        change = _size_change(a, b)
        if change is None:
            continue
        if name in declared.get(small.kind, ()):
            by_design.add(f"{small.kind}.{name}")
        else:
            findings.append(finding(m, small.kind, name, change))
    return findings, len(pairs)


def _size_change(a: object, b: object) -> str | None:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if a.shape != b.shape:
            return f"has shape {a.shape} with n rows but {b.shape} with 2n + 1 rows"
        if a.dtype.kind in "US" and a.dtype.itemsize != b.dtype.itemsize:
            return (
                f"holds strings of {a.dtype} with n rows but {b.dtype} with 2n + 1 rows"
            )
        return None
    if isinstance(a, str) and isinstance(b, str) and len(a) != len(b):
        return f"has {len(a)} characters with n rows but {len(b)} with 2n + 1 rows"
    return None


def _widened(small: Envelope, large: Envelope) -> list[str]:
    return [
        f"{small.kind}.{name}: {a.dtype} with n rows, {b.dtype} with 2n + 1 rows "
        "(a wider count type, not more values)"
        for (name, a), (_, b) in zip(
            payload_fields(small.payload), payload_fields(large.payload), strict=False
        )
        if isinstance(a, np.ndarray)
        and isinstance(b, np.ndarray)
        and a.dtype.kind not in "US"
        and a.dtype != b.dtype
    ]
