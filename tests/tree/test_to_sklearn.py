"""Tree.to_sklearn and forest_to_sklearn: the fedtrees trees as scikit-learn's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.utils.validation import check_is_fitted

from fedtrees.exceptions import ValidationError
from fedtrees.tree import Missing, NodeStats, Tree, TreeBuilder, mean_value
from fedtrees.tree._to_sklearn import forest_to_sklearn, sklearn_threshold
from tests.tree.helpers import random_tree

DIRECTIONS = (Missing.LEFT, Missing.RIGHT, Missing.LARGER)


def _float32_rows(seed: int, n_features: int, n: int = 300) -> np.ndarray:
    """Rows of float32 values, 15 % NaN, drawn apart from the trees' thresholds.

    (A value equal to float32(t) just above a threshold t is the one documented
    difference; the trees of ``random_tree(seed)`` draw t from ``default_rng(seed)``.)
    """
    rng = np.random.default_rng([seed, 1])
    X = rng.normal(size=(n, n_features)).astype(np.float32).astype(np.float64)
    X[rng.random(X.shape) < 0.15] = np.nan
    return X


def _stump(threshold: float, missing: Missing = Missing.LARGER) -> Tree:
    b = TreeBuilder(n_features=1, classes=np.array(["low", "high"]))
    root = b.add_root(NodeStats.from_class_counts([3, 3]))
    b.split_numeric(
        root,
        0,
        threshold,
        NodeStats.from_class_counts([3, 1]),
        NodeStats.from_class_counts([0, 2]),
        missing=missing,
    )
    return b.build()


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_classes=st.sampled_from([0, 2, 3]))
def test_sklearn_tree_routes_and_predicts_as_the_tree(
    seed: int, n_classes: int
) -> None:
    tree = random_tree(seed, categorical=(), n_classes=n_classes, missing=DIRECTIONS)
    X = _float32_rows(seed, tree.n_features)
    est = tree.to_sklearn()
    kind = DecisionTreeClassifier if n_classes else DecisionTreeRegressor
    assert isinstance(est, kind)
    np.testing.assert_array_equal(est.apply(X), tree.apply(X))
    np.testing.assert_array_equal(est.predict(X), tree.predict(X))
    if n_classes:
        np.testing.assert_array_equal(est.predict_proba(X), tree.predict_proba(X))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_trees=st.integers(1, 4))
def test_sklearn_forest_predicts_the_mean_of_the_trees(seed: int, n_trees: int) -> None:
    trees = [
        random_tree(seed + k, categorical=(), n_classes=3, missing=DIRECTIONS)
        for k in range(n_trees)
    ]
    X = _float32_rows(seed, 3)
    forest = forest_to_sklearn(trees)
    assert isinstance(forest, RandomForestClassifier)
    assert forest.n_estimators == len(forest.estimators_) == n_trees
    expected = mean_value(trees, X)
    np.testing.assert_array_equal(forest.predict_proba(X), expected)
    np.testing.assert_array_equal(
        forest.predict(X), trees[0].classes[np.argmax(expected, axis=1)]
    )


def test_regression_forest_and_fitted_attributes() -> None:
    trees = [random_tree(s, categorical=(), n_classes=0) for s in range(3)]
    X = _float32_rows(0, 3)
    forest = forest_to_sklearn(trees)
    assert isinstance(forest, RandomForestRegressor)
    check_is_fitted(forest)
    np.testing.assert_array_equal(forest.predict(X), mean_value(trees, X)[:, 0])
    indicator, ptr = forest.decision_path(X)
    assert indicator.shape == (X.shape[0], sum(t.n_nodes for t in trees))
    assert ptr.tolist() == np.cumsum([0] + [t.n_nodes for t in trees]).tolist()
    assert forest.n_features_in_ == 3
    assert forest.n_outputs_ == 1


def test_missing_directions_are_scikit_learns() -> None:
    X = np.array([[0.0], [1.0], [np.nan]])
    for missing, nan_label in [(Missing.LEFT, "low"), (Missing.RIGHT, "high")]:
        est = _stump(0.5, missing).to_sklearn()
        assert est.predict(X).tolist() == ["low", "high", nan_label]
    # LARGER: the left child holds 4 of 6 rows, so NaN goes left.
    assert _stump(0.5).to_sklearn().tree_.missing_go_to_left.tolist() == [1, 0, 0]


def test_the_float32_rule_and_the_one_documented_difference() -> None:
    # t = 0.1 is no float32: every value at or below it goes left in both.
    at_or_below = np.array([[0.1], [np.nextafter(0.1, 0.0)], [0.0999999]])
    tree = _stump(0.1)
    est = tree.to_sklearn()
    assert est.tree_.threshold[0] == np.float32(0.1)
    np.testing.assert_array_equal(est.predict(at_or_below), tree.predict(at_or_below))
    # A value above t within half a float32 step rounds to float32(t): fedtrees
    # sends it right (x > t), scikit-learn left (float32(x) <= float32(t)).
    above = np.nextafter(0.1, 1.0)
    assert above > 0.1
    assert np.float32(above) == np.float32(0.1)
    assert tree.predict([[above]]).tolist() == ["high"]
    assert est.predict([[above]]).tolist() == ["low"]
    # The next float32 up goes right in both.
    step = float(np.nextafter(np.float32(0.1), np.float32(1.0)))
    assert tree.predict([[step]]).tolist() == est.predict([[step]]).tolist() == ["high"]


@given(t=st.floats(-1e6, 1e6), x=st.floats(-1e6, 1e6))
def test_sklearn_goes_left_exactly_when_float32_x_is_at_most_float32_t(
    t: float, x: float
) -> None:
    est = _stump(t).to_sklearn()
    sklearn_left = est.apply([[x]])[0] == 1
    assert sklearn_left == (np.float32(x) <= np.float32(t))
    if sklearn_left != (x <= t):  # the only disagreement: just above t
        assert x > t
        assert np.float32(x) == np.float32(t)


def test_thresholds_beyond_float32_send_every_value_one_way() -> None:
    assert sklearn_threshold([1e300, -1e300]).tolist() == [np.inf, -np.inf]
    largest = float(np.finfo(np.float64).max)  # the last bin: NaN vs the rest
    tree = _stump(largest, Missing.RIGHT)
    X = np.array([[-3e38], [3e38], [np.nan]])
    np.testing.assert_array_equal(tree.to_sklearn().predict(X), tree.predict(X))


def test_unknown_impurity_filled_so_importances_are_finite() -> None:
    tree = _stump(0.5)  # the builder leaves impurities NaN
    est = tree.to_sklearn()
    np.testing.assert_allclose(est.tree_.impurity, [0.5, 0.375, 0.0])
    assert est.feature_importances_.tolist() == [1.0]
    entropy = forest_to_sklearn([tree], criterion="entropy")
    np.testing.assert_allclose(
        entropy.estimators_[0].tree_.impurity, [1.0, 0.8112781244591328, 0.0]
    )


def test_counts_and_names_are_kept() -> None:
    b = TreeBuilder(n_features=2, feature_names=["age", "dose"])
    root = b.add_root(NodeStats.from_mean(1.0, 6.5, impurity=2.0))
    b.split_numeric(
        root, 1, 0.5, NodeStats.from_mean(0.0, 4.25), NodeStats.from_mean(3.0, 2.25)
    )
    est = b.build().to_sklearn()
    assert est.feature_names_in_.tolist() == ["age", "dose"]
    assert est.tree_.weighted_n_node_samples.tolist() == [6.5, 4.25, 2.25]
    assert est.tree_.n_node_samples.tolist() == [6, 4, 2]
    assert est.tree_.impurity.tolist() == [2.0, 0.0, 0.0]


def test_client_split_refused_naming_tree_and_node() -> None:
    b = TreeBuilder(n_features=1, classes=np.array([0, 1]), clients=("a", "b"))
    root = b.add_root(NodeStats.from_class_counts([3, 3]))
    b.split_client(root, [([0], NodeStats.from_class_counts([3, 0]))], None)
    with pytest.raises(ValidationError, match=r"tree 1, node 0 splits on the client"):
        forest_to_sklearn([_stump(0.5), b.build()])
    with pytest.raises(ValidationError, match=r"split_on_client=False"):
        b.build().to_sklearn()


def test_category_split_refused_naming_column_and_categories() -> None:
    b = TreeBuilder(
        n_features=2,
        feature_names=["age", "color"],
        categories=[None, ("red", "green", "blue")],
    )
    root = b.add_root(NodeStats.from_mean(1.0, 6))
    _, right = b.split_numeric(
        root, 0, 3.0, NodeStats.from_mean(0.0, 3), NodeStats.from_mean(2.0, 3)
    )
    b.split_categorical(
        right, 1, [([0, 2], NodeStats.from_mean(1.0, 2))], NodeStats.from_mean(4.0, 1)
    )
    with pytest.raises(
        ValidationError,
        match=r"node 2 splits column 'color' by category sets "
        r"\(color in \{red, blue\} \| color not in \{red, blue\}\).*One-hot encode",
    ):
        b.build().to_sklearn()


def test_unused_categorical_column_refused_naming_it() -> None:
    b = TreeBuilder(
        n_features=2, feature_names=["age", "color"], categories=[None, ("a", "b")]
    )
    root = b.add_root(NodeStats.from_mean(1.0, 6))
    b.split_numeric(
        root, 0, 3.0, NodeStats.from_mean(0.0, 3), NodeStats.from_mean(2.0, 3)
    )
    with pytest.raises(ValidationError, match=r"column 'color' is categorical"):
        b.build().to_sklearn()


def test_forest_needs_alike_trees() -> None:
    with pytest.raises(ValidationError, match=r"no tree to export"):
        forest_to_sklearn([])
    regression = random_tree(0, categorical=(), n_classes=0)
    with pytest.raises(ValidationError, match=r"tree 1 differs from tree 0"):
        forest_to_sklearn([_stump(0.5), regression])
