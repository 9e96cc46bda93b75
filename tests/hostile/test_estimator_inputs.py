"""Bad parameters and bad data at the estimator layer (issue 12, items 5 and 7).

Every case is refused by ``fit`` before any round with a
:class:`~fedtrees.exceptions.ValidationError` that names the argument, parameter
or column (asserted with ``match=``), or — where the fix makes it work — runs
with a cost proportional to the work actually done.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import fedtrees
from fedtrees.exceptions import ValidationError
from fedtrees.learners import _dp_tree, fit_dp_tree, random_thresholds
from fedtrees.privacy import PrivacyAccountant

RANGES = [(-5.0, 5.0)] * 3
CLASSIFIERS: dict[str, dict[str, Any]] = {
    "FedForestClassifier": {"n_estimators": 1, "max_depth": 2},
    "DPForestClassifier": {"feature_ranges": RANGES, "max_depth": 2},
    "ICDTAClassifier": {},
    "FederatedID3Classifier": {},
    "SyntheticDataClassifier": {},
    "FedAvgClassifier": {"n_rounds": 1},
    "LocalEnsembleClassifier": {"n_estimators": 2},
    "LocalModelsClassifier": {"n_estimators": 2},
    "FedGAClassifier": {"population_size": 4, "n_generations": 1},
    "FedGBDTClassifier": {"n_estimators": 2, "max_depth": 2},
}
REGRESSORS: dict[str, dict[str, Any]] = {
    "FedForestRegressor": {"n_estimators": 1, "max_depth": 2},
    "LocalEnsembleRegressor": {"n_estimators": 2},
    "LocalModelsRegressor": {"n_estimators": 2},
    "FedGARegressor": {"population_size": 4, "n_generations": 1},
    "FedGBDTRegressor": {"n_estimators": 2, "max_depth": 2},
}
ALL = {**CLASSIFIERS, **REGRESSORS}
WEIGHTED = (  # the estimators whose fit takes sample_weight
    "FedForestClassifier",
    "FedForestRegressor",
    "FedGBDTClassifier",
    "FedGBDTRegressor",
    "FedAvgClassifier",
    "LocalEnsembleClassifier",
    "LocalEnsembleRegressor",
    "LocalModelsClassifier",
    "LocalModelsRegressor",
)


def _data(n: int = 30) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    return X, (X[:, 0] > 0).astype(np.int64), np.repeat(["a", "b", "c"], n // 3)


def _make(name: str, **params: Any) -> Any:
    return getattr(fedtrees, name)(**{**ALL[name], **params})


def _target(name: str) -> np.ndarray:
    X, y, _ = _data()
    return X[:, 0] if name in REGRESSORS else y


# -- item 7: labels and targets ----------------------------------------------------
@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("name", CLASSIFIERS)
def test_labels_mixing_types_are_refused(name: str) -> None:
    X, _, groups = _data()
    y = np.array([1, "1", 2] * 10, dtype=object)
    with pytest.raises(ValidationError, match=r"\by mixes label types \(int and str\)"):
        _make(name).fit(X, y, groups)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("name", CLASSIFIERS)
def test_a_classifier_given_a_continuous_target_points_to_a_regressor(
    name: str,
) -> None:
    X, _, groups = _data()
    with pytest.raises(
        ValidationError, match=r"\by holds continuous values.*use a regressor"
    ):
        _make(name).fit(X, X[:, 0], groups)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("name", REGRESSORS)
def test_a_regressor_given_string_targets_names_y(name: str) -> None:
    X, _, groups = _data()
    with pytest.raises(ValidationError, match=r"'y' parameter .* must be numbers"):
        _make(name).fit(X, np.array(["low", "high"] * 15), groups)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("name", REGRESSORS)
def test_a_regressor_target_whose_moments_overflow_names_y_and_the_bound(
    name: str,
) -> None:
    X, _, groups = _data()
    with pytest.raises(ValidationError, match=r"'y' parameter .*\|y\| <= 1e\+100"):
        _make(name).fit(X, X[:, 0] * 1e200, groups)


# -- item 7: sample weights, X, groups ---------------------------------------------
@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("name", WEIGHTED)
@pytest.mark.parametrize(
    ("bad", "what"),
    [
        (np.nan, "finite values >= 0"),
        (np.inf, "finite values >= 0"),
        (-1.0, "finite values >= 0"),
        (0.0, "at least one non-zero"),
        (1e60, "summing to at most 1e\\+50"),
    ],
    ids=["nan", "inf", "negative", "all-zero", "huge-total"],
)
def test_bad_sample_weights_name_sample_weight(
    name: str, bad: float, what: str
) -> None:
    X, _, groups = _data()
    weights = np.full(30, bad) if bad in (0.0, 1e60) else np.r_[bad, np.ones(29)]
    with pytest.raises(ValidationError, match=rf"'sample_weight' parameter .*{what}"):
        _make(name).fit(X, _target(name), groups, sample_weight=weights)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("name", ALL)
def test_x_with_inf_names_the_column(name: str) -> None:
    X, _, groups = _data()
    X[4, 1] = np.inf
    with pytest.raises(
        ValidationError, match=r"column 'x1' holds infinite values \(first at row 4\)"
    ):
        _make(name).fit(X, _target(name), groups)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("shape", "match"),
    [
        ((0, 3), r"X: found array with 0 sample\(s\)"),
        ((30, 0), r"X: found array with 0 feature\(s\)"),
        ((30, 3, 1), r"X must be 2-D"),
    ],
    ids=["no-rows", "no-columns", "3-D"],
)
@pytest.mark.parametrize("name", ["FedForestClassifier", "FedForestRegressor"])
def test_x_of_the_wrong_shape_is_named(
    name: str, shape: tuple[int, ...], match: str
) -> None:
    y = np.zeros(shape[0]) if name in REGRESSORS else np.arange(shape[0]) % 2
    with pytest.raises(ValidationError, match=match):
        _make(name).fit(np.zeros(shape), y)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("name", ["FedForestClassifier", "DPForestClassifier"])
def test_groups_with_nan_or_the_wrong_length_name_groups(name: str) -> None:
    X, y, _ = _data()
    with pytest.raises(ValidationError, match=r"groups holds missing values"):
        _make(name).fit(X, y, np.r_[np.nan, np.ones(29)])
    with pytest.raises(ValidationError, match=r"groups has 29 entries; X has 30"):
        _make(name).fit(X, y, np.ones(29))


@pytest.mark.hostile("documented")
def test_one_row_per_client_still_fits() -> None:
    # Documented: a client may hold a single row (its statistics are that row's).
    X, y, _ = _data(6)
    model = _make("FedForestClassifier").fit(X, y, np.arange(6))
    assert len(model.clients_) == 6
    assert model.predict(X).shape == (6,)


# -- item 5: parameters that size an allocation ----------------------------------
@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("FedForestClassifier", {"n_quantiles": 10**7}, r"'n_quantiles'.*\[2, 4096\]"),
        (
            "FedForestRegressor",
            {"n_estimators": 10**9},
            r"'n_estimators'.*\[1, 100000\]",
        ),
        (
            "FedForestClassifier",
            {"candidates": "quantile", "gain": "avgimp", "top_k": 10**9},
            r"'top_k'.*\[1, 4096\]",
        ),
        ("LocalEnsembleClassifier", {"n_estimators": 10**9}, r"'n_estimators'"),
        ("LocalModelsRegressor", {"n_estimators": 10**9}, r"'n_estimators'"),
        ("ICDTAClassifier", {"n_bins": 10**8}, r"'n_bins'.*\[2, 4096\]"),
        ("FederatedID3Classifier", {"n_bins": 10**8}, r"'n_bins'.*\[2, 4096\]"),
        ("FedGAClassifier", {"population_size": 10**9}, r"'population_size'"),
        (
            "SyntheticDataClassifier",
            {"samples_per_path": 10**10},
            r"'samples_per_path'.*\[1, 100000\]",
        ),
        (
            "FedAvgClassifier",
            {"hidden_layer_sizes": (10**6, 10**6)},
            r"'hidden_layer_sizes'.*at most 4096 units",
        ),
        ("DPForestClassifier", {"max_depth": 1100}, r"'max_depth'.*\[1, 62\]"),
    ],
    ids=lambda v: v if isinstance(v, str) and not v.startswith("'") else None,
)
def test_parameters_that_size_memory_are_bounded(
    name: str, params: dict[str, Any], match: str
) -> None:
    X, _, groups = _data()
    with pytest.raises(ValidationError, match=match):
        _make(name, **params).fit(X, _target(name), groups)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"epsilon": 1e-320}, r"'epsilon' .*too small.*>= 1e-100"),
        ({"epsilon": math.nan}, r"'epsilon' parameter"),
        # 2e-94 passes the up-front check (one feature: 2^20 queries); over the
        # agreed 3 features (2^20 * 3 queries) its share is below the bound.
        ({"epsilon": 2e-94, "max_depth": 20}, r"'epsilon' .*3145728 queries"),
    ],
    ids=["subnormal", "nan", "per-query"],
)
def test_an_epsilon_too_small_for_finite_noise_is_refused(
    params: dict[str, Any], match: str
) -> None:
    X, y, groups = _data()
    with pytest.raises(ValidationError, match=match):
        _make("DPForestClassifier", **params).fit(X, y, groups)


@pytest.mark.hostile("correct")
def test_a_deep_dp_forest_costs_only_its_open_nodes() -> None:
    # max_depth=30 used to draw 2^29 x F thresholds (12 GiB) whatever was open.
    X, y, groups = _data()
    model = _make("DPForestClassifier", max_depth=30, random_state=0).fit(X, y, groups)
    assert all(tree.max_depth <= 30 for tree in model.trees_)
    assert all(spent <= 1.0 for spent in model.epsilon_spent_.values())


@pytest.mark.hostile("correct")
def test_open_node_thresholds_equal_the_whole_level_block() -> None:
    ranges = np.array([[-1.0, 1.0], [0.0, 10.0]])
    whole, jumped = np.random.default_rng(7), np.random.default_rng(7)
    for depth in range(6):
        block = random_thresholds(whole, ranges, depth)
        positions = np.array([0, 1, 2**depth - 1]) if depth > 1 else np.arange(1)
        rows = random_thresholds(jumped, ranges, depth, positions)
        np.testing.assert_array_equal(rows, block[positions])
    assert whole.random() == jumped.random()  # both streams end at the same place
    deep = random_thresholds(np.random.default_rng(7), ranges, 61, np.array([5]))
    assert deep.shape == (1, 2)  # a heap position at depth 61: no 2^61 block


@pytest.mark.hostile("clear_error")
def test_a_dp_tree_that_outgrows_the_node_bound_names_max_depth(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Noise keeps empty nodes open, so nodes may double per level; a smaller
    # bound here shows the refusal without growing a quarter-million nodes.
    monkeypatch.setattr(_dp_tree, "MAX_TREE_NODES", 200)
    rng = np.random.default_rng(0)
    X, y = rng.uniform(size=(300, 2)), rng.integers(0, 7, 300)
    with pytest.raises(ValidationError, match=r"'max_depth' .*\(20\) grows too large"):
        fit_dp_tree(
            X,
            y,
            7,
            epsilon=math.inf,
            max_depth=20,
            ranges=[[0.0, 1.0], [0.0, 1.0]],
            accountant=PrivacyAccountant(math.inf),
            thresholds_rng=np.random.default_rng(1),
            noise_rng=np.random.default_rng(2),
            budget="parallel",
        )


@pytest.mark.hostile("correct")
def test_a_dp_forest_never_spends_more_than_epsilon() -> None:
    # The reported case: budget="parallel", epsilon=0.1, depth 7 -> 0.1 + 1 ulp.
    X, y, groups = _data()
    model = _make(
        "DPForestClassifier", epsilon=0.1, max_depth=7, budget="parallel"
    ).fit(X, y, groups)
    assert all(spent <= 0.1 for spent in model.epsilon_spent_.values())
    assert all(math.isclose(s, 0.1) for s in model.epsilon_spent_.values())


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("seed", [-1, 2**63, 2**64])
def test_a_seed_outside_64_bits_is_refused_naming_random_state(seed: int) -> None:
    """Seeds travel in requests as signed 64-bit ints: larger ones are refused."""
    from fedtrees import FedForestClassifier

    with pytest.raises(ValidationError, match="'random_state' parameter"):
        FedForestClassifier(random_state=seed).fit(np.arange(8.0)[:, None], [0, 1] * 4)
