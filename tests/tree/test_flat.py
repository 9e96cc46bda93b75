"""The joined forest's one compiled pass equals routing every tree on its own."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtrees import FedForestClassifier, LocalModelsRegressor
from fedtrees.exceptions import ValidationError
from fedtrees.tree import FlatForest, Missing, Tree, mean_value
from tests.tree.helpers import random_tree, random_X

DIRECTIONS = (Missing.LEFT, Missing.RIGHT, Missing.LARGER)
CLIENTS = ("a", "b", "c")


def _forest(seed: int, n_trees: int, n_classes: int, clients: bool) -> list[Tree]:
    return [
        random_tree(
            seed * 100 + t,
            n_features=4,
            categorical=(2,),
            n_classes=n_classes,
            clients=CLIENTS if clients else None,
            missing=DIRECTIONS,
        )
        for t in range(n_trees)
    ]


def _one_by_one(
    trees: list[Tree], X: np.ndarray, weights: np.ndarray, client: object
) -> np.ndarray:
    total = sum(
        w * t.predict_value(X, client) for t, w in zip(trees, weights, strict=True)
    )
    return np.asarray(total) / weights.sum()


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n_trees=st.integers(1, 8),
    n_classes=st.sampled_from([0, 2, 3]),
    clients=st.booleans(),
    client_kind=st.sampled_from(["none", "one", "per-row"]),
)
def test_flat_forest_equals_every_tree_routed(
    seed: int, n_trees: int, n_classes: int, clients: bool, client_kind: str
) -> None:
    # Every node kind: numeric (NaN by each direction), categorical (unseen codes,
    # NaN, non-integral values), client splits with a known or an unknown client.
    trees = _forest(seed, n_trees, n_classes, clients)
    rng = np.random.default_rng(seed)
    X = random_X(seed, trees[0], 200, nan_fraction=0.2)
    X[:3, 2] = [0.5, -1.0, 2.0**50]  # codes no branch table can hold
    weights = rng.integers(0, 3, n_trees).astype(float)
    weights[0] = 1.0
    client: object = {
        "none": None,
        "one": "b",
        "per-row": rng.choice(np.array(CLIENTS, dtype=object), 200),
    }[client_kind]
    got = FlatForest.of(trees).mean_value(
        X, owner="test", weights=weights, client=client
    )
    np.testing.assert_allclose(
        got, _one_by_one(trees, X, weights, client), rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("n_rows", [1, 500, 3000])  # 3000: the parallel pass
def test_flat_forest_is_exact_without_client_mixing(n_rows: int) -> None:
    # Without a mixed client split every row adds the same leaf values in the
    # same order as the tree-by-tree sum: equal to the bit.
    trees = _forest(7, 6, 3, clients=False)
    X = random_X(7, trees[0], n_rows, nan_fraction=0.3)
    ones = np.ones(len(trees))
    np.testing.assert_array_equal(
        mean_value(trees, X), _one_by_one(trees, X, ones, None)
    )


@pytest.mark.parametrize("n_rows", [700, 2600])  # 2600: the parallel pass
def test_rows_in_many_tiles_are_routed_like_every_tree(n_rows: int) -> None:
    # The kernel routes rows in tiles (every tree routes a tile, then the next
    # tile): rows on both sides of every tile edge, per-row clients, a tree of
    # weight zero, every node kind.
    trees = _forest(13, 7, 3, clients=True)
    rng = np.random.default_rng(13)
    X = random_X(13, trees[0], n_rows, nan_fraction=0.2)
    weights = rng.integers(1, 4, len(trees)).astype(float)
    weights[3] = 0.0
    client = rng.choice(np.array(CLIENTS, dtype=object), n_rows)
    np.testing.assert_allclose(
        FlatForest.of(trees).mean_value(X, owner="t", weights=weights, client=client),
        _one_by_one(trees, X, weights, client),
        rtol=1e-12,
        atol=1e-12,
    )


def test_parallel_pass_mixes_unknown_clients_like_every_tree() -> None:
    trees = _forest(11, 5, 2, clients=True)
    X = random_X(11, trees[0], 2500, nan_fraction=0.1)
    ones = np.ones(len(trees))
    np.testing.assert_allclose(
        mean_value(trees, X), _one_by_one(trees, X, ones, None), rtol=1e-12, atol=1e-12
    )


def test_client_codes_map_across_trees_with_other_client_lists() -> None:
    # Two trees that list the clients in different orders still route a client
    # by its id.
    first = random_tree(3, clients=("a", "b", "c"), categorical=(), max_depth=3)
    second = random_tree(4, clients=("c", "a"), categorical=(), max_depth=3)
    X = random_X(5, first, 50)
    for client in ("a", "c"):
        got = FlatForest.of([first, second]).mean_value(X, owner="t", client=client)
        want = (first.predict_value(X, client) + second.predict_value(X, client)) / 2
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_flat_forest_refuses_bad_input_by_name() -> None:
    trees = _forest(1, 2, 2, clients=True)
    forest = FlatForest.of(trees)
    with pytest.raises(ValidationError, match="4 columns"):
        forest.mean_value(np.zeros((2, 3)), owner="Model.predict")
    with pytest.raises(ValidationError, match="holds inf"):
        forest.mean_value(np.full((1, 4), np.inf), owner="Model.predict")
    with pytest.raises(ValidationError, match=r"'client' parameter of Model\.predict"):
        forest.mean_value(np.zeros((1, 4)), owner="Model.predict", client="zzz")
    with pytest.raises(ValidationError, match="weights must be 2 finite"):
        forest.mean_value(np.zeros((1, 4)), owner="m", weights=[1.0, -1.0])
    with pytest.raises(ValidationError, match="one feature count"):
        FlatForest.of([trees[0], random_tree(0, n_features=5)])
    with pytest.raises(ValidationError, match="cannot hold client splits"):
        FlatForest.of(trees, votes=True)


def _fitted_forest() -> tuple[FedForestClassifier, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    model = FedForestClassifier(n_estimators=4, max_depth=3, random_state=0)
    return model.fit(X, y, groups=np.arange(400) % 2), X


def test_estimator_keeps_its_joined_forest_until_refit() -> None:
    model, X = _fitted_forest()
    model.predict_proba(X[:1])
    kept = model._flat_forests["trees_"]
    model.predict_proba(X[:5])
    assert model._flat_forests["trees_"] is kept  # one join per fitted forest
    model.set_params(max_depth=2).fit(X, X[:, 0] > 0, groups=np.arange(400) % 2)
    model.predict_proba(X[:1])
    assert model._flat_forests["trees_"] is not kept
    assert model._flat_forests["trees_"].packs(model.trees_)


def test_pickle_leaves_the_joined_forest_out() -> None:
    model, X = _fitted_forest()
    expected = model.predict_proba(X)
    copy = pickle.loads(pickle.dumps(model))
    assert copy._flat_forests == {}
    np.testing.assert_array_equal(copy.predict_proba(X), expected)


def test_numeric_array_path_equals_the_frame_path() -> None:
    # A numpy array skips pandas; a DataFrame of the same numbers predicts alike.
    model, X = _fitted_forest()
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    np.testing.assert_array_equal(
        model.predict_proba(X.astype(np.float32)),
        model.predict_proba(frame.astype(np.float32)),
    )
    np.testing.assert_array_equal(
        model.predict_proba((X * 10).astype(int)),
        model.predict_proba(pd.DataFrame((X * 10).astype(int))),
    )


def test_per_client_forests_are_joined_once_each() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 2))
    groups = np.arange(300) % 3
    model = LocalModelsRegressor(n_estimators=3, max_depth=3, random_state=0)
    model.fit(X, X[:, 0] * 2.0, groups=groups)
    clients = np.array(["0", "1", "2", "1"], dtype=object)
    got = model.predict(X[:4], client=clients)
    for i, name in enumerate(clients):
        want = mean_value(model.forests_[name], X[i : i + 1])[0, 0]
        assert got[i] == want
    assert set(model._flat_forests) == {
        ("forests_", "0"),
        ("forests_", "1"),
        ("forests_", "2"),
    }
