"""Finite but extreme values, in data and in settings (issue 24, family 2).

Values up to ±1.7976931348623157e308 are floats like any other. Where the math
allows them, they now work and give the right model: ranges whose width is
beyond float64 (``hi - lo`` overflows) are computed on their halves, columns
beyond float32 are scaled by a power of two before scikit-learn's float32 trees
see them (and the thresholds scaled back), synthetic intervals stop at the
largest float. Where the math gives a bound (FedAvg's moments of x², a boosting
step, a Laplace scale, a class weight, a wait), ``fit`` refuses the value
before any round, naming the column or the setting — no client is blamed for
it, and no error a client sends states its rows or values.
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import fedtrees
from fedtrees import Federation
from fedtrees.algorithms.fedforest._strategy import FedForestStrategy
from fedtrees.algorithms.fedforest._uniform import spaced_thresholds
from fedtrees.algorithms.histogram import Grid
from fedtrees.exceptions import RemoteProtocolError, ValidationError
from fedtrees.federation import RoundEnv
from fedtrees.learners import random_thresholds
from fedtrees.stats import uniform_candidates

BIG = 1.7e308  # finite; 2 * BIG and BIG - (-BIG) are not
SCALE = 2.0**1000  # a power of two: scaling by it is exact


def _data(n: int = 60) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    return (
        X,
        (X[:, 0] + X[:, 1] > 0).astype(np.int64),
        np.repeat(["a", "b", "c"], n // 3),
    )


def _signed(X: np.ndarray, column: int = 1) -> np.ndarray:
    """X with ``column`` replaced by ±BIG (its sign kept): a width beyond float64."""
    out = X.copy()
    out[:, column] = np.where(X[:, column] > 0, BIG, -BIG)
    return out


def _no_round(env: RoundEnv) -> None:
    if env.round >= 1:
        raise AssertionError(f"round {env.round} ran before the value was refused")


def _quiet_fit(model: Any, *args: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(*args)


# -- ranges whose width overflows: computed on their halves -------------------------
@pytest.mark.hostile("correct")
def test_uniform_candidates_of_a_range_wider_than_float64_are_exact_and_ordered() -> (
    None
):
    # hi - lo was inf: the thresholds were inf and NaN.
    got = uniform_candidates([[[-BIG, BIG]], [[-1.0, 2.0]]], q=8)[0]
    exact = [
        Fraction(-BIG) + (Fraction(BIG) - Fraction(-BIG)) * k / 8 for k in range(1, 8)
    ]
    assert np.isfinite(got).all()
    assert np.all(np.diff(got) > 0)
    for value, want in zip(got.tolist(), exact, strict=True):
        assert abs(Fraction(value) - want) <= abs(want) * Fraction(2, 10**15) + 2**-1074


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("name", ["FedForestClassifier", "FedForestRegressor"])
def test_uniform_candidates_split_a_column_spanning_all_floats(name: str) -> None:
    # Every client was blamed: "FedForest request: thresholds must be finite".
    X, _, groups = _data()
    X = _signed(X, 0)
    y = X[:, 0] > 0
    target = y.astype(float) if name.endswith("Regressor") else y.astype(int)
    model = getattr(fedtrees, name)(
        n_estimators=1, candidates="uniform", max_features=None, random_state=0
    )
    model = _quiet_fit(model, X, target, groups)
    np.testing.assert_array_equal(model.predict(X), target)
    assert all(np.isfinite(t.threshold[t.feature >= 0]).all() for t in model.trees_)


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("q", [2, 3, 8])
def test_uniform_thresholds_over_a_grid_wider_than_float64_are_finite(q: int) -> None:
    # The pooled grid of a column holding -1.7e308 and 1.7e308: linspace over its
    # extent was inf, so every client was blamed ("thresholds must be finite").
    grid = Grid.from_lists([[-BIG, -1.0, 1.0, BIG]], [0])
    got = spaced_thresholds(grid, q)[0]
    assert np.isfinite(got).all()
    assert np.all(np.diff(got) > 0)
    assert got[0] >= -BIG
    assert got[-1] <= BIG
    if q > 2:
        assert got[0] == -BIG
        assert got[-1] == BIG


@pytest.mark.hostile("correct")
def test_dp_thresholds_of_a_range_wider_than_float64_stay_inside_it() -> None:
    # numpy's uniform refused the range: OverflowError at every client.
    ranges = np.array([[-BIG, BIG], [1.0, 2.0]])
    drawn = random_thresholds(np.random.default_rng(3), ranges, depth=6)
    assert np.isfinite(drawn).all()
    assert np.all((drawn >= ranges[:, 0]) & (drawn <= ranges[:, 1]))
    assert drawn[:, 0].min() < -1e307
    assert drawn[:, 0].max() > 1e307
    # Ranges of a finite width are drawn as before (numpy's uniform, same stream).
    normal = np.array([[-1.0, 1.0], [1.0, 2.0]])
    np.testing.assert_array_equal(
        random_thresholds(np.random.default_rng(3), normal, depth=6),
        np.random.default_rng(3).uniform(normal[:, 0], normal[:, 1], size=(64, 2)),
    )


@pytest.mark.hostile("correct")
def test_a_dp_forest_with_a_declared_range_wider_than_float64_fits() -> None:
    X, y, groups = _data()
    model = fedtrees.DPForestClassifier(
        feature_ranges=[(-BIG, BIG), (-5.0, 5.0), (-5.0, 5.0)],
        max_depth=3,
        epsilon=1e6,  # little noise: the trees split
        random_state=0,
    )
    model = _quiet_fit(model, X, y, groups)
    on_first = np.concatenate([t.threshold[t.feature == 0] for t in model.trees_])
    assert on_first.size
    assert np.isfinite(on_first).all()
    assert np.all(np.abs(on_first) <= BIG)


@pytest.mark.hostile("correct")
@pytest.mark.parametrize(
    "params",
    [
        {"feature_ranges": [(-BIG, BIG)] * 3, "fill": "outside"},  # min - width: -inf
        {"feature_ranges": [(-BIG, BIG)] * 3},  # "uniform": OverflowError
        {"fill": [BIG, -BIG]},  # the server's CART refused values beyond float32
        {"alpha": 1e308},  # intervals t ± alpha*|t| beyond float64
    ],
    ids=["outside", "uniform", "fill-values", "alpha"],
)
def test_synthetic_rows_stay_finite_at_the_edges_of_float64(
    params: dict[str, Any],
) -> None:
    X, _, groups = _data()
    y = (X[:, 0] > 0).astype(np.int64)  # 98% with the default settings
    model = fedtrees.SyntheticDataClassifier(random_state=0, **params)
    model = _quiet_fit(model, X, y, groups)
    assert np.isfinite(model.synthetic_X_.to_numpy()).all()
    if "alpha" not in params:  # intervals as wide as float64 carry no signal
        assert model.score(X, y) > 0.95


# -- columns beyond float32: scikit-learn's trees see them scaled -----------------
CART_BASED: dict[str, dict[str, Any]] = {
    "LocalEnsembleClassifier": {"n_estimators": 3, "random_state": 0},
    "LocalModelsClassifier": {"n_estimators": 3, "random_state": 0},
    "LocalEnsembleRegressor": {"n_estimators": 3, "random_state": 0},
    "ICDTAClassifier": {"base": "cart", "random_state": 0},
    "SyntheticDataClassifier": {"random_state": 0},
    "FedGAClassifier": {"population_size": 4, "n_generations": 2, "random_state": 0},
    "FedGARegressor": {"population_size": 4, "n_generations": 2, "random_state": 0},
}


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("name", CART_BASED)
def test_a_column_beyond_float32_gives_the_model_of_the_unscaled_column(
    name: str,
) -> None:
    # Every client failed: "Input X contains infinity or a value too large for
    # dtype('float32')". Scaling a column by a power of two changes no split.
    X, y, groups = _data()
    target = X[:, 0] - X[:, 1] if name.endswith("Regressor") else y
    big = X.copy()
    big[:, 1] *= SCALE  # |x| up to ~1e301

    def predictions(features: np.ndarray) -> np.ndarray:
        model = _quiet_fit(
            getattr(fedtrees, name)(**CART_BASED[name]), features, target, groups
        )
        personal = name.startswith(("LocalModels", "FedGA"))
        return np.asarray(
            model.predict(features, **({"client": "a"} if personal else {}))
        )

    np.testing.assert_array_equal(predictions(big), predictions(X))


@pytest.mark.hostile("correct")
def test_exact_candidates_split_a_column_beyond_float32() -> None:
    # Two values beyond float32 were both inf in the float32 gap test, so the
    # column had no candidate: the tree silently split on the other columns.
    X, _, groups = _data()
    y = (X[:, 1] > 0).astype(np.int64)
    shifted = X.copy()
    shifted[:, 1] += 5.0  # all positive: every value beyond float32 once scaled
    big = shifted.copy()
    big[:, 1] *= SCALE

    def tree(features: np.ndarray) -> Any:
        model = fedtrees.FedForestClassifier(
            n_estimators=1,
            candidates="exact",
            max_features=None,
            bootstrap=False,
            random_state=0,
        )
        return _quiet_fit(model, features, y, groups).trees_[0]

    small_tree, big_tree = tree(shifted), tree(big)
    np.testing.assert_array_equal(big_tree.feature, small_tree.feature)
    split = small_tree.feature == 1
    assert split.any()
    np.testing.assert_array_equal(
        big_tree.threshold[split], small_tree.threshold[split] * SCALE
    )


# -- bounds the math gives: refused at fit, by name -------------------------------
@pytest.mark.hostile("clear_error")
def test_fedavg_refuses_a_column_whose_moments_overflow_naming_it() -> None:
    # Every honest client was blamed: "field 'total' holds NaN or inf".
    X, y, groups = _data()
    X = _signed(X)
    with pytest.raises(ValidationError, match=r"column 'x1' holds values beyond "):
        fedtrees.FedAvgClassifier(n_rounds=1).fit(X, y, groups)
    # A federation's clients check it themselves, naming the column, no value.
    federation = Federation.from_groups(X, y, groups)
    with pytest.raises(RemoteProtocolError, match=r"column 'x1' .*beyond") as caught:
        fedtrees.FedAvgClassifier(n_rounds=1).fit_federation(federation)
    assert "1.7e+308" not in str(caught.value)


@pytest.mark.hostile("clear_error")
def test_fedavg_divergence_is_reported_naming_the_learning_rate() -> None:
    # Was: "field 'loss' is nan; a finite value was expected" (client blamed).
    X, y, groups = _data()
    model = fedtrees.FedAvgClassifier(n_rounds=1, learning_rate=1e308)
    with pytest.raises(RemoteProtocolError, match=r"diverged.*lower learning_rate"):
        model.fit(X, y, groups)


@pytest.mark.hostile("clear_error")
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("FedGBDTRegressor", {"base_score": BIG}, r"'base_score'.*1e\+100"),
        ("FedGBDTRegressor", {"learning_rate": 1e308}, r"'learning_rate'.*<= 1\.0"),
        ("FedGBDTClassifier", {"learning_rate": 1e308}, r"'learning_rate'"),
        ("FedGAClassifier", {"epsilon": 1e-308}, r"'epsilon' .*too small"),
        (
            "FederatedID3Classifier",
            {"epsilon": 1e-308, "bin_edges": {0: [0.0], 1: [0.0], 2: [0.0]}},
            r"'epsilon' .*too small",
        ),
        (
            "SyntheticDataClassifier",
            {"class_weight": {0: 1e308, 1: 1.0}},
            r"class_weight\[0\] .*<= 1e\+50",
        ),
        ("FedForestClassifier", {"timeout": 1e308}, r"'timeout' .*<= 1000000000"),
        ("FedAvgClassifier", {"timeout": 1e10}, r"'timeout'"),
    ],
    ids=[
        "gbdt-base_score",
        "gbdt-learning_rate",
        "gbdt-classifier-learning_rate",
        "fedga-epsilon",
        "fedid3-epsilon",
        "synthetic-class_weight",
        "fedforest-timeout",
        "fedavg-timeout",
    ],
)
def test_an_extreme_setting_is_refused_by_name_before_any_round(
    name: str, params: dict[str, Any], match: str
) -> None:
    # Each used to reach the clients: NaN gradients, infinite noise or counts
    # (honest clients blamed or silently dropped), an OverflowError in a wait.
    X, y, groups = _data()
    target = X[:, 0] if name.endswith("Regressor") else y
    federation = Federation.from_groups(X, target, groups)
    model = getattr(fedtrees, name)(**params)
    with pytest.raises(ValidationError, match=match):
        model.fit_federation(federation, callbacks=[_no_round])


@pytest.mark.hostile("clear_error")
def test_the_round_loop_refuses_a_timeout_it_cannot_wait() -> None:
    X, y, groups = _data()
    federation = Federation.from_groups(X, y, groups)
    config = fedtrees.FedForestClassifier(n_estimators=1)._config()
    with pytest.raises(ValidationError, match=r"'timeout' parameter of run"):
        federation.run(FedForestStrategy(config), task="classification", timeout=1e300)
