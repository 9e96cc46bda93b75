from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from fedtrees.exceptions import ValidationError
from fedtrees.stats import ClassCounts, Moments, entropy, gini, impurity, variance


@given(y=hnp.arrays(np.int64, st.integers(1, 60), elements=st.integers(0, 4)))
def test_gini_and_entropy_match_brute_force_on_labels(y: np.ndarray) -> None:
    _, counts = np.unique(y, return_counts=True)
    p = counts / y.shape[0]
    stats = ClassCounts.from_labels(y, 5).data
    assert gini(stats) == pytest.approx(1.0 - np.sum(p**2), abs=1e-12)
    assert entropy(stats) == pytest.approx(-np.sum(p * np.log2(p)), abs=1e-12)


@given(y=hnp.arrays(np.float64, st.integers(1, 60), elements=st.floats(-100, 100)))
def test_variance_matches_numpy(y: np.ndarray) -> None:
    assert variance(Moments.from_targets(y).data) == pytest.approx(
        np.var(y), rel=1e-9, abs=1e-9
    )


def test_root_impurity_matches_sklearn(rng: np.random.Generator) -> None:
    X = rng.normal(size=(300, 2))
    y = rng.integers(0, 3, 300)
    for criterion in ("gini", "entropy"):
        est = DecisionTreeClassifier(criterion=criterion, max_depth=1).fit(X, y)
        ours = impurity(ClassCounts.from_labels(y, 3).data, criterion)
        assert ours == pytest.approx(est.tree_.impurity[0], rel=1e-12)
    t = rng.normal(size=300)
    est = DecisionTreeRegressor(max_depth=1).fit(X, t)
    assert variance(Moments.from_targets(t).data) == pytest.approx(
        est.tree_.impurity[0], rel=1e-10
    )


def test_vectorised_over_leading_axes_and_empty_nodes() -> None:
    counts = np.array([[[2.0, 2.0], [0.0, 0.0]], [[4.0, 0.0], [1.0, 3.0]]])
    np.testing.assert_allclose(gini(counts), [[0.5, 0.0], [0.0, 0.375]])
    np.testing.assert_allclose(entropy(counts)[0], [1.0, 0.0])
    np.testing.assert_allclose(variance(np.zeros((3, 3))), 0.0)


def test_unknown_criterion() -> None:
    with pytest.raises(ValidationError, match="'criterion' parameter of impurity"):
        impurity([1.0, 1.0], "mse")  # type: ignore[arg-type]
