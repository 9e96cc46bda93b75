"""FedGBDT: the pooled model, whatever the partition; XGBoost's on the codes.

Exactness (an exact grid: integer features with few values): the predictions
do not depend on how rows are split over clients, and equal XGBoost's
``tree_method="exact"`` on the pooled codes. Then the protocol: rounds, state
dropping, dropouts, missing values, early stopping, bad parameters and hostile
replies, and the message audit.
"""

from __future__ import annotations

import dataclasses
import json
import pickle

import numpy as np
import pytest
from sklearn.utils.estimator_checks import check_estimator

from fedtrees import FedGBDTClassifier, FedGBDTRegressor
from fedtrees.algorithms.fedgbdt._decisions import (
    KIND_LEAF,
    KIND_NUMERIC,
    DecisionLog,
    Decisions,
    route,
)
from fedtrees.algorithms.fedgbdt._payloads import LevelReply, LocalReply
from fedtrees.audit import audit_row_scaling, find_client_values, recording
from fedtrees.exceptions import (
    ClientDropoutWarning,
    RemoteProtocolError,
    ValidationError,
)
from fedtrees.federation import Fault, Federation, Resync, decode
from fedtrees.tree import Missing
from tests.audit_helpers import estimator_fit, leveled


def _integers(n: int = 800, seed: int = 0, classes: int = 2) -> tuple[np.ndarray, ...]:
    """Integer features with few values (an exact grid) and a noisy label."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, k, n) for k in (30, 12, 5, 40, 3)]).astype(
        float
    )
    score = X[:, 0] / 10 - X[:, 1] / 4 + (X[:, 2] > 2) + rng.normal(scale=0.8, size=n)
    if classes == 2:
        y = (score > np.median(score)).astype(int)
    else:
        y = np.digitize(score, np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1]))
    return X, y, score


def _skewed(X: np.ndarray, k: int = 7) -> np.ndarray:
    """Clients by ranges of feature 0 (covariate skew), of unequal sizes."""
    cuts = np.quantile(X[:, 0], np.linspace(0, 1, k + 1)[1:-1] ** 1.5)
    return np.digitize(X[:, 0], cuts)


def _fit(model, X, y, groups=None):
    groups = np.zeros(X.shape[0], int) if groups is None else groups
    return model.fit(X, y, groups=groups)


PARAMS = {"n_estimators": 12, "max_depth": 4, "learning_rate": 0.3, "random_state": 0}


@pytest.mark.parametrize("make", [FedGBDTClassifier, FedGBDTRegressor])
def test_predictions_do_not_depend_on_the_partition(make) -> None:
    X, y, score = _integers()
    target = score if make is FedGBDTRegressor else y
    alone = _fit(make(**PARAMS), X, target)
    split = make(**PARAMS).fit(X, target, groups=_skewed(X))
    assert len(split.clients_) == 7
    raw_a = alone._raw(X)
    raw_b = split._raw(X)
    np.testing.assert_allclose(raw_a, raw_b, rtol=0, atol=1e-9)


def test_multiclass_does_not_depend_on_the_partition() -> None:
    X, y, _ = _integers(classes=3)
    alone = _fit(FedGBDTClassifier(**PARAMS), X, y)
    split = FedGBDTClassifier(**PARAMS).fit(X, y, groups=_skewed(X))
    assert alone.config_.objective == "softmax"
    assert len(alone.trees_[0]) == 3
    np.testing.assert_allclose(alone._raw(X), split._raw(X), rtol=0, atol=1e-9)


def _codes(model, X: np.ndarray) -> np.ndarray:
    from fedtrees.algorithms.histogram import bin_codes

    return bin_codes(X, model.grid_).astype(float)


@pytest.mark.parametrize("regression", [False, True])
def test_equals_xgboost_exact_on_the_pooled_codes(regression: bool) -> None:
    xgboost = pytest.importorskip("xgboost")
    X, y, score = _integers(1500, seed=3)
    params = {"n_estimators": 10, "max_depth": 4, "learning_rate": 0.3,
              "reg_lambda": 1.0, "min_child_weight": 1.0}  # fmt: skip
    if regression:
        ours = FedGBDTRegressor(base_score=0.0, random_state=0, **params).fit(
            X, score, groups=_skewed(X)
        )
        theirs = xgboost.XGBRegressor(tree_method="exact", base_score=0.0, **params)
        theirs.fit(_codes(ours, X), score)
        got, want = ours.predict(X), theirs.predict(_codes(ours, X))
    else:
        ours = FedGBDTClassifier(base_score=0.5, random_state=0, **params).fit(
            X, y, groups=_skewed(X)
        )
        theirs = xgboost.XGBClassifier(tree_method="exact", base_score=0.5, **params)
        theirs.fit(_codes(ours, X), y)
        got = ours.predict_proba(X)[:, 1]
        want = theirs.predict_proba(_codes(ours, X))[:, 1]
    close = np.abs(got - want) <= 1e-6 * np.maximum(1.0, np.abs(want))
    assert close.mean() >= 0.995, close.mean()


def test_rounds_are_two_plus_iterations_times_depth() -> None:
    X, y, _ = _integers(400)
    model = FedGBDTClassifier(n_estimators=5, max_depth=3, random_state=0)
    model.fit(X, y, groups=np.arange(400) % 3)
    assert model.communication_.rounds <= 1 + 2 + 5 * 3  # the agreement too
    kinds = set(model.communication_.to_frame()["kind"])
    assert {"fedgbdt.start", "fedgbdt.level"} <= kinds


def test_subtraction_grows_the_same_model_with_fewer_bytes() -> None:
    X, y, _ = _integers(900)
    groups = np.arange(900) % 3
    full = FedGBDTClassifier(**PARAMS).fit(X, y, groups=groups)
    plain = FedGBDTClassifier(**PARAMS)
    config = plain._config
    plain._config = lambda: dataclasses.replace(config(), subtract=False)
    plain.fit(X, y, groups=groups)
    np.testing.assert_allclose(full._raw(X), plain._raw(X), rtol=0, atol=1e-9)
    assert full.communication_.bytes_up < plain.communication_.bytes_up


# -- missing values -------------------------------------------------------------------
def test_missing_direction_by_hand() -> None:
    # x < 10: class 0; x >= 10: class 1; NaN rows are class 1: NaN goes right
    # with the x >= 10 rows, and the tree stores it.
    x = np.r_[np.arange(20.0), np.full(10, np.nan)]
    y = np.r_[np.zeros(10), np.ones(10), np.ones(10)].astype(int)
    model = _fit(FedGBDTClassifier(n_estimators=1, max_depth=1, min_child_weight=0,
                                   random_state=0), x[:, None], y)  # fmt: skip
    tree = model.trees_[0][0]
    assert tree.threshold[0] == pytest.approx(9.5)
    assert tree.missing[0] == Missing.RIGHT
    assert model.predict(np.array([[np.nan]]))[0] == 1
    flipped = _fit(FedGBDTClassifier(n_estimators=1, max_depth=1, min_child_weight=0,
                                     random_state=0), x[:, None], 1 - y)  # fmt: skip
    assert flipped.trees_[0][0].missing[0] == Missing.RIGHT
    y_left = np.r_[np.zeros(10), np.ones(10), np.zeros(10)].astype(int)
    left = _fit(FedGBDTClassifier(n_estimators=1, max_depth=1, min_child_weight=0,
                                  random_state=0), x[:, None], y_left)  # fmt: skip
    assert left.trees_[0][0].missing[0] == Missing.LEFT


def test_missing_values_accuracy_is_xgboosts() -> None:
    xgboost = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X, y, _ = _integers(3000, seed=5)
    X = X + rng.random(X.shape)  # not a grid: binned
    holes = rng.random(X.shape) < 0.2
    holes[:, 2:] = False
    X[holes] = np.nan
    train, test = slice(0, 2400), slice(2400, None)
    ours = FedGBDTClassifier(n_estimators=40, max_depth=4, learning_rate=0.1,
                             random_state=0).fit(X[train], y[train],
                                                 groups=np.arange(2400) % 4)  # fmt: skip
    theirs = xgboost.XGBClassifier(n_estimators=40, max_depth=4, learning_rate=0.1)
    theirs.fit(X[train], y[train])
    a = (ours.predict(X[test]) == y[test]).mean()
    b = (theirs.predict(X[test]) == y[test]).mean()
    assert a >= b - 0.01, (a, b)


def test_model_survives_pickle_and_tree_json() -> None:
    X, y, _ = _integers(500)
    X[::7, 1] = np.nan
    model = FedGBDTClassifier(n_estimators=6, max_depth=3, random_state=0)
    model.fit(X, y, groups=np.arange(500) % 2)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict_proba(X), model.predict_proba(X))
    from fedtrees.tree import Tree

    tree = model.trees_[2][0]
    assert Tree.from_json(json.dumps(tree.to_dict())) == tree


# -- the protocol ---------------------------------------------------------------------
def _sites(n: int = 600) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X, y, _ = _integers(n, seed=9)
    return X, y, np.array(["a", "b", "c"])[np.arange(n) % 3]


def _run(faults=(), **params):
    X, y, groups = _sites()
    fed = Federation.from_groups(X, y, groups, faults=tuple(faults))
    model = FedGBDTClassifier(**{**PARAMS, **params})
    with recording() as ledgers:
        model.fit_federation(fed)
    (ledger,) = ledgers
    return model, ledger, X


def test_dropping_client_state_gives_the_same_model() -> None:
    reference, clean, X = _run()
    rng = np.random.default_rng(2)
    faults = [
        Fault(str(c), "forget", round=int(r))
        for c, r in zip(
            rng.choice(["a", "b", "c"], 5),
            rng.integers(2, clean.rounds, 5),
            strict=True,
        )
    ]
    model, ledger, _ = _run(faults)
    np.testing.assert_array_equal(model._raw(X), reference._raw(X))
    resyncs = sum(
        isinstance(decode(m.data).payload, Resync)
        for m in ledger.captured
        if m.direction == "up"
    )
    assert resyncs == len({(f.round, f.client) for f in faults})
    assert ledger.rounds == clean.rounds


@pytest.mark.parametrize("round_", [3, 4, 9])
def test_a_dropout_continues_without_the_client(round_: int) -> None:
    X, y, _ = _sites()
    with pytest.warns(ClientDropoutWarning, match=f"round {round_}: Client 'c'"):
        model, _, _ = _run([Fault("c", "drop", round=round_)], on_dropout="continue")
    assert model.n_iter_ == PARAMS["n_estimators"]
    assert (model.predict(X) == y).mean() > 0.7


def test_early_stopping_keeps_the_best_iteration() -> None:
    X, y, _ = _integers(1200, seed=4)
    model = FedGBDTClassifier(n_estimators=200, max_depth=6, learning_rate=0.5,
                              early_stopping_rounds=3, random_state=0)  # fmt: skip
    model.fit(X, y, groups=np.arange(1200) % 3)
    valid = model.evals_result_["validation_logloss"]
    assert model.n_iter_ == model.best_iteration_ + 1 < 200
    assert len(valid) == model.n_iter_ + 3
    assert int(np.argmin(valid)) == model.best_iteration_


def test_evals_and_staged_predictions() -> None:
    X, _, score = _integers(600)
    model = FedGBDTRegressor(n_estimators=8, max_depth=3, random_state=0)
    model.fit(X, score, groups=np.arange(600) % 2)
    train = model.evals_result_["training_rmse"]
    assert len(train) == 8
    assert train[-1] < train[0]
    rmse = np.sqrt(np.mean((model.predict(X) - score) ** 2))
    assert rmse == pytest.approx(train[-1], rel=1e-9)
    staged = list(model.staged_predict(X))
    assert len(staged) == 8
    np.testing.assert_allclose(staged[-1], model.predict(X))
    assert model.feature_importances_.sum() == pytest.approx(1.0)
    assert np.argmax(model.feature_importances_) in (0, 1)


def test_the_audit_finds_no_row_level_array() -> None:
    X, y, groups = leveled()
    fit = estimator_fit(lambda: FedGBDTClassifier(n_estimators=3, max_depth=3,
                                                  random_state=0))  # fmt: skip
    report = audit_row_scaling(fit, X, y, groups)
    assert report.messages > 0
    assert report.per_row_by_design == ()
    fed = Federation.from_groups(X, y, groups)
    ledger = fit(fed)
    assert find_client_values(ledger, fed).messages == len(ledger.captured)


# -- bad input ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("learning_rate", float("nan")),
        ("learning_rate", -0.1),
        ("learning_rate", 0.0),
        ("reg_lambda", -1.0),
        ("min_child_weight", -1.0),
        ("n_estimators", 0),
        ("n_estimators", 10**6),
        ("n_estimators", np.int64(10**9)),
        ("max_depth", 0),
        ("max_depth", 40),
        ("gamma", float("inf")),
        ("subsample", 0.0),
        ("max_bins", 300),
        ("validation_fraction", 1.0),
        ("protocol", "secure"),
    ],
)
def test_bad_parameters_are_named(param, value) -> None:
    X, y, _ = _integers(100)
    with pytest.raises(ValidationError, match=f"'{param}'"):
        FedGBDTClassifier(**{param: value}).fit(X, y, groups=np.arange(100) % 2)


def test_a_binary_base_score_must_be_a_probability() -> None:
    X, y, _ = _integers(100)
    with pytest.raises(ValidationError, match="'base_score'"):
        FedGBDTClassifier(base_score=2.0).fit(X, y, groups=np.arange(100) % 2)


def _mutated(change) -> Federation:
    X, y, _ = _integers(300)
    fault = Fault("1", "mutate", round=3, mutate=lambda r: change(r)
                  if isinstance(r, LevelReply) and r.bin_code.size else r)  # fmt: skip
    return Federation.from_groups(X, y, np.arange(300) % 3, faults=(fault,))


def _nan_gradient(r: LevelReply) -> LevelReply:
    stats = r.bin_stats.copy()
    stats[0, 0] = np.nan
    return dataclasses.replace(r, bin_stats=stats)


def _negative_hessian(r: LevelReply) -> LevelReply:
    stats = r.bin_stats.copy()
    stats[0, 1] = -1.0
    return dataclasses.replace(r, bin_stats=stats)


def _weights_off_the_node(r: LevelReply) -> LevelReply:
    stats = r.bin_stats.copy()
    stats[0, 2] += 1.0
    return dataclasses.replace(r, bin_stats=stats)


def _codes_beyond_the_grid(r: LevelReply) -> LevelReply:
    codes = r.bin_code.copy()
    codes[-1] = 254
    return dataclasses.replace(r, bin_code=codes)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("change", "field"),
    [
        (_nan_gradient, "bin_stats"),
        (_negative_hessian, "bin_stats"),
        (_weights_off_the_node, "bin_stats"),
        (_codes_beyond_the_grid, "bin_code"),
    ],
)
def test_a_bad_histogram_reply_is_refused_naming_client_and_field(change, field):
    model = FedGBDTClassifier(n_estimators=3, max_depth=3, random_state=0)
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Client '1', round 3, 'fedgbdt.level'.*field '{field}'",
    ):
        model.fit_federation(_mutated(change))


# 15 rows, 30 features: two features often split the rows into the same two
# sets (mirrored), with gains equal up to rounding; the sums' rounding (weights
# vs repeated rows) picks one or the other, both the same partition.
TIES = {"check_sample_weight_equivalence_on_dense_data": "exact ties of gain"}


@pytest.mark.filterwarnings("ignore::fedtrees.exceptions.CentralizedFitWarning")
@pytest.mark.parametrize("make", [FedGBDTClassifier, FedGBDTRegressor])
def test_check_estimator(make) -> None:
    check_estimator(
        make(n_estimators=3, max_depth=2, random_state=0), expected_failed_checks=TIES
    )


def test_a_weight_equals_repeated_rows_without_ties() -> None:
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 3)), rng.integers(0, 3, 60)
    weight = rng.integers(0, 4, size=60)
    params = {"n_estimators": 3, "max_depth": 2, "random_state": 0}
    weighted = FedGBDTClassifier(**params).fit(
        X, y, groups=np.arange(60) % 3, sample_weight=weight
    )
    repeated = FedGBDTClassifier(**params).fit(
        np.repeat(X, weight, axis=0), np.repeat(y, weight),
        groups=np.repeat(np.arange(60) % 3, weight),
    )  # fmt: skip
    np.testing.assert_allclose(
        weighted.predict_proba(X), repeated.predict_proba(X), atol=1e-12
    )


# -- the baselines: Flower's bagging and cyclic boosting on the same learner ----------
def _label_skewed(n: int = 3000) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 6))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(scale=0.5, size=n) > 0).astype(int)
    # 10 clients, 90 % of each client's rows of one label
    groups = np.where(rng.random(n) < 0.9, y * 5 + rng.integers(0, 5, n),
                      rng.integers(0, 10, n))  # fmt: skip
    return X, y, groups


def test_under_label_skew_the_pooled_model_beats_bagging_and_cyclic() -> None:
    X, y, groups = _label_skewed()
    train, test = slice(0, 2400), slice(2400, None)
    scores, trees = {}, {}
    for protocol in ("histogram", "bagging", "cyclic"):
        model = FedGBDTClassifier(n_estimators=30, max_depth=4, learning_rate=0.1,
                                  protocol=protocol, random_state=0)  # fmt: skip
        model.fit(X[train], y[train], groups=groups[train])
        scores[protocol] = (model.predict(X[test]) == y[test]).mean()
        trees[protocol] = (len(model.trees_), model.communication_.rounds)
    assert scores["histogram"] > scores["bagging"] + 0.05, scores
    assert scores["histogram"] > scores["cyclic"] + 0.05, scores
    assert trees["bagging"] == (10 * 30, 1 + 1 + 30)  # agreement, start, rounds
    assert trees["cyclic"] == (30, 1 + 1 + 30)


def test_a_baseline_with_one_client_is_local_boosting() -> None:
    # One client, one tree per round: bagging, cyclic and FedGBDT grow one model.
    X, y, _ = _integers(600)
    raws = [
        _fit(FedGBDTClassifier(protocol=p, **PARAMS), X, y)._raw(X)
        for p in ("histogram", "bagging", "cyclic")
    ]
    np.testing.assert_allclose(raws[1], raws[0], atol=1e-9)
    np.testing.assert_allclose(raws[2], raws[0], atol=1e-9)


def _far_node(r: LocalReply) -> LocalReply:
    node = r.d_node.astype(np.int64).copy()
    node[0] = 10**12  # would size the rebuilt tree
    return dataclasses.replace(r, d_node=node)


def _short_cover(r: LocalReply) -> LocalReply:
    return dataclasses.replace(r, cover=r.cover[:-1])


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("change", "field"), [(_far_node, "d_node"), (_short_cover, "cover")]
)
def test_a_bad_baseline_reply_is_refused_naming_client_and_field(change, field):
    X, y, _ = _integers(300)
    fault = Fault("1", "mutate", round=2, mutate=lambda r: change(r)
                  if isinstance(r, LocalReply) else r)  # fmt: skip
    fed = Federation.from_groups(X, y, np.arange(300) % 3, faults=(fault,))
    model = FedGBDTClassifier(n_estimators=2, max_depth=2, protocol="bagging")
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Client '1', round 2, 'fedgbdt.local'.*field '{field}'",
    ):
        model.fit_federation(fed)


def _table(rows: list[tuple[int, int, int, int, int]]) -> Decisions:
    """Numeric splits (node, feature, bin, left, right); right < 0: a leaf of value bin."""
    n = len(rows)
    col = [np.array([r[i] for r in rows], np.int64) for i in range(5)]
    leaf = col[4] < 0
    return Decisions(
        np.zeros(n, np.int64), col[0], np.where(leaf, KIND_LEAF, KIND_NUMERIC).astype(np.int8),
        np.where(leaf, 0, col[1]), np.where(leaf, 0, col[2]), np.zeros(n, bool),
        np.where(leaf, 0, col[3]), np.where(leaf, 0, col[4]),
        np.where(leaf, col[2], 0).astype(float), np.zeros(n + 1, np.int64),
        np.zeros(0, np.uint8),
    )  # fmt: skip


def test_routing_follows_the_splits_and_refuses_a_cycle() -> None:
    codes = np.array([[0, 3, 5, 9]], np.uint8)
    tree = _table([(0, 0, 4, 1, 2), (1, 0, 1, 3, 4), (2, 0, 7, 5, 6),
                   *[(g, 0, 10 * g, 0, -1) for g in range(3, 7)]])  # fmt: skip
    routed = route(tree, 1, codes, max_depth=6)
    assert routed is not None
    assert routed[0].tolist() == [[3, 4, 5, 6]]
    assert routed[1].tolist() == [[30.0, 40.0, 50.0, 60.0]]
    cycle = _table([(0, 0, 4, 1, 2), (1, 0, 9, 0, 0), (2, 0, 0, 0, -1)])
    assert route(cycle, 1, codes, max_depth=6) is None  # never followed forever


def test_the_decision_log_equals_concatenation() -> None:
    chunks = [_table([(g, g % 3, g, 2 * g + 1, 2 * g + 2) for g in range(a, b)])
              for a, b in [(0, 1), (1, 5), (5, 6), (6, 40), (40, 41)]]  # fmt: skip
    log, whole = DecisionLog(7, Decisions.empty()), Decisions.empty()
    for chunk in chunks:
        got = log.append(chunk)
        whole = whole.then(chunk)
        assert got.as_fields().keys() == whole.as_fields().keys()
        for name, values in whole.as_fields().items():
            np.testing.assert_array_equal(got.as_fields()[name], values, name)


def test_round_callbacks_see_the_pooled_losses_early_stopping_uses() -> None:
    X, y, _ = _integers(900, seed=5)
    seen: list[dict[str, float]] = []
    model = FedGBDTClassifier(n_estimators=40, max_depth=3, learning_rate=0.5,
                              early_stopping_rounds=2, random_state=0)  # fmt: skip
    fed = Federation.from_groups(X, y, np.arange(900) % 3)
    model.fit_federation(fed, callbacks=[lambda env: seen.append(dict(env.metrics))])

    reported = [m["valid_logloss"] for m in seen if "valid_logloss" in m]
    valid = model.evals_result_["validation_logloss"]
    # Every pooled validation loss reached the callbacks (the progress bar is one).
    assert set(valid) <= set(reported)
    assert max(m.get("iteration", 0.0) for m in seen) == len(valid)


def test_every_decision_column_has_one_wire_field() -> None:
    from dataclasses import fields

    from fedtrees.algorithms.fedgbdt._decisions import _WIRE, Decisions

    assert list(_WIRE) == [f.name for f in fields(Decisions)]
    assert sorted(_WIRE.values()) == sorted(f"d_{f.name}" for f in fields(Decisions))
