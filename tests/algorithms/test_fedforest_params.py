"""scikit-learn's class_weight, oob_score and n_jobs on FedForest (issue 42).

References: scikit-learn's own trees and forests on the pooled rows where the
bootstrap can be made the same (none, or a given one as sample weights), and a
brute-force numpy computation from the same bootstrap counts otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import r2_score
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.class_weight import compute_class_weight, compute_sample_weight

from fedtrees import FedForestClassifier, FedForestRegressor
from fedtrees._random import client_key, keyed_rng
from fedtrees.audit import find_client_values
from fedtrees.exceptions import UnknownParameterError, ValidationError
from fedtrees.federation import Federation, recording
from tests.algorithms.exact_compare import divergences, is_exact_tie

EXACT_TREE = {"bootstrap": False, "max_features": None, "candidates": "exact"}
BOOTSTRAP_STREAM = 0  # the forest's bootstrap stream (fedforest._client)


def _imbalanced(seed: int, n: int = 240) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three classes of about 70/20/10 %, float32-exact values, 3 sites."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).astype(np.float32).astype(np.float64)
    score = X[:, 0] + 0.7 * X[:, 1] + rng.normal(scale=0.6, size=n)
    y = np.digitize(score, np.quantile(score, [0.7, 0.9]))
    sites = rng.integers(0, 3, n)
    return X, y, sites


def _sklearn_min_weight(weights: np.ndarray) -> float:
    """scikit-learn's ``min_weight_fraction_leaf`` matching our weighted leaf of 1.

    FedForest counts ``min_samples_leaf`` in weighted rows (bootstrap counts x
    sample x class weights): a child needs weight >= 1, which with
    ``min_samples_leaf=1`` scikit-learn asks as a weight fraction.
    """
    return (1.0 - 1e-9) / float(np.sum(weights))


def _assert_same_tree(ours: Any, sk: Any) -> None:
    for _path, _kind, a, b in divergences(ours, sk):
        assert is_exact_tie(ours, sk, a, b)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("class_weight", ["balanced", {0: 1.0, 1: 2.5, 2: 6.0}])
def test_class_weight_equals_scikit_learn_on_the_pooled_rows(
    seed: int, class_weight: object
) -> None:
    X, y, sites = _imbalanced(seed)
    expanded = compute_sample_weight(class_weight, y)
    params = {"max_depth": 5, "criterion": "gini", "random_state": 0}
    sk = RandomForestClassifier(
        n_estimators=1,
        bootstrap=False,
        max_features=None,
        class_weight=class_weight,
        min_weight_fraction_leaf=_sklearn_min_weight(expanded),
        **params,
    ).fit(X, y)
    ours = FedForestClassifier(
        n_estimators=1, class_weight=class_weight, **EXACT_TREE, **params
    ).fit(X, y, groups=sites)
    tree, sk_tree = ours.trees_[0], sk.estimators_[0].tree_
    _assert_same_tree(tree, sk_tree)
    # The root holds the class-weighted counts scikit-learn's tree holds.
    np.testing.assert_allclose(tree.count[0], sk_tree.weighted_n_node_samples[0])
    if not divergences(tree, sk_tree):
        np.testing.assert_allclose(
            ours.predict_proba(X), sk.predict_proba(X), rtol=1e-9, atol=1e-12
        )


def test_balanced_class_weight_differs_from_none_and_equals_the_decision_tree() -> None:
    X, y, sites = _imbalanced(5)
    sk = DecisionTreeClassifier(
        max_depth=4,
        class_weight="balanced",
        min_weight_fraction_leaf=_sklearn_min_weight(
            compute_sample_weight("balanced", y)
        ),
        random_state=0,
    ).fit(X, y)
    balanced = FedForestClassifier(
        n_estimators=1, max_depth=4, class_weight="balanced", **EXACT_TREE
    ).fit(X, y, groups=sites)
    plain = FedForestClassifier(n_estimators=1, max_depth=4, **EXACT_TREE).fit(
        X, y, groups=sites
    )
    _assert_same_tree(balanced.trees_[0], sk.tree_)
    assert not np.allclose(balanced.predict_proba(X), plain.predict_proba(X))
    # "balanced": n / (n_classes * count), from the pooled counts
    want = compute_class_weight("balanced", classes=np.unique(y), y=y)
    np.testing.assert_allclose(
        balanced.trees_[0].count[0], float(np.sum(want[y])), rtol=1e-12
    )


def _site_counts(seed: int, tree: int, sites: np.ndarray) -> np.ndarray:
    """How often tree ``tree`` drew each pooled row (each site draws its own)."""
    counts = np.zeros(sites.shape[0])
    for site in np.unique(sites):
        rows = np.flatnonzero(sites == site)
        rng = keyed_rng(seed, BOOTSTRAP_STREAM, tree, client_key(str(site)))
        draws = rng.integers(0, rows.shape[0], rows.shape[0])
        counts[rows] = np.bincount(draws, minlength=rows.shape[0])
    return counts


def test_balanced_subsample_weighs_each_tree_by_its_own_bootstrap() -> None:
    # scikit-learn's balanced_subsample on the same bootstrap counts: the tree
    # fitted with counts x compute_sample_weight("balanced", y, indices=draws).
    X, y, sites = _imbalanced(7)
    model = FedForestClassifier(
        n_estimators=3,
        max_depth=4,
        max_features=None,
        candidates="exact",
        class_weight="balanced_subsample",
        random_state=3,
    ).fit(X, y, groups=sites)
    for b, tree in enumerate(model.trees_):
        counts = _site_counts(model.config_.seed, b, sites)
        draws = np.repeat(np.arange(y.shape[0]), counts.astype(int))
        weight = counts * compute_sample_weight("balanced", y, indices=draws)
        sk = DecisionTreeClassifier(
            max_depth=4,
            min_weight_fraction_leaf=_sklearn_min_weight(weight),
            random_state=0,
        ).fit(X, y, sample_weight=weight)
        np.testing.assert_allclose(tree.count[0], sk.tree_.weighted_n_node_samples[0])
        _assert_same_tree(tree, sk.tree_)


def _oob_reference(model: Any, X: object, y: np.ndarray, sites: np.ndarray) -> float:
    """Brute force: each tree predicts the rows its bootstrap left out."""
    encoded = model._encode(X)
    n = y.shape[0]
    total, seen = None, np.zeros(n)
    for b, tree in enumerate(model.trees_):
        out = _site_counts(model.config_.seed, b, sites) == 0
        value = tree.predict_value(encoded)
        total = np.zeros_like(value) if total is None else total
        total[out] += value[out]
        seen += out
    pred = total / np.maximum(seen, 1)[:, None]
    if isinstance(model, FedForestRegressor):
        return float(r2_score(y, pred[:, 0]))
    codes = np.searchsorted(model.classes_, y)
    return float(np.mean(pred.argmax(axis=1) == codes))


@pytest.mark.parametrize("candidates", ["hist", "quantile"])
def test_oob_score_equals_the_brute_force_reference(candidates: str) -> None:
    X, y, sites = _imbalanced(11)
    model = FedForestClassifier(
        n_estimators=15,
        max_depth=4,
        candidates=candidates,
        class_weight="balanced",
        oob_score=True,
        random_state=1,
    ).fit(X, y, groups=sites)
    assert model.oob_score_ == pytest.approx(_oob_reference(model, X, y, sites))
    assert 0.5 < model.oob_score_ < 1.0


def test_oob_score_routes_missing_values_and_categories_as_predict() -> None:
    X, y, sites = _imbalanced(12, n=300)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame.loc[::7, "a"] = np.nan
    frame["kind"] = pd.Categorical(np.where(X[:, 1] > 0, "high", "low"))
    frame.loc[::11, "kind"] = np.nan
    model = FedForestClassifier(
        n_estimators=12, max_depth=5, oob_score=True, random_state=2
    ).fit(frame, y, groups=sites)
    assert model.oob_score_ == pytest.approx(_oob_reference(model, frame, y, sites))


def test_oob_r2_of_the_regressor_equals_the_reference() -> None:
    X, _, sites = _imbalanced(13)
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2
    model = FedForestRegressor(
        n_estimators=10, max_depth=4, oob_score=True, random_state=0
    ).fit(X, y, groups=sites)
    assert model.oob_score_ == pytest.approx(
        _oob_reference(model, X, y, sites), rel=1e-9
    )


def test_few_trees_warn_as_scikit_learn_when_a_row_has_no_oob_tree() -> None:
    X, y, sites = _imbalanced(14, n=60)
    with pytest.warns(UserWarning, match="Some inputs do not have OOB scores"):
        model = FedForestClassifier(
            n_estimators=2, max_depth=2, oob_score=True, random_state=0
        ).fit(X, y, groups=sites)
    assert model.oob_score_ == pytest.approx(_oob_reference(model, X, y, sites))


def _forest_arrays(model: Any) -> list[np.ndarray]:
    return [
        a
        for t in model.trees_
        for a in (t.feature, t.threshold, t.value, t.count, t.left, t.right)
    ]


@pytest.mark.parametrize("candidates", ["hist", "quantile"])
def test_n_jobs_does_not_change_the_model(candidates: str) -> None:
    X, y, sites = _imbalanced(15)
    fits = [
        FedForestClassifier(
            n_estimators=6,
            max_depth=4,
            candidates=candidates,
            n_jobs=n_jobs,
            oob_score=True,
            random_state=4,
        ).fit(X, y, groups=sites)
        for n_jobs in (None, 1, 2, -1)
    ]
    first = _forest_arrays(fits[0])
    for other in fits[1:]:
        for a, b in zip(first, _forest_arrays(other), strict=True):
            np.testing.assert_array_equal(a, b)
        assert other.oob_score_ == fits[0].oob_score_


def test_bad_n_jobs_and_both_thread_settings_are_refused_by_name() -> None:
    X, y, sites = _imbalanced(16, n=60)
    with pytest.raises(ValidationError, match=r"'n_jobs' parameter of FedForest"):
        FedForestClassifier(n_jobs=0).fit(X, y, groups=sites)
    with pytest.raises(ValidationError, match="workers=2 and n_jobs=2"):
        FedForestClassifier(n_jobs=2, workers=2).fit(X, y, groups=sites)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"class_weight": "balance"}, r"'class_weight' parameter of FedForestCl"),
        ({"class_weight": {0: -1.0}}, r"class_weight\[0\] = -1.0 is not"),
        ({"class_weight": {"sick": 2.0}}, r"label 'sick', which is not a class"),
        ({"oob_score": True, "bootstrap": False}, "oob_score=True needs bootstrap"),
        ({"oob_score": lambda a, b: 0.0}, "needs every row's out-of-bag"),
        ({"oob_score": "yes"}, r"'oob_score' parameter of FedForestClassifier"),
    ],
)
def test_bad_class_weight_and_oob_score_are_refused_by_name(
    params: dict[str, Any], match: str
) -> None:
    X, y, sites = _imbalanced(17, n=60)
    with pytest.raises(ValidationError, match=match):
        FedForestClassifier(n_estimators=2, max_depth=2, **params).fit(
            X, y, groups=sites
        )


@pytest.mark.parametrize("params", [{"class_weight": "balanced"}, {"oob_score": True}])
def test_secure_aggregation_refuses_class_weight_and_oob_by_name(
    params: dict[str, Any],
) -> None:
    X, y, sites = _imbalanced(18, n=90)
    model = FedForestClassifier(
        secure_aggregation=True, bin_edges={0: [0.0], 1: [0.0], 2: [0.0]}, **params
    )
    name = next(iter(params))
    with pytest.raises(ValidationError, match=f"{name} needs the plain protocol"):
        model.fit(X, y, groups=sites)


def test_the_regressor_has_no_class_weight() -> None:
    with pytest.raises(UnknownParameterError, match="FedForestRegressor got an"):
        FedForestRegressor(class_weight="balanced")  # type: ignore[call-arg]


def test_the_new_rounds_travel_through_the_codec_and_pass_the_audit() -> None:
    # One more round each: the class counts before the forest, the out-of-bag
    # sums after it; both recorded by the ledger and searched by the value
    # audit (the conformance suite runs them too: "FedForestClassifier-params").
    X, y, sites = _imbalanced(19, n=150)
    fed = Federation.from_groups(X, y, sites)
    model = FedForestClassifier(
        n_estimators=4,
        max_depth=3,
        max_bins=16,
        class_weight="balanced_subsample",
        oob_score=True,
        random_state=0,
    )
    with recording() as ledgers:
        model.fit_federation(fed)
    (ledger,) = ledgers
    kinds = [(m.kind, m.direction) for m in ledger.captured]
    for kind in ("fedforest.class_counts", "fedforest.oob"):
        assert (kind, "down") in kinds
        assert (kind, "up") in kinds
    report = find_client_values(ledger, fed)
    assert report.messages == len(ledger.captured)
    assert model.communication_.rounds == 1 + 1 + 1 + 3 + 1  # counts, grid, oob
