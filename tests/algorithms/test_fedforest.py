from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.ensemble import RandomForestRegressor
from sklearn.exceptions import NotFittedError

from fedtrees import FedForestClassifier, FedForestRegressor
from fedtrees.algorithms.fedforest import diagnose
from fedtrees.audit import audit_row_scaling, find_client_values
from fedtrees.datasets.synthetic import make_disjoint_supports, make_fedforest
from fedtrees.exceptions import (
    ClientDropoutWarning,
    PrivacyAuditError,
    RemoteProtocolError,
    SchemaMismatchError,
    ValidationError,
)
from fedtrees.federation import Fault, Federation, Ledger
from fedtrees.tree import NodeKind
from tests.algorithms.ledger_helpers import (
    check_bin_sizes,
    check_sketch_sizes,
    exchanges,
)
from tests.audit_helpers import estimator_fit, leveled

PAPER = {"candidates": "quantile"}  # the paper's mode (the default is "hist")
RF = {"n_estimators": 50, "max_depth": 10, "min_samples_leaf": 5, "max_features": 1 / 3}


def _mse(model: object, data: object, client: object = None) -> float:
    prediction = (
        model.predict(data.X_test, client=client)
        if client is not None
        else model.predict(data.X_test)
    )  # type: ignore[attr-defined]
    return float(np.mean((prediction - data.y_test) ** 2))  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def covariate_shift() -> object:
    return make_fedforest("covariate_shift", random_state=11)


def test_quantile_mode_matches_centralized_rf_under_covariate_shift(
    covariate_shift: object,
) -> None:
    d = covariate_shift
    rf = RandomForestRegressor(random_state=0, **RF).fit(d.X, d.y)  # type: ignore[attr-defined]
    ours = FedForestRegressor(random_state=0, **RF).fit(d.X, d.y, groups=d.groups)  # type: ignore[attr-defined]
    assert _mse(ours, d) <= 1.10 * _mse(rf, d)


def test_avgimp_fails_under_covariate_shift(covariate_shift: object) -> None:
    # docs/fedforest.md: averaging client gains ignores the heterogeneity term; it is a test here.
    d = covariate_shift
    exact = FedForestRegressor(random_state=0, **PAPER, **RF).fit(
        d.X, d.y, groups=d.groups
    )  # type: ignore[attr-defined]
    avgimp = FedForestRegressor(random_state=0, gain="avgimp", **PAPER, **RF).fit(
        d.X, d.y, groups=d.groups
    )  # type: ignore[attr-defined]
    assert _mse(avgimp, d) > 1.15 * _mse(exact, d)


def test_only_client_splits_capture_outcome_shift() -> None:
    d = make_fedforest("outcome_shift", random_state=12)
    plain = FedForestRegressor(random_state=0, **RF).fit(d.X, d.y, groups=d.groups)
    with_client = FedForestRegressor(random_state=0, split_on_client=True, **RF).fit(
        d.X, d.y, groups=d.groups
    )
    clients = d.groups_test.astype(str)
    assert _mse(with_client, d, clients) < 0.5 * _mse(plain, d)
    assert any((t.kind == NodeKind.CLIENT).any() for t in with_client.trees_)


def test_avgimp_misses_the_split_between_disjoint_supports() -> None:
    # App. D.1.1 / docs/fedforest.md: with disjoint supports each client's own gain of the split
    # between them is 0, so AvgImp cannot pick it; the pooled gain can. (At
    # delta=8 the two Gaussian clouds along x0 no longer overlap.)
    d = make_disjoint_supports(8.0, random_state=0)
    gap = (d.X[d.groups == 0, 0].max(), d.X[d.groups == 1, 0].min())
    stump = {
        "n_estimators": 1,
        "bootstrap": False,
        "max_features": None,
        "max_depth": 1,
        **PAPER,
    }
    exact = FedForestRegressor(**stump).fit(d.X, d.y, groups=d.groups).trees_[0]
    avgimp = (
        FedForestRegressor(gain="avgimp", **stump)
        .fit(d.X, d.y, groups=d.groups)
        .trees_[0]
    )
    assert exact.feature[0] == 0
    assert gap[0] <= exact.threshold[0] < gap[1]
    assert not (avgimp.feature[0] == 0 and gap[0] <= avgimp.threshold[0] < gap[1])
    forest = {"n_estimators": 20, "max_depth": 4, "random_state": 0, **PAPER}
    good = FedForestRegressor(**forest).fit(d.X, d.y, groups=d.groups)
    bad = FedForestRegressor(gain="avgimp", **forest).fit(d.X, d.y, groups=d.groups)
    assert _mse(good, d) < 0.3 < _mse(bad, d)  # irreducible error: 0.25


def _fit_depth(
    n_estimators: int, ledger_rows: dict[str, int] | None = None, **kw: object
) -> tuple[FedForestClassifier, Federation]:
    rows = ledger_rows or {"a": 211, "b": 223, "c": 227}
    rng = np.random.default_rng(5)
    n = sum(rows.values())
    X = rng.normal(size=(n, 6))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(scale=0.3, size=n) > 0).astype(int)
    fed = Federation.from_groups(X, y, np.repeat(list(rows), list(rows.values())))
    model = FedForestClassifier(
        n_estimators=n_estimators, max_depth=4, n_quantiles=8, random_state=1,
        **{**PAPER, **kw},
    )  # fmt: skip
    return model.fit_federation(fed), fed


@pytest.mark.parametrize("n_estimators", [1, 50])
def test_rounds_are_two_per_level_plus_the_agreement(n_estimators: int) -> None:
    model, _ = _fit_depth(n_estimators)
    assert model.communication_.rounds == 2 * 4 + 1
    assert model.communication_.by_kind().index.tolist() == [
        "federation.schema",
        "fedforest.evaluate",
        "fedforest.sketch",
    ]


def test_bytes_per_node_and_client_follow_section_1_5() -> None:
    """Protocol v2's formula: sizes follow each client's rows at each node.

    Sketch: min(q, r) + 1 points of 8 bytes per numeric pair where the client
    has r > 0 rows at the node, none otherwise. Evaluation: only the non-zero
    bins, at most min(candidates + 1, r) per pair, each with S whole counts in
    the smallest exact dtype, and they sum to the node's statistics.
    Without bootstrap a client's node weight is its row count r.
    """
    rows = {"a": 211, "b": 223, "c": 227}  # primes: no array may have these sizes
    rng = np.random.default_rng(5)
    n = sum(rows.values())
    X, y = rng.normal(size=(n, 6)), rng.integers(0, 3, n)
    fed = Federation.from_groups(X, y, np.repeat(list(rows), list(rows.values())))
    ledger = Ledger(keep_messages=True)
    q, fp, s = 8, 2, 3
    model = FedForestClassifier(
        n_estimators=3,
        max_depth=3,
        n_quantiles=q,
        max_features=fp,
        bootstrap=False,
        random_state=0,
        **PAPER,
    )
    model.fit_federation(fed)
    from fedtrees.algorithms.fedforest._strategy import FedForestStrategy

    fed.run(FedForestStrategy(model.config_), task="classification", ledger=ledger)
    sketched: dict[tuple[int, str], dict[int, int]] = {}
    checked = 0
    for message, request, reply in exchanges(ledger):
        if message.kind == "fedforest.sketch":
            r = check_sketch_sizes(reply, q, fp)
            nodes = request.open_nodes.tolist()  # type: ignore[attr-defined]
            sketched[(message.round, message.client)] = dict(
                zip(nodes, r.tolist(), strict=True)
            )
            assert reply.node_stats.dtype == np.uint8  # type: ignore[attr-defined]  # whole counts <= 227
            checked += 1
        if message.kind == "fedforest.evaluate":
            rows_of = sketched[(message.round - 1, message.client)]
            r = np.array([rows_of[g] for g in request.open_nodes.tolist()])  # type: ignore[attr-defined]
            count = np.asarray(request.thr_count, dtype=np.int64)  # type: ignore[attr-defined]
            check_bin_sizes(reply, count, r, s)
            assert reply.node_stats.shape[0] == 0  # type: ignore[attr-defined]  # sent once, with the sketch
            checked += 1
    assert checked >= 2 * 3
    assert find_client_values(ledger, fed).messages == len(ledger.captured)


def test_avgimp_sends_one_gain_per_candidate() -> None:
    _, fed = _fit_depth(1)
    model = FedForestClassifier(
        n_estimators=2,
        max_depth=2,
        n_quantiles=8,
        gain="avgimp",
        max_features=2,
        random_state=0,
        **PAPER,
    )
    model.fit_federation(fed)
    ledger = Ledger(keep_messages=True)
    from fedtrees.algorithms.fedforest._strategy import FedForestStrategy

    fed.run(FedForestStrategy(model.config_), task="classification", ledger=ledger)
    checked = 0
    for message, request, reply in exchanges(ledger):
        if message.kind == "fedforest.evaluate":
            # one scalar per candidate sent: F'·(q−1) at most per node
            candidates = request.thresholds.shape[0]  # type: ignore[attr-defined]
            assert reply.gains.nbytes == 8 * candidates  # type: ignore[attr-defined]
            assert candidates <= request.n_open * 2 * (8 - 1)  # type: ignore[attr-defined]
            checked += 1
    assert checked


@pytest.mark.parametrize(
    "mode",
    [
        {"candidates": "quantile"},
        {"candidates": "uniform"},
        {"candidates": "hist"},  # 5 distinct values: a complete grid of 5
        {"gain": "avgimp", **PAPER},
    ],
    ids=str,
)
def test_no_message_grows_with_the_rows(mode: dict[str, str]) -> None:
    # Nodes larger than the sketch (n_quantiles=4), the best split the same on
    # every copy of the data: the protocol must not change with n.
    X, y, groups = leveled()
    params = {"n_estimators": 2, "max_depth": 2, "bootstrap": False, **mode}
    params |= {"n_quantiles": 4, "min_samples_leaf": 5, "max_features": None}
    report = audit_row_scaling(
        estimator_fit(lambda: FedForestClassifier(random_state=0, **params)),
        X,
        y,
        groups,
    )
    assert report.messages > 0
    assert report.per_row_by_design == ()


def test_no_regression_message_grows_with_the_rows() -> None:
    X, _, groups = leveled()
    params = {"n_estimators": 2, "max_depth": 2, "bootstrap": False}
    params |= {"n_quantiles": 4, "min_samples_leaf": 5, "max_features": None}
    report = audit_row_scaling(
        estimator_fit(lambda: FedForestRegressor(random_state=0, **params)),
        X,
        2.0 * X[:, 0],  # the levels of feature 0: node moments, same splits
        groups,
    )
    assert report.messages > 0
    assert report.per_row_by_design == ()


@pytest.mark.parametrize(
    ("candidates", "kind"),
    [("exact", "fedforest.sketch_reply"), ("hist", "fedforest.grid_reply")],
)
def test_distinct_values_are_sent_by_design(candidates: str, kind: str) -> None:
    # Distinct values, fewer rows than max_bins: exact mode sketches every value,
    # hist mode's root grid is complete. Both are declared and reported.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(135, 3))
    y = (X[:, 0] > 0).astype(int)
    X[:, 0] += 3 * y
    groups = np.repeat(["a", "b", "c"], [40, 45, 50])
    params = {"n_estimators": 2, "max_depth": 2, "bootstrap": False}
    fit = estimator_fit(
        lambda: FedForestClassifier(
            candidates=candidates, max_features=None, random_state=0, **params
        )
    )
    with pytest.raises(PrivacyAuditError, match="'points' holds column 'x1' of client"):
        audit_row_scaling(fit, X, y, groups)
    report = audit_row_scaling(fit, X, y, groups, per_row={kind: ["points"]})
    assert report.per_row_by_design == (f"{kind}.points",)


def test_same_seed_same_forest_threads_and_lost_state_do_not_matter() -> None:
    a, federation = _fit_depth(4)
    b, _ = _fit_depth(4)
    assert a.trees_ == b.trees_
    rows = {"a": 211, "b": 223, "c": 227}
    rng = np.random.default_rng(5)
    n = sum(rows.values())
    X = rng.normal(size=(n, 6))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(scale=0.3, size=n) > 0).astype(int)
    groups = np.repeat(list(rows), list(rows.values()))
    c = FedForestClassifier(n_estimators=4, max_depth=4, n_quantiles=8, random_state=2)
    assert c.fit(X, y, groups=groups).trees_ != a.trees_
    threaded = clone(a).set_params(workers=3).fit_federation(federation)
    assert threaded.trees_ == a.trees_


def test_categorical_features_string_labels_and_persistence() -> None:
    rng = np.random.default_rng(8)
    n = 400
    colour = pd.Categorical(
        rng.choice(["red", "green", "blue", "grey"], n),
        categories=["blue", "green", "grey", "red"],
    )
    X = pd.DataFrame({"age": rng.normal(50, 10, n), "colour": colour})
    y = np.where((X["colour"].isin(["red", "grey"])) ^ (X["age"] > 55), "sick", "well")
    model = FedForestClassifier(
        n_estimators=10, max_depth=4, max_features=None, random_state=0
    )
    model.fit(X, y, groups=rng.integers(0, 3, n))
    assert model.score(X, y) > 0.95
    assert model.classes_.tolist() == ["sick", "well"]
    assert any((t.kind == NodeKind.CATEGORICAL).any() for t in model.trees_)
    assert "colour in {" in model.trees_[0].to_text()
    unseen = X.head(3).assign(colour=pd.Categorical(["purple"] * 3))
    assert model.predict(unseen).shape == (3,)  # unseen category: the default branch
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict_proba(X), model.predict_proba(X))
    assert model.feature_importances_.sum() == pytest.approx(1.0)
    assert list(model.feature_names_in_) == ["age", "colour"]


def test_predict_with_client_ids_and_mixing() -> None:
    d = make_fedforest("outcome_shift", random_state=1)
    model = FedForestRegressor(
        n_estimators=5, max_depth=4, split_on_client=True, random_state=0
    )
    model.fit(d.X, d.y, groups=d.groups)
    per_client = model.predict(d.X_test[:4], client="3")
    mixed = model.predict(d.X_test[:4])
    assert not np.allclose(per_client, mixed)
    with pytest.raises(ValidationError, match="names '9', which is not a known client"):
        model.predict(d.X_test[:4], client="9")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ((np.array([[1.0, np.inf], [2.0, 3.0]]), [0, 1]), "column 'x1' holds infin"),
        ((np.zeros((3, 2)), [0, 1]), r"y must have shape \(3,\)"),
        (
            (np.zeros((2, 2)), [0.5, np.nan]),
            "Unknown label type|y holds missing values",
        ),
    ],
)
def test_bad_training_input_is_named(
    data: tuple[np.ndarray, list[float]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        FedForestClassifier(n_estimators=2).fit(*data)


def test_bad_parameters_are_named() -> None:
    X, y = np.zeros((4, 1)), [0, 1, 0, 1]
    with pytest.raises(
        ValidationError,
        match=r"'n_quantiles' parameter of FedForestClassifier must be an int in "
        r"\[2, 4096\]",
    ):
        FedForestClassifier(n_quantiles=1).fit(X, y)
    with pytest.raises(
        ValidationError,
        match="'criterion' parameter of FedForestRegressor must be one of 'squared_error'",
    ):
        FedForestRegressor(criterion="gini").fit(X, [0.0, 1.0, 0.0, 1.0])
    with pytest.raises(NotFittedError, match="not fitted"):
        FedForestClassifier().predict(X)


def test_single_class_and_tiny_clients_are_fine() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = np.where(X[:, 0] > 0, 1, 0)
    groups = np.where(np.arange(60) < 3, "tiny", np.where(X[:, 0] > 0, "ones", "zeros"))
    model = FedForestClassifier(
        n_estimators=3, min_samples_leaf=5, bootstrap=False, random_state=0
    )
    model.fit(
        X, y, groups=groups
    )  # a single-class client, and one smaller than min_samples_leaf
    assert model.score(X, y) > 0.9
    for tree in model.trees_:
        assert tree.count[tree.kind == NodeKind.LEAF].min() >= 5


def test_clients_whose_columns_disagree_are_refused() -> None:
    fed = Federation.from_clients(
        {
            "a": (pd.DataFrame({"age": [1.0, 2.0]}), [0, 1]),
            "b": (pd.DataFrame({"chol": [1.0]}), [1]),
        }
    )
    with pytest.raises(
        SchemaMismatchError, match="Client 'b' does not have the columns of client 'a'"
    ):
        FedForestClassifier(n_estimators=2).fit_federation(fed)


def _dropping(on_dropout: str) -> FedForestClassifier:
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] > 0).astype(int)
    fed = Federation.from_groups(
        X, y, np.repeat(["a", "b", "c"], 100), faults=(Fault("c", "drop", round=3),)
    )
    return FedForestClassifier(
        n_estimators=3, max_depth=3, on_dropout=on_dropout, random_state=0, **PAPER
    ).fit_federation(fed)


def test_a_dropout_mid_fit_fails_by_default() -> None:
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'c', round 3, 'fedforest.sketch': field 'reply' is missing",
    ):
        _dropping("fail")


def test_a_dropout_mid_fit_can_be_tolerated() -> None:
    with pytest.warns(ClientDropoutWarning, match="Dropped from round 3: Client 'c'"):
        model = _dropping("continue")
    assert model.communication_.to_frame().query(
        "round > 3"
    ).client.unique().tolist() == ["a", "b"]
    assert len(model.trees_) == 3


def test_other_candidate_modes_and_top_k_run() -> None:
    d = make_fedforest("homogeneous", random_state=4)
    for params in (
        {"candidates": "uniform"},
        {"gain": "avgimp", "top_k": 2, **PAPER},
        {"client_fraction": 0.5, **PAPER},
    ):
        model = FedForestRegressor(
            n_estimators=8, max_depth=5, random_state=0, **params
        )
        model.fit(d.X, d.y, groups=d.groups)
        assert _mse(model, d) < 1.0
    assert model.communication_.rounds == 1 + 2 * 5  # client_fraction changes no round


def test_diagnostics_tell_the_regimes_apart_and_drive_auto() -> None:
    fed = {
        s: make_fedforest(s, random_state=3)
        for s in ("homogeneous", "covariate_shift", "outcome_shift")
    }
    reports = {
        s: diagnose(
            Federation.from_groups(d.X, d.y, d.groups),
            task="regression",
            random_state=0,
        )
        for s, d in fed.items()
    }
    assert not reports["homogeneous"].covariate_shift
    assert reports["covariate_shift"].covariate_shift
    assert reports["covariate_shift"].separating_features[0][0] == "x0"
    assert reports["outcome_shift"].outcome_shift
    assert reports["homogeneous"].recommended_gain == "avgimp"
    d = fed["covariate_shift"]
    auto = FedForestRegressor(
        n_estimators=5, max_depth=4, gain="auto", random_state=0, **PAPER
    ).fit(d.X, d.y, groups=d.groups)
    assert auto.config_.gain == "exact"
    assert "covariate shift: True" in auto.diagnosis_.summary()


def test_avgimp_finishes_when_a_whole_level_is_pure() -> None:
    # AvgImp learns the children's statistics in the next sketch round; when every
    # open node of that level turns out pure there is nothing left to invert.
    X = np.linspace(-1.0, 1.0, 40)[:, None]
    y = (X[:, 0] > 0).astype(int)

    model = FedForestClassifier(
        n_estimators=1, gain="avgimp", bootstrap=False, random_state=0, **PAPER
    ).fit(X, y, groups=np.arange(40) % 2)

    assert model.trees_[0].n_leaves == 2
    assert model.score(X, y) == 1.0
