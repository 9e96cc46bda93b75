"""Every fedtrees estimator passes scikit-learn's estimator checks (groups=None)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import check_estimator

from fedtrees import (
    FedAvgClassifier,
    FederatedID3Classifier,
    FedForestClassifier,
    FedForestRegressor,
    FedGAClassifier,
    FedGARegressor,
    ICDTAClassifier,
    LocalEnsembleClassifier,
    LocalEnsembleRegressor,
    LocalModelsClassifier,
    LocalModelsRegressor,
    SyntheticDataClassifier,
)

ESTIMATORS = [
    FedForestClassifier(n_estimators=3, random_state=0),
    FedForestRegressor(n_estimators=3, random_state=0),
    LocalEnsembleClassifier(n_estimators=3, random_state=0),
    LocalEnsembleRegressor(n_estimators=3, random_state=0),
    LocalModelsClassifier(n_estimators=3, random_state=0),
    LocalModelsRegressor(n_estimators=3, random_state=0),
    FedAvgClassifier(n_rounds=3, random_state=0),
    ICDTAClassifier(random_state=0),
    ICDTAClassifier(base="cart", random_state=0),
    FederatedID3Classifier(),
    FederatedID3Classifier(binary=True),
    SyntheticDataClassifier(random_state=0),
    # FedGA's noisy size is the site's own noise (fresh entropy: no noise seed is
    # given here), yet these checks, which fit twice and compare, hold: with one
    # client (groups=None) the size weighs that client's own fitness only, so the
    # noise cannot change the model. Federated-ID3 above has no epsilon (exact).
    FedGAClassifier(n_generations=3, depth_range=(2, 4), random_state=0),
    FedGARegressor(n_generations=3, depth_range=(2, 4), random_state=0),
]
# As for scikit-learn's own forests: bootstrap (and minibatch) sampling draws rows,
# so a weight of 2 is not the same random model as a repeated row.
SAMPLING = {
    "check_sample_weight_equivalence_on_dense_data": "sampling draws rows, not weight"
}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(
    "estimator",
    ESTIMATORS,
    ids=lambda e: (
        type(e).__name__
        + ("-cart" if getattr(e, "base", "") == "cart" else "")
        + ("-binary" if getattr(e, "binary", False) else "")
    ),
)
def test_passes_scikit_learn_estimator_checks(estimator: BaseEstimator) -> None:
    expected = dict(SAMPLING)
    if type(estimator).__name__.startswith("FedGA"):
        expected["check_fit2d_1sample"] = "K-fold CV needs cv_folds rows per client"
    if isinstance(estimator, FedAvgClassifier):
        expected["check_fit2d_1sample"] = (
            "a client needs 3 rows: fewer leak via moments"
        )
    check_estimator(estimator, expected_failed_checks=expected)


def test_without_sampling_a_weight_equals_repeated_rows() -> None:
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 3)), rng.normal(size=60)
    weight = rng.integers(0, 4, size=60)
    sites = np.arange(60) % 3
    params = {
        "n_estimators": 1,
        "bootstrap": False,
        "max_features": None,
        "candidates": "exact",
    }

    weighted = FedForestRegressor(**params).fit(
        X, y, groups=sites, sample_weight=weight
    )
    repeated = FedForestRegressor(**params).fit(
        np.repeat(X, weight, axis=0),
        np.repeat(y, weight),
        groups=np.repeat(sites, weight),
    )

    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), rtol=1e-12)
