"""FedGA-Tree's client-side initialization and metrics (docs/fedga.md).

CV scores equal a direct scikit-learn computation; the best depth is the first
maximum of the mean; the regression votes match Eq. 1–2 computed by hand; the
noisy size charges exactly ε and has the Laplace(1/ε) spread; the local
structure keeps the CART's split features; Δ (Eq. 3) and the share improved
follow the paper's sign conventions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import f1_score, r2_score
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from fedtrees.algorithms.fedga import (
    DepthSearch,
    cross_validate_depths,
    decode,
    local_structure,
    noisy_size,
    regression_votes,
    relative_improvement,
    share_improved,
    structure_summary,
    summarize_clients,
    vote_statistics,
)
from fedtrees.exceptions import PrivacyBudgetExceeded, ValidationError
from fedtrees.privacy import PrivacyAccountant


def _data(n: int = 80, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y_cls = (X[:, 0] + 0.5 * X[:, 1] * X[:, 2] > 0).astype(np.int64)
    y_cls[X[:, 3] > 1.2] = 2  # a rarer third class
    y_reg = X[:, 0] ** 2 + X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y_cls, y_reg


# --------------------------------------------------------------- cross-validation


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_cv_scores_equal_direct_sklearn(task: str) -> None:
    X, y_cls, y_reg = _data()
    y = y_cls if task == "classification" else y_reg
    seed, folds, depths = 3, 4, range(2, 6)
    cv = cross_validate_depths(X, y, task, seed=seed, depth_range=(2, 5), folds=folds)
    if task == "classification":  # every class has >= folds rows here
        assert np.bincount(y_cls).min() >= folds
        splitter: KFold | StratifiedKFold = StratifiedKFold(
            folds, shuffle=True, random_state=seed
        )
    else:
        splitter = KFold(folds, shuffle=True, random_state=seed)
    expected = np.empty((folds, len(depths)))
    for k, (tr, va) in enumerate(splitter.split(X, y)):
        for j, d in enumerate(depths):
            if task == "classification":
                m = DecisionTreeClassifier(max_depth=d, random_state=seed)
                pred = m.fit(X[tr], y[tr]).predict(X[va])
                expected[k, j] = f1_score(y[va], pred, average="macro", zero_division=0)
            else:
                m = DecisionTreeRegressor(max_depth=d, random_state=seed)
                expected[k, j] = r2_score(y[va], m.fit(X[tr], y[tr]).predict(X[va]))
    np.testing.assert_array_equal(cv.depths, np.arange(2, 6))
    np.testing.assert_allclose(cv.scores, expected, rtol=0, atol=1e-12)
    assert cv.best_depth == 2 + int(np.argmax(expected.mean(axis=0)))


def test_cv_falls_back_to_kfold_for_rare_classes() -> None:
    X, y, _ = _data(n=30)
    y = y.copy()
    y[:2] = 3  # a class with 2 < folds rows
    cv = cross_validate_depths(X, y, "classification", seed=1, depth_range=(2, 3))
    splitter = KFold(5, shuffle=True, random_state=1)
    tr, va = next(iter(splitter.split(X)))
    m = DecisionTreeClassifier(max_depth=2, random_state=1).fit(X[tr], y[tr])
    want = f1_score(y[va], m.predict(X[va]), average="macro", zero_division=0)
    assert cv.scores[0, 0] == pytest.approx(want, abs=1e-12)


def test_cv_is_deterministic_for_a_seed() -> None:
    X, _, y = _data()
    a = cross_validate_depths(X, y, "regression", seed=7, depth_range=(2, 4))
    b = cross_validate_depths(X, y, "regression", seed=7, depth_range=(2, 4))
    np.testing.assert_array_equal(a.scores, b.scores)


def test_best_depth_is_max_mean_and_ties_go_to_smaller() -> None:
    # One split explains a threshold target, so every depth grows the same tree:
    # equal scores across depths, and the smallest depth wins the tie.
    X = np.arange(50.0)[:, None]
    y = (X[:, 0] >= 25).astype(int)
    cv = cross_validate_depths(X, y, "classification", seed=0, depth_range=(3, 6))
    np.testing.assert_array_equal(cv.scores, cv.scores[:, :1].repeat(4, axis=1))
    assert cv.best_depth == 3


def test_best_depth_picks_the_highest_mean_on_data() -> None:
    X, y, _ = _data(n=120)
    cv = cross_validate_depths(X, y, "classification", seed=0, depth_range=(1, 8))
    means = cv.mean_scores
    assert means[cv.index_of(cv.best_depth)] == means.max()
    assert all(means[j] < means.max() for j in range(cv.index_of(cv.best_depth)))


def test_too_few_rows_for_the_folds_is_a_clear_error() -> None:
    X, y, _ = _data(n=4)
    with pytest.raises(
        ValidationError, match=r"at least folds=5 rows.*this client has fewer"
    ):
        cross_validate_depths(X, y, "classification", seed=0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"depth_range": (3, 2)}, "depth_range"),
        ({"depth_range": (0, 2)}, "depth_range"),
        ({"folds": 1}, "folds"),
    ],
)
def test_cv_rejects_bad_parameters(kwargs: dict[str, object], match: str) -> None:
    X, y, _ = _data(n=20)
    with pytest.raises(ValidationError, match=match):
        cross_validate_depths(X, y, "classification", seed=0, **kwargs)


def test_index_of_unknown_depth() -> None:
    search = DepthSearch(np.arange(2, 5), np.zeros((3, 3)), 2)
    with pytest.raises(ValidationError, match="cross-validated depths"):
        search.index_of(9)


# ------------------------------------------------------------------------ votes


def _cv_by_hand(values: list[float]) -> float:
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return std / abs(mean)


def test_votes_match_eq_1_and_2_by_hand() -> None:
    v = [[0.60, 0.70, 0.80], [0.50, 0.70, 0.75], [0.65, 0.72, 0.70]]
    d = 1  # the server's depth is the middle column
    phi = _cv_by_hand([row[d] for row in v])
    theta = sum(_cv_by_hand(row) for row in v) / len(v)
    y = [1.0, 2.0, 3.0, 4.0, 4.0]  # 4 unique of 5 -> mu = 80 %
    got = vote_statistics(v, d, y)
    assert got.phi == pytest.approx(phi, rel=1e-12)
    assert got.theta == pytest.approx(theta, rel=1e-12)
    assert got.mu == pytest.approx(80.0)
    # phi ~ 0.014 < 0.25 and theta ~ 0.11 > 0.02: vote1; mu = 80 is not > 80.
    assert regression_votes(v, d, y) == (True, False)
    assert regression_votes(v, d, y, mu_star=79.0) == (True, True)
    assert regression_votes(v, d, y, theta_star=theta) == (False, False)  # strict
    assert regression_votes(v, d, y, phi_star=phi / 2) == (False, False)


def test_votes_noisy_folds_vote_no() -> None:
    v = np.array([[0.1, 0.1], [0.9, 0.9]])  # large spread over folds
    stats_ = vote_statistics(v, 0, np.arange(10.0))
    assert stats_.phi == pytest.approx(0.8)  # std 0.4 / mean 0.5
    assert stats_.theta == 0.0  # constant over depths: no complexity
    assert regression_votes(v, 0, np.arange(10.0)) == (False, True)


def test_votes_zero_mean_decision() -> None:
    # Zero mean with spread -> CV inf (noisy: vote1 = 0); constant -> CV 0.
    v = np.array([[-0.2, 0.0], [0.2, 0.0]])
    got = vote_statistics(v, 0, [1.0])
    assert got.phi == math.inf
    assert vote_statistics(v, 1, [1.0]).phi == 0.0
    assert regression_votes(v, 0, [1.0])[0] is False


def test_votes_reject_bad_index() -> None:
    with pytest.raises(ValidationError, match="depth_index"):
        regression_votes(np.ones((2, 3)), 3, [1.0])


# ------------------------------------------------------------------- noisy size


def test_noisy_size_charges_exactly_epsilon() -> None:
    acc = PrivacyAccountant(0.3, owner="client 'A'")
    value, spent = noisy_size(120, 0.3, np.random.default_rng(0), accountant=acc)
    assert spent == 0.3
    assert acc.epsilon_spent == 0.3
    assert acc.n_spends == 1
    assert math.isfinite(value)
    with pytest.raises(PrivacyBudgetExceeded, match="client 'A' cannot spend"):
        noisy_size(120, 0.3, np.random.default_rng(0), accountant=acc)


def test_noisy_size_same_seed_same_value() -> None:
    def draw() -> float:
        acc = PrivacyAccountant(1.0)
        return noisy_size(50, 1.0, np.random.default_rng(11), accountant=acc)[0]

    assert draw() == draw()


def test_noisy_size_has_laplace_spread() -> None:
    epsilon, n, draws = 0.5, 200, 4000
    acc = PrivacyAccountant(math.inf)
    rng = np.random.default_rng(2024)
    noise = np.array(
        [noisy_size(n, epsilon, rng, accountant=acc)[0] - n for _ in range(draws)]
    )
    scale = 1.0 / epsilon
    # Deterministic at this seed; tolerances are > 6 standard errors anyway.
    assert abs(noise.mean()) < 6 * math.sqrt(2) * scale / math.sqrt(draws)
    assert np.abs(noise).mean() == pytest.approx(scale, abs=6 * scale / draws**0.5)
    assert stats.kstest(noise, "laplace", args=(0.0, scale)).pvalue > 1e-3
    assert acc.epsilon_spent == pytest.approx(epsilon * draws)


# -------------------------------------------------------------- local structure


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_local_structure_keeps_the_carts_split_features(task: str) -> None:
    X, y_cls, y_reg = _data(n=120)
    y = y_cls if task == "classification" else y_reg
    depth, seed = 4, 5
    structure = local_structure(X, y, task, depth, seed=seed, n_classes=3)
    model = (
        DecisionTreeClassifier(max_depth=depth, random_state=seed)
        if task == "classification"
        else DecisionTreeRegressor(max_depth=depth, random_state=seed)
    ).fit(X, y)
    features = model.tree_.feature  # sklearn numbers nodes in pre-order
    decoded = decode(structure, depth)
    assert structure.shape == (2**depth - 1,)
    np.testing.assert_array_equal(decoded.feature, features[features >= 0])
    np.testing.assert_array_equal(decoded.level.max() + 1, model.get_depth())


def test_local_structure_pads_a_shallow_tree_with_nil() -> None:
    X = np.arange(10.0)[:, None]
    y = (X[:, 0] > 4).astype(int)
    structure = local_structure(X, y, "classification", 3, seed=0, n_classes=2)
    assert structure.tolist() == [0, -1, -1, -1, -1, -1, -1]


def test_local_structure_rejects_bad_labels() -> None:
    X = np.zeros((3, 1))
    with pytest.raises(ValidationError, match="class codes"):
        local_structure(X, [0, 1, 2], "classification", 2, seed=0, n_classes=2)


# ----------------------------------------------------------------------- metrics


def test_relative_improvement_by_hand() -> None:
    fed, local = [0.9, 0.6, 0.5], [0.75, 0.8, 0.5]
    want = [(0.9 / 0.75 - 1) * 100, (0.6 / 0.8 - 1) * 100, 0.0]
    np.testing.assert_allclose(relative_improvement(fed, local), want, rtol=1e-12)
    assert share_improved(fed, local) == pytest.approx(1 / 3)


def test_regression_delta_keeps_the_papers_sign() -> None:
    # MSE: Eq. 3 unchanged, so a better (lower) federated MSE gives Δ < 0.
    fed, local = [8.0, 12.0, 5.0, 5.0], [10.0, 10.0, 5.0, 10.0]
    np.testing.assert_allclose(
        relative_improvement(fed, local), [-20.0, 20.0, 0.0, -50.0], rtol=1e-12
    )
    assert share_improved(fed, local, higher_is_better=False) == 0.5
    assert share_improved(fed, local, higher_is_better=True) == 0.25
    summary = summarize_clients(fed, local, higher_is_better=False)
    assert summary.delta_mean == pytest.approx(-12.5)
    assert summary.share_improved == 0.5
    assert summary.delta_median == pytest.approx(-10.0)
    q25, q75 = np.percentile([-20.0, 20.0, 0.0, -50.0], [25, 75])
    assert summary.delta_iqr == pytest.approx((q25, q75))


def test_delta_with_zero_local_score_is_an_error() -> None:
    with pytest.raises(ValidationError, match=r"undefined.*positions \[1\]"):
        relative_improvement([0.5, 0.5], [0.5, 0.0])
    with pytest.raises(ValidationError, match="one federated and one local"):
        relative_improvement([0.5, 0.5], [0.5])


def test_structure_summary_reuses_encoding_metrics() -> None:
    final = [np.array([0, 1, 2]), np.array([0, -1, 5])]
    local = [np.array([0, 1, -1]), np.array([0, 2, 2])]
    summary = structure_summary(final, local)
    assert summary.n_decision.tolist() == [3, 2]
    np.testing.assert_allclose(summary.edit_distance, [1 / 3, 2 / 3])
    assert summary.mean_decision_nodes == 2.5
    assert summary.mean_edit_distance == pytest.approx(0.5)
