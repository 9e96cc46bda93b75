"""``to_sklearn()``: the fitted federated models as scikit-learn estimators.

FedForest (held-out rows with NaN, named columns; one-hot columns where the
data were categorical) and the single-tree methods whose splits allow it
predict identically through scikit-learn, SHAP explains the exported forest
additively, skl2onnx and treelite read it; refused exports name the split
(client indicator, category sets) or the categorical column.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.exceptions import NotFittedError
from sklearn.tree import DecisionTreeClassifier

from fedtrees import FedForestClassifier, FedForestRegressor
from fedtrees.algorithms.fedid3 import FederatedID3Classifier
from fedtrees.algorithms.icdta import ICDTAClassifier
from fedtrees.algorithms.synthetic import SyntheticDataClassifier
from fedtrees.exceptions import ValidationError

COLUMNS = ["age", "dose", "weight", "noise"]
SMALL = {"n_estimators": 8, "max_depth": 5, "random_state": 0}


def _frame(n: int, seed: int, nan: float = 0.1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, len(COLUMNS)))
    X[rng.random(X.shape) < nan] = np.nan
    return pd.DataFrame(X, columns=COLUMNS)


def _labels(frame: pd.DataFrame, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, 1])
    signal = frame["age"].fillna(1.0) - 0.5 * frame["dose"].fillna(-1.0)
    noisy = signal.to_numpy() + 0.3 * rng.normal(size=len(frame))
    return np.array(["low", "mid", "high"])[np.digitize(noisy, [-0.5, 0.5])]


@pytest.fixture(scope="module")
def train() -> pd.DataFrame:
    return _frame(600, seed=0)


@pytest.fixture(scope="module")
def held_out() -> pd.DataFrame:
    return _frame(400, seed=1)


@pytest.fixture(scope="module")
def classifier(train: pd.DataFrame) -> FedForestClassifier:
    model = FedForestClassifier(**SMALL)
    return model.fit(train, _labels(train, 0), groups=np.arange(600) % 3)


@pytest.fixture(scope="module")
def regressor(train: pd.DataFrame) -> FedForestRegressor:
    y = np.nan_to_num(train["age"].to_numpy()) * 2.0 + train["weight"].fillna(0.0)
    return FedForestRegressor(**SMALL).fit(train, y, groups=np.arange(600) % 3)


def test_forest_classifier_predicts_identically_with_missing_values(
    classifier: FedForestClassifier, held_out: pd.DataFrame
) -> None:
    assert held_out.isna().any().all()  # NaN in every column
    rf = classifier.to_sklearn()
    assert isinstance(rf, RandomForestClassifier)
    assert len(rf.estimators_) == 8
    assert rf.feature_names_in_.tolist() == COLUMNS
    assert rf.classes_.tolist() == classifier.classes_.tolist()
    np.testing.assert_array_equal(rf.predict(held_out), classifier.predict(held_out))
    np.testing.assert_array_equal(
        rf.predict_proba(held_out), classifier.predict_proba(held_out)
    )
    leaves = np.column_stack([t.apply(held_out.to_numpy()) for t in classifier.trees_])
    np.testing.assert_array_equal(rf.apply(held_out), leaves)
    np.testing.assert_allclose(
        rf.feature_importances_, classifier.feature_importances_, rtol=1e-12
    )


def test_forest_regressor_predicts_identically_with_missing_values(
    regressor: FedForestRegressor, held_out: pd.DataFrame
) -> None:
    rf = regressor.to_sklearn()
    assert isinstance(rf, RandomForestRegressor)
    np.testing.assert_array_equal(rf.predict(held_out), regressor.predict(held_out))


def test_one_tree_is_still_a_random_forest(train: pd.DataFrame) -> None:
    cart = FedForestClassifier(
        n_estimators=1, max_depth=4, bootstrap=False, max_features=None
    )
    cart.fit(train.to_numpy(), _labels(train, 0), groups=np.arange(600) % 2)
    rf = cart.to_sklearn()
    assert isinstance(rf, RandomForestClassifier)
    assert rf.n_estimators == 1
    assert not hasattr(rf, "feature_names_in_")  # fitted on an array
    X = _frame(200, seed=5).to_numpy()
    np.testing.assert_array_equal(rf.predict(X), cart.predict(X))


def test_not_fitted() -> None:
    with pytest.raises(NotFittedError, match=r"not fitted"):
        FedForestClassifier().to_sklearn()


def _with_color(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng([seed, 2])
    color = rng.choice(["red", "green", "blue"], size=len(frame))
    return frame.assign(color=pd.Categorical(color, ["red", "green", "blue"]))


def test_category_split_refused_naming_the_split(train: pd.DataFrame) -> None:
    frame = _with_color(train, 0)
    y = np.where(frame["color"] == "green", "mid", _labels(train, 0))
    model = FedForestClassifier(n_estimators=2, max_depth=3, max_features=None)
    model.fit(frame, y, groups=np.arange(600) % 3)
    with pytest.raises(
        ValidationError,
        match=r"FedForestClassifier.to_sklearn: tree 0, node \d+ splits column "
        r"'color' by category sets \(color in \{.*\}\).*"
        r"One-hot encode a categorical column",
    ):
        model.to_sklearn()


def test_unused_categorical_column_refused_naming_it(train: pd.DataFrame) -> None:
    frame = _with_color(train, 0)
    stump = FedForestClassifier(
        n_estimators=1, max_depth=1, bootstrap=False, max_features=None
    )
    stump.fit(frame, _labels(train, 0), groups=np.arange(600) % 3)
    assert all(t.kind[0] == 1 for t in stump.trees_)  # a numeric root split
    with pytest.raises(ValidationError, match=r"column 'color' is categorical"):
        stump.to_sklearn()


def test_one_hot_columns_export_and_predict_identically(
    train: pd.DataFrame, held_out: pd.DataFrame
) -> None:
    def one_hot(frame: pd.DataFrame) -> pd.DataFrame:
        return pd.get_dummies(frame, columns=["color"], dtype=float)

    frame = _with_color(train, 0)
    y = np.where(frame["color"] == "green", "mid", _labels(train, 0))
    model = FedForestClassifier(**SMALL).fit(
        one_hot(frame), y, groups=np.arange(600) % 3
    )
    test = one_hot(_with_color(held_out, 1))
    rf = model.to_sklearn()
    np.testing.assert_array_equal(rf.predict(test), model.predict(test))
    np.testing.assert_array_equal(rf.predict_proba(test), model.predict_proba(test))


def test_client_split_refused_naming_the_split(train: pd.DataFrame) -> None:
    sites = np.repeat(["north", "south"], 300)
    y = np.where(sites == "south", "high", "low")
    model = FedForestClassifier(
        n_estimators=1,
        max_depth=2,
        bootstrap=False,
        max_features=None,
        split_on_client=True,
    )
    model.fit(train, y, groups=sites)
    with pytest.raises(
        ValidationError,
        match=r"tree 0, node 0 splits on the client indicator \(client in "
        r"\{(north|south)\} .*split_on_client=False",
    ):
        model.to_sklearn()


# -- single-tree methods ------------------------------------------------------------
def _numeric(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 10, size=(n, 3))
    return X, (X[:, 0] + rng.normal(size=n) > 5).astype(int)


@pytest.mark.parametrize(
    "model",
    [
        ICDTAClassifier(base="cart", random_state=0),
        SyntheticDataClassifier(random_state=0),
    ],
    ids=["icdta-cart", "synthetic"],
)
def test_single_tree_exports_a_decision_tree(model: Any) -> None:
    X, y = _numeric(300, 0)
    model.fit(X, y, groups=np.arange(300) % 3)
    tree = model.to_sklearn()
    assert isinstance(tree, DecisionTreeClassifier)
    test, _ = _numeric(300, 1)
    np.testing.assert_array_equal(tree.predict(test), model.predict(test))
    np.testing.assert_array_equal(tree.predict_proba(test), model.predict_proba(test))


def test_id3_multiway_split_refused_naming_the_node() -> None:
    X, y = _numeric(300, 0)
    model = FederatedID3Classifier().fit(X, y, groups=np.arange(300) % 3)
    with pytest.raises(
        ValidationError,
        match=r"FederatedID3Classifier.to_sklearn: node 0 splits column 0 by "
        r"category sets \(x0 in \{<= [\d.]+\} \| x0 in \{\(.*binned",
    ):
        model.to_sklearn()


def test_synthetic_tree_over_a_categorical_column_refused() -> None:
    X, y = _numeric(300, 0)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(
        color=pd.Categorical(np.resize(["red", "blue"], 300))
    )
    model = SyntheticDataClassifier(random_state=0)
    model.fit(frame, y, groups=np.arange(300) % 3)
    with pytest.raises(ValidationError, match=r"column 'color' is categorical"):
        model.to_sklearn()


# -- the tools that read scikit-learn forests -------------------------------------
def test_sklearn_export_shap_values_are_additive(
    classifier: FedForestClassifier,
    regressor: FedForestRegressor,
    held_out: pd.DataFrame,
) -> None:
    shap = pytest.importorskip("shap")
    rows = held_out.iloc[:40]
    for model in (classifier, regressor):
        rf = model.to_sklearn()
        explainer = shap.TreeExplainer(rf)
        values = explainer.shap_values(rows)  # SHAP's own additivity check runs
        total = values.sum(axis=1) + explainer.expected_value
        expected = rf.predict_proba(rows) if model is classifier else rf.predict(rows)
        np.testing.assert_allclose(total, expected, rtol=0, atol=1e-12)


def test_sklearn_export_onnx_without_missing_values(
    classifier: FedForestClassifier,
    regressor: FedForestRegressor,
    held_out: pd.DataFrame,
) -> None:
    # skl2onnx + onnxruntime do not route NaN as scikit-learn does (docs/fedforest.md).
    skl2onnx = pytest.importorskip("skl2onnx")
    onnxruntime = pytest.importorskip("onnxruntime")
    frame = held_out.fillna(0.0).astype(np.float32)
    X = frame.to_numpy()

    def run(rf: Any, **options: Any) -> list[np.ndarray]:
        onx = skl2onnx.to_onnx(rf, X[:1], **options)
        session = onnxruntime.InferenceSession(
            onx.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        outputs: list[np.ndarray] = session.run(None, {"X": X})
        return outputs

    rf = classifier.to_sklearn()
    labels, proba = run(rf, options={"zipmap": False})
    np.testing.assert_array_equal(labels, rf.predict(frame))
    np.testing.assert_allclose(proba, rf.predict_proba(frame), rtol=0, atol=1e-6)
    reg = regressor.to_sklearn()
    (predicted,) = run(reg)
    np.testing.assert_allclose(
        predicted[:, 0], reg.predict(frame), rtol=1e-6, atol=1e-6
    )


def test_sklearn_export_treelite_with_missing_values(
    classifier: FedForestClassifier,
    regressor: FedForestRegressor,
    held_out: pd.DataFrame,
) -> None:
    treelite = pytest.importorskip("treelite")
    frame = held_out.astype(np.float32)  # float32 rows: the values scikit-learn reads
    X = frame.to_numpy()
    rf = classifier.to_sklearn()
    proba = treelite.gtil.predict(treelite.sklearn.import_model(rf), X)
    np.testing.assert_allclose(
        proba[:, 0, :], rf.predict_proba(frame), rtol=0, atol=1e-12
    )
    reg = regressor.to_sklearn()
    predicted = treelite.gtil.predict(treelite.sklearn.import_model(reg), X)
    np.testing.assert_allclose(
        predicted[:, 0, 0], reg.predict(frame), rtol=0, atol=1e-12
    )
