"""Every estimator's messages pass the value audit, and a seed fixes the whole run."""

from __future__ import annotations

import pytest

from fedtrees.audit import find_client_values
from tests.conformance import checks
from tests.conformance.registry import Entry, covers_every_estimator, params


def test_the_registry_holds_every_public_estimator() -> None:
    assert covers_every_estimator() == set()


@pytest.mark.parametrize("entry", params("audit"))
def test_messages_carry_no_client_rows_columns_or_labels(entry: Entry) -> None:
    _, ledger, fed = checks.clean_fit(entry)
    report = find_client_values(ledger, fed, per_row=entry.per_row)
    assert report.messages == len(ledger.captured) > 0
    assert set(report.per_row_by_design) <= {
        f"{kind}.{name}" for kind, names in entry.per_row.items() for name in names
    }


@pytest.mark.parametrize("entry", params("determinism"))
def test_the_same_seed_gives_the_same_model_and_messages(entry: Entry) -> None:
    # The sites hold the same secret noise seed in both runs (checks.NOISE_SEED).
    a, first, _ = checks.fit(entry, seed=3)
    b, second, _ = checks.fit(entry, seed=3)
    checks.same_model(entry, a, b)
    assert checks.messages(first) == checks.messages(second)


@pytest.mark.parametrize(
    "entry",
    [p for p in params("determinism") if p.values[0].dp],  # type: ignore[union-attr]
)
def test_without_the_sites_secret_a_dp_fit_draws_fresh_noise(entry: Entry) -> None:
    # The estimator's seed does not fix the noise: the server knows it.
    _, first, _ = checks.fit(entry, seed=3, noise_seed=None)
    _, second, _ = checks.fit(entry, seed=3, noise_seed=None)
    up = [checks.messages(ledger) for ledger in (first, second)]
    replies = [[m for m in messages if m[2] == "up"] for messages in up]
    assert replies[0] != replies[1]
