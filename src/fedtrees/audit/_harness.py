"""The double-fit harness: a protocol run on ``n`` and ``2n + 1`` rows, both audits."""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import partial

import numpy as np
import numpy.typing as npt

from fedtrees.audit._report import AuditReport, PerRow
from fedtrees.audit._sizes import compare_message_sizes
from fedtrees.audit._values import AGREEMENT_KINDS, find_client_values
from fedtrees.exceptions import PrivacyAuditError
from fedtrees.federation import (
    Federation,
    Ledger,
    as_frame,
)

__all__ = ["audit_row_scaling", "row_scaled_pair"]


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
