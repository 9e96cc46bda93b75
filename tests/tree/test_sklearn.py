from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.linear_model import LinearRegression
from sklearn.tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreeClassifier,
)

from fedtrees import datasets
from fedtrees.exceptions import ValidationError
from fedtrees.tree import Missing, Tree
from fedtrees.tree._sklearn import float32_equivalent_threshold


@pytest.mark.parametrize("name", ["heart_disease", "hotel_ac_iot", "credit_default"])
@pytest.mark.parametrize("depth", [3, None])
def test_classifier_predictions_identical_on_real_data(
    name: str, depth: int | None
) -> None:
    data = datasets.load(name, **({"flamby": True} if name == "heart_disease" else {}))
    X = data.X.select_dtypes("number").to_numpy(dtype=np.float64)
    est = DecisionTreeClassifier(max_depth=depth, random_state=0).fit(X, data.y)
    tree = Tree.from_sklearn(est)
    np.testing.assert_array_equal(tree.apply(X), est.apply(X))
    np.testing.assert_array_equal(tree.predict(X), est.predict(X))
    np.testing.assert_allclose(
        tree.predict_proba(X), est.predict_proba(X), rtol=0, atol=1e-12
    )


def test_regressor_predictions_identical_on_real_data() -> None:
    data = datasets.load("hotel_ac_iot")
    X = data.X.to_numpy()
    target = X[:, 0]
    est = DecisionTreeRegressor(max_depth=8, random_state=0).fit(X[:, 1:], target)
    tree = Tree.from_sklearn(est)
    np.testing.assert_array_equal(tree.predict(X[:, 1:]), est.predict(X[:, 1:]))
    np.testing.assert_array_equal(tree.impurity, est.tree_.impurity)
    np.testing.assert_array_equal(tree.count, est.tree_.weighted_n_node_samples)


def test_unseen_float64_inputs_take_the_same_side(rng: np.random.Generator) -> None:
    # sklearn compares float32(x); fedtrees compares x itself. Inputs that round to
    # a float32 near a threshold must still agree.
    X = rng.normal(size=(500, 2)).astype(np.float32).astype(np.float64)
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    est = DecisionTreeClassifier(random_state=0).fit(X, y)
    tree = Tree.from_sklearn(est)
    thresholds = est.tree_.threshold[est.tree_.feature >= 0]
    near = thresholds[:, None] + np.array([-1e-9, -1e-12, 0.0, 1e-12, 1e-9])[None, :]
    probe = np.column_stack([near.ravel(), near.ravel()])
    np.testing.assert_array_equal(tree.predict(probe), est.predict(probe))


def test_string_labels_and_feature_names() -> None:
    data = datasets.load("heart_disease", flamby=True)
    y = np.where(data.y == 1, "sick", "healthy")
    est = DecisionTreeClassifier(max_depth=2, random_state=0).fit(data.X, y)
    tree = Tree.from_sklearn(est)
    assert tree.feature_names == tuple(data.X.columns)
    assert set(tree.classes.tolist()) == {"healthy", "sick"}  # type: ignore[union-attr]
    np.testing.assert_array_equal(tree.predict(data.X.to_numpy()), est.predict(data.X))


def test_extra_tree_subclass_is_supported(rng: np.random.Generator) -> None:
    X, y = rng.normal(size=(100, 3)), rng.integers(0, 3, 100)
    est = ExtraTreeClassifier(random_state=0).fit(X, y)
    np.testing.assert_array_equal(Tree.from_sklearn(est).predict(X), est.predict(X))


def test_unfitted_wrong_type_and_multi_output_are_refused(
    rng: np.random.Generator,
) -> None:
    with pytest.raises(ValidationError, match="is not fitted"):
        Tree.from_sklearn(DecisionTreeClassifier())
    with pytest.raises(ValidationError, match="Got LinearRegression instead"):
        Tree.from_sklearn(LinearRegression())
    X = rng.normal(size=(20, 2))
    est = DecisionTreeRegressor().fit(X, np.column_stack([X[:, 0], X[:, 1]]))
    with pytest.raises(ValidationError, match="has 2 outputs"):
        Tree.from_sklearn(est)


@given(
    t=st.floats(-1e30, 1e30, allow_nan=False) | st.floats(-1.0, 1.0),
    offsets=st.lists(st.integers(-4, 4), min_size=1, max_size=9),
)
def test_float32_equivalent_threshold_is_exact(t: float, offsets: list[int]) -> None:
    t2 = float32_equivalent_threshold([t])[0]
    # Probe float64 values just around t' (and around t itself).
    for base in (t2, t):
        x = np.float64(base)
        for k in offsets:
            probe = x
            step = np.inf if k > 0 else -np.inf
            for _ in range(abs(k)):
                probe = np.nextafter(probe, step)
            sklearn_left = np.float64(np.float32(probe)) <= t
            assert (probe <= t2) == sklearn_left


# -- missing values ---------------------------------------------------------------
def _nan_data(
    seed: int, n: int = 400, nan_fraction: float = 0.2
) -> tuple[np.ndarray, np.ndarray]:
    """Rows with NaN cells; the label depends on where the NaN are."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    score = X[:, 0] + 0.5 * X[:, 1]
    X[rng.random(X.shape) < nan_fraction] = np.nan
    score = np.where(np.isnan(X[:, 2]), score + 1.0, score)  # missing is informative
    return X, score


def _probe(seed: int, X: np.ndarray) -> np.ndarray:
    """Fresh rows: half the cells NaN, plus rows that are NaN everywhere."""
    rng = np.random.default_rng(seed + 1)
    probe = rng.normal(size=(300, X.shape[1]))
    probe[rng.random(probe.shape) < 0.5] = np.nan
    probe[:5] = np.nan
    return np.vstack([probe, X])


def _same_routing(est: object, tree: Tree, X: np.ndarray) -> None:
    np.testing.assert_array_equal(tree.apply(X), est.apply(X))  # type: ignore[attr-defined]
    np.testing.assert_array_equal(tree.predict(X), est.predict(X))  # type: ignore[attr-defined]


@pytest.mark.parametrize("seed", range(4))
def test_classifier_fit_with_nan_routes_nan_like_sklearn(seed: int) -> None:
    X, score = _nan_data(seed)
    est = DecisionTreeClassifier(random_state=seed).fit(X, score > 0)
    tree = Tree.from_sklearn(est)
    _same_routing(est, tree, _probe(seed, X))
    probe = _probe(seed, X)
    np.testing.assert_allclose(
        tree.predict_proba(probe), est.predict_proba(probe), rtol=0, atol=1e-12
    )
    # Directions learned against the larger child are stored as such.
    assert np.any(tree.missing != Missing.LARGER)


@pytest.mark.parametrize("seed", range(4))
def test_regressor_fit_with_nan_routes_nan_like_sklearn(seed: int) -> None:
    X, score = _nan_data(seed)
    est = DecisionTreeRegressor(max_depth=8, random_state=seed).fit(X, score)
    tree = Tree.from_sklearn(est)
    _same_routing(est, tree, _probe(seed, X))


@pytest.mark.parametrize(
    "estimator", [DecisionTreeClassifier, DecisionTreeRegressor], ids=["clf", "reg"]
)
def test_fit_without_nan_routes_nan_to_the_larger_child_like_sklearn(
    estimator: type,
) -> None:
    X, score = _nan_data(7, nan_fraction=0.0)
    y = score > 0 if estimator is DecisionTreeClassifier else score
    est = estimator(max_depth=6, random_state=0).fit(X, y)
    tree = Tree.from_sklearn(est)
    assert np.all(tree.missing == Missing.LARGER)  # nothing learned, nothing shown
    assert "missing" not in tree.to_text()
    _same_routing(est, tree, _probe(7, X))


@pytest.mark.parametrize(
    "estimator", [DecisionTreeClassifier, DecisionTreeRegressor], ids=["clf", "reg"]
)
def test_sample_weights_without_nan_keep_sklearns_unweighted_majority(
    estimator: type,
) -> None:
    # Without NaN at fit, sklearn sends NaN to the child with more *samples*; the
    # Tree's LARGER compares weighted counts, so where the two disagree the
    # direction is stored explicitly.
    X, score = _nan_data(0, nan_fraction=0.0)
    weight = np.where(X[:, 0] > 0, 10.0, 1.0)
    y = score > 0 if estimator is DecisionTreeClassifier else score
    est = estimator(max_depth=6, random_state=0).fit(X, y, sample_weight=weight)
    tree = Tree.from_sklearn(est)
    assert np.any(tree.missing != Missing.LARGER)
    _same_routing(est, tree, _probe(0, X))


def test_a_split_of_the_missing_rows_alone_gets_a_finite_threshold() -> None:
    # sklearn's threshold inf (NaN right, every value left) becomes the largest
    # float64, which sends every finite value left too.
    X = np.array([[0.0], [1.0], [2.0], [np.nan], [np.nan]])
    est = DecisionTreeClassifier(random_state=0).fit(X, [0, 0, 0, 1, 1])
    assert est.tree_.threshold[0] == np.inf
    tree = Tree.from_sklearn(est)
    assert tree.threshold[0] == np.finfo(np.float64).max
    assert tree.missing[0] == Missing.RIGHT
    probe = np.array([[-3.4e38], [0.5], [3.4e38], [np.nan]])  # float32 range
    _same_routing(est, tree, probe)
    assert tree.to_text(show_counts=False).splitlines()[2].endswith("or missing")
