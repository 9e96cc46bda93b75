"""FedAvg's moments of a one-row client were its row (issue 24, a leak).

The moments round sends ``Σw·x`` and ``Σw·x²`` per feature with ``Σw``: for a
client of one row (or of one row of non-zero weight) ``total / weight`` *is*
that row, and two rows give both values of every feature. A client now needs
:data:`~fedtrees.algorithms.fedavg._limits.MIN_CLIENT_ROWS` rows of non-zero
weight; with fewer it refuses, with an error that states no count, and takes no
part: its rows appear in no message.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from fedtrees import FedAvgClassifier, Federation
from fedtrees.algorithms.fedavg import FedAvgStrategy
from fedtrees.audit import find_client_values
from fedtrees.exceptions import RemoteProtocolError
from fedtrees.federation import Ledger


def _federation(
    small_rows: int, weights: np.ndarray | None = None
) -> tuple[Federation, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    sizes = [small_rows, 20, 20]
    n = sum(sizes)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] > 0).astype(np.int64)
    groups = np.repeat(["small", "b", "c"], sizes)
    return Federation.from_groups(X, y, groups, sample_weight=weights), X, y


@pytest.mark.hostile("correct")
def test_a_one_row_client_sends_nothing_that_holds_its_row() -> None:
    # The value audit found the row in 'fedavg.moments_reply' field 'total'.
    federation, _, _ = _federation(1)
    ledger = Ledger(keep_messages=True)
    config = FedAvgClassifier(n_rounds=2, on_dropout="continue")._config()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = federation.run(
            FedAvgStrategy(config), task="classification", ledger=ledger
        )
    find_client_values(ledger, federation)  # raises PrivacyAuditError on a leak
    assert "small" not in result.result.client_mean
    refused = [str(w.message) for w in caught if "'small'" in str(w.message)]
    assert refused
    assert all("fewer than 3 rows" in m for m in refused)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("rows", [1, 2])
def test_a_client_too_small_to_hide_its_rows_refuses_without_its_count(
    rows: int,
) -> None:
    federation, _, _ = _federation(rows)
    with pytest.raises(RemoteProtocolError, match=r"'small'.*fewer than 3 rows") as e:
        FedAvgClassifier(n_rounds=1).fit_federation(federation)
    assert not re.search(rf"\b{rows} rows?\b", str(e.value))


@pytest.mark.hostile("correct")
def test_rows_of_zero_weight_do_not_count() -> None:
    # 5 rows, one of them weighted: its moments were that row times its weight.
    weights = np.ones(45)
    weights[1:5] = 0.0
    federation, _, _ = _federation(5, weights)
    ledger = Ledger(keep_messages=True)
    config = FedAvgClassifier(n_rounds=1, on_dropout="continue")._config()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = federation.run(
            FedAvgStrategy(config), task="classification", ledger=ledger
        )
    assert "small" not in result.result.client_mean
    replies = [
        m for m in ledger.captured if m.client == "small" and m.direction == "up"
    ]
    assert replies  # the refusal travelled
    find_client_values(ledger, federation)
