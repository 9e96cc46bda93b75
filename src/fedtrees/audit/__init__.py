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

**Error texts** (in the value audit). A client's error travels to the server,
so its text may name no row count and no data value (docs/security.md): the
text of every error envelope is searched for its client's
label and category values (as whole words, of three characters or more and not
numbers, which ordinary text holds) and, for clients of at least
:data:`MIN_RUN` rows, for its row count as a whole number. What an error reveals
by *existing*, whatever its text, cannot be removed: it is declared in
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

from fedtrees.audit._harness import audit_row_scaling, row_scaled_pair
from fedtrees.audit._messages import answered
from fedtrees.audit._report import AuditReport, Finding
from fedtrees.audit._search import MIN_RUN
from fedtrees.audit._sizes import compare_message_sizes
from fedtrees.audit._values import (
    AGREEMENT_KINDS,
    ERROR_DISCLOSURES,
    REPLY_DISCLOSURES,
    find_client_values,
)
from fedtrees.federation import recording

__all__ = [
    "AGREEMENT_KINDS",
    "ERROR_DISCLOSURES",
    "MIN_RUN",
    "REPLY_DISCLOSURES",
    "AuditReport",
    "Finding",
    "answered",
    "audit_row_scaling",
    "compare_message_sizes",
    "find_client_values",
    "recording",
    "row_scaled_pair",
]
