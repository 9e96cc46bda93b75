"""Newcomer mistakes that used to pass without a word (issue 13).

``fit`` without ``groups`` warns once; a text column that is not ``category`` is
refused naming the column; a column whose kind changes between fit and predict is
refused naming it; an unseen category follows the documented route; a declared
range for a categorical column is refused naming it; every estimator raises
``NotFittedError`` before fit; every classifier points a continuous ``y`` to a
regressor with a :class:`~fedtrees.exceptions.FedTreesError`.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

import fedtrees
from fedtrees.exceptions import CentralizedFitWarning, FedTreesError, ValidationError
from fedtrees.federation import Federation
from tests.hostile.test_estimator_inputs import ALL, CLASSIFIERS

PREDICTING = ("predict", "predict_proba", "score", "score_clients", "apply")


def _make(name: str, **params: Any) -> Any:
    return getattr(fedtrees, name)(**{**ALL[name], **params})


def _numeric(n: int = 30) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    return X, (X[:, 0] > 0).astype(np.int64), np.repeat(["a", "b", "c"], n // 3)


def _mixed(n: int = 60) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """A numeric column and a ``category`` colour that decides the label."""
    rng = np.random.default_rng(1)
    colour = rng.choice(["red", "green", "blue"], n)
    X = pd.DataFrame(
        {
            "age": rng.normal(50, 10, n),
            "colour": pd.Categorical(colour, categories=["blue", "green", "red"]),
        }
    )
    return X, (colour == "red").astype(np.int64), np.repeat(["a", "b", "c"], n // 3)


def _target(name: str, y: np.ndarray, X: np.ndarray) -> np.ndarray:
    return X[:, 0] if name not in CLASSIFIERS else y


# -- 1. fit without groups ------------------------------------------------------
@pytest.mark.hostile("documented")
@pytest.mark.parametrize("name", sorted(ALL))
def test_fit_without_groups_warns_once_that_it_is_centralized(name: str) -> None:
    X, y, groups = _numeric()
    with pytest.warns(CentralizedFitWarning) as caught:
        model = _make(name).fit(X, _target(name, y, X))
    central = [w for w in caught if issubclass(w.category, CentralizedFitWarning)]
    assert len(central) == 1
    assert "without groups" in str(central[0].message)
    assert "centralized" in str(central[0].message)
    assert central[0].filename == __file__  # points at the caller's fit
    assert model.clients_ == ("0",)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CentralizedFitWarning)
        _make(name).fit(X, _target(name, y, X), groups)  # with groups: no warning


# -- 2. categorical columns -----------------------------------------------------
@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("dtype", [object, "string"])
def test_a_text_column_that_is_not_category_is_refused_naming_it(
    name: str, dtype: Any
) -> None:
    X, y, groups = _mixed()
    X = X.assign(colour=X["colour"].astype(dtype))
    target = X["age"].to_numpy() if name not in CLASSIFIERS else y
    with pytest.raises(
        ValidationError, match=r"column 'colour' holds text.*astype\('category'\)"
    ):
        _make(name).fit(X, target, groups)


@pytest.mark.hostile("clear_error")
def test_a_numpy_array_of_strings_is_refused_naming_its_column() -> None:
    X = np.array([[1.5, "a"], [2.5, "b"]] * 5, dtype=object)
    with pytest.raises(ValidationError, match=r"column 'x1' holds text.*DataFrame"):
        fedtrees.FedForestClassifier(n_estimators=1).fit(X, [0, 1] * 5, [0] * 10)


@pytest.mark.hostile("correct")
def test_object_numbers_and_bools_are_numbers() -> None:
    """Numbers in an object column and bool columns are numeric features (0/1)."""
    X, y, groups = _numeric()
    frame = pd.DataFrame(
        {"a": X[:, 0].astype(object), "flag": X[:, 1] > 0, "c": X[:, 2]}
    )
    model = fedtrees.FedForestClassifier(n_estimators=2, random_state=0)
    model.fit(frame, y, groups)
    assert model.feature_kinds_ == ("numeric", "numeric", "numeric")
    as_numbers = frame.astype({"a": float, "flag": float})
    reference = fedtrees.FedForestClassifier(n_estimators=2, random_state=0)
    np.testing.assert_array_equal(
        model.predict_proba(frame),
        reference.fit(as_numbers, y, groups).predict_proba(as_numbers),
    )


@pytest.mark.hostile("correct")
def test_category_columns_are_declared_by_fit_and_stay_categorical() -> None:
    X, y, groups = _mixed()
    model = fedtrees.FedForestClassifier(n_estimators=3, random_state=0)
    model.fit(X, y, groups)
    assert model.feature_kinds_ == ("numeric", "categorical")
    assert model.categories_[1] == ("blue", "green", "red")
    assert model.score(X, y) == 1.0


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("change", "match"),
    [
        (
            lambda X: X.assign(colour=X["colour"].astype(object)),
            r"column 'colour' was categorical at fit, but X has it as object",
        ),
        (
            lambda X: X.assign(colour=X["colour"].cat.codes),
            r"column 'colour' was categorical at fit, but X has it as int8",
        ),
        (
            lambda X: X.assign(age=pd.Categorical(X["age"])),
            r"column 'age' was numeric at fit, but X has it as 'category'",
        ),
        (
            lambda X: X.assign(age=X["age"].astype(str)),
            r"column 'age' holds text",
        ),
    ],
    ids=["category-to-text", "category-to-codes", "number-to-category", "to-text"],
)
@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_a_column_whose_kind_changes_after_fit_is_refused_naming_it(
    name: str, change: Any, match: str
) -> None:
    X, y, groups = _mixed()
    model = _make(name, **_ranges_for(name)).fit(X, y, groups)
    with pytest.raises(ValidationError, match=match):
        model.predict(change(X))


def _ranges_for(name: str) -> dict[str, Any]:
    return {"feature_ranges": {"age": (0, 100)}} if name == "DPForestClassifier" else {}


@pytest.mark.hostile("documented")
def test_an_unseen_category_follows_the_default_branch() -> None:
    """A set split sends a category the fit never saw down its default branch."""
    X, y, groups = _mixed()
    model = fedtrees.FedForestClassifier(
        n_estimators=1, bootstrap=False, max_features=None, max_depth=1
    ).fit(X, y, groups)
    tree = model.trees_[0]
    assert "colour in {blue, green}" in tree.to_text()  # red: the default branch
    unseen = X.head(4).assign(colour=pd.Categorical(["purple"] * 4))
    np.testing.assert_array_equal(
        model.predict_proba(unseen), np.tile(tree.value[tree.right[0]], (4, 1))
    )
    np.testing.assert_array_equal(model.predict(unseen), [1] * 4)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    "ranges",
    [
        {"age": (0, 100), "colour": (0, 2)},
        [(0.0, 100.0), (0.0, 2.0)],
    ],
    ids=["dict", "array"],
)
@pytest.mark.parametrize("name", ["DPForestClassifier", "SyntheticDataClassifier"])
def test_a_range_declared_for_a_categorical_column_is_refused_naming_it(
    name: str, ranges: Any
) -> None:
    X, y, groups = _mixed()
    estimator = _make(name, feature_ranges=ranges)
    with pytest.raises(
        ValidationError, match=r"range for column 'colour', which is categorical"
    ):
        estimator.fit(X, y, groups)


@pytest.mark.hostile("correct")
def test_a_categorical_row_of_nan_in_the_array_form_takes_the_code_range() -> None:
    X, y, groups = _mixed()
    model = _make("DPForestClassifier", feature_ranges=[(0, 100), (np.nan, np.nan)])
    model.fit(X, y, groups)
    np.testing.assert_array_equal(model.feature_ranges_, [[0, 100], [-0.5, 2.5]])


@pytest.mark.hostile("correct")
def test_from_data_ranges_cover_bool_and_object_number_columns() -> None:
    X, y, groups = _numeric()
    frame = pd.DataFrame({"a": X[:, 0].astype(object), "flag": X[:, 1] > 0})
    model = fedtrees.DPForestClassifier(feature_ranges="from-data", max_depth=2)
    with pytest.warns(fedtrees.exceptions.PrivacyLeakWarning):
        model.fit(frame, y, groups)
    np.testing.assert_array_equal(model.feature_ranges_[1], [0.0, 1.0])


# -- 3. predict before fit ------------------------------------------------------
def _prediction_methods(estimator: Any) -> list[str]:
    names = [m for m in PREDICTING if callable(getattr(type(estimator), m, None))]
    assert "predict" in names
    return names


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("name", sorted(set(fedtrees.__all__) & set(ALL)))
def test_every_prediction_method_before_fit_raises_not_fitted(name: str) -> None:
    X, y, _ = _numeric()
    estimator = _make(name)
    for method in _prediction_methods(estimator):
        args = (X, _target(name, y, X)) if method.startswith("score") else (X,)
        with pytest.raises(NotFittedError, match="not fitted yet"):
            getattr(estimator, method)(*args)


def test_every_exported_estimator_is_covered() -> None:
    estimators = {
        name
        for name in fedtrees.__all__
        if hasattr(getattr(fedtrees, name), "fit")
        and hasattr(getattr(fedtrees, name), "get_params")
    }
    assert estimators == set(ALL)


# -- 4. continuous y ------------------------------------------------------------
@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_a_continuous_target_is_a_fedtrees_error_through_fit_federation(
    name: str,
) -> None:
    X, _, groups = _numeric()
    federation = Federation.from_groups(X, X[:, 0], groups)
    with pytest.raises(FedTreesError, match=r"continuous.*regressor"):
        _make(name).fit_federation(federation)
