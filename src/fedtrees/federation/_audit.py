"""The message audit: no client row, column or per-row size in any message.

Two checks, each explicit about what it proves (docs/security.md):

**Size audit** (:func:`compare_message_sizes`, :func:`audit_row_scaling`). The same
protocol is run twice, on clients of ``n`` rows and on clients of ``2n + 1`` rows
with the same values (:func:`row_scaled_pair`: every row twice plus one row a
third time). Messages are paired by (round, client, kind, direction) and every
field must keep its size: the element count (shape) of every array, the width of
every string array, the length of every string. A message or a round present in
one run only is a finding too: the shape of the protocol must not depend on
``n``. A field that carries per-row values *by design* (FedForest's
``candidates="exact"``) is declared in ``per_row`` and reported as "per-row by
design" instead. What it proves: for this data and these settings, no message
grows with the row count, so none can carry a value per row. What it cannot
prove: anything where the protocol's data-dependent decisions (tree shapes,
sketches of nodes smaller than the sketch, sparse bins) differ between the two
runs — the pair and the data are chosen so that they do not — nor a message with
one value per *distinct* value (copies add none; the value audit looks for
those). A numeric dtype that widens with the counts (uint8 to uint16) is noted,
not blamed: it carries no more values.

**Value audit** (:func:`find_client_values`). Every numeric array of every
message, flattened whatever its shape and read as float64 (exact for float32
and integers), is searched for each client's rows (its ``F`` values in order, as
a contiguous run), for each column in row order, sorted (what a sketch of all
values looks like) and as its distinct values, and for its label vector (values
and codes); each also as float32-rounded values. String arrays are searched for
the label vector and for the client's category values, reported per message kind
(the agreement sends the category lists unless they are declared public).
Searches are vectorised: a window is compared only where its first value
matches (``sliding_window_view``), and identical arrays are searched once. What
it cannot see: rows of fewer than two features or without a non-integer value
(codes and counts look alike), constant columns, clients with fewer than
:data:`MIN_RUN` rows, category values equal to a client id, a label or a column
name, and values transformed other than by a cast (scaled, encrypted, split
across messages). The size audit covers the last.

**Error texts** (in the value audit). A client's error travels to the server, so its
text may name no row count and no data value (docs/security.md): the text of every error
envelope is searched for its client's label and category values (as whole words, of
three characters or more and not numbers, which ordinary text holds) and, for clients of
at least :data:`MIN_RUN` rows, for its row count as a whole number. What an error
reveals by *existing*, whatever its text, cannot be removed: it is declared in
:data:`ERROR_DISCLOSURES` and listed in the report's notes when it occurs.

**Released models.** A reply that carries a client's fitted model by design
(FedGA's personal trees: thresholds, leaf values and training rows per node) is
searched like any other, and what it releases beyond that — which no search can
blame — is declared in :data:`REPLY_DISCLOSURES` and listed in the report's
notes when it occurs.

Messages that cannot be decoded are findings, listed by round, client, kind and
direction; the audit goes on with the rest. Failures raise
:class:`~fedtrees.exceptions.PrivacyAuditError` listing every finding; success
returns an :class:`AuditReport` saying what was checked.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from functools import partial
from typing import Final

import numpy as np
import numpy.typing as npt
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

from fedtrees._typing import FloatArray
from fedtrees.exceptions import CodecError, LocalProtocolError, PrivacyAuditError
from fedtrees.federation._codec import Envelope, decode
from fedtrees.federation._data import ClientData, as_frame
from fedtrees.federation._federation import Federation
from fedtrees.federation._ledger import CapturedMessage, Ledger
from fedtrees.federation._payload import Payload

__all__ = [
    "AGREEMENT_KINDS",
    "ERROR_DISCLOSURES",
    "MIN_RUN",
    "REPLY_DISCLOSURES",
    "AuditReport",
    "Finding",
    "audit_row_scaling",
    "compare_message_sizes",
    "find_client_values",
    "row_scaled_pair",
]

PerRow = Mapping[str, Collection[str]]
"""Fields that carry per-row values by design: payload kind -> field names."""

MIN_RUN: Final = 8
"""Columns and label vectors of clients with fewer rows are not searched."""

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

_NAN: Final = -1.2345678901234567e308  # stands for NaN in searches (NaN != NaN)
_SEPARATOR: Final = np.array([np.nan])  # NaN never survives _canonical: in no run
_MAX_LISTED: Final = 60
_WEIGHTS: Final = np.random.default_rng(12).integers(1, 2**63, MIN_RUN, np.uint64) | 1
_DECODE_ERRORS: Final = (CodecError, ValueError, TypeError, RecursionError)


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
    """

    messages: int = 0
    fields: int = 0
    per_row_by_design: tuple[str, ...] = ()
    category_values: Mapping[str, frozenset[str]] = field(default_factory=dict)
    undecodable: tuple[Finding, ...] = ()
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()

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
    _check_recorded(small, "compare_message_sizes")
    _check_recorded(large, "compare_message_sizes")
    declared = _declared(per_row)
    a, b = _keyed(small), _keyed(large)
    findings = _unpaired(a, b)
    undecodable: list[Finding] = []
    by_design: set[str] = set()
    notes: list[str] = []
    n_fields = 0
    for key in a.keys() & b.keys():
        pair = [_decoded(m, undecodable) for m in (a[key], b[key])]
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
        findings=tuple(_sorted(findings + undecodable)),
        notes=tuple(dict.fromkeys(notes)),
    ).raise_if_failed("The size audit (n vs 2n + 1 rows)")


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
    _check_recorded(ledger, "find_client_values")
    data = _client_data(clients)
    tally = _Tally(_Needles.build(data), _declared(per_row))
    undecodable: list[Finding] = []
    errors: list[Finding] = []
    disclosed: list[str] = []
    for message in ledger.captured:
        envelope = _decoded(message, undecodable)
        if envelope is not None and envelope.payload is not None:
            tally.message(message, envelope.payload, categories_allowed_in)
            if message.direction == "up":
                disclosed += _disclosure(message, REPLY_DISCLOSURES)
        elif envelope is not None and envelope.type == "error":
            errors += _error_findings(message, envelope, data.get(message.client))
            disclosed += _disclosure(message, ERROR_DISCLOSURES)
    return AuditReport(
        messages=tally.messages,
        fields=tally.fields,
        per_row_by_design=tuple(sorted(tally.by_design)),
        category_values={c: frozenset(k) for c, k in sorted(tally.categories.items())},
        undecodable=tuple(undecodable),
        findings=tuple(_sorted(tally.findings + errors + undecodable)),
        notes=tuple(dict.fromkeys((*tally.needles.notes, *disclosed))),
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
    return [_finding(m, envelope.kind, "error", what) for what in found]


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


def row_scaled_pair(
    X: object, y: npt.ArrayLike, groups: npt.ArrayLike
) -> tuple[Federation, Federation]:
    """Two federations with the same clients: ``n`` rows each, then ``2n + 1``.

    The large federation holds each client's rows twice plus its first row a
    third time: the same values, nearly the same empirical distribution, so the
    protocol's data-dependent choices stay the same when the data separate
    clearly and nodes stay larger than any sketch (shallow trees, a large
    ``min_samples_leaf``, no bootstrap).
    """
    frame = as_frame(X, "row_scaled_pair")
    target, keys = np.asarray(y), np.asarray(groups)
    order = []
    for group in sorted(set(keys.tolist()), key=str):
        rows = np.flatnonzero(keys == group)
        order.append(np.concatenate([rows, rows, rows[:1]]))
    index = np.sort(np.concatenate(order), kind="stable")
    small = Federation.from_groups(frame, target, keys)
    large = Federation.from_groups(
        frame.iloc[index].reset_index(drop=True), target[index], keys[index]
    )
    return small, large


def audit_row_scaling(
    fit: Callable[[Federation], Ledger],
    X: object,
    y: npt.ArrayLike,
    groups: npt.ArrayLike,
    *,
    per_row: PerRow | None = None,
    categories_allowed_in: Collection[str] = AGREEMENT_KINDS,
) -> AuditReport:
    """Run a protocol on ``n`` and ``2n + 1`` rows; audit sizes, then values.

    What this proves, and what it cannot, is in the module docstring: choose
    data and settings for which the protocol decides alike on both runs (see
    :func:`row_scaled_pair`).

    Parameters
    ----------
    fit : callable
        Runs the protocol on a federation and returns its ledger, recorded with
        ``Ledger(keep_messages=True)``.
    X, y, groups
        The data of the ``n``-row run (see :func:`row_scaled_pair`).
    per_row, categories_allowed_in
        As in :func:`compare_message_sizes` and :func:`find_client_values`.

    Returns
    -------
    AuditReport
        Of both audits on both runs.

    Raises
    ------
    PrivacyAuditError
        Listing the findings of all three audits.
    """
    small, large = row_scaled_pair(X, y, groups)
    runs = ((small, fit(small)), (large, fit(large)))
    values = partial(
        find_client_values, per_row=per_row, categories_allowed_in=categories_allowed_in
    )
    audits: list[Callable[[], AuditReport]] = [
        partial(compare_message_sizes, runs[0][1], runs[1][1], per_row=per_row),
        *(partial(values, ledger, fed) for fed, ledger in runs),
    ]
    report, failures = AuditReport(), []
    for audit in audits:
        try:
            report = report.merge(audit())
        except PrivacyAuditError as error:
            failures.append(str(error))
    if failures:
        raise PrivacyAuditError(" | ".join(failures))
    return report


# -- the size audit ---------------------------------------------------------------

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
        return [_finding(m, small.kind, "*", what)], 0
    findings = []
    pairs = list(zip(_fields(small.payload), _fields(large.payload), strict=True))
    for (name, a), (_, b) in pairs:
        change = _size_change(a, b)
        if change is None:
            continue
        if name in declared.get(small.kind, ()):
            by_design.add(f"{small.kind}.{name}")
        else:
            findings.append(_finding(m, small.kind, name, change))
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
            _fields(small.payload), _fields(large.payload), strict=False
        )
        if isinstance(a, np.ndarray)
        and isinstance(b, np.ndarray)
        and a.dtype.kind not in "US"
        and a.dtype != b.dtype
    ]


# -- the value audit --------------------------------------------------------------


@dataclass
class _Runs:
    """Value sequences to look for, each with a description of whose it is."""

    values: list[FloatArray] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)

    def add(self, values: FloatArray, label: str) -> None:
        for variant in _variants(values):
            self.values.append(variant)
            self.labels.append(label)

    def index(self) -> _RunIndex:
        """Hash the runs, grouped by length."""
        return _RunIndex(self)


class _RunIndex:
    """Every run indexed by a hash of its most varied stretch of MIN_RUN values.

    An array is hashed window by window (MIN_RUN values each) once; a run is
    compared value by value only where its anchor's hash occurs, aligned on the
    anchor: one sort-based lookup per array, whatever the number of runs.
    """

    def __init__(self, runs: _Runs) -> None:
        self.runs = runs
        anchors = [_anchor(v) for v in runs.values]
        hashes = np.array(
            [
                _gram_hashes(v[a : a + MIN_RUN])[0]
                for v, a in zip(runs.values, anchors, strict=True)
            ],
            dtype=np.uint64,
        )
        order = np.argsort(hashes, kind="stable")
        self.hashes, self.ids = hashes[order], order
        self.anchors = np.array(anchors, dtype=np.int64)

    def found_in(self, flat: FloatArray) -> list[str]:
        """Labels of the runs that occur in ``flat``."""
        if flat.size < MIN_RUN or not self.hashes.size:
            return []
        grams = _gram_hashes(flat)
        at = np.flatnonzero(_member(self.hashes, grams)[0])
        lo = np.searchsorted(self.hashes, grams[at], side="left")
        hi = np.searchsorted(self.hashes, grams[at], side="right")
        found: list[str] = []
        for position, first, last in zip(
            at.tolist(), lo.tolist(), hi.tolist(), strict=True
        ):
            for i in self.ids[first:last].tolist():
                run, label = self.runs.values[i], self.runs.labels[i]
                start = position - int(self.anchors[i])
                if (
                    label not in found
                    and 0 <= start <= flat.size - run.size
                    and np.array_equal(flat[start : start + run.size], run)
                ):
                    found.append(label)
        return found


def _member(ordered: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which ``values`` are in the sorted array ``ordered``, and where."""
    index = np.minimum(np.searchsorted(ordered, values), max(ordered.size - 1, 0))
    if not ordered.size:
        return np.zeros(values.shape, dtype=bool), index
    return ordered[index] == values, index


def _as_bytes(flat: FloatArray) -> FloatArray:
    """Whole numbers 0-255 read as the bytes of float64 values, at every offset.

    The eight readings are joined by a separator no run holds; empty when
    ``flat`` holds other values.
    """
    if not flat.size or np.any((flat < 0) | (flat > 255) | (flat != np.floor(flat))):
        return np.zeros(0)
    raw = flat.astype(np.uint8)
    readings = []
    for offset in range(8):
        end = offset + (raw.size - offset) // 8 * 8
        readings += [_canonical(raw[offset:end].view(np.float64)), _SEPARATOR]
    return np.concatenate(readings)


def _anchor(values: FloatArray) -> int:
    """Offset of the stretch of MIN_RUN values with the most distinct values."""
    ordered = np.sort(sliding_window_view(values, MIN_RUN), axis=1)
    distinct = 1 + (ordered[:, 1:] != ordered[:, :-1]).sum(axis=1)
    return int(np.argmax(distinct))


def _gram_hashes(values: FloatArray) -> npt.NDArray[np.uint64]:
    """Hash every window of MIN_RUN values (their bits, wrapping uint64)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    windows = sliding_window_view(bits, MIN_RUN)
    mixed = (windows ^ (windows >> np.uint64(29))) * _WEIGHTS
    out: npt.NDArray[np.uint64] = mixed.sum(axis=1, dtype=np.uint64)
    return out


@dataclass
class _Needles:
    """Every client's rows, columns, labels and category values, indexed."""

    rows: npt.NDArray[np.void]
    row_owner: npt.NDArray[np.int64]
    row_firsts: FloatArray
    width: int
    clients: tuple[str, ...]
    run_index: _RunIndex
    string_runs: list[tuple[npt.NDArray[np.str_], str]]
    categories: dict[str, frozenset[str]]
    notes: tuple[str, ...]

    @classmethod
    def build(cls, data: Mapping[str, ClientData]) -> _Needles:
        clients = tuple(sorted(data))
        widths = {data[c].matrix.shape[1] for c in clients}
        width = widths.pop() if len(widths) == 1 else 0
        notes: list[str] = []
        row_blocks, owners, runs = [], [], _Runs()
        string_runs: list[tuple[npt.NDArray[np.str_], str]] = []
        classes = _classes(data)
        for i, client in enumerate(clients):
            d = data[client]
            rows = _informative_rows(client, d, width, notes)
            for variant in _variants(rows):
                row_blocks.append(variant)
                owners.append(np.full(variant.shape[0], i))
            if d.n_rows < MIN_RUN:
                notes.append(
                    f"client {client!r}: {d.n_rows} rows, fewer than {MIN_RUN}: "
                    "columns and labels not searched"
                )
                continue
            notes += _add_columns(runs, client, d)
            _add_labels(runs, string_runs, client, d, classes)
        categories = _category_values(data, classes, notes)
        matrix = (
            np.concatenate(row_blocks) if row_blocks else np.zeros((0, max(width, 1)))
        )
        row_bytes = _as_void(matrix)
        order = np.argsort(row_bytes, kind="stable")
        owner = np.concatenate(owners) if owners else np.zeros(0, np.int64)
        return cls(
            rows=row_bytes[order],
            row_owner=owner[order],
            row_firsts=np.unique(matrix[:, 0]) if matrix.size else np.zeros(0),
            width=width,
            clients=clients,
            run_index=runs.index(),
            string_runs=string_runs,
            categories=categories,
            notes=tuple(notes),
        )

    def search(self, value: np.ndarray) -> list[str]:
        """Describe every row, column or label vector found in ``value``.

        Complex arrays are searched in their real and imaginary parts; arrays of
        byte values (whole numbers 0-255) also as the raw bytes of float64
        values, at every offset.
        """
        kind = value.dtype.kind
        if kind in "US":
            flat = value.astype(str).reshape(-1)
            return [label for run, label in self.string_runs if _has_run(flat, run)]
        if kind == "c":
            return self.search(value.real) + self.search(value.imag)
        if kind not in "biuf":
            return []
        flat = _canonical(value.reshape(-1).astype(np.float64))
        found = self._numbers_in(flat)
        raw = _as_bytes(flat)
        if raw.size >= 8 * MIN_RUN:
            found += [f"{f} (as raw float64 bytes)" for f in self._numbers_in(raw)]
        return found

    def _numbers_in(self, flat: FloatArray) -> list[str]:
        return self.run_index.found_in(flat) + self._rows_in(flat)

    def _rows_in(self, flat: FloatArray) -> list[str]:
        if self.width < 2 or flat.size < self.width or not self.rows.size:
            return []
        starts = np.flatnonzero(
            _member(self.row_firsts, flat[: flat.size - self.width + 1])[0]
        )
        if not starts.size:
            return []
        windows = _as_void(sliding_window_view(flat, self.width)[starts])
        hit, index = _member(self.rows, windows)
        owners = self.row_owner[np.unique(index[hit])]
        return [
            f"holds {int(np.count_nonzero(owners == i))} row(s) of client "
            f"{self.clients[i]!r}"
            for i in np.unique(owners).tolist()
        ]

    def category_owners(self, value: np.ndarray) -> list[str]:
        """Clients whose category values appear in a string array."""
        if value.dtype.kind not in "US" or not value.size:
            return []
        present = set(value.astype(str).reshape(-1).tolist())
        return [c for c, cats in self.categories.items() if cats & present]


@dataclass
class _Tally:
    """What the value audit has checked and found so far."""

    needles: _Needles
    declared: Mapping[str, frozenset[str]]
    messages: int = 0
    fields: int = 0
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
        for name, value in _fields(payload):
            self.fields += 1
            if name in self.declared.get(kind, ()):
                self.by_design.add(f"{kind}.{name}")
            elif isinstance(value, np.ndarray):
                self._array(m, kind, name, value, allowed)

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
        self.findings += [_finding(m, kind, name, what) for what in self.cache[key]]
        for client in self.needles.category_owners(value):
            self.categories[client].add(f"category values in {kind}")
            if kind not in allowed:
                what = f"holds category values of client {client!r}"
                self.findings.append(_finding(m, kind, name, what))


def _add_columns(runs: _Runs, client: str, d: ClientData) -> list[str]:
    notes = []
    matrix = _canonical(d.matrix)
    for j, name in enumerate(d.X.columns):
        column = matrix[:, j]
        if np.unique(column).size < 2:
            notes.append(
                f"client {client!r}: column {name!r} is constant, not searched"
            )
            continue
        runs.add(column, f"holds column {name!r} of client {client!r}")
        runs.add(np.sort(column), f"holds column {name!r} of client {client!r}, sorted")
        distinct = np.unique(column)
        if MIN_RUN <= distinct.size < column.size:
            runs.add(
                distinct,
                f"holds the distinct values of column {name!r} of client {client!r}",
            )
    return notes


def _add_labels(
    runs: _Runs,
    string_runs: list[tuple[npt.NDArray[np.str_], str]],
    client: str,
    d: ClientData,
    classes: npt.NDArray[np.str_],
) -> None:
    label = f"holds the labels of client {client!r}"
    strings = d.y.astype(str).to_numpy().astype(str)
    if np.unique(strings).size < 2:
        return
    string_runs.append((strings, label))
    runs.add(np.searchsorted(classes, strings).astype(np.float64), label)
    numeric = np.asarray(d.y.to_numpy())
    if numeric.dtype.kind in "biuf":
        runs.add(_canonical(numeric.astype(np.float64)), label)


def _classes(data: Mapping[str, ClientData]) -> npt.NDArray[np.str_]:
    labels = [d.y.astype(str).to_numpy().astype(str) for d in data.values()]
    return np.unique(np.concatenate(labels)) if labels else np.zeros(0, str)


def _category_values(
    data: Mapping[str, ClientData], classes: npt.NDArray[np.str_], notes: list[str]
) -> dict[str, frozenset[str]]:
    """Each client's category values, less the strings every party knows anyway.

    A value equal to a client id, a label or a column name cannot be told apart
    from them in a message; it is left out, with a note.
    """
    public = {*data, *classes.tolist()}
    public.update(str(c) for d in data.values() for c in d.X.columns)
    out = {}
    for client in sorted(data):
        values = {v for cats in data[client].categories if cats for v in cats}
        if values & public:
            notes.append(
                f"client {client!r}: category values {sorted(values & public)} equal "
                "a client id, a label or a column name; not searched"
            )
        out[client] = frozenset(values - public)
    return out


def _informative_rows(
    client: str, d: ClientData, width: int, notes: list[str]
) -> FloatArray:
    """Distinct rows worth searching: two values at least, one not an integer."""
    matrix = _canonical(d.matrix)
    if width < 2 or matrix.shape[1] != width:
        notes.append(f"client {client!r}: rows of fewer than two features not searched")
        return np.zeros((0, max(width, 1)))
    varied = matrix.min(axis=1) != matrix.max(axis=1)
    fractional = (matrix != np.round(matrix)).any(axis=1)
    keep = varied & fractional
    if not keep.all():
        notes.append(
            f"client {client!r}: {int((~keep).sum())} of {d.n_rows} rows not searched "
            "(all values equal, or all integers: codes and counts look alike)"
        )
    return np.unique(matrix[keep], axis=0)


def _variants(values: FloatArray) -> list[FloatArray]:
    rounded = _canonical(values.astype(np.float32).astype(np.float64))
    same = np.array_equal(rounded, values)
    return [values] if same else [values, rounded]


def _canonical(values: FloatArray) -> FloatArray:
    """NaN as a sentinel and -0.0 as 0.0, so that equal values compare equal."""
    out: FloatArray = np.where(np.isnan(values), _NAN, values + 0.0)
    return out


def _as_void(matrix: FloatArray) -> npt.NDArray[np.void]:
    contiguous = np.ascontiguousarray(matrix, dtype=np.float64)
    width = contiguous.shape[1] * 8 if contiguous.ndim == 2 else 8
    return contiguous.view(np.dtype((np.void, width))).reshape(-1)


def _has_run(flat: np.ndarray, run: np.ndarray) -> bool:
    """Whether ``run`` occurs as a contiguous stretch of ``flat`` (strings)."""
    m = run.shape[0]
    if m == 0 or flat.shape[0] < m:
        return False
    starts = np.flatnonzero(flat[: flat.shape[0] - m + 1] == run[0])
    return any(np.array_equal(flat[i : i + m], run) for i in starts.tolist())


# -- shared -----------------------------------------------------------------------


def _check_recorded(ledger: Ledger, owner: str) -> None:
    if not ledger.keep_messages:
        raise LocalProtocolError(
            f"{owner} needs a run recorded with Ledger(keep_messages=True)."
        )


def _client_data(
    clients: Federation | Mapping[str, ClientData],
) -> Mapping[str, ClientData]:
    if isinstance(clients, Federation):
        return clients.on_each_site(lambda d: d)
    return clients


def _declared(per_row: PerRow | None) -> dict[str, frozenset[str]]:
    return {kind: frozenset(names) for kind, names in (per_row or {}).items()}


def _decoded(message: CapturedMessage, undecodable: list[Finding]) -> Envelope | None:
    try:
        return decode(message.data)
    except _DECODE_ERRORS as error:
        undecodable.append(
            _finding(message, message.kind, "*", f"cannot be decoded ({error})")
        )
        return None


def _fields(payload: Payload | None) -> Iterator[tuple[str, object]]:
    if payload is not None:
        for f in fields(payload):  # type: ignore[arg-type]
            yield f.name, getattr(payload, f.name)


def _finding(message: CapturedMessage, kind: str, name: str, what: str) -> Finding:
    return Finding(message.round, message.client, kind, message.direction, name, what)


def _sorted(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.round, f.client, f.direction, f.kind))
