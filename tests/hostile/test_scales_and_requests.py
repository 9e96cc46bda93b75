"""Extreme scales, absurd ε, damaged requests and tied labels (issue 24, round two).

- **Scales.** The histogram engine's exact grid used scikit-learn's float32 gap
  rule (gaps <= 1e-7 not split), so data scaled by 1e-9, subnormals and values
  beyond float32's range learned nothing; the quantile mixture collapsed on
  subnormals (infinite slopes). Now both split any finite float64 scale: the
  reference is the same data at scale 1 (a power of two scales exactly).
  ``candidates="exact"`` mirrors scikit-learn, so it refuses values beyond
  float32's range naming the column, and leaves gaps below 1e-7 unsplit as
  scikit-learn does (documented); the scikit-learn-based local forests read X as
  float32 (documented).
- **ε.** One smallest ε (1e-100) for mechanisms, estimators, plans and requests.
- **Requests.** Unusable values are refused naming the field.
- **Labels.** Int labels are ordered as ints, not as float64 (where 2**60 + k tie).
- **One class** (FedAvg) predicts that class; **repeated column names** are named.
"""

from __future__ import annotations

import dataclasses
import math
import re
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeClassifier

from fedtrees import (
    DPForestClassifier,
    FedAvgClassifier,
    FederatedID3Classifier,
    FedForestClassifier,
    FedGAClassifier,
    FedGBDTRegressor,
    LocalModelsClassifier,
)
from fedtrees.exceptions import ValidationError
from fedtrees.federation import ClientState, Envelope, Federation, decode, encode, serve
from fedtrees.privacy import ClippedLaplace, Laplace
from fedtrees.stats import (
    digitize,
    exact_candidates,
    midpoint_candidates,
    quantile_candidates,
    quantile_sketch,
)
from tests.hostile.test_request_sizes import _captured

EXACT_TREE = {"n_estimators": 1, "bootstrap": False, "max_features": None}
SUBNORMAL = 2.0**-1074  # integer X -> subnormals k * 2^-1074, exact
SCALES = {
    "1e-9": 2.0**-30,  # normal floats, gaps far below float32's 1e-7
    "subnormal": SUBNORMAL,
    "beyond-float32": 2.0**128,
    "near-largest-float": 2.0**1019,  # |X| <= 30: below 1.7e308
}


def _integer_data(n: int = 90) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Integer features in [-30, 30] (exact at every power-of-two scale)."""
    rng = np.random.default_rng(3)
    X = np.clip(np.round(rng.normal(scale=8.0, size=(n, 3))), -30, 30)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64)
    return X, y, np.repeat(["a", "b", "c"], n // 3)


def _quiet_fit(model: Any, X: Any, y: Any, groups: Any = None) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X, y, groups)


# -- 1. scales ------------------------------------------------------------------------
@pytest.mark.hostile("correct")
@pytest.mark.parametrize("scale", list(SCALES.values()), ids=list(SCALES))
@pytest.mark.parametrize(
    ("make", "regression"),
    [
        (lambda: FedForestClassifier(**EXACT_TREE, random_state=0), False),
        (lambda: FedGBDTRegressor(n_estimators=3, max_depth=3), True),
    ],
    ids=["FedForestClassifier-hist", "FedGBDTRegressor"],
)
def test_the_hist_grid_splits_values_of_any_scale(
    make: Any, regression: bool, scale: float
) -> None:
    X, y, groups = _integer_data()
    target = 3.0 * X[:, 0] - X[:, 1] if regression else y
    expected = _quiet_fit(make(), X, target, groups).predict(X)
    got = _quiet_fit(make(), X * scale, target, groups).predict(X * scale)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.hostile("correct")
def test_midpoint_candidates_separate_every_two_distinct_floats() -> None:
    rng = np.random.default_rng(0)
    base = np.concatenate(
        [
            rng.normal(size=20) * 1e-9,
            np.arange(12) * SUBNORMAL,
            rng.normal(size=20) * 1e300,
            [1.0, np.nextafter(1.0, 2.0), -np.finfo(float).max, np.finfo(float).max],
        ]
    )
    values = np.unique(base)
    cuts = midpoint_candidates([values[::2], values[1::2]])
    assert cuts.shape[0] == values.shape[0] - 1
    assert np.all(values[:-1] <= cuts)
    assert np.all(cuts < values[1:])  # x <= cut sends a left, b right


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("scale", [SUBNORMAL, 2.0**-1040, 2.0**1016], ids=str)
def test_the_quantile_mixture_routes_scaled_data_as_unscaled(scale: float) -> None:
    rng = np.random.default_rng(1)
    clients = [np.round(rng.normal(loc, 9.0, size=300)) for loc in (-10, 0, 25)]
    sketches = [quantile_sketch(c, q=16) for c in clients]
    scaled = [quantile_sketch(c * scale, q=16) for c in clients]
    pooled = np.concatenate(clients)
    expected = digitize(pooled, quantile_candidates(sketches, 16))
    got = digitize(pooled * scale, quantile_candidates(scaled, 16))
    np.testing.assert_array_equal(got, expected)


@pytest.mark.hostile("correct")
def test_federated_id3_learns_subnormal_data_as_at_scale_one() -> None:
    X, y, groups = _integer_data()
    make = lambda: FederatedID3Classifier(max_depth=3, random_state=0)  # noqa: E731
    expected = _quiet_fit(make(), X, y, groups).predict(X)
    got = _quiet_fit(make(), X * SUBNORMAL, y, groups).predict(X * SUBNORMAL)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.hostile("documented")
def test_exact_candidates_leave_gaps_below_1e_7_unsplit_as_scikit_learn() -> None:
    X, y, groups = _integer_data()
    tiny = X * 2.0**-30
    ours = _quiet_fit(
        FedForestClassifier(**EXACT_TREE, candidates="exact"), tiny, y, groups
    )
    sklearn = DecisionTreeClassifier(random_state=0).fit(tiny, y)
    np.testing.assert_array_equal(ours.predict(tiny), sklearn.predict(tiny))
    assert exact_candidates([np.unique(tiny[:, 0])]).size == 0


@pytest.mark.hostile("documented")
def test_local_forests_read_x_as_float32_as_scikit_learn_does() -> None:
    X, y, groups = _integer_data()
    tiny = X * SUBNORMAL  # float32 reads these as 0
    rounded = tiny.astype(np.float32).astype(np.float64)
    make = lambda: LocalModelsClassifier(n_estimators=3, random_state=0)  # noqa: E731
    got = _quiet_fit(make(), tiny, y, groups).predict(tiny, client=groups)
    expected = _quiet_fit(make(), rounded, y, groups).predict(rounded, client=groups)
    np.testing.assert_array_equal(got, expected)


# -- 2. the smallest epsilon ------------------------------------------------------------
TOO_SMALL = r"'epsilon' parameter of .*too small.*>= 1e-100"


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("mechanism", [Laplace, ClippedLaplace])
def test_a_mechanism_refuses_an_epsilon_below_1e_100(mechanism: Any) -> None:
    with pytest.raises(ValidationError, match=TOO_SMALL):
        mechanism(epsilon=1e-320)
    assert math.isfinite(mechanism(epsilon=1e-100).scale)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    "make",
    [
        lambda: FederatedID3Classifier(epsilon=1e-320),
        lambda: FedGAClassifier(epsilon=1e-320, population_size=4, n_generations=1),
        lambda: DPForestClassifier(epsilon=1e-320, feature_ranges=[(-30, 30)] * 3),
    ],
    ids=["FederatedID3Classifier", "FedGAClassifier", "DPForestClassifier"],
)
def test_estimators_refuse_an_epsilon_below_1e_100(make: Any) -> None:
    X, y, groups = _integer_data()
    with pytest.raises(ValidationError, match=TOO_SMALL):
        _quiet_fit(make(), X, y, groups)


@pytest.mark.hostile("clear_error")
def test_federated_id3_refuses_a_plan_whose_tables_get_less_than_1e_100() -> None:
    X, y, groups = _integer_data()
    model = FederatedID3Classifier(epsilon=1e-99, max_depth=4)  # / (4 levels * 3)
    with pytest.raises(ValidationError, match=r"'epsilon' .*too small for the plan"):
        _quiet_fit(model, X, y, groups)


# -- 3. damaged requests --------------------------------------------------------------
def _serve(run: str, kind: str, **fields: Any) -> Envelope:
    """Serve the captured ``kind`` request of ``run`` with ``fields`` replaced."""
    captured = _captured(run)[kind]
    envelope = captured.envelope
    bad = dataclasses.replace(envelope.payload, **fields)
    data = encode(Envelope("request", envelope.round, envelope.client, kind, bad))
    state = ClientState()
    state.kept.update(captured.kept)
    return decode(serve(data, captured.site, state=state))


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("run", "kind", "fields", "match"),
    [
        ("fedavg", "fedavg.train", {"learning_rate": math.nan},
         r"field 'learning_rate' must be finite"),
        ("fedavg", "fedavg.train", {"learning_rate": -0.1},
         r"field 'learning_rate' must be > 0"),
        ("fedavg", "fedavg.train", {"scale": "zeros"}, r"field 'scale' must be > 0"),
        ("fedavg", "fedavg.train", {"theta": "nan"}, r"field 'theta' must be finite"),
        ("local", "local.forest", {"params": "not json"},
         r"field 'params' must be the JSON text of an object"),
        ("local", "local.forest", {"params": "[1, 2]"},
         r"field 'params' must be the JSON text of an object"),
        ("fedforest-hist", "fedforest.histogram", {"pair_feature": "99"},
         r"field 'pair_feature' must be feature indices in \[0, 3\)"),
        ("fedga", "fedga.init", {"epsilon": 1e-320}, TOO_SMALL),
        ("fedavg", "federation.schema", {"task": "bogus"},
         r"field 'task' must be one of \('classification', 'regression'"),
    ],
    ids=[
        "fedavg.train-learning_rate-nan",
        "fedavg.train-learning_rate-negative",
        "fedavg.train-scale-zeros",
        "fedavg.train-theta-nan",
        "local.forest-params-not-json",
        "local.forest-params-a-list",
        "fedforest.histogram-pair_feature-99",
        "fedga.init-epsilon-1e-320",
        "federation.schema-task-bogus",
    ],
)  # fmt: skip
def test_a_request_with_an_unusable_value_is_refused_naming_the_field(
    run: str, kind: str, fields: dict[str, Any], match: str
) -> None:
    payload = _captured(run)[kind].envelope.payload
    damage = {
        "zeros": lambda old: np.zeros_like(old),
        "nan": lambda old: np.full_like(old, np.nan),
        "99": lambda old: np.where(old >= 0, 99, old),
    }
    fields = {
        name: damage[value](getattr(payload, name))
        if isinstance(value, str) and value in damage
        else value
        for name, value in fields.items()
    }
    answer = _serve(run, kind, **fields)
    assert answer.type == "error"
    assert re.search(match, str(answer.error)), answer.error


# -- 4. int labels that tie as float64 --------------------------------------------------
@pytest.mark.hostile("correct")
def test_int_labels_beyond_float64_precision_are_ordered_as_ints() -> None:
    X, _, groups = _integer_data()
    codes = np.digitize(X[:, 0], np.quantile(X[:, 0], np.linspace(0, 1, 9)[1:-1]))
    big = np.int64(2**60) + codes  # 2**60 + k: one value as float64
    model = _quiet_fit(FedForestClassifier(**EXACT_TREE), X, big, groups)
    reference = _quiet_fit(FedForestClassifier(**EXACT_TREE), X, codes, groups)
    np.testing.assert_array_equal(model.classes_, np.unique(big))
    np.testing.assert_array_equal(model.predict_proba(X), reference.predict_proba(X))


@pytest.mark.hostile("correct")
def test_agreed_classes_do_not_depend_on_the_order_clients_report_them() -> None:
    labels = [str(2**60 + k) for k in range(16)]
    X = np.zeros((16, 1))
    orders = []
    for shift in (0, 5, 11):
        rotated = labels[shift:] + labels[:shift]
        federation = Federation.from_groups(
            X, np.asarray([int(v) for v in rotated]), np.repeat(["a", "b"], 8)
        )
        model = FederatedID3Classifier(max_depth=1, bin_edges={"x0": [0.5]})
        orders.append(model.fit_federation(federation).classes_.tolist())
    assert orders[0] == sorted(int(v) for v in labels)
    assert orders[1] == orders[0] == orders[2]


# -- 5. FedAvg with one class ---------------------------------------------------------
@pytest.mark.hostile("correct")
def test_fedavg_fitted_on_one_class_predicts_it_as_scikit_learn_does() -> None:
    X, _, groups = _integer_data()
    y = np.full(X.shape[0], 4)
    model = _quiet_fit(FedAvgClassifier(n_rounds=2, random_state=0), X, y, groups)
    reference = DecisionTreeClassifier().fit(X, y)
    np.testing.assert_array_equal(model.predict(X), reference.predict(X))
    np.testing.assert_array_equal(model.predict_proba(X), reference.predict_proba(X))


# -- 6. repeated column names ---------------------------------------------------------
@pytest.mark.hostile("clear_error")
def test_repeated_column_names_are_named() -> None:
    # 1 and "1" are one name once read as text.
    frame = pd.DataFrame(np.zeros((4, 5)), columns=["u", "v", "u", "1", 1])
    with pytest.raises(
        ValidationError, match=r"more than one column is named 'u' or '1'"
    ):
        Federation.from_clients({"a": (frame, np.zeros(4))})
