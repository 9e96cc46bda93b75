from __future__ import annotations

import numpy as np
import pytest

from fedtrees.datasets import synthetic
from fedtrees.exceptions import ValidationError


def test_ground_truth_is_a_fixed_depth_six_tree() -> None:
    f = synthetic.ground_truth()
    assert f.get_depth() == 6
    assert f is synthetic.ground_truth()
    X = np.random.default_rng(0).uniform(-3, 3, (5000, 5))
    # x3*x4 is a saddle (the XOR case for greedy splits): the distilled tree mostly
    # encodes step(x1) + sin(3 x2), and still splits on x3 and x4.
    assert np.corrcoef(f.predict(X), (X[:, 0] > 0) + np.sin(3 * X[:, 1]))[0, 1] > 0.6
    assert {0, 1, 2, 3} <= set(f.tree_.feature[f.tree_.feature >= 0].tolist())


@pytest.mark.parametrize("setting", synthetic.SETTINGS)
def test_settings_follow_the_specification(setting: str) -> None:
    data = synthetic.make_fedforest(setting, random_state=3)  # type: ignore[arg-type]
    assert data.X.shape == (2000, 5)
    assert data.X_test.shape == (2000, 5)
    assert np.bincount(data.groups).tolist() == [500] * 4
    assert np.bincount(data.groups_test).tolist() == [500] * 4
    residual = data.y - synthetic.ground_truth().predict(data.X)
    for k in range(4):
        rows = data.groups == k
        mu = (k - 1.5) * 3 if setting == "covariate_shift" else 0.0
        sd = 0.5 if setting == "covariate_shift" else 1.0
        bias = 2 * (k - 1.5) if setting == "outcome_shift" else 0.0
        assert data.X[rows, 0].mean() == pytest.approx(mu, abs=0.2)
        assert data.X[rows, 1].std() == pytest.approx(sd, rel=0.1)
        assert residual[rows].mean() == pytest.approx(bias, abs=0.1)
        assert residual[rows].std() == pytest.approx(0.5, rel=0.1)


def test_draws_are_seeded() -> None:
    a = synthetic.make_fedforest("homogeneous", random_state=1)
    b = synthetic.make_fedforest("homogeneous", random_state=1)
    c = synthetic.make_fedforest("homogeneous", random_state=2)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert not np.array_equal(a.X, c.X)


@pytest.mark.parametrize("delta", [0.0, 2.5, 5.0])
def test_two_client_generators(delta: float) -> None:
    disjoint = synthetic.make_disjoint_supports(delta, random_state=0)
    for k, sign in ((0, -1), (1, 1)):
        rows = disjoint.groups == k
        assert disjoint.X[rows, 0].mean() == pytest.approx(sign * delta / 2, abs=0.15)
    noise = disjoint.y - (disjoint.X[:, 0] > 0)
    assert noise.std() == pytest.approx(0.5, rel=0.1)
    overlap = synthetic.make_overlapping_supports(delta, random_state=0)
    for k, sign in ((0, -1), (1, 1)):
        x = overlap.X[overlap.groups == k, 0]
        centre = sign * delta / 2
        assert centre - 3 <= x.min()
        assert x.max() <= centre + 3
    # Both clients have rows near the pooled optimum 0.
    assert all(np.any(np.abs(overlap.X[overlap.groups == k, 0]) < 0.5) for k in (0, 1))


def test_bad_arguments() -> None:
    with pytest.raises(
        ValidationError, match="'setting' parameter of make_fedforest must be one of"
    ):
        synthetic.make_fedforest("iid")  # type: ignore[arg-type]
    with pytest.raises(
        ValidationError, match="'delta' parameter of make_disjoint_supports"
    ):
        synthetic.make_disjoint_supports(-1.0)
