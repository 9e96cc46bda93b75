"""The message audit: no array of any message may be shaped like a client's rows.

If a message holds an array with a dimension equal to some client's row count, the
run probably moved row-level data across the boundary. Tests pick row counts
(e.g. primes) that cannot coincide with legitimate sizes, run a method with
``Ledger(keep_messages=True)``, and call :func:`audit_messages`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fedtrees.exceptions import LocalProtocolError, PrivacyAuditError
from fedtrees.federation._codec import decode
from fedtrees.federation._ledger import Ledger

__all__ = ["audit_messages"]


def audit_messages(ledger: Ledger, row_counts: Mapping[str, int]) -> int:
    """Decode every captured message; fail if an array dimension equals a row count.

    Returns the number of messages checked.

    Raises
    ------
    PrivacyAuditError
        Listing round, client, kind, direction, field and shape of each offence.
    LocalProtocolError
        If the run was not recorded with ``Ledger(keep_messages=True)``.
    """
    if not ledger.keep_messages:
        raise LocalProtocolError(
            "audit_messages needs a run recorded with Ledger(keep_messages=True)."
        )
    forbidden = {int(n) for n in row_counts.values()}
    offences = []
    for message in ledger.captured:
        envelope = decode(message.data)
        if envelope.payload is None:
            continue
        for name, value in vars(envelope.payload).items():
            if isinstance(value, np.ndarray) and forbidden.intersection(value.shape):
                offences.append(
                    f"round {message.round}, client {message.client!r}, "
                    f"{message.kind!r} "
                    f"({message.direction}): field {name!r} has shape {value.shape}"
                )
    if offences:
        raise PrivacyAuditError(
            f"Row-level arrays left the boundary (row counts {sorted(forbidden)}): "
            + "; ".join(offences)
        )
    return len(ledger.captured)
