"""Running a method for the audits: a fit that returns its ledger, and tidy data.

:func:`fedtrees.audit.audit_row_scaling` runs a protocol on clients of ``n``
rows and of ``2n + 1`` rows; these helpers give it a ``fit`` per method and data
on which the protocol's data-dependent choices stay the same when every row is
copied (a few levels per feature, classes split by one feature).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fedtrees.audit import recording
from fedtrees.federation import Federation, Ledger, ServerStrategy, Task


def estimator_fit(make: Callable[[], Any]) -> Callable[[Federation], Ledger]:
    """A fit of a fresh ``make()`` estimator that keeps every message."""

    def fit(federation: Federation) -> Ledger:
        with recording() as ledgers:
            make().fit_federation(federation)
        (ledger,) = ledgers
        return ledger

    return fit


def strategy_fit(
    make: Callable[[], ServerStrategy], task: Task = "classification"
) -> Callable[[Federation], Ledger]:
    """A run of a fresh ``make()`` strategy that keeps every message."""

    def fit(federation: Federation) -> Ledger:
        ledger = Ledger(keep_messages=True)
        federation.run(make(), task=task, ledger=ledger)
        return ledger

    return fit


def leveled(
    sizes: Sequence[int] = (40, 45, 50),
    n_features: int = 3,
    n_levels: int = 5,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Data whose quantiles do not move when every row is copied (X, y, groups).

    Every feature takes ``n_levels`` values (non-integers, distinct between
    features), each on the same share of every client's rows (sizes must be
    multiples of ``n_levels``), so empirical quantiles at multiples of
    ``1 / (n_levels - 1)`` fall on the same values for ``n`` and ``2n + 1`` rows.
    The label is 1 exactly on the upper levels of feature 0: trees split there
    first, whatever the number of copies.
    """
    rng = np.random.default_rng(seed)
    levels = 0.25 + 1.5 * np.arange(n_levels)
    blocks = []
    for size in sizes:
        if size % n_levels:
            raise ValueError(f"sizes must be multiples of n_levels, got {size}")
        codes = np.stack(
            [rng.permutation(np.arange(size) % n_levels) for _ in range(n_features)],
            axis=1,
        )
        blocks.append(codes)
    codes = np.concatenate(blocks)
    X = levels[codes] + 10.0 * np.arange(n_features)
    y = (codes[:, 0] >= n_levels // 2).astype(np.int64)
    groups = np.repeat([chr(ord("a") + i) for i in range(len(sizes))], sizes)
    return X, y, groups
