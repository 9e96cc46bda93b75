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
    a, first, _ = checks.fit(entry, seed=3)
    b, second, _ = checks.fit(entry, seed=3)
    checks.same_model(entry, a, b)
    assert checks.messages(first) == checks.messages(second)
