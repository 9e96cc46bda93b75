"""FedGBDT's XGBoost export: the Booster predicts the model's margins.

Binary, three-class and squared-error models fitted on clients, on rows with
missing values: XGBoost's margins and probabilities equal the model's (float32
sums), on the training rows, on rows lying exactly on the thresholds (the
``nextafter`` rule) and on rows lying on quantile-grid edges; SHAP explains
the Booster additively; a categorical column is refused clearly.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from fedtrees import FedGBDTClassifier, FedGBDTRegressor
from fedtrees.algorithms.fedgbdt._export import _split_conditions, _tree, to_xgboost
from fedtrees.exceptions import ValidationError
from fedtrees.tree import Missing, NodeKind, NodeStats, TreeBuilder

CASES = ["binary", "multiclass", "regression"]


def _rows(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    return X


def _fit(case: str, X: np.ndarray) -> Any:
    rng = np.random.default_rng(1)
    signal = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1])
    params = {"n_estimators": 5, "max_depth": 3, "random_state": 0}
    if case == "regression":
        model: Any = FedGBDTRegressor(**params)
        y = 3.0 * signal + 2.0 + rng.normal(size=len(X))
    else:
        model = FedGBDTClassifier(**params)
        cuts = [0.0] if case == "binary" else [-0.5, 0.5]
        y = np.digitize(signal + 0.5 * rng.normal(size=len(X)), cuts)
    return model.fit(X, y, groups=np.arange(len(X)) % 3)


@pytest.fixture(scope="module")
def xgb() -> Any:
    return pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return _rows(150, seed=0)


@pytest.fixture(scope="module", params=CASES)
def fitted(request: pytest.FixtureRequest, data: np.ndarray) -> Any:
    return _fit(request.param, data)


def _margins(xgb: Any, booster: Any, X: np.ndarray) -> np.ndarray:
    out = booster.predict(xgb.DMatrix(X), output_margin=True)
    return np.asarray(out, dtype=np.float64).reshape(len(X), -1)


def _threshold_rows(model: Any) -> np.ndarray:
    """Rows on every split's threshold and on its float32's two neighbours."""
    rows = []
    for per_output in model.trees_:
        for tree in per_output:
            for node in np.flatnonzero(tree.kind == NodeKind.NUMERIC):
                t = tree.threshold[node]
                t32 = np.float32(t)
                for value in (
                    t,
                    np.nextafter(t32, np.float32(-np.inf)),
                    np.nextafter(t32, np.float32(np.inf)),
                ):
                    row = np.zeros(model.n_features_in_)
                    row[tree.feature[node]] = value
                    rows.append(row)
    return np.array(rows)


def test_margins_equal_on_training_rows(xgb: Any, fitted: Any, data: Any) -> None:
    assert np.isnan(data).any(axis=1).sum() > 20
    booster = to_xgboost(fitted)
    got = _margins(xgb, booster, data)
    np.testing.assert_allclose(got, fitted._raw(data), rtol=0, atol=1e-5)
    n_outputs = 3 if fitted.config_.objective == "softmax" else 1
    assert got.shape == (len(data), n_outputs)
    assert booster.num_boosted_rounds() == fitted.n_iter_ == 5


def test_probabilities_equal(xgb: Any, fitted: Any, data: Any) -> None:
    got = to_xgboost(fitted).predict(xgb.DMatrix(data))
    if isinstance(fitted, FedGBDTRegressor):
        np.testing.assert_allclose(got, fitted.predict(data), rtol=0, atol=1e-5)
        return
    proba = fitted.predict_proba(data)
    want = proba[:, 1] if proba.shape[1] == 2 else proba
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


def test_margins_equal_at_thresholds(xgb: Any, fitted: Any) -> None:
    rows = _threshold_rows(fitted)
    assert len(rows) >= 3 * 5
    got = _margins(xgb, to_xgboost(fitted), rows)
    np.testing.assert_allclose(got, fitted._raw(rows), rtol=0, atol=1e-5)


def test_training_rows_on_quantile_edges(xgb: Any) -> None:
    # 400 distinct values per column: an inexact grid, whose edges are the
    # rows' own values, not float32 numbers.
    X = _rows(400, seed=3)
    model = _fit("binary", X)
    thresholds = np.concatenate(
        [t.threshold[t.kind == NodeKind.NUMERIC] for (t,) in model.trees_]
    )
    assert np.isin(thresholds, X).sum() >= 5
    assert (thresholds.astype(np.float32) != thresholds).all()
    got = _margins(xgb, to_xgboost(model), X)
    np.testing.assert_allclose(got, model._raw(X), rtol=0, atol=1e-5)


def test_split_of_missing_values_from_the_others(xgb: Any) -> None:
    # The last bin's threshold (the largest float) becomes +inf in float32.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 2))
    missing = rng.random(90) < 0.5
    X[missing, 0] = np.nan
    model = FedGBDTClassifier(n_estimators=2, max_depth=1, random_state=0)
    model.fit(X, missing.astype(int), groups=np.arange(90) % 3)
    assert model.trees_[0][0].threshold[0] == np.finfo(np.float64).max
    assert "Infinity" in to_xgboost(model, as_json=True)
    got = _margins(xgb, to_xgboost(model), X)
    np.testing.assert_allclose(got, model._raw(X), rtol=0, atol=1e-5)


@pytest.mark.parametrize(
    ("missing", "counts", "default_left"),
    [
        (Missing.LEFT, (2, 4), 1),
        (Missing.RIGHT, (4, 2), 0),
        (Missing.LARGER, (4, 2), 1),  # NaN follows the larger child
        (Missing.LARGER, (2, 4), 0),
        (Missing.LARGER, (3, 3), 0),  # right on a tie
    ],
)
def test_default_left(
    missing: Missing, counts: tuple[int, int], default_left: int
) -> None:
    builder = TreeBuilder(n_features=1)
    root = builder.add_root(NodeStats.from_mean(0.0, sum(counts)))
    builder.split_numeric(
        root,
        0,
        0.5,
        NodeStats.from_mean(-1.0, counts[0]),
        NodeStats.from_mean(1.0, counts[1]),
        missing=missing,
    )
    tree = _tree(builder.build(), 0, 0.0, 0.3, "test")
    assert tree["default_left"] == [default_left, 0, 0]
    assert tree["parents"] == [2147483647, 0, 0]


def test_split_condition_rule() -> None:
    t = np.array([0.1, 0.0, -2.5, np.finfo(np.float64).max, np.nan])
    got = _split_conditions(t)
    with np.errstate(over="ignore"):
        f32 = t[:4].astype(np.float32)
    expected = np.nextafter(f32, np.float32(np.inf)).astype(np.float64)
    np.testing.assert_array_equal(got[:4], expected)
    assert got[3] == np.inf  # the last bin's threshold: every value goes left
    assert np.isnan(got[4])


def test_shap_explains_the_booster_additively(xgb: Any, fitted: Any, data: Any) -> None:
    shap = pytest.importorskip("shap")
    explainer = shap.TreeExplainer(to_xgboost(fitted))
    values = np.asarray(explainer.shap_values(data))
    assert values.shape[:2] == data.shape
    raw = fitted._raw(data)
    total = values.sum(axis=1) + np.asarray(explainer.expected_value)
    np.testing.assert_allclose(total.reshape(raw.shape), raw, rtol=0, atol=1e-4)


def test_json_document_and_feature_names(xgb: Any) -> None:
    X = pd.DataFrame(_rows(90, seed=5), columns=["age", "income", "height", "w"])
    model = FedGBDTRegressor(n_estimators=3, max_depth=2, random_state=0)
    model.fit(X, X["age"].fillna(0.0) + 1.0, groups=np.arange(90) % 3)
    text = to_xgboost(model, as_json=True)
    document = json.loads(text)
    learner = document["learner"]
    assert learner["feature_names"] == ["age", "income", "height", "w"]
    assert learner["objective"]["name"] == "reg:squarederror"
    base = float(learner["learner_model_param"]["base_score"])
    assert base == np.float32(model.base_margin_[0])
    booster = xgb.Booster()
    booster.load_model(bytearray(text, "utf-8"))
    assert booster.feature_names == list(X.columns)
    got = booster.predict(xgb.DMatrix(X))
    np.testing.assert_allclose(got, model.predict(X), rtol=0, atol=1e-5)


def test_priors_go_to_the_first_iterations_leaves(fitted: Any) -> None:
    document = json.loads(to_xgboost(fitted, as_json=True))
    params = document["learner"]["learner_model_param"]
    model = document["learner"]["gradient_booster"]["model"]
    objective = fitted.config_.objective
    n_outputs = len(fitted.base_margin_)
    assert model["tree_info"] == list(range(n_outputs)) * fitted.n_iter_
    if objective == "squared_error":
        assert float(params["base_score"]) == np.float32(fitted.base_margin_[0])
        return
    assert float(params["base_score"]) == (0.5 if objective == "binary" else 0.0)
    for i in (0, 1):  # iteration 0 holds the prior, iteration 1 does not
        for k in range(n_outputs):
            tree = model["trees"][i * n_outputs + k]
            ours = fitted.trees_[i][k]
            leaves = ours.kind == NodeKind.LEAF
            shift = fitted.base_margin_[k] if i == 0 else 0.0
            np.testing.assert_allclose(
                np.array(tree["split_conditions"])[leaves],
                ours.value[leaves, 0] + shift,
                rtol=1e-6,
                atol=1e-7,
            )


@pytest.mark.hostile("clear_error")
def test_categorical_column_is_refused() -> None:
    rng = np.random.default_rng(0)
    X = pd.DataFrame(
        {
            "age": rng.normal(size=60),
            "colour": pd.Categorical(rng.choice(["red", "blue"], 60)),
        }
    )
    y = (X["age"] > 0).astype(int)
    model = FedGBDTClassifier(n_estimators=2, max_depth=2, random_state=0)
    model.fit(X, y, groups=np.arange(60) % 3)
    with pytest.raises(
        ValidationError, match=r"column 'colour' is categorical.*One-hot encode"
    ):
        to_xgboost(model)


@pytest.mark.hostile("clear_error")
def test_unfitted_model_is_refused() -> None:
    with pytest.raises(NotFittedError, match="not fitted"):
        to_xgboost(FedGBDTClassifier())
