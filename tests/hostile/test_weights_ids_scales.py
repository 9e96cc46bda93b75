"""Three findings of the fresh sweep cases (issue 24, round two).

- A local forest fitted with sample weights below 1 was refused: scikit-learn's
  bootstrap now draws rows in proportion to the weights, so a node's weighted
  count is a count of rows drawn, beyond the client's total weight; the reply
  check blamed the honest client.
- ``predict(X, client=7)`` of a model fitted with ``groups`` of ints said
  "must be one id or n ids ... Got 1 ids": one int is one id, as ``"7"`` is.
- FedGBDT on a target scaled below ~1e-6 fitted only single leaves without a
  word (XGBoost's floor on a split's loss reduction): the fit now warns.
- A run whose strategy wanted more rounds than the loop's limit (100,000) was
  cut short without a word: it is refused at start, or fails at the limit.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fedtrees import (
    FedGBDTRegressor,
    LocalEnsembleClassifier,
    LocalModelsRegressor,
)
from fedtrees.algorithms.toy import ToyStrategy
from fedtrees.exceptions import LocalProtocolError, ValidationError
from fedtrees.federation import ClientData, InProcessTransport, run


def _data(n: int = 90) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    return X, 3.0 * X[:, 0] + 0.1 * rng.normal(size=n), np.repeat([7, 8, 9], n // 3)


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("weight", [0.5, 0.01])
def test_a_local_forest_with_weights_below_one_fits(weight: float) -> None:
    X, y, groups = _data()
    labels = (y > 0).astype(int)
    model = LocalEnsembleClassifier(n_estimators=3, random_state=0)
    model.fit(X, labels, groups, sample_weight=np.full(len(y), weight))
    assert model.score(X, labels) > 0.9


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("client", [7, np.int64(7)], ids=["int", "numpy-int"])
def test_one_int_client_id_is_one_id(client: object) -> None:
    X, y, groups = _data()
    model = LocalModelsRegressor(n_estimators=2, random_state=0).fit(X, y, groups)
    np.testing.assert_array_equal(
        model.predict(X, client=client), model.predict(X, client="7")
    )


@pytest.mark.hostile("documented")
def test_fedgbdt_warns_when_a_tiny_target_leaves_every_tree_one_leaf() -> None:
    X, y, groups = _data()
    with pytest.warns(UserWarning, match=r"every tree is a single leaf.*rescale y"):
        FedGBDTRegressor(n_estimators=3, random_state=0).fit(X, y * 1e-6, groups)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # at the usual scale: splits, no warning
        FedGBDTRegressor(n_estimators=3, random_state=0).fit(X, y, groups)


# -- the round loop's limit ------------------------------------------------------------
@pytest.mark.hostile("clear_error")
def test_a_run_needing_more_rounds_than_the_loop_allows_is_refused_at_start() -> None:
    # 10,000 iterations of depth 16 need 160,002 rounds: the loop stopped at
    # 100,000 without a word, the boosting cut short.
    X, y, groups = _data()
    model = FedGBDTRegressor(n_estimators=10_000, max_depth=16, random_state=0)
    with pytest.raises(ValidationError, match=r"needs up to 160002 rounds.*100000"):
        model.fit(X, y, groups)


@pytest.mark.hostile("clear_error")
def test_a_strategy_still_planning_at_the_limit_is_an_error_not_a_short_run() -> None:
    strategy = ToyStrategy(0, 4, 5, np.linspace(-2.0, 2.0, 3))
    strategy.expected_rounds = lambda: None  # type: ignore[method-assign]  # no estimate
    X, y, _ = _data(9)
    data = {"a": ClientData.build("a", X, (y > 0).astype(int))}
    with pytest.raises(LocalProtocolError, match=r"reached max_rounds=2 before"):
        run(strategy, InProcessTransport(data), task="classification", max_rounds=2)
