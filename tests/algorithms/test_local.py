"""Local baselines against scikit-learn forests fitted on each client's rows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

from fedtrees import (
    LocalEnsembleClassifier,
    LocalEnsembleRegressor,
    LocalModelsClassifier,
    LocalModelsRegressor,
)
from fedtrees._random import client_key, keyed_rng
from fedtrees.algorithms.local import LocalForestStrategy
from fedtrees.audit import audit_row_scaling, find_client_values
from fedtrees.exceptions import RemoteProtocolError, ValidationError
from fedtrees.federation import Fault, Federation, Ledger
from tests.audit_helpers import estimator_fit, leveled

PARAMS = {"n_estimators": 7, "max_depth": 4, "random_state": 3}


def _client_seed(seed: int, client: str) -> int:
    """The seed the protocol gives client ``client``'s forest (independent copy)."""
    return int(keyed_rng(seed, 4, client_key(client)).integers(2**31 - 1))


def _data(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, "yes", "no").astype(object)
    sites = np.repeat(["north", "south", "west"], [n // 2, n // 3, n - n // 2 - n // 3])
    y[sites == "west"] = "no"  # one client lacks a class
    return X, y, sites


def _reference_proba(X, y, sites, client: str, classes: list[str]) -> np.ndarray:
    rows = sites == client
    rf = RandomForestClassifier(
        n_estimators=7, max_depth=4, random_state=_client_seed(3, client)
    ).fit(X[rows], y[rows])
    proba = np.zeros((X.shape[0], len(classes)))
    proba[:, [classes.index(c) for c in rf.classes_]] = rf.predict_proba(X)
    return proba


def test_local_models_equal_sklearn_forests_on_each_clients_rows() -> None:
    X, y, sites = _data()
    model = LocalModelsClassifier(**PARAMS).fit(X, y, groups=sites)

    for client in ("north", "south", "west"):
        expected = _reference_proba(X, y, sites, client, ["no", "yes"])
        np.testing.assert_allclose(model.predict_proba(X, client=client), expected)
    assert model.predict(X, client="west").tolist() == ["no"] * X.shape[0]


def test_local_models_predict_per_row_client() -> None:
    X, y, sites = _data()
    model = LocalModelsClassifier(**PARAMS).fit(X, y, groups=sites)

    mixed = model.predict_proba(X, client=sites)

    for client in ("north", "south"):
        rows = sites == client
        np.testing.assert_allclose(
            mixed[rows], model.predict_proba(X[rows], client=client)
        )


def test_local_ensemble_averages_every_clients_forest() -> None:
    X, y, sites = _data()
    model = LocalEnsembleClassifier(**PARAMS).fit(X, y, groups=sites)

    expected = np.mean(
        [_reference_proba(X, y, sites, c, ["no", "yes"]) for c in np.unique(sites)],
        axis=0,
    )
    np.testing.assert_allclose(model.predict_proba(X), expected)
    assert len(model.trees_) == 21
    assert model.communication_.rounds == 2  # the agreement and one round


def test_size_weighting_weighs_forests_by_client_rows() -> None:
    X, y, sites = _data()
    model = LocalEnsembleClassifier(weighting="size", **PARAMS).fit(X, y, groups=sites)

    clients = np.unique(sites)
    sizes = np.array([np.sum(sites == c) for c in clients], dtype=float)
    per_client = [_reference_proba(X, y, sites, c, ["no", "yes"]) for c in clients]
    expected = np.tensordot(sizes / sizes.sum(), np.stack(per_client), axes=1)
    np.testing.assert_allclose(model.predict_proba(X), expected)
    assert model.client_weights_ == dict(zip(clients, sizes, strict=True))


def test_regressors_match_sklearn() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(240, 3))
    y = X[:, 0] * 2 + rng.normal(size=240)
    sites = np.repeat(["a", "b"], 120)
    refs = {
        c: RandomForestRegressor(
            n_estimators=7, max_depth=4, random_state=_client_seed(3, c)
        ).fit(X[sites == c], y[sites == c])
        for c in ("a", "b")
    }

    models = LocalModelsRegressor(**PARAMS).fit(X, y, groups=sites)
    ensemble = LocalEnsembleRegressor(**PARAMS).fit(X, y, groups=sites)

    np.testing.assert_allclose(models.predict(X, client="b"), refs["b"].predict(X))
    np.testing.assert_allclose(
        ensemble.predict(X), (refs["a"].predict(X) + refs["b"].predict(X)) / 2
    )
    scores = models.score_clients(X, y)
    assert scores["a"] == pytest.approx(refs["a"].score(X, y))


def test_one_client_needs_no_client_argument_and_works_on_frames() -> None:
    X, y, _ = _data()
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame["colour"] = pd.Categorical(np.where(X[:, 2] > 0, "red", "blue"))
    model = LocalModelsClassifier(n_estimators=3, random_state=0).fit(frame, y)

    assert set(model.predict(frame)) <= {"no", "yes"}
    assert model.trees_[0].feature_names == ("a", "b", "c", "d", "colour")


def test_client_argument_errors_are_clear() -> None:
    X, y, sites = _data()
    model = LocalModelsClassifier(n_estimators=2, random_state=0).fit(
        X, y, groups=sites
    )

    with pytest.raises(ValidationError, match="pass client=<id>"):
        model.predict(X)
    with pytest.raises(ValidationError, match="'east', which is not a known client"):
        model.predict(X, client="east")


@pytest.mark.parametrize(
    ("param", "value", "message"),
    [
        ("n_estimators", 0, "'n_estimators' parameter"),
        ("criterion", "squared_error", "'criterion' parameter"),
        ("max_depth", 0, "'max_depth' parameter"),
        ("min_samples_leaf", 0, "'min_samples_leaf' parameter"),
        ("max_features", "all", "'max_features' parameter"),
        ("weighting", "rows", "'weighting' parameter"),
    ],
)
def test_bad_parameters_name_themselves(
    param: str, value: object, message: str
) -> None:
    X, y, sites = _data()
    with pytest.raises(ValidationError, match=message):
        LocalEnsembleClassifier(**{param: value}).fit(X, y, groups=sites)


def test_messages_hold_no_row_level_array() -> None:
    rows = {"a": 211, "b": 223, "c": 227}  # primes: no legitimate size coincides
    rng = np.random.default_rng(2)
    n = sum(rows.values())
    X, y = rng.normal(size=(n, 5)), rng.integers(0, 3, n)
    fed = Federation.from_groups(X, y, np.repeat(list(rows), list(rows.values())))
    ledger = Ledger(keep_messages=True)
    params = {"n_estimators": 4, "max_depth": 3}

    fed.run(LocalForestStrategy(params, 0), task="classification", ledger=ledger)

    assert find_client_values(ledger, fed).messages == len(ledger.captured) == 12


@pytest.mark.parametrize("model", [LocalEnsembleClassifier, LocalModelsClassifier])
def test_no_message_grows_with_the_rows(model: type) -> None:
    X, y, groups = leveled()
    params = {"n_estimators": 2, "max_depth": 2, "bootstrap": False}
    report = audit_row_scaling(
        estimator_fit(lambda: model(random_state=0, **params)), X, y, groups
    )
    assert report.messages == 3 * 2 * 3 * 2  # size audit, then each run's values
    assert report.per_row_by_design == ()


def test_a_malformed_forest_is_refused_before_the_server_keeps_it() -> None:
    X, y, sites = _data()

    def corrupt(reply: object) -> object:
        left = reply.left.copy()  # type: ignore[attr-defined]
        left[0] = 0  # node 0 as its own child: routing would never end
        return dataclasses.replace(reply, left=left)  # type: ignore[type-var]

    fed = Federation.from_groups(
        X, y, sites, faults=[Fault("south", "mutate", round=1, mutate=corrupt)]
    )
    with pytest.raises(RemoteProtocolError, match=r"south.*trees"):
        LocalEnsembleClassifier(**PARAMS).fit_federation(fed)
