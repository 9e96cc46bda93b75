"""DPForestClassifier: one round of ε-DP client trees, majority vote (docs/dpforest.md)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fedtrees import DPForestClassifier
from fedtrees.algorithms.dpforest import (
    DPTreeStrategy,
    memorization_matrix,
    memorization_rate,
)
from fedtrees.audit import audit_row_scaling, find_client_values
from fedtrees.exceptions import (
    PrivacyLeakWarning,
    RemoteProtocolError,
    ValidationError,
)
from fedtrees.federation import Fault, Federation, Ledger
from fedtrees.learners import planned_queries
from tests.audit_helpers import estimator_fit, leveled

RANGES = {"a": (-4.0, 4.0), "b": (-4.0, 4.0), "c": (0.0, 10.0)}


def _data(seed: int = 0, n: int = 1200) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.uniform(0, 10, n)}
    )
    y = np.where(X["a"] + X["b"] > 0, "up", "down")
    sites = rng.choice(["north", "south", "east", "west"], n)
    return X, y, sites


@pytest.mark.parametrize("budget", ["paper", "parallel"])
def test_every_client_spends_exactly_epsilon(budget: str) -> None:
    X, y, sites = _data()
    model = DPForestClassifier(5.0, 3, RANGES, budget=budget, random_state=0).fit(
        X, y, groups=sites
    )
    assert model.epsilon_spent_ == dict.fromkeys(sorted(set(sites)), 5.0)
    assert len(model.trees_) == 4
    for n in model.n_queries_.values():
        assert 1 <= n <= planned_queries(3, 3, budget)  # type: ignore[arg-type]
    assert model.communication_.rounds == 2  # agreement + the one tree round


def test_votes_predict_and_string_labels() -> None:
    X, y, sites = _data(1)
    model = DPForestClassifier(math.inf, 4, RANGES, random_state=0).fit(
        X, y, groups=sites
    )
    proba = model.predict_proba(X)
    assert model.classes_.tolist() == ["down", "up"]
    assert np.allclose(proba.sum(axis=1), 1.0)
    assert set(np.unique(proba * 4)) <= {0.0, 1.0, 2.0, 3.0, 4.0}  # vote shares
    assert model.score(X, y) > 0.55  # weak random-threshold trees, 4 votes
    assert "x" not in model.trees_[0].to_text()  # trees carry the column names


def test_vote_ties_go_to_the_first_class() -> None:
    # Two noise-free clients, each pure in one class: one vote each, a tie.
    X = pd.DataFrame({"a": np.linspace(-1, 1, 40)})
    y = np.array(["b"] * 20 + ["a"] * 20)
    sites = np.array(["k1"] * 20 + ["k2"] * 20)
    model = DPForestClassifier(math.inf, 2, {"a": (-2, 2)}, random_state=0)
    model.fit(X, y, groups=sites)
    assert model.predict_proba(X).tolist() == [[0.5, 0.5]] * 40
    assert set(model.predict(X)) == {"a"}


def test_labels_are_agreed_when_a_client_lacks_a_class() -> None:
    X, y, sites = _data(2)
    keep = ~((sites == "west") & (y == "up"))  # west has no "up" rows
    model = DPForestClassifier(50.0, 3, RANGES, random_state=1)
    model.fit(X[keep], y[keep], groups=sites[keep])
    assert all(t.value.shape[1] == 2 for t in model.trees_)
    assert model.client_trees_["west"].classes.tolist() == ["down", "up"]


def test_same_seed_same_forest_and_threads_do_not_matter() -> None:
    # The noise is the sites' own: this test plays them, with their secret.
    X, y, sites = _data(3)
    a = DPForestClassifier(2.0, 4, RANGES, random_state=7).fit(
        X, y, groups=sites, noise_seed=11
    )
    b = DPForestClassifier(2.0, 4, RANGES, random_state=7, workers=3).fit(
        X, y, groups=sites, noise_seed=11
    )
    assert a.trees_ == b.trees_


def test_without_the_sites_secret_the_same_seed_draws_other_noise() -> None:
    X, y, sites = _data(3)
    model = DPForestClassifier(2.0, 4, RANGES, random_state=7)
    a = [t.count for t in model.fit(X, y, groups=sites).trees_]
    b = [t.count for t in model.fit(X, y, groups=sites).trees_]
    assert all(not np.array_equal(p[:1], q[:1]) for p, q in zip(a, b, strict=True))


def test_messages_hold_no_row_level_array() -> None:
    rows = {"a": 211, "b": 223, "c": 227}
    rng = np.random.default_rng(4)
    n = sum(rows.values())
    X, y = rng.normal(size=(n, 3)), rng.integers(0, 3, n)
    fed = Federation.from_groups(X, y, np.repeat(list(rows), list(rows.values())))
    ledger = Ledger(keep_messages=True)
    settings = {
        "epsilon": 1.0,
        "max_depth": 4,
        "budget": "paper",
        "score": "average",
        "seed": 0,
    }
    fed.run(
        DPTreeStrategy(settings, [(-4, 4)] * 3, "test"),
        task="classification",
        ledger=ledger,
    )
    assert find_client_values(ledger, fed).messages == len(ledger.captured) == 12


def test_no_message_grows_with_the_rows() -> None:
    # No noise: the trees have the same shape on n and 2n + 1 rows. With noise a
    # node's noisy purity, and so the tree's shape, depends on the draw, which
    # is each site's own, fresh for every fit (not on the row count).
    X, y, groups = leveled()
    ranges = [(0, 7), (10, 17), (20, 27)]
    report = audit_row_scaling(
        estimator_fit(lambda: DPForestClassifier(np.inf, 3, ranges, random_state=0)),
        X,
        y,
        groups,
    )
    assert report.messages > 0
    assert report.per_row_by_design == ()


def test_a_tree_outside_the_ranges_or_overspending_is_refused() -> None:
    X, y, sites = _data(5)

    def far(reply: object) -> object:
        threshold = reply.threshold.copy()  # type: ignore[attr-defined]
        threshold[0] = 1e9
        return type(reply)(**{**vars(reply), "threshold": threshold})

    def greedy(reply: object) -> object:
        return type(reply)(**{**vars(reply), "epsilon_spent": 2.0})

    for mutate, field in [(far, "threshold"), (greedy, "epsilon_spent")]:
        fed = Federation.from_groups(
            X, y, sites, faults=[Fault("east", "mutate", round=1, mutate=mutate)]
        )
        with pytest.raises(RemoteProtocolError, match=rf"east.*{field}"):
            DPForestClassifier(1.0, 3, RANGES, random_state=0).fit_federation(fed)


def test_memorization_rate_compares_own_and_other_clients() -> None:
    X, _, sites = _data(6, n=4000)
    # Each site labels by its own cut on "a": a tree fitted there is best there.
    cut = {"north": -1.5, "south": -0.5, "east": 0.5, "west": 1.5}
    y = np.where(X["a"].to_numpy() > pd.Series(sites).map(cut).to_numpy(), "up", "down")
    model = DPForestClassifier(math.inf, 6, RANGES, random_state=0)
    model.fit(X, y, groups=sites)
    tests = {s: (X[sites == s], y[sites == s]) for s in model.clients_}
    acc = memorization_matrix(model, tests, n=100, random_state=0)
    assert acc.shape == (4, 4)
    own = np.diag(acc)
    others = np.where(np.eye(4, dtype=bool), -np.inf, acc).max(axis=1)
    rate = memorization_rate(model, tests, n=100, random_state=0)
    assert rate == np.mean(own > others)
    # Site-specific concepts: each tree is best on its own site's rows.
    assert rate >= 0.75
    with pytest.raises(ValidationError, match="no test rows for clients"):
        memorization_rate(model, {"north": tests["north"]}, n=10)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"feature_ranges": None}, "feature_ranges is required"),
        (
            {"feature_ranges": {"a": (-4, 4), "b": (-4, 4)}},
            "no \\(min, max\\) for column 'c'",
        ),
        ({"feature_ranges": {**RANGES, "zz": (0, 1)}}, "unknown columns \\['zz'\\]"),
        ({"feature_ranges": {**RANGES, "c": (5, 5)}}, "column 'c'.*min < max"),
        ({"feature_ranges": {**RANGES, "c": "wide"}}, "feature_ranges\\['c'\\]"),
        ({"feature_ranges": [(0, 1)] * 2}, "shape \\(2, 2\\)"),
        ({"feature_ranges": "everything"}, "feature_ranges"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -3.0}, "epsilon"),
        ({"max_depth": 0}, "max_depth"),
        ({"budget": "loose"}, "budget"),
        ({"split_score": "best"}, "split_score"),
    ],
)
def test_bad_settings_get_clear_errors(params: dict, match: str) -> None:
    X, y, sites = _data(7, n=300)
    settings = {"epsilon": 1.0, "max_depth": 3, "feature_ranges": RANGES, **params}
    with pytest.raises(ValidationError, match=match):
        DPForestClassifier(**settings).fit(X, y, groups=sites)


def test_ranges_from_data_warn_and_are_never_the_default() -> None:
    X, y, sites = _data(8, n=300)
    assert DPForestClassifier().feature_ranges is None
    model = DPForestClassifier(1.0, 3, "from-data", random_state=0)
    with pytest.warns(PrivacyLeakWarning, match="min and max"):
        model.fit(X, y, groups=sites)
    assert np.allclose(model.feature_ranges_[:, 0], X.min().to_numpy())
    fed = Federation.from_groups(X, y, sites)
    with pytest.raises(ValidationError, match="from-data"):
        DPForestClassifier(1.0, 3, "from-data").fit_federation(fed)
    with pytest.raises(ValidationError, match=r"'feature_ranges'.*'everything'"):
        DPForestClassifier(1.0, 3, "everything").fit_federation(fed)


def test_sample_weights_and_empty_clients_are_refused() -> None:
    X, y, sites = _data(9, n=300)
    with pytest.raises(ValidationError, match="sample_weight"):
        DPForestClassifier(1.0, 3, RANGES).fit(X, y, sites, np.ones(300))
    with pytest.raises(ValidationError, match="Client 'empty' has no rows"):
        Federation.from_clients({"full": (X, y), "empty": (X.iloc[:0], y[:0])})
