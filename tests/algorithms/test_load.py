"""``fedtrees.load``: every job's document is the estimator ``fit`` grows (issue 42).

Each job runs on an in-process federation (``run_job``, as the Flower
ServerApp runs it), its document goes through JSON, and the loaded estimator
is compared with the estimator ``fit`` grows in process from the same rows and
params: the same class, params, inputs and trees, and the same predictions on a
held-out DataFrame with a NaN and an unseen category (the estimators that
refuse NaN refuse it alike, naming the column).
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import fedtrees
from fedtrees.algorithms import JOBS, run_job
from fedtrees.algorithms._jobs import job_estimator
from fedtrees.exceptions import ValidationError
from fedtrees.federation import Federation
from fedtrees.tree import Tree

N = 240
NOISE_SEED = 11  # the sites' secret: the DP jobs draw the same noise both ways
SITES = np.repeat(["Cleveland", "Hungary", "Zurich"], N // 3)
PAIN = ["asymptomatic", "atypical", "typical"]
RANGES = {"age": [30.0, 70.0], "dose": [-5.0, 5.0]}

CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "fedforest": ("fedforest", {"n_estimators": 3, "max_depth": 3, "random_state": 0}),
    "fedforest-quantile": (
        "fedforest",
        {
            "n_estimators": 2,
            "max_depth": 3,
            "candidates": "quantile",
            "random_state": 0,
        },
    ),
    "fedforest-regression": (
        "fedforest",
        {"task": "regression", "n_estimators": 3, "max_depth": 3, "random_state": 0},
    ),
    "local-ensemble": (
        "local-ensemble",
        {"n_estimators": 2, "max_depth": 3, "weighting": "size", "random_state": 0},
    ),
    "local-ensemble-regression": (
        "local-ensemble",
        {"task": "regression", "n_estimators": 2, "max_depth": 3, "random_state": 0},
    ),
    "dpforest": (
        "dpforest",
        {"epsilon": 5.0, "max_depth": 3, "feature_ranges": RANGES, "random_state": 0},
    ),
    "icdta": ("icdta", {"max_depth": 2, "random_state": 0}),
    "icdta-cart": ("icdta", {"base": "cart", "max_depth": 3, "random_state": 0}),
    "federated-id3": (
        "federated-id3",
        {
            "epsilon": 20.0,
            "max_depth": 2,
            "random_state": 0,
            "bin_edges": {"age": [40.0, 50.0, 60.0], "dose": [0.0]},
        },
    ),
    "synthetic": (
        "synthetic",
        {"global_max_depth": 3, "samples_per_path": 10, "random_state": 0},
    ),
    "fedga": (
        "fedga",
        {
            "n_generations": 2,
            "population_size": 4,
            "depth_range": [1, 3],
            "cv_folds": 2,
            "random_state": 0,
        },
    ),
    "fedga-regression": (
        "fedga",
        {
            "task": "regression",
            "n_generations": 2,
            "population_size": 4,
            "depth_range": [1, 3],
            "cv_folds": 2,
            "random_state": 0,
        },
    ),
    "fedgbdt": ("fedgbdt", {"n_estimators": 4, "max_depth": 3, "random_state": 0}),
    "fedgbdt-softmax": (
        "fedgbdt",
        {"n_estimators": 3, "max_depth": 2, "random_state": 0, "classes": 3},
    ),
    "fedgbdt-regression": (
        "fedgbdt",
        {"task": "regression", "n_estimators": 4, "max_depth": 3, "random_state": 0},
    ),
}
"""Every fitting job, both tasks where it has two (the test's own "classes": 3
asks for three labels)."""


def _rows(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.uniform(30.0, 70.0, n),
            "pain": pd.Categorical(rng.choice(PAIN, n), categories=PAIN),
            "dose": rng.normal(size=n),
        }
    )


def _target(X: pd.DataFrame, task: str, n_classes: int) -> np.ndarray:
    score = (X["age"] - 50.0) / 10.0 + X["dose"] + 2.0 * (X["pain"] == "typical")
    noise = np.random.default_rng(1).normal(scale=0.3, size=X.shape[0])
    if task == "regression":
        return np.asarray(score + noise, dtype=np.float64)
    labels = np.asarray(["healthy", "sick", "very sick"])
    cuts = [0.5] if n_classes == 2 else [0.0, 1.5]
    return labels[np.digitize(score + noise, cuts)]


def _held_out() -> pd.DataFrame:
    """Fresh rows: the first holds an unseen category, the second a NaN age."""
    X = _rows(30, seed=99)
    X["pain"] = X["pain"].cat.add_categories(["non-anginal"])
    X.loc[0, "pain"] = "non-anginal"  # no site had it
    X.loc[1, "age"] = np.nan
    return X


def _setting(case: str) -> tuple[str, dict[str, Any], pd.DataFrame, np.ndarray]:
    job, given = CASES[case]
    params = {k: v for k, v in given.items() if k != "classes"}
    task = params.get("task", "classification")
    X = _rows(N, seed=0)
    return job, params, X, _target(X, task, given.get("classes", 2))


@pytest.fixture(scope="module")
def fitted() -> dict[str, tuple[Any, Any, dict[str, Any]]]:
    """Per case: the model loaded from the job's JSON text, fit's, the document."""
    out = {}
    for case in CASES:
        job, params, X, y = _setting(case)
        # The categories declared, as fit declares them (a Flower run's
        # `categories`): the sites key their DP noise by the declaration too.
        federation = Federation.from_groups(
            X, y, SITES, categories={"pain": PAIN}, noise_seed=NOISE_SEED
        )
        document, _ = run_job(job, federation, params)
        text = json.dumps(document)  # what the ServerApp writes
        estimator, _ = job_estimator(job, params)
        with warnings.catch_warnings(action="ignore"):
            estimator.fit(X, y, groups=SITES, noise_seed=NOISE_SEED)
        out[case] = (fedtrees.load(text), estimator, json.loads(text))
    return out


def test_every_fitting_job_is_covered() -> None:
    assert {job for job, _ in CASES.values()} == set(JOBS) - {"toy"}


def _clients(model: Any) -> dict[str, Any]:
    """FedGA's trees are personal: predict per client, and per row."""
    if type(model).__name__.startswith("FedGA"):
        per_row = np.resize(np.asarray(model.clients_, dtype=object), 30)
        return {"client": per_row}
    return {}


def _outputs(model: Any, X: pd.DataFrame) -> dict[str, np.ndarray]:
    kwargs = _clients(model)
    out = {"predict": model.predict(X, **kwargs)}
    for method in ("predict_proba", "decision_function"):
        if hasattr(model, method):
            out[method] = getattr(model, method)(X, **kwargs)
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_loaded_model_predicts_as_the_fitted_one(
    fitted: dict[str, Any], case: str
) -> None:
    loaded, estimator, _ = fitted[case]
    X = _held_out()
    if not estimator._accepts_missing():
        # NaN is refused alike, naming the column; the unseen category is routed.
        with pytest.raises(ValidationError, match="column 'age' holds NaN") as fit_err:
            estimator.predict(X, **_clients(estimator))
        with pytest.raises(ValidationError, match="column 'age' holds NaN") as err:
            loaded.predict(X, **_clients(loaded))
        assert str(err.value) == str(fit_err.value)
        X = X.fillna({"age": 50.0})

    expected, got = _outputs(estimator, X), _outputs(loaded, X)

    assert sorted(got) == sorted(expected)
    for method, values in expected.items():
        np.testing.assert_array_equal(got[method], values, err_msg=method)
    if not isinstance(estimator, fedtrees.FedGARegressor):  # its score: no client
        y = _setting(case)[3][:30]
        assert loaded.score(X, y, **_clients(loaded)) == estimator.score(
            X, y, **_clients(estimator)
        )


def _model_trees(model: Any) -> list[Tree]:
    if hasattr(model, "tree_"):
        return [model.tree_]
    trees = model.trees_
    if isinstance(trees, dict):  # FedGA: client -> personal tree
        return [trees[c] for c in sorted(trees)]
    return [t for ts in trees for t in (ts if isinstance(ts, list) else [ts])]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_loaded_model_is_fits_class_params_inputs_and_trees(
    fitted: dict[str, Any], case: str
) -> None:
    loaded, estimator, _ = fitted[case]

    assert type(loaded) is type(estimator)
    assert loaded.get_params() == estimator.get_params()
    for name in ("n_features_in_", "feature_kinds_", "categories_", "clients_"):
        assert getattr(loaded, name) == getattr(estimator, name), name
    np.testing.assert_array_equal(loaded.feature_names_in_, ["age", "pain", "dose"])
    if hasattr(estimator, "classes_"):
        np.testing.assert_array_equal(loaded.classes_, estimator.classes_)
    assert _same_trees(_model_trees(loaded), _model_trees(estimator))


def _same_trees(got: list[Tree], expected: list[Tree]) -> bool:
    """Equal trees; the labels compared as values (fit keeps y's string width)."""

    def labels(tree: Tree) -> Tree:
        classes = None if tree.classes is None else tree.classes.astype(object)
        return dataclasses.replace(tree, classes=classes)

    return len(got) == len(expected) and all(
        labels(a) == labels(b) for a, b in zip(got, expected, strict=True)
    )


def test_a_document_loads_from_its_file_its_text_and_its_dict(
    fitted: dict[str, Any], tmp_path: Path
) -> None:
    _, _, document = fitted["fedgbdt"]
    path = tmp_path / "result.json"
    path.write_text(json.dumps(document, indent=1))
    X = _held_out()

    raw = [
        fedtrees.load(source).decision_function(X)
        for source in (path, str(path), json.dumps(document), document)
    ]

    for other in raw[1:]:
        np.testing.assert_array_equal(other, raw[0])


def test_the_boosted_models_extras_come_back(fitted: dict[str, Any]) -> None:
    loaded, estimator, _ = fitted["fedgbdt-softmax"]

    np.testing.assert_array_equal(loaded.base_margin_, estimator.base_margin_)
    assert loaded.evals_result_ == estimator.evals_result_
    assert loaded.best_iteration_ == estimator.best_iteration_ == 2
    assert loaded.n_iter_ == estimator.n_iter_
    np.testing.assert_array_equal(
        loaded.feature_importances_, estimator.feature_importances_
    )
    assert loaded.config_.objective == estimator.config_.objective == "softmax"


def test_fedgas_personal_trees_predict_per_site(fitted: dict[str, Any]) -> None:
    loaded, estimator, _ = fitted["fedga"]
    X = _held_out().fillna({"age": 50.0})

    for client in estimator.clients_:
        np.testing.assert_array_equal(
            loaded.predict_proba(X, client=client),
            estimator.predict_proba(X, client=client),
        )
    with pytest.raises(ValidationError, match="FedGA's trees are personal"):
        loaded.predict(X)


def test_what_a_loaded_model_lacks_is_absent(fitted: dict[str, Any]) -> None:
    loaded, estimator, document = fitted["fedforest"]

    assert hasattr(estimator, "communication_")
    with pytest.raises(AttributeError, match="communication_"):
        loaded.communication_  # noqa: B018
    assert document["communication"]["rounds"] == estimator.communication_.rounds


def _numeric_setting() -> tuple[pd.DataFrame, np.ndarray]:
    X = _rows(N, seed=0).drop(columns="pain")
    return X, np.where(X["age"] + 10 * X["dose"] > 50, "sick", "healthy")


def _loaded_and_fitted(job: str, params: dict[str, Any]) -> tuple[Any, Any]:
    X, y = _numeric_setting()
    document, _ = run_job(job, Federation.from_groups(X, y, SITES), params)
    estimator, _ = job_estimator(job, params)
    return fedtrees.load(json.dumps(document)), estimator.fit(X, y, groups=SITES)


def test_a_loaded_forest_exports_to_sklearn_as_the_fitted_one() -> None:
    params = {"n_estimators": 3, "max_depth": 3, "random_state": 0}
    loaded, estimator = _loaded_and_fitted("fedforest", params)
    X = _numeric_setting()[0]

    np.testing.assert_array_equal(
        loaded.to_sklearn().predict_proba(X), estimator.to_sklearn().predict_proba(X)
    )


def test_a_loaded_boosted_model_exports_to_xgboost_and_shap() -> None:
    params = {"n_estimators": 4, "max_depth": 3, "random_state": 0}
    loaded, estimator = _loaded_and_fitted("fedgbdt", params)
    assert loaded.to_xgboost(as_json=True) == estimator.to_xgboost(as_json=True)
    xgboost = pytest.importorskip("xgboost")
    shap = pytest.importorskip("shap")
    X = _numeric_setting()[0]

    booster = loaded.to_xgboost()
    explainer = shap.TreeExplainer(booster)
    explanation = explainer.shap_values(X)
    margin = booster.predict(xgboost.DMatrix(X), output_margin=True)
    np.testing.assert_allclose(
        explanation.sum(axis=1) + explainer.expected_value, margin, rtol=0, atol=1e-4
    )
    np.testing.assert_allclose(margin, loaded.decision_function(X), atol=1e-4)


def test_a_one_site_icdta_document_loads_with_its_unscored_tree() -> None:
    """One site: no other client scores its tree, whose score is NaN (JSON NaN)."""
    X, y = _numeric_setting()
    one_site = np.zeros(N, dtype=np.int64)
    document, _ = run_job("icdta", Federation.from_groups(X, y, one_site), {})

    loaded = fedtrees.load(json.dumps(document))

    assert np.isnan(loaded.tree_scores_["0"])
    fitted = fedtrees.ICDTAClassifier().fit(X, y, groups=one_site)
    np.testing.assert_array_equal(loaded.predict_proba(X), fitted.predict_proba(X))
