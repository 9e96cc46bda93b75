"""FedGAClassifier / FedGARegressor: Algorithm 1 on the round loop (docs/fedga.md)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import f1_score
from sklearn.model_selection import GridSearchCV
from sklearn.tree import DecisionTreeClassifier

from fedtrees.algorithms.fedga import FedGAClassifier, FedGARegressor
from fedtrees.algorithms.fedga._payloads import FitnessReply, JoinReply, TreeReply
from fedtrees.audit import audit_row_scaling, find_client_values, recording
from fedtrees.exceptions import ClientDropoutWarning, ValidationError
from fedtrees.federation import Fault, Federation, decode
from tests.audit_helpers import estimator_fit, leveled

QUICK = {"n_generations": 8, "depth_range": (2, 6), "random_state": 0}


def _pooling_helps(seed: int = 1, k: int = 20, n: int = 40) -> tuple:
    """20 small clients of one noisy concept: alone, each picks spurious splits."""
    rng = np.random.default_rng(seed)

    def make(m: int) -> tuple[np.ndarray, np.ndarray]:
        X = rng.normal(size=(m, 10))
        y = (X[:, 0] > 0) & (X[:, 1] > 0)
        return X, np.where(rng.random(m) < 0.15, ~y, y).astype(int)

    X, y = make(k * n)
    X_test, y_test = make(3000)
    return X, y, np.arange(k * n) % k, X_test, y_test


def test_pooling_helps_most_clients_against_cv_tuned_local_trees() -> None:
    X, y, sites, X_test, y_test = _pooling_helps()
    model = FedGAClassifier(n_generations=30, random_state=0).fit(X, y, groups=sites)
    fed, local = [], []
    for c in range(20):
        fed.append(
            f1_score(y_test, model.predict(X_test, client=str(c)), average="macro")
        )
        tuned = GridSearchCV(
            DecisionTreeClassifier(random_state=0),
            {"max_depth": list(range(2, 16))},
            cv=5,
            scoring="f1_macro",
        ).fit(X[sites == c], y[sites == c])
        local.append(f1_score(y_test, tuned.predict(X_test), average="macro"))
    assert np.mean(fed) > np.mean(local)
    assert np.mean(np.array(fed) > np.array(local)) >= 0.6
    best = model.fitness_history_["best"].to_numpy()
    assert np.all(np.diff(best) >= 0)  # the update keeps the best (maximised F1)


def test_clients_with_their_own_concept_get_different_trees() -> None:
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1200, 4))
    sites = np.repeat(["a", "b", "c"], 400)
    feature = np.select([sites == "a", sites == "b"], [0, 1], 2)
    y = (X[np.arange(1200), feature] > 0).astype(int)
    model = FedGAClassifier(population_size=10, **QUICK).fit(X, y, groups=sites)
    roots = {c: int(t.feature[0]) for c, t in model.trees_.items()}
    assert len(set(roots.values())) >= 2  # not one tree for all
    for c in "abc":
        rows = sites == c
        assert (model.predict(X[rows], client=c) == y[rows]).mean() > 0.9, c


def test_only_the_last_round_holds_thresholds_and_epsilon_is_spent() -> None:
    sizes = [211, 307, 401]  # primes: no legitimate array has these lengths
    rng = np.random.default_rng(3)
    X = rng.normal(size=(sum(sizes), 5))
    y = (X[:, 0] + X[:, 3] > 0).astype(int)
    federation = Federation.from_groups(X, y, np.repeat(["a", "b", "c"], sizes))
    model = FedGAClassifier(epsilon=0.5, **QUICK)
    with recording() as ledgers:
        model.fit_federation(federation)
    (ledger,) = ledgers
    report = find_client_values(ledger, federation)
    assert report.messages == len(ledger.captured)
    last = 2 + QUICK["n_generations"] + 2
    for message in ledger.captured:
        payload = decode(message.data).payload
        floats = [
            name
            for name, value in vars(payload or object()).items()
            if isinstance(value, np.ndarray) and value.dtype.kind == "f"
        ]
        if message.round == last and message.direction == "up":
            # The personal trees, by design: thresholds, leaf values, counts.
            assert isinstance(payload, TreeReply), message.kind
            continue
        # No thresholds before: the only float arrays are fitness scores going up.
        assert floats in ([], ["fitness"]), (message.kind, floats)
        if floats:
            assert message.direction == "up"
            assert isinstance(payload, FitnessReply | JoinReply)
    declared = [n for n in report.notes if "'fedga.tree': by design" in n]
    assert len(declared) == 3  # one per site's tree
    assert "training row count" in declared[0]
    assert model.epsilon_spent_ == {"a": 0.5, "b": 0.5, "c": 0.5}


@pytest.mark.parametrize("regression", [False, True])
def test_no_message_grows_with_the_rows(regression: bool) -> None:
    X, y, groups = leveled()
    small = {"population_size": 6, "n_generations": 3, "depth_range": (1, 3)}
    model = FedGARegressor if regression else FedGAClassifier
    report = audit_row_scaling(
        estimator_fit(
            lambda: model(random_state=0, **small),
        ),
        X,
        2.0 * X[:, 0] if regression else y,
        groups,
    )
    assert report.messages > 0
    assert report.per_row_by_design == ()


def test_a_client_dropping_out_and_one_joining_late_both_get_trees() -> None:
    X, y, sites, _, _ = _pooling_helps(n=30)
    federation = Federation.from_groups(
        X, y, sites, faults=[Fault("3", "drop", round=2 + 10)]
    )
    model = FedGAClassifier(n_generations=25, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClientDropoutWarning)
        model.fit_federation(federation, join_at={"7": 20})
    assert set(model.trees_) == {str(c) for c in range(20)}
    assert model.epsilon_spent_["7"] == 1.0  # its noisy size, released when it joined
    assert model.predict(X[:5], client="7").shape == (5,)


def test_regression_votes_history_and_personal_predictions() -> None:
    rng = np.random.default_rng(4)
    X = rng.uniform(-2, 2, size=(900, 3))
    y = 2 * X[:, 0] + np.where(X[:, 1] > 0, 1.0, -1.0) + rng.normal(0, 0.1, 900)
    sites = np.arange(900) % 3
    model = FedGARegressor(population_size=12, **QUICK).fit(X, y, groups=sites)
    best = model.fitness_history_["best"].to_numpy()
    assert np.all(np.diff(best) <= 0)  # MSE, minimised
    assert model.train_ratio_ in (0.8, 1.0)
    assert isinstance(model.elitism_, bool)
    predictions = model.predict(X, client=sites.astype(str))  # one client per row
    assert np.mean((predictions - y) ** 2) < np.var(y)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"population_size": 1}, "population_size"),
        ({"depth_range": (6, 2)}, "depth_range"),
        ({"client_fraction": 0.0}, "client_fraction"),
        ({"epsilon": 0.0}, "epsilon"),
    ],
)
def test_bad_settings_name_the_parameter(params: dict, match: str) -> None:
    X, y, sites, _, _ = _pooling_helps(n=30)
    with pytest.raises(ValidationError, match=match):
        FedGAClassifier(**{**QUICK, **params}).fit(X, y, groups=sites)


def test_bad_joins_and_predictions_without_a_client_are_clear() -> None:
    X, y, sites, _, _ = _pooling_helps(n=30)
    with pytest.raises(ValidationError, match="join_at"):
        FedGAClassifier(**QUICK).fit(X, y, groups=sites, join_at={"nobody": 3})
    model = FedGAClassifier(**QUICK).fit(X, y, groups=sites)
    with pytest.raises(ValidationError, match="personal"):
        model.predict(X[:3])


def test_a_client_smaller_than_the_folds_misses_the_start_and_joins_later() -> None:
    # Documented: its CV fails, so it is left out of the initialization with a
    # warning naming it, and it joins in generation 1 like a late client.
    X, y, sites, _, _ = _pooling_helps(n=30)
    rows = np.concatenate([np.flatnonzero(sites != 5), np.flatnonzero(sites == 5)[:3]])
    with pytest.warns(ClientDropoutWarning, match="'5'"):
        model = FedGAClassifier(**QUICK).fit(X[rows], y[rows], groups=sites[rows])
    assert "5" in model.trees_
    assert model.epsilon_spent_["5"] == 1.0


def test_a_single_class_client_and_a_constant_target_are_documented() -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 4))
    sites = np.arange(600) % 3
    y = np.where(sites == 2, 1, (X[:, 0] > 0).astype(int))  # client 2: one class
    model = FedGAClassifier(**QUICK).fit(X, y, groups=sites)
    assert model.trees_["2"].n_nodes == 1  # a pure client keeps a single leaf
    assert set(model.predict(X[:10], client="2")) == {1}
    constant = FedGARegressor(population_size=6, **QUICK)
    constant.fit(X, np.full(600, 3.0), groups=sites)
    np.testing.assert_allclose(constant.predict(X[:5], client="0"), 3.0)


@pytest.mark.parametrize("random_state", [None, 2**40 + 3])
def test_any_seed_fits_although_scikit_learn_takes_32_bits(
    random_state: int | None,
) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] > 0).astype(int)
    model = FedGAClassifier(
        n_generations=1, depth_range=(2, 3), random_state=random_state
    ).fit(X, y, groups=np.repeat(["a", "b", "c"], 40))
    assert model.score(X, y, client="a") > 0.5
