"""FedAvg baselines against centralized references (numpy GD, scikit-learn)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from fedtrees import FedAvgClassifier
from fedtrees._random import keyed_rng
from fedtrees.algorithms.fedavg import FedAvgStrategy
from fedtrees.algorithms.fedavg._network import Layout
from fedtrees.exceptions import ClientDropoutWarning, ValidationError
from fedtrees.federation import Fault, Federation, Ledger, audit_messages

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

    assert audit_messages(ledger, fed.row_counts()) == 2 * 3 * 4


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
