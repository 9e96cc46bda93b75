"""FedForest ``candidates="hist"``: the histogram engine end to end.

Rounds (at most depth + 2, whatever the trees and clients), exactness on an
exact grid (the forest does not depend on how rows are split over clients; a
one-client tree is scikit-learn's CART on the codes), histogram subtraction
(the same forest, fewer bytes), missing values (a learned direction per node,
accuracy beside scikit-learn's forest, routing that survives JSON and pickle),
bad parameters, dropouts under subtraction and hostile replies. The message
audits run in test_fedforest.py (sizes; distinct values by design) and
test_fedforest_state.py (values, with lost state).
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from fedtrees import FedForestClassifier, FedForestRegressor
from fedtrees.algorithms.fedforest._hist_payloads import HistogramReply
from fedtrees.exceptions import (
    CentralizedFitWarning,
    ClientDropoutWarning,
    RemoteProtocolError,
    ValidationError,
)
from fedtrees.federation import Fault, Federation
from fedtrees.tree import Missing, NodeKind, Tree
from tests.algorithms.exact_compare import is_exact_tie, partition_divergences

HIST = {"candidates": "hist"}


def _blobs(n: int = 600, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(scale=0.3, size=n) > 0).astype(int)
    return X, y


def _integers(n: int = 700, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Integer features with few values: the grid is exact (one bin per value)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 30, size=(n, 4)).astype(float)
    X[:, 3] = rng.integers(0, 5, n)
    score = X[:, 0] - 15 + 3 * (X[:, 3] > 2) + rng.normal(scale=4, size=n)
    return X, (score > 0).astype(int) + (X[:, 1] > 20)


def _fit(model, X, y, groups=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CentralizedFitWarning)
        return model.fit(X, y, groups=groups)


# -- rounds --------------------------------------------------------------------------
@pytest.mark.parametrize("trees", [1, 50])
@pytest.mark.parametrize("clients", [1, 4])
def test_rounds_are_at_most_depth_plus_two(trees, clients) -> None:
    X, y = _blobs()
    depth = 6
    model = FedForestClassifier(n_estimators=trees, max_depth=depth, random_state=0,
                                **HIST)  # fmt: skip
    _fit(model, X, y, np.arange(X.shape[0]) % clients)
    kinds = model.communication_.to_frame().groupby("round")["kind"].first()
    assert model.communication_.rounds <= depth + 2
    assert kinds.tolist()[1] == "fedforest.grid"
    assert set(kinds.tolist()[2:]) == {"fedforest.histogram"}


def test_declared_edges_skip_the_grid_round() -> None:
    X, y = _blobs()
    edges = {j: np.linspace(-2, 2, 9) for j in range(5)}
    model = FedForestClassifier(n_estimators=3, max_depth=4, bin_edges=edges,
                                random_state=0, **HIST)  # fmt: skip
    model.fit(X, y, groups=np.arange(X.shape[0]) % 3)
    kinds = set(model.communication_.to_frame()["kind"])
    assert "fedforest.grid" not in kinds
    assert model.communication_.rounds <= 4 + 1
    for j in range(5):
        np.testing.assert_array_equal(model.bin_edges_[j], edges[j])


# -- exactness on an exact grid -------------------------------------------------------
def _skewed_groups(X: np.ndarray, k: int = 7) -> np.ndarray:
    """Clients that own ranges of x0 (disjoint supports), of unequal sizes."""
    cuts = np.quantile(X[:, 0], np.linspace(0, 1, k + 1)[1:-1] ** 1.5)
    return np.searchsorted(cuts, X[:, 0])


@pytest.mark.parametrize("max_features", ["sqrt", None])
def test_forest_does_not_depend_on_the_partition(max_features) -> None:
    X, y = _integers()
    params = {"n_estimators": 5, "max_depth": 8, "bootstrap": False,
              "max_features": max_features, "random_state": 3, **HIST}  # fmt: skip
    alone = _fit(FedForestClassifier(**params), X, y)
    split = FedForestClassifier(**params).fit(X, y, groups=_skewed_groups(X))
    assert len(np.unique(_skewed_groups(X))) == 7
    for a, b in zip(alone.trees_, split.trees_, strict=True):
        # bit for bit: thresholds, counts, values (only the client list differs)
        assert dataclasses.replace(a, clients=None) == dataclasses.replace(
            b, clients=None
        )


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_one_client_tree_is_scikit_learns_cart_on_the_codes(criterion) -> None:
    # Integer features 0..29: the exact grid's codes are the values themselves,
    # and its edges are scikit-learn's thresholds (midpoints).
    X, y = _integers()
    params = {"max_depth": 6, "min_samples_leaf": 3, "criterion": criterion}
    sk = DecisionTreeClassifier(random_state=0, **params).fit(X, y)
    ours = _fit(FedForestClassifier(n_estimators=1, bootstrap=False,
                                    max_features=None, **params, **HIST), X, y)  # fmt: skip
    tree = ours.trees_[0]
    for _path, a, b in partition_divergences(tree, sk.tree_, X):
        assert is_exact_tie(tree, sk.tree_, a, b)


def test_one_client_regression_tree_is_scikit_learns_on_the_codes() -> None:
    X, _ = _integers()
    rng = np.random.default_rng(1)
    y = np.sin(X[:, 0] / 4) + X[:, 3] ** 2 / 10 + rng.random(X.shape[0])
    params = {"max_depth": 5, "min_samples_leaf": 4}
    sk = DecisionTreeRegressor(random_state=0, **params).fit(X, y)
    ours = _fit(FedForestRegressor(n_estimators=1, bootstrap=False,
                                   max_features=None, **params, **HIST), X, y)  # fmt: skip
    assert partition_divergences(ours.trees_[0], sk.tree_, X) == []
    np.testing.assert_allclose(ours.predict(X), sk.predict(X), rtol=1e-9, atol=1e-9)


# -- histogram subtraction ---------------------------------------------------------
def test_subtraction_grows_the_same_forest_with_fewer_bytes() -> None:
    X, y = _integers()
    groups = np.arange(X.shape[0]) % 3
    params = {"n_estimators": 4, "max_depth": 6, "max_features": None,
              "random_state": 0, **HIST}  # fmt: skip
    full = FedForestClassifier(**params).fit(X, y, groups=groups)
    plain = FedForestClassifier(**params)
    config = plain._config
    plain._config = lambda: dataclasses.replace(config(), subtract=False)
    plain.fit(X, y, groups=groups)
    for a, b in zip(full.trees_, plain.trees_, strict=True):
        assert a == b  # whole counts: parent minus smaller child is exact
    assert full.communication_.bytes_up < 0.8 * plain.communication_.bytes_up


# -- missing values ------------------------------------------------------------------
def test_missing_direction_by_hand() -> None:
    # x0 separates the classes; its missing values all belong to class 1,
    # which lies right of the threshold: missing values learn to go right.
    x = np.r_[np.arange(20.0), np.full(10, np.nan)]
    y = np.r_[np.zeros(10), np.ones(10), np.ones(10)].astype(int)
    model = _fit(FedForestClassifier(n_estimators=1, max_depth=1, bootstrap=False,
                                     **HIST), x[:, None], y)  # fmt: skip
    tree = model.trees_[0]
    assert tree.threshold[0] == 9.5
    assert tree.missing[0] == Missing.RIGHT
    assert model.predict([[np.nan], [3.0]]).tolist() == [1, 0]
    # and left, when they belong to the left class
    y[20:] = 0
    left = _fit(FedForestClassifier(n_estimators=1, max_depth=1, bootstrap=False,
                                    **HIST), x[:, None], y)  # fmt: skip
    assert left.trees_[0].missing[0] == Missing.LEFT
    assert left.predict([[np.nan], [15.0]]).tolist() == [0, 1]


def test_without_missing_rows_missing_values_follow_the_larger_child() -> None:
    x = np.arange(30.0)
    y = (x > 19.5).astype(int)
    model = _fit(FedForestClassifier(n_estimators=1, max_depth=1, bootstrap=False,
                                     **HIST), x[:, None], y)  # fmt: skip
    assert model.trees_[0].missing[0] == Missing.LARGER
    assert model.predict([[np.nan]]).tolist() == [0]  # 20 rows left, 10 right


def _with_nan(seed: int) -> tuple[np.ndarray, ...]:
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split

    X, y = make_classification(n_samples=8000, n_features=8, n_informative=4,
                               n_redundant=2, shuffle=False, random_state=seed)  # fmt: skip
    rng = np.random.default_rng(seed)
    for j in (0, 1):  # two informative features, 20 % missing
        X[rng.random(X.shape[0]) < 0.2, j] = np.nan
    return tuple(train_test_split(X, y, test_size=0.5, random_state=seed))


def test_missing_values_accuracy_is_scikit_learns() -> None:
    X_train, X_test, y_train, y_test = _with_nan(0)
    groups = np.arange(X_train.shape[0]) % 4
    ours = FedForestClassifier(n_estimators=40, max_depth=10, random_state=0, **HIST)
    ours.fit(X_train, y_train, groups=groups)
    sk = RandomForestClassifier(n_estimators=40, max_depth=10, random_state=0)
    sk.fit(X_train, y_train)
    assert abs(ours.score(X_test, y_test) - sk.score(X_test, y_test)) <= 0.01
    assert any((t.missing != Missing.LARGER).any() for t in ours.trees_)


def test_missing_routing_survives_json_and_pickle() -> None:
    X_train, X_test, y_train, _ = _with_nan(1)
    model = FedForestClassifier(n_estimators=5, max_depth=6, random_state=0, **HIST)
    model.fit(X_train[:2000], y_train[:2000], groups=np.arange(2000) % 3)
    rows = X_test[np.isnan(X_test).any(axis=1)][:200]
    expected = model.predict_proba(rows)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict_proba(rows), expected)
    trees = [Tree.from_json(json.dumps(t.to_dict())) for t in model.trees_]
    mean = np.mean([t.predict_proba(rows) for t in trees], axis=0)
    np.testing.assert_array_equal(mean, expected)


def test_a_categorical_nan_is_its_own_category() -> None:
    rng = np.random.default_rng(0)
    n = 600
    ward = pd.Series(rng.choice(["a", "b", "c", None], n), dtype="category")
    y = np.where(ward.isna(), 1, rng.random(n) < 0.1).astype(int)
    X = pd.DataFrame({"ward": ward, "noise": rng.normal(size=n)})
    model = FedForestClassifier(n_estimators=1, max_depth=1, bootstrap=False,
                                max_features=None, random_state=0, **HIST)  # fmt: skip
    model.fit(X, y, groups=np.arange(n) % 2)
    tree = model.trees_[0]
    assert tree.kind[0] == NodeKind.CATEGORICAL
    # the missing category (code 3, after a, b, c) is split from the others:
    # listed alone, or the only one not listed (the default branch)
    assert sorted(tree.branch_code.tolist()) in ([3], [0, 1, 2])
    test = pd.DataFrame({"ward": pd.Categorical([None, "a"], categories=["a", "b", "c"]),
                         "noise": [0.0, 0.0]})  # fmt: skip
    assert model.predict(test).tolist() == [1, 0]
    # The Tree on its own routes a NaN code the same way, and names it.
    codes = np.array([[np.nan, 0.0], [0.0, 0.0]])
    assert tree.predict(codes).tolist() == [1, 0]
    listed = "missing" if tree.branch_code.tolist() == [3] else "a, b, c"
    assert tree.to_text().splitlines()[0] == f"|--- ward in {{{listed}}}"


@pytest.mark.parametrize("at", [0, 1, 2])
def test_a_categorical_column_anywhere_among_numeric_ones(at: int) -> None:
    # The grid a client checks steps from numeric edges to a categorical column
    # (no edges) and back; a categorical last column once broke that check.
    rng = np.random.default_rng(1)
    n = 450
    ward = pd.Categorical(rng.choice(["n", "s", "e"], n))
    X = pd.DataFrame({"u": rng.normal(size=n), "v": rng.normal(size=n)})
    X.insert(at, "ward", ward)
    y = ((ward == "s") ^ (X["u"] > 0.5)).astype(int)
    model = FedForestClassifier(n_estimators=1, max_depth=2, bootstrap=False,
                                max_features=None, random_state=0, **HIST)  # fmt: skip
    model.fit(X, y, groups=np.arange(n) % 3)
    assert model.score(X, y) == 1.0
    assert model.trees_[0].kind[0] == NodeKind.CATEGORICAL or (
        model.trees_[0].feature[0] == X.columns.get_loc("u")
    )


@pytest.mark.parametrize("candidates", ["quantile", "exact", "uniform"])
def test_other_candidate_modes_refuse_missing_values_pointing_to_hist(
    candidates: str,
) -> None:
    X, y = _blobs(60)
    X[7, 1] = np.nan
    model = FedForestClassifier(n_estimators=2, candidates=candidates)
    with pytest.raises(
        ValidationError, match=r"column 'x1' .*row 7.*candidates='hist'"
    ):
        model.fit(X, y, groups=y)
    assert FedForestClassifier(n_estimators=2).fit(X, y, groups=y)  # the default


def test_other_estimators_refuse_missing_values_naming_the_ones_that_accept() -> None:
    from fedtrees import DPForestClassifier

    X, y = _blobs(60)
    X[4, 2] = np.nan
    with pytest.raises(ValidationError, match=r"column 'x2'.*FedForestClassifier"):
        DPForestClassifier(feature_ranges=[(-5, 5)] * 5).fit(X, y, groups=y)


# -- bad input -------------------------------------------------------------------------
@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("max_bins", [1, 256, 1000, 2.5])
def test_max_bins_outside_the_grid_is_named(max_bins) -> None:
    X, y = _blobs(60)
    with pytest.raises(ValidationError, match="max_bins"):
        FedForestClassifier(max_bins=max_bins, **HIST).fit(X, y, groups=y)


@pytest.mark.hostile("clear_error")
def test_avgimp_with_the_default_hist_says_which_candidates_it_needs() -> None:
    X, y = _blobs(60)
    with pytest.raises(ValidationError, match=r"gain='avgimp'.*candidates='quantile'"):
        FedForestClassifier(gain="avgimp").fit(X, y, groups=y)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("edges", "match"),
    [([1.0, 0.5], "strictly increasing"), ([0.0, np.inf], "finite")],
)
def test_bad_declared_edges_are_named(edges, match) -> None:
    X, y = _blobs(60)
    model = FedForestClassifier(bin_edges={"x1": edges}, **HIST)
    with pytest.raises(ValidationError, match=rf"bin_edges\['x1'\].*{match}"):
        model.fit(X, y, groups=y)


# -- dropouts --------------------------------------------------------------------------
SITES = ("a", "b", "c")


def _sites() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    groups = np.repeat(SITES, [120, 100, 80])
    X = rng.normal(size=(groups.shape[0], 3))
    X[groups == "c", 0] += 3.0
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    y[groups == "c"] = 1 - y[groups == "c"]
    return X, y, groups


def _hist_model(subtract: bool) -> FedForestClassifier:
    model = FedForestClassifier(
        n_estimators=2, max_depth=3, max_features=None, bootstrap=False,
        on_dropout="continue", random_state=0, **HIST,
    )  # fmt: skip
    config = model._config
    model._config = lambda: dataclasses.replace(config(), subtract=subtract)
    return model


def _dropped_at(round_: int, subtract: bool) -> FedForestClassifier:
    X, y, groups = _sites()
    fed = Federation.from_groups(
        X, y, groups, faults=(Fault("c", "drop", round=round_),)
    )
    with pytest.warns(ClientDropoutWarning, match=f"round {round_}: Client 'c'"):
        return _hist_model(subtract).fit_federation(fed)


@pytest.mark.parametrize("round_", [2, 3, 4])  # level 0, 1, 2 (round 1: the grid)
def test_a_dropout_in_a_level_with_subtraction_repeats_it_without(round_) -> None:
    # The kept parents still hold the dropped client's rows: parent minus the
    # smaller child would keep them in the larger one. The level runs again.
    # (Without subtraction a dropout equals the client's data vanishing at its
    # round, the grid's included: tests/hostile/test_dropout.py.)
    with_subtraction = _dropped_at(round_, subtract=True)
    without = _dropped_at(round_, subtract=False)
    assert with_subtraction.trees_ == without.trees_
    rounds = with_subtraction.communication_.rounds
    assert rounds == without.communication_.rounds + (round_ > 2)  # level 0: none


# -- hostile replies -------------------------------------------------------------------
def _mutated(change) -> Federation:
    X, y = _blobs(300)
    fault = Fault("1", "mutate", round=3, mutate=lambda r: change(r)
                  if isinstance(r, HistogramReply) and r.bin_code.size else r)  # fmt: skip
    return Federation.from_groups(X, y, np.arange(300) % 3, faults=(fault,))


def _codes_beyond_the_grid(r: HistogramReply) -> HistogramReply:
    codes = r.bin_code.copy()
    codes[-1] = 254  # no feature of the grid has 255 bins
    return dataclasses.replace(r, bin_code=codes)


def _counts_off_the_node(r: HistogramReply) -> HistogramReply:
    stats = r.bin_stats.astype(np.float64)
    stats[0, 0] += 1.0
    return dataclasses.replace(r, bin_stats=stats)


def _shuffled_codes(r: HistogramReply) -> HistogramReply:
    count = r.bin_count.astype(np.int64).ravel()
    p = int(np.flatnonzero(count > 1)[0])
    start = int(count[:p].sum())
    codes = r.bin_code.copy()
    codes[start], codes[start + 1] = codes[start + 1], codes[start]
    return dataclasses.replace(r, bin_code=codes)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("change", "field"),
    [
        (_codes_beyond_the_grid, "bin_code"),
        (_counts_off_the_node, "bin_stats"),
        (_shuffled_codes, "bin_code"),
    ],
)
def test_a_bad_histogram_reply_is_refused_naming_client_and_field(change, field):
    model = FedForestClassifier(n_estimators=2, max_depth=4, max_bins=16,
                                random_state=0, **HIST)  # fmt: skip
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Client '1', round 3, 'fedforest.histogram'.*field '{field}'",
    ):
        model.fit_federation(_mutated(change))


@pytest.mark.hostile("clear_error")
def test_bins_for_a_pair_the_request_left_out_are_refused() -> None:
    def give_padding_bins(r: HistogramReply) -> HistogramReply:
        # all features considered (max_features=None): widen the pairs instead
        count = r.bin_count.astype(np.int64)
        extra = np.zeros((count.shape[0], 1), np.int64)
        extra[0, 0] = 1
        return dataclasses.replace(
            r,
            bin_count=np.concatenate([count, extra], axis=1),
            bin_code=np.r_[r.bin_code, 0].astype(np.uint8),
            bin_stats=np.concatenate([r.bin_stats, r.bin_stats[:1]]),
        )

    model = FedForestClassifier(n_estimators=2, max_depth=4, random_state=0, **HIST)
    with pytest.raises(
        RemoteProtocolError, match=r"Client '1', round 3.*field 'bin_count'"
    ):
        model.fit_federation(_mutated(give_padding_bins))
