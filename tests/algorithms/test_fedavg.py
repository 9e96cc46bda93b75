"""FedAvg baselines against centralized references (numpy GD, scikit-learn)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from fedtrees import FedAvgClassifier
from fedtrees._random import keyed_rng
from fedtrees.algorithms.fedavg import FedAvgStrategy
from fedtrees.algorithms.fedavg._network import Layout
from fedtrees.audit import audit_row_scaling, find_client_values
from fedtrees.exceptions import ClientDropoutWarning, ValidationError
from fedtrees.federation import ClientData, Fault, Federation, Ledger
from tests.audit_helpers import estimator_fit, leveled

FULL_BATCH = {"local_steps": 1, "batch_size": 10_000, "standardize": "global"}


def _data(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sites = np.repeat(["a", "b", "c"], [60, 90, 50])
    X = rng.normal(size=(200, 3)) * [1.0, 3.0, 0.5] + [0.0, 2.0, -1.0]
    X[sites == "c"] += 1.5  # covariate shift
    logits = X @ [1.5, -0.8, 2.0] + 0.3 + rng.logistic(size=200)
    return X, (logits > 0).astype(int), sites


def _pooled_standardized(X: np.ndarray) -> np.ndarray:
    return (X - X.mean(axis=0)) / X.std(axis=0)


def test_one_full_batch_step_per_round_is_centralized_gradient_descent() -> None:
    # With one full-batch step from the same parameters, the size-weighted average
    # of the client steps is exactly one gradient step on the pooled rows.
    X, y, sites = _data()
    model = FedAvgClassifier(
        n_rounds=12, learning_rate=0.3, random_state=4, **FULL_BATCH
    )
    model.fit(X, y, groups=sites)

    Z = _pooled_standardized(X)
    theta = Layout.of(3, (), 2).initial(keyed_rng(4, 5))
    w, b = theta[:3].copy(), theta[3]
    for _ in range(12):
        p = 1 / (1 + np.exp(-(Z @ w + b)))
        w, b = w - 0.3 * Z.T @ (p - y) / len(y), b - 0.3 * np.mean(p - y)
    np.testing.assert_allclose(model.coefs_[0][:, 0], w, rtol=1e-10)
    np.testing.assert_allclose(model.intercepts_[0], [b], rtol=1e-10)


def test_converges_to_sklearn_logistic_regression_on_pooled_rows() -> None:
    X, y, sites = _data()
    model = FedAvgClassifier(
        n_rounds=300, learning_rate=2.0, random_state=0, **FULL_BATCH
    )
    model.fit(X, y, groups=sites)
    Z = _pooled_standardized(X)
    reference = LogisticRegression(C=np.inf, tol=1e-10, max_iter=10_000).fit(Z, y)

    np.testing.assert_allclose(
        model.predict_proba(X), reference.predict_proba(Z), atol=2e-3
    )


def test_client_standardization_uses_each_clients_own_statistics() -> None:
    X, y, sites = _data()
    model = FedAvgClassifier(n_rounds=3, random_state=0).fit(X, y, groups=sites)
    result = model._result

    for site in ("a", "b", "c"):
        rows = X[sites == site]
        np.testing.assert_allclose(result.client_mean[site], rows.mean(axis=0))
        np.testing.assert_allclose(result.client_scale[site], rows.std(axis=0))
        expected = result.layout.proba(
            result.theta, (rows - rows.mean(axis=0)) / rows.std(axis=0)
        )
        np.testing.assert_allclose(model.predict_proba(rows, client=site), expected)
    np.testing.assert_allclose(result.mean, X.mean(axis=0))  # pooled == from sums


def test_mlp_learns_what_a_linear_model_cannot() -> None:
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(400, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, "same", "different")
    sites = np.repeat(["a", "b"], 200)
    kwargs = {"n_rounds": 30, "local_epochs": 5, "batch_size": 16, "learning_rate": 0.1}

    mlp = FedAvgClassifier((16,), random_state=0, **kwargs).fit(X, y, groups=sites)
    linear = FedAvgClassifier((), random_state=0, **kwargs).fit(X, y, groups=sites)

    assert mlp.score(X, y) > 0.9
    assert linear.score(X, y) < 0.7


def test_multiclass_categorical_frame_and_a_client_lacking_a_class() -> None:
    rng = np.random.default_rng(2)
    colour = rng.choice(["red", "green", "blue"], size=300)
    frame = pd.DataFrame({"x": rng.normal(size=300), "colour": pd.Categorical(colour)})
    y = np.where(frame.x > 0.8, "high", colour)
    sites = np.repeat(["a", "b"], 150)
    y[(sites == "b") & (y == "high")] = "red"

    model = FedAvgClassifier(
        n_rounds=20, local_epochs=3, batch_size=8, learning_rate=0.1, random_state=0
    ).fit(frame, y, groups=sites)

    assert model.predict_proba(frame).shape == (300, 4)
    assert model.coefs_[0].shape == (4, 4)  # x + three one-hot colours -> 4 classes
    assert model.score(frame, y) > 0.8


def test_same_seed_same_model_whatever_the_threads() -> None:
    X, y, sites = _data()
    one = FedAvgClassifier(n_rounds=4, random_state=9).fit(X, y, groups=sites)
    two = FedAvgClassifier(n_rounds=4, random_state=9, workers=3).fit(
        X, y, groups=sites
    )
    np.testing.assert_array_equal(one.coefs_[0], two.coefs_[0])
    assert one.communication_.rounds == 1 + 1 + 4


def test_messages_hold_no_row_level_array() -> None:
    rows = {"a": 211, "b": 223, "c": 227}
    rng = np.random.default_rng(3)
    n = sum(rows.values())
    X, y = rng.normal(size=(n, 4)), rng.integers(0, 2, n)
    fed = Federation.from_groups(X, y, np.repeat(list(rows), list(rows.values())))
    ledger = Ledger(keep_messages=True)
    config = FedAvgClassifier(n_rounds=2, random_state=0)._config()

    fed.run(FedAvgStrategy(config), task="classification", ledger=ledger)

    assert find_client_values(ledger, fed).messages == 2 * 3 * 4


def test_no_message_grows_with_the_rows() -> None:
    X, y, groups = leveled()
    report = audit_row_scaling(
        estimator_fit(lambda: FedAvgClassifier(n_rounds=2, random_state=0)),
        X,
        y,
        groups,
    )
    assert report.messages == 3 * 2 * 3 * 4  # size audit, then each run's values
    assert report.per_row_by_design == ()


def test_a_client_dropping_out_is_left_out_of_that_rounds_average() -> None:
    X, y, sites = _data()
    fed = Federation.from_groups(X, y, sites, faults=[Fault("b", "drop", round=3)])
    model = FedAvgClassifier(n_rounds=3, on_dropout="continue", random_state=0)

    with pytest.warns(ClientDropoutWarning, match="'b'"):
        model.fit_federation(fed)
    assert len(model.loss_curve_) == 3


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("hidden_layer_sizes", (0,)),
        ("n_rounds", 0),
        ("batch_size", 0),
        ("learning_rate", -0.1),
        ("standardize", "site"),
        ("local_epochs", 0),
    ],
)
def test_bad_parameters_name_themselves(param: str, value: object) -> None:
    X, y, sites = _data()
    with pytest.raises(ValidationError, match=f"'{param}' parameter"):
        FedAvgClassifier(**{param: value}).fit(X, y, groups=sites)


# -- the baseline of the one-shot synthetic-data paper (docs/synthetic.md) -----------
def _paper_model(**kwargs: Any) -> FedAvgClassifier:
    """MLP (12, 12), lr 0.01, 10 local epochs per round (minibatches of 16)."""
    paper = {"learning_rate": 0.01, "local_epochs": 10, "batch_size": 16}
    return FedAvgClassifier((12, 12), random_state=0, **paper, **kwargs)


def _train_bytes_per_client(ledger: Ledger) -> pd.Series:
    frame = ledger.to_frame()
    train = frame[frame["kind"] == "fedavg.train"]
    return (train.bytes_down + train.bytes_up).groupby(train.client).sum()


def test_stops_at_the_first_round_whose_score_reaches_the_target() -> None:
    X, y, sites = _data()
    X_test, y_test, _ = _data(seed=1)
    target = 0.8

    model = _paper_model(n_rounds=30, stop_at_score=target)
    model.fit(X, y, groups=sites, eval_set=(X_test, y_test))

    assert model.stopped_early_
    assert 1 < model.n_rounds_ < 30
    assert model.n_rounds_ == len(model.score_curve_) == len(model.loss_curve_)
    assert model.score_curve_[-1] >= target
    assert all(score < target for score in model.score_curve_[:-1])
    # the curve scores the global model as predict does (pooled standardization)
    assert model.score_curve_[-1] == model.score(X_test, y_test)
    # agreement, moments, then one ledger round per training round
    ledger = model.communication_
    assert ledger.rounds == 2 + model.n_rounds_
    assert _train_bytes_per_client(ledger).size == 3
    trained = {e.round for e in ledger.entries if e.kind == "fedavg.train"}
    assert trained == set(range(2, 2 + model.n_rounds_))


def test_an_unreachable_target_runs_every_round() -> None:
    X, y, sites = _data()  # logistic label noise: no model reaches 0.999
    X_test, y_test, _ = _data(seed=1)

    model = _paper_model(n_rounds=5, stop_at_score=0.999)
    model.fit(X, y, groups=sites, eval_set=(X_test, y_test))

    assert not model.stopped_early_
    assert model.n_rounds_ == len(model.score_curve_) == 5
    assert max(model.score_curve_) < 0.999
    assert model.communication_.rounds == 2 + 5


def test_stop_at_score_is_a_score_in_the_unit_interval() -> None:
    X, y, sites = _data()
    with pytest.raises(ValidationError, match="'stop_at_score' parameter"):
        _paper_model(stop_at_score=1.01).fit(X, y, groups=sites, eval_set=(X, y))


def test_stop_at_score_without_eval_set_names_both() -> None:
    X, y, sites = _data()
    with pytest.raises(ValidationError, match=r"stop_at_score=0\.8 needs eval_set"):
        _paper_model(stop_at_score=0.8).fit(X, y, groups=sites)
    with pytest.raises(ValidationError, match=r"stop_at_score.*eval_set"):
        _paper_model(stop_at_score=0.8).fit_federation(
            Federation.from_groups(X, y, sites)
        )


@pytest.mark.parametrize(
    ("eval_set", "message"),
    [
        ((np.zeros((4, 2)), np.zeros(4, dtype=int)), "eval_set X_eval: X has 2"),
        ((np.zeros((4, 3)), np.array([0, 1, 2, 0])), "label '2' is not among"),
        ((np.zeros((4, 3)), np.zeros(3, dtype=int)), "one label per row"),
        ((np.zeros((4, 3)),), "'eval_set' parameter"),
    ],
)
def test_a_mismatched_eval_set_is_refused(eval_set: tuple, message: str) -> None:
    X, y, sites = _data()
    with pytest.raises(ValidationError, match=message):
        _paper_model(n_rounds=1).fit(X, y, groups=sites, eval_set=eval_set)


def test_the_eval_set_never_reaches_a_client() -> None:
    rows = {"a": 211, "b": 223, "c": 227}
    rng = np.random.default_rng(3)
    n = sum(rows.values())
    X, y = rng.normal(size=(n, 4)), rng.integers(0, 2, n)
    fed = Federation.from_groups(X, y, np.repeat(list(rows), list(rows.values())))
    X_eval, y_eval = rng.normal(size=(233, 4)), rng.integers(0, 2, 233)
    model = _paper_model(n_rounds=2)
    config = model._config()
    evaluator = model._evaluator(config, (X_eval, y_eval), None)
    ledger = Ledger(keep_messages=True)

    fed.run(FedAvgStrategy(config, evaluator), task="classification", ledger=ledger)

    sites = fed.on_each_site(lambda data: data)
    evaluation = ClientData.build("eval", X_eval, y_eval)  # searched like a client
    report = find_client_values(ledger, {**sites, "eval": evaluation})
    assert report.messages == 2 * 3 * 4


def test_no_message_depends_on_the_eval_set() -> None:
    X, y, sites = _data()
    rng = np.random.default_rng(5)
    runs = {}
    for n_eval in (None, 50, 5000):
        eval_set = None
        if n_eval is not None:
            eval_set = (rng.normal(size=(n_eval, 3)), rng.integers(0, 2, n_eval))
        model = _paper_model(n_rounds=3).fit(X, y, groups=sites, eval_set=eval_set)
        entries = model.communication_.entries
        runs[n_eval] = [
            (e.round, e.client, e.kind, e.bytes_down, e.bytes_up) for e in entries
        ]
        assert len(model.score_curve_) == (0 if n_eval is None else 3)

    assert runs[50] == runs[5000] == runs[None]


def test_cost_attributes_come_from_the_ledger() -> None:
    X, y, sites = _data()
    model = _paper_model(n_rounds=3).fit(X, y, groups=sites)

    per_client = _train_bytes_per_client(model.communication_)
    assert model.bytes_per_client_ == per_client.mean()
    assert model.n_parameters_ == 3 * 12 + 12 + 12 * 12 + 12 + 12 * 1 + 1
    # θ travels down and back up as float64 in every round, plus the envelope
    assert per_client.min() > 2 * 8 * model.n_parameters_ * model.n_rounds_
    frame = model.communication_.to_frame()
    train = frame[frame["kind"] == "fedavg.train"]
    assert model.client_seconds_ == pytest.approx(
        train.groupby("client").seconds.sum().mean()
    )
    assert model.client_seconds_ > 0
    assert model.score_curve_ == []
    assert not model.stopped_early_


def test_same_seed_same_score_curve() -> None:
    X, y, sites = _data()
    X_test, y_test, _ = _data(seed=1)
    curves = [
        _paper_model(n_rounds=16, workers=workers)
        .fit(X, y, groups=sites, eval_set=(X_test, y_test))
        .score_curve_
        for workers in (1, 3)
    ]
    assert curves[0] == curves[1]
    assert len(set(curves[0])) > 1  # the curve moves: the test compares something
