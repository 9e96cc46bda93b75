"""The local forest adapter: its trees carry no NaN direction, so they pack."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.tree import DecisionTreeClassifier

from fedtrees._random import sklearn_seed
from fedtrees.learners import fit_cart, fit_local_forest
from fedtrees.tree import Missing, Tree, pack_trees


@pytest.mark.parametrize("n_classes", [None, 2], ids=["regression", "classification"])
def test_bootstrap_trees_route_nan_to_the_larger_child_and_pack(
    n_classes: int | None,
) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] > 0).astype(np.int64) if n_classes else X[:, 0] + X[:, 1]
    weight = np.where(X[:, 1] > 0, 5.0, 1.0)
    params = {"n_estimators": 6, "max_depth": 5}
    trees = fit_local_forest(
        X, y, n_classes=n_classes, params=params, seed=0, sample_weight=weight
    )
    # The same forest converted as is: bootstrap counts and weights make
    # scikit-learn's distinct-row majority differ from the weighted one somewhere,
    # so Tree.from_sklearn stores explicit directions there.
    forest = RandomForestClassifier if n_classes else RandomForestRegressor
    same = forest(**params, random_state=0, n_jobs=1).fit(X, y, weight)
    assert any(
        np.any(Tree.from_sklearn(est).missing != Missing.LARGER)
        for est in same.estimators_
    )
    assert all(np.all(t.missing == Missing.LARGER) for t in trees)
    assert pack_trees(trees)["node_ptr"][-1] == sum(t.n_nodes for t in trees)


def test_class_weighted_cart_routes_nan_to_the_larger_child_and_packs() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=300) > 0.8).astype(np.int64)
    params = {"class_weight": {0: 1.0, 1: 8.0}}
    tree = fit_cart(X, y, n_classes=2, max_depth=6, seed=0, **params)
    same = DecisionTreeClassifier(max_depth=6, random_state=sklearn_seed(0), **params)
    assert np.any(Tree.from_sklearn(same.fit(X, y)).missing != Missing.LARGER)
    assert np.all(tree.missing == Missing.LARGER)
    assert pack_trees([tree])["node_ptr"].tolist() == [0, tree.n_nodes]
