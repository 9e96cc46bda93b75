"""Fitting a registry entry on a federation, with its messages kept.

The suite plays every site, so it also holds their secret noise seed
(:data:`NOISE_SEED`): the DP entries' noise is the sites' own, never keyed by the
estimator's seed (docs/security.md), and only with the sites' secret is a DP fit
reproducible. ``noise_seed=None`` gives the sites fresh entropy instead.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedtrees.audit import recording
from fedtrees.federation import Fault, Federation, Ledger, decode
from tests.conformance.registry import SITES, Entry, data

NOISE_SEED = 37
"""The simulated sites' secret noise seed."""


def federation(
    entry: Entry, faults: Sequence[Fault] = (), noise_seed: int | None = NOISE_SEED
) -> Federation:
    """The entry's three sites, with ``faults`` injected and their noise seed."""
    X, y, groups, _ = data(entry.regression)
    return Federation.from_groups(X, y, groups, faults=faults, noise_seed=noise_seed)


def fit(
    entry: Entry,
    faults: Sequence[Fault] = (),
    seed: int = 0,
    *,
    noise_seed: int | None = NOISE_SEED,
    **params: Any,
) -> tuple[Any, Ledger, Federation]:
    """A fresh estimator fitted on the entry's federation, its ledger and the federation."""
    fed = federation(entry, faults, noise_seed)
    model = entry.make(seed)
    if params:
        model.set_params(**params)
    with recording() as ledgers:
        model.fit_federation(fed)
    (ledger,) = ledgers
    return model, ledger, fed


_CLEAN: dict[str, tuple[Any, Ledger, Federation]] = {}


def clean_fit(entry: Entry) -> tuple[Any, Ledger, Federation]:
    """:func:`fit` without faults (seed 0), done once per entry and process."""
    if entry.name not in _CLEAN:
        _CLEAN[entry.name] = fit(entry)
    return _CLEAN[entry.name]


def outputs(entry: Entry, model: Any) -> np.ndarray:
    """What the model says on held-out rows (probabilities for a classifier)."""
    held_out = data(entry.regression)[3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        predict = model.predict if entry.regression else model.predict_proba
        if not entry.personal:
            return np.asarray(predict(held_out))
        return np.stack([np.asarray(predict(held_out, client=s)) for s in SITES])


def same_model(entry: Entry, a: Any, b: Any) -> None:
    """Bit-for-bit the same predictions, and the same trees where it has them."""
    np.testing.assert_array_equal(outputs(entry, a), outputs(entry, b))
    if hasattr(a, "trees_"):
        assert a.trees_ == b.trees_


# Fields that differ between runs by design: a fresh nonce per fit (a client's
# kept state of an older fit is never taken for this one) and a client's timing.
PER_RUN = ("fit_id", "fit_seconds")


def messages(ledger: Ledger) -> list[tuple[Any, ...]]:
    """Every message: round, client, direction, kind, size and fields (but PER_RUN)."""
    out = []
    for m in ledger.captured:
        envelope = decode(m.data)
        fields: list[Any] = [envelope.error]
        if envelope.payload is not None:
            for item in dataclasses.fields(envelope.payload):
                if item.name not in PER_RUN:
                    value = getattr(envelope.payload, item.name)
                    kept = value.tobytes() if isinstance(value, np.ndarray) else value
                    fields.append((item.name, kept))
        out.append((m.round, m.client, m.direction, m.kind, len(m.data), fields))
    return out


def middle_round(ledger: Ledger) -> int:
    """A round after the agreement (round 0), about halfway through the run."""
    return max(1, ledger.rounds // 2)
