"""FedGBDT with XGBoost's parameters, each against its XGBoost meaning.

``scale_pos_weight`` and every supported ``objective`` grow XGBoost's model on
the pooled codes (``tree_method="exact"``, as the exactness tests of
test_fedgbdt.py); ``n_jobs`` does not change the model; ``eval_metric`` and
``evals_result()`` are XGBoost's values in XGBoost's shape; ``save_model``
writes a file XGBoost's Booster reads and ``load_model`` reads back; the
refusals name the parameter and what to use.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fedtrees import FedGBDTClassifier, FedGBDTRegressor
from fedtrees.audit import audit_row_scaling, find_client_values, recording
from fedtrees.exceptions import ValidationError
from fedtrees.federation import ClientState, Envelope, Federation, decode, encode, serve
from tests.algorithms.test_fedgbdt import _codes, _integers, _skewed
from tests.audit_helpers import estimator_fit, leveled

PARAMS: dict[str, Any] = {
    "n_estimators": 10,
    "max_depth": 4,
    "learning_rate": 0.3,
    "reg_lambda": 1.0,
    "min_child_weight": 1.0,
}
XGB_PARAMS = {
    "tree_method": "exact",
    "max_depth": 4,
    "eta": 0.3,
    "lambda": 1.0,
    "min_child_weight": 1.0,
}


@pytest.fixture(scope="module")
def xgb() -> Any:
    return pytest.importorskip("xgboost")


def _imbalanced(n: int = 1500, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """The exact grid's rows with about 15 % positive labels."""
    X, _, score = _integers(n, seed=seed)
    return X, (score > np.quantile(score, 0.85)).astype(int)


def _theirs(xgb: Any, codes: np.ndarray, y: np.ndarray, **params: Any) -> Any:
    """XGBoost's native training on the pooled codes, ``PARAMS``' trees."""
    return xgb.train(
        {**XGB_PARAMS, **params}, xgb.DMatrix(codes, label=y), num_boost_round=10
    )


def _agree(got: np.ndarray, want: np.ndarray) -> None:
    """Equal to 1e-6 on at least 99.5 % of rows (ties may differ), as XGBoost's."""
    close = np.abs(got - want) <= 1e-6 * np.maximum(1.0, np.abs(want))
    assert close.mean() >= 0.995, close.mean()


# -- scale_pos_weight ------------------------------------------------------------
@pytest.mark.parametrize("weight", [4.0, 0.37])  # 0.5: exact ties of gain
def test_scale_pos_weight_equals_xgboosts_on_the_pooled_codes(xgb, weight) -> None:
    X, y = _imbalanced()
    ours = FedGBDTClassifier(
        scale_pos_weight=weight, base_score=0.5, random_state=0, **PARAMS
    ).fit(X, y, groups=_skewed(X))
    codes = _codes(ours, X)
    theirs = _theirs(
        xgb, codes, y, objective="binary:logistic", base_score=0.5,
        scale_pos_weight=weight,
    )  # fmt: skip
    got = ours.predict_proba(X)[:, 1]
    _agree(got, theirs.predict(xgb.DMatrix(codes)))
    plain = FedGBDTClassifier(base_score=0.5, random_state=0, **PARAMS)
    plain.fit(X, y, groups=_skewed(X))
    assert np.abs(plain.predict_proba(X)[:, 1] - got).max() > 0.05  # it matters


def test_scale_pos_weight_prior_counts_positive_rows_that_many_times() -> None:
    X, y = _imbalanced(600)
    model = FedGBDTClassifier(n_estimators=1, max_depth=1, scale_pos_weight=3.0)
    model.fit(X, y, groups=np.arange(600) % 4)
    positive = 3.0 * y.sum()
    share = positive / (positive + (y == 0).sum())
    assert model.base_margin_[0] == pytest.approx(np.log(share / (1 - share)), 1e-12)


def test_scale_pos_weight_is_the_same_on_every_protocol_and_under_secure_sums() -> None:
    X, y = _imbalanced(600)
    one = np.zeros(600, int)
    fitted = {
        protocol: FedGBDTClassifier(
            n_estimators=4, max_depth=3, scale_pos_weight=6.0, protocol=protocol,
            random_state=0,
        ).fit(X, y, groups=one)
        for protocol in ("histogram", "bagging", "cyclic")
    }  # fmt: skip
    raw = fitted["histogram"].decision_function(X)
    for model in fitted.values():  # one site: the same local boosting
        np.testing.assert_allclose(model.decision_function(X), raw, atol=1e-9)
    edges = {j: np.unique(X[:, j])[:-1] + 0.5 for j in range(X.shape[1])}
    sites = np.arange(600) % 3
    secure, plain = (
        FedGBDTClassifier(
            n_estimators=4, max_depth=3, scale_pos_weight=6.0, bin_edges=edges,
            secure_aggregation=masked, random_state=0,
        ).fit(X, y, groups=sites)
        for masked in (True, False)
    )  # fmt: skip
    np.testing.assert_allclose(
        secure.decision_function(X), plain.decision_function(X), atol=1e-7
    )


@pytest.mark.parametrize(
    ("make", "classes", "match"),
    [
        (FedGBDTRegressor, 0, "scale_pos_weight' parameter of FedGBDTRegressor"),
        (FedGBDTClassifier, 3, r"parameter of FedGBDTClassifier must be 1.0 for 3"),
    ],
)
def test_scale_pos_weight_is_refused_where_there_is_no_positive_class(
    make, classes, match
) -> None:
    X, y, score = _integers(200, classes=max(classes, 2))
    target = score if classes == 0 else y
    with pytest.raises(ValidationError, match=match):
        make(scale_pos_weight=3.0).fit(X, target, groups=np.arange(200) % 2)


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), 1e60, "3"])
def test_a_bad_scale_pos_weight_is_named(value) -> None:
    X, y, _ = _integers(100)
    with pytest.raises(ValidationError, match="'scale_pos_weight' parameter of"):
        FedGBDTClassifier(scale_pos_weight=value).fit(X, y, groups=np.arange(100) % 2)


def _first_level_request(model: Any, X: np.ndarray, y: np.ndarray) -> tuple[Any, ...]:
    """Fit keeping every message; the first level request, its site and state."""
    fed = Federation.from_groups(X, y, np.arange(len(y)) % 2)
    with recording() as ledgers:
        model.fit_federation(fed)
    (ledger,) = ledgers
    sites = fed.on_each_site(lambda data: data)
    states = {c: ClientState() for c in sites}
    for message in ledger.captured:
        if message.direction != "down":
            continue
        envelope = decode(message.data)
        if envelope.kind == "fedgbdt.level":
            return envelope, sites[message.client], states[message.client], ledger
        serve(message.data, sites[message.client], state=states[message.client])
    raise AssertionError("no level request")


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("name", "value"),
    [("scale_pos_weight", -2.0), ("scale_pos_weight", float("nan")),
     ("metric", "auc"), ("metric", "rmse")],
)  # fmt: skip
def test_a_site_refuses_a_request_with_a_bad_new_field(name, value) -> None:
    X, y = _imbalanced(300)
    model = FedGBDTClassifier(n_estimators=2, max_depth=2, scale_pos_weight=2.0)
    envelope, site, state, _ = _first_level_request(model, X, y)
    assert envelope.payload.scale_pos_weight == 2.0
    bad = dataclasses.replace(envelope.payload, **{name: value})
    data = encode(
        Envelope("request", envelope.round, envelope.client, envelope.kind, bad)
    )
    answer = decode(serve(data, site, state=state))
    assert answer.type == "error"
    assert f"field {name!r}" in answer.error, answer.error


def test_the_audit_runs_on_the_new_request_fields() -> None:
    X, y, groups = leveled()
    fit = estimator_fit(
        lambda: FedGBDTClassifier(
            n_estimators=3, max_depth=3, scale_pos_weight=2.5, eval_metric="error",
            random_state=0,
        )
    )  # fmt: skip
    report = audit_row_scaling(fit, X, y, groups)
    assert report.messages > 0
    assert report.per_row_by_design == ()
    fed = Federation.from_groups(X, y, groups)
    ledger = fit(fed)
    levels = [
        decode(m.data).payload
        for m in ledger.captured
        if m.direction == "down" and decode(m.data).kind == "fedgbdt.level"
    ]
    assert levels
    assert all(r.scale_pos_weight == 2.5 and r.metric == "error" for r in levels)
    assert find_client_values(ledger, fed).messages == len(ledger.captured)


# -- objective --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("objective", "classes"),
    [("binary:logistic", 2), ("multi:softprob", 3), ("multi:softprob", 2),
     ("reg:squarederror", 0)],
)  # fmt: skip
def test_each_objective_equals_xgboosts_on_the_pooled_codes(
    xgb, objective, classes
) -> None:
    X, y, score = _integers(1500, seed=3, classes=max(classes, 2))
    regression = classes == 0
    make = FedGBDTRegressor if regression else FedGBDTClassifier
    base = 0.5 if objective == "binary:logistic" else 0.0
    ours = make(objective=objective, base_score=base, random_state=0, **PARAMS)
    ours.fit(X, score if regression else y, groups=_skewed(X))
    codes = _codes(ours, X)
    extra = {"num_class": classes} if objective.startswith("multi") else {}
    theirs = _theirs(
        xgb, codes, score if regression else y, objective=objective,
        base_score=base, **extra,
    )  # fmt: skip
    want = theirs.predict(xgb.DMatrix(codes))
    if regression:
        _agree(ours.predict(X), want)
    elif classes == 2 and objective == "binary:logistic":
        _agree(ours.predict_proba(X)[:, 1], want)
    else:
        assert len(ours.trees_[0]) == classes  # one tree per class
        _agree(ours.predict_proba(X).ravel(), want.ravel())


def test_the_default_objective_follows_the_classes_as_xgbclassifiers() -> None:
    X, y, _ = _integers(300, classes=3)
    model = FedGBDTClassifier(n_estimators=2, max_depth=2).fit(
        X, y, groups=np.arange(300) % 2
    )
    assert model.config_.objective == "softmax"
    assert json_objective(model) == "multi:softprob"


def json_objective(model: Any) -> str:
    import json

    return json.loads(model.to_xgboost(as_json=True))["learner"]["objective"]["name"]


@pytest.mark.parametrize(
    ("make", "objective", "hint"),
    [
        (FedGBDTRegressor, "reg:absoluteerror", r"\['reg:squarederror'\]"),
        (FedGBDTRegressor, "reg:pseudohubererror", "grows the trees of these"),
        (FedGBDTRegressor, "binary:logistic", "is FedGBDTClassifier's"),
        (FedGBDTClassifier, "reg:squarederror", "is FedGBDTRegressor's"),
        (FedGBDTClassifier, "multi:softmax", "use 'multi:softprob'"),
        (FedGBDTClassifier, "binary:hinge", r"\['binary:logistic', 'multi:softprob'"),
        (FedGBDTClassifier, len, "a callable objective is not supported"),
    ],
)
def test_an_unsupported_objective_is_refused_with_the_supported_ones(
    make, objective, hint
) -> None:
    X, y, score = _integers(100)
    target = score if make is FedGBDTRegressor else y
    owner = make.__name__
    with pytest.raises(
        ValidationError, match=f"'objective' parameter of {owner}.*{hint}"
    ):
        make(objective=objective).fit(X, target, groups=np.arange(100) % 2)


def test_binary_logistic_is_refused_for_three_classes() -> None:
    X, y, _ = _integers(100, classes=3)
    with pytest.raises(ValidationError, match="'multi:softprob' or None for 3 classes"):
        FedGBDTClassifier(objective="binary:logistic").fit(
            X, y, groups=np.arange(100) % 2
        )


# -- n_jobs ---------------------------------------------------------------------------
def test_n_jobs_does_not_change_the_model() -> None:
    X, y = _imbalanced(900)
    sites = _skewed(X)
    raws = [
        FedGBDTClassifier(n_jobs=jobs, random_state=0, **PARAMS)
        .fit(X, y, groups=sites)
        .decision_function(X)
        for jobs in (None, 1, 2, -1)
    ]
    for raw in raws[1:]:
        np.testing.assert_array_equal(raw, raws[0])


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"n_jobs": 0}, "'n_jobs' parameter of FedGBDTClassifier"),
        ({"n_jobs": 1.5}, "'n_jobs' parameter of FedGBDTClassifier"),
        ({"n_jobs": "2"}, "'n_jobs' parameter of FedGBDTClassifier"),
        ({"n_jobs": 2, "workers": 2}, "both set the threads of the simulated sites"),
    ],
)
def test_a_bad_n_jobs_is_named(params, match) -> None:
    X, y, _ = _integers(100)
    with pytest.raises(ValidationError, match=match):
        FedGBDTClassifier(**params).fit(X, y, groups=np.arange(100) % 2)


# -- eval_set, eval_metric, evals_result() --------------------------------------------
def test_eval_set_is_refused_saying_what_to_use() -> None:
    X, y, _ = _integers(100)
    with pytest.raises(
        ValidationError,
        match=r"FedGBDTClassifier.fit: eval_set .*early_stopping_rounds=N, "
        r"validation_fraction",
    ):
        FedGBDTClassifier().fit(X, y, groups=np.arange(100) % 2, eval_set=[(X, y)])


@pytest.mark.parametrize("metric", ["logloss", "error"])
def test_evals_result_is_xgboosts_in_its_shape(xgb, metric) -> None:
    X, y = _imbalanced()
    ours = FedGBDTClassifier(
        base_score=0.5, eval_metric=[metric], random_state=0, **PARAMS
    ).fit(X, y, groups=_skewed(X))
    codes = _codes(ours, X)
    theirs = xgb.XGBClassifier(
        tree_method="exact", base_score=0.5, eval_metric=metric, **PARAMS
    ).fit(codes, y, eval_set=[(codes, y)], verbose=False)
    got, want = ours.evals_result(), theirs.evals_result()
    assert got.keys() == want.keys() == {"validation_0"}
    assert got["validation_0"].keys() == want["validation_0"].keys() == {metric}
    np.testing.assert_allclose(
        got["validation_0"][metric], want["validation_0"][metric], rtol=1e-5,
        atol=1e-6,
    )  # fmt: skip


def test_error_metric_is_the_pooled_error_and_stops_the_fit() -> None:
    X, y, _ = _integers(1200, seed=4, classes=3)
    model = FedGBDTClassifier(
        n_estimators=60, max_depth=4, learning_rate=0.5, early_stopping_rounds=3,
        eval_metric="merror", random_state=0,
    ).fit(X, y, groups=np.arange(1200) % 3)  # fmt: skip
    result = model.evals_result()
    assert set(result) == {"validation_0", "validation_1"}
    train = result["validation_0"]["merror"]
    staged = [np.mean(p != y) for p in model.staged_predict(X)]
    held = model.evals_result_["validation_merror"]
    assert result["validation_1"]["merror"] == held
    assert int(np.argmin(held)) == model.best_iteration == model.best_iteration_
    # the training error over the training rows only (the held-out ones left out)
    assert train[0] == pytest.approx(staged[0], abs=0.05)
    assert all(0.0 <= v <= 1.0 for v in train)


@pytest.mark.parametrize(
    ("make", "classes", "metric", "match"),
    [
        (FedGBDTClassifier, 2, "auc", r"\['logloss', 'error', 'mlogloss', 'merror'\]"),
        (FedGBDTClassifier, 3, "error", r"one of \['mlogloss', 'merror'\] for 3"),
        (FedGBDTRegressor, 0, "mae", r"\['rmse'\]"),
        (FedGBDTClassifier, 2, ["logloss", "error"], "a list of one"),
    ],
)
def test_a_metric_the_sums_cannot_give_is_refused(make, classes, metric, match) -> None:
    X, y, score = _integers(100, classes=max(classes, 2))
    target = score if classes == 0 else y
    with pytest.raises(ValidationError, match=f"'eval_metric' parameter.*{match}"):
        make(eval_metric=metric).fit(X, target, groups=np.arange(100) % 2)


# -- get_booster, save_model, load_model ------------------------------------------------
def _fitted(case: str) -> tuple[Any, np.ndarray]:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    signal = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1])
    params = {"n_estimators": 6, "max_depth": 3, "random_state": 0}
    if case == "regression":
        return FedGBDTRegressor(**params).fit(
            X, 3 * signal + 1, groups=np.arange(400) % 3
        ), X
    labels = np.array(["no", "yes", "maybe"])
    cuts = [0.0] if case == "binary" else [-0.5, 0.5]
    y = labels[np.digitize(signal + 0.3 * rng.normal(size=400), cuts)]
    model = FedGBDTClassifier(
        scale_pos_weight=2.0 if case == "binary" else 1.0, **params
    )
    return model.fit(X, y, groups=np.arange(400) % 3), X


@pytest.mark.parametrize("case", ["binary", "multiclass", "regression"])
def test_save_model_is_read_by_xgboost_and_by_load_model(xgb, case, tmp_path) -> None:
    model, X = _fitted(case)
    path = tmp_path / "model.json"
    model.save_model(path)
    booster = xgb.Booster()
    booster.load_model(str(path))
    margins = booster.predict(xgb.DMatrix(X), output_margin=True)
    raw = model._raw(X)
    np.testing.assert_allclose(margins.reshape(raw.shape), raw, rtol=1e-5, atol=1e-5)
    loaded = type(model)().load_model(path)  # the Booster's model, in float64
    np.testing.assert_allclose(
        loaded._raw(X).reshape(margins.shape), margins, rtol=1e-5, atol=1e-5
    )
    if case == "regression":
        np.testing.assert_allclose(loaded.predict(X), model.predict(X), atol=1e-5)
        return
    assert list(loaded.classes_) == list(model.classes_)  # the labels come back
    assert np.array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_allclose(
        loaded.predict_proba(X), model.predict_proba(X), atol=1e-6
    )
    theirs = xgb.XGBClassifier()
    theirs.load_model(str(path))  # XGBoost's own estimator reads it too
    np.testing.assert_allclose(
        theirs.predict_proba(X), model.predict_proba(X), atol=1e-6
    )


def test_load_model_reads_xgboosts_own_model(xgb, tmp_path) -> None:
    X, y = _imbalanced(600)
    X = X.astype(np.float32)
    theirs = xgb.XGBClassifier(
        n_estimators=8, max_depth=3, scale_pos_weight=3.0, tree_method="hist"
    ).fit(X, y)
    path = tmp_path / "xgb.json"
    theirs.save_model(str(path))
    ours = FedGBDTClassifier().load_model(path)
    np.testing.assert_allclose(
        ours.predict_proba(X), theirs.predict_proba(X), rtol=0, atol=1e-6
    )
    assert list(ours.classes_) == [0, 1]
    assert ours.feature_importances_.sum() == pytest.approx(1.0)
    assert ours.best_iteration == 7


def test_get_booster_is_the_exported_booster(xgb) -> None:
    model, X = _fitted("binary")
    booster = model.get_booster()
    assert isinstance(booster, xgb.Booster)
    np.testing.assert_allclose(
        booster.predict(xgb.DMatrix(X)), model.predict_proba(X)[:, 1], atol=1e-6
    )
    scale = booster.save_config()
    assert '"scale_pos_weight":"2"' in scale.replace(" ", "")


def test_save_and_load_refuse_what_they_cannot_hold(tmp_path: Path) -> None:
    model, _ = _fitted("regression")
    with pytest.raises(
        ValidationError, match=r"FedGBDTRegressor.save_model: .*'\.json'"
    ):
        model.save_model(tmp_path / "model.ubj")
    model.save_model(tmp_path / "model.json")
    with pytest.raises(
        ValidationError,
        match=r"FedGBDTClassifier.load_model: .*'reg:squarederror'.*FedGBDTRegressor",
    ):
        FedGBDTClassifier().load_model(tmp_path / "model.json")
    (tmp_path / "bad.json").write_text('{"learner": {}}')
    with pytest.raises(
        ValidationError, match=r"FedGBDTRegressor\.load_model: the model"
    ):
        FedGBDTRegressor().load_model(tmp_path / "bad.json")


# -- an unknown keyword names the public class ---------------------------------------
@pytest.mark.parametrize("make", [FedGBDTClassifier, FedGBDTRegressor])
def test_an_unknown_keyword_names_the_public_class(make) -> None:
    with pytest.raises(
        TypeError,
        match=f"^{make.__name__} got an unexpected keyword argument 'n_job'; "
        "did you mean 'n_jobs'",
    ) as caught:
        make(n_job=2)
    assert "_FedGBDT" not in str(caught.value)
