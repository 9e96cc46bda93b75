"""Model selection with groups: scikit-learn's metadata routing fits federations.

With routing on, ``GridSearchCV``/``cross_validate`` with ``GroupKFold`` hand
``groups`` to the splitter and to every fit (the estimators request it by
default), so each tuned model has the clients of its training rows. With routing
off, the fits are centralized and the warning says how to route ``groups``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import numpy as np
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import fedtrees
from fedtrees import FedForestClassifier
from fedtrees.algorithms._base import FederatedEstimator
from fedtrees.exceptions import CentralizedFitWarning

SITES = ("a", "b", "c", "d")
ESTIMATORS = sorted(
    name
    for name in fedtrees.__all__
    if isinstance(getattr(fedtrees, name), type)
    and issubclass(getattr(fedtrees, name), FederatedEstimator)
)


def _data(per_site: int = 20) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(per_site * len(SITES), 3))
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(np.int64)
    return X, y, np.repeat(SITES, per_site)


def _forest() -> FedForestClassifier:
    return FedForestClassifier(n_estimators=3, max_depth=3, random_state=0)


@pytest.fixture
def routing() -> Iterator[None]:
    with sklearn.config_context(enable_metadata_routing=True):
        yield


@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_estimator_requests_groups_for_fit_by_default(name: str) -> None:
    estimator = getattr(fedtrees, name)()
    assert estimator.get_metadata_routing().fit.requests["groups"] is True


@pytest.mark.usefixtures("routing")
def test_grid_search_with_group_kfold_tunes_a_federated_model() -> None:
    X, y, site = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CentralizedFitWarning)
        search = GridSearchCV(_forest(), {"max_depth": [2, 3]}, cv=GroupKFold(3))
        search.fit(X, y, groups=site)
    assert search.best_estimator_.clients_ == SITES  # the refit uses every site


@pytest.mark.usefixtures("routing")
def test_cross_validate_fits_each_fold_on_its_training_sites() -> None:
    X, y, site = _data()
    splitter = GroupKFold(len(SITES))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CentralizedFitWarning)
        result = cross_validate(
            _forest(),
            X,
            y,
            params={"groups": site},  # with routing on, cross_validate's way
            cv=splitter,
            return_estimator=True,
        )
    expected = [
        tuple(np.unique(site[train]).tolist())
        for train, _ in splitter.split(X, y, site)
    ]
    assert [model.clients_ for model in result["estimator"]] == expected
    assert all(len(clients) == len(SITES) - 1 for clients in expected)


@pytest.mark.usefixtures("routing")
def test_pipeline_routes_groups_to_its_federated_step() -> None:
    X, y, site = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CentralizedFitWarning)
        pipe = make_pipeline(StandardScaler(), _forest()).fit(X, y, groups=site)
    assert pipe[-1].clients_ == SITES


@pytest.mark.usefixtures("routing")
def test_set_fit_request_false_opts_out_of_the_groups() -> None:
    X, y, site = _data()
    estimator = _forest().set_fit_request(groups=False)
    search = GridSearchCV(estimator, {"max_depth": [3]}, cv=GroupKFold(3))
    with pytest.warns(CentralizedFitWarning, match="without groups"):
        search.fit(X, y, groups=site)
    assert search.best_estimator_.clients_ == ("0",)


def test_without_routing_the_warning_says_how_to_route_groups() -> None:
    X, y, site = _data()
    search = GridSearchCV(_forest(), {"max_depth": [3]}, cv=GroupKFold(3))
    with pytest.warns(CentralizedFitWarning) as caught:
        search.fit(X, y, groups=site)
    assert search.best_estimator_.clients_ == ("0",)
    message = str(caught[0].message)
    assert "enable_metadata_routing=True" in message
    assert "__groups=" in message
