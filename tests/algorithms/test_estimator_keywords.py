"""A wrong argument names the public class, for every estimator (issue 42).

Python's own error named the private base that defines ``__init__``
(``_FedGBDT.__init__() got an unexpected keyword argument``);
``FederatedEstimator`` wraps each ``__init__`` once, and scikit-learn's
``get_params``/``set_params``/``clone`` keep working.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone

import fedtrees
from fedtrees.exceptions import FedTreesError, UnknownParameterError
from fedtrees.federation import Federation

ESTIMATORS = [
    name
    for name in fedtrees.__all__
    if inspect.isclass(getattr(fedtrees, name))
    and issubclass(getattr(fedtrees, name), BaseEstimator)
]


def test_every_public_estimator_is_checked() -> None:
    named = [n for n in fedtrees.__all__ if n.endswith(("Classifier", "Regressor"))]
    assert named == ESTIMATORS
    assert {"FedForestClassifier", "FedGBDTClassifier", "FedGAClassifier"} <= set(
        ESTIMATORS
    )


@pytest.mark.parametrize("name", ESTIMATORS)
def test_an_unknown_keyword_names_the_public_class(name: str) -> None:
    cls = getattr(fedtrees, name)
    params = list(inspect.signature(cls).parameters)
    typo = params[0] + "x"
    with pytest.raises(UnknownParameterError, match=name) as caught:
        cls(**{typo: 1})
    text = str(caught.value)
    assert text.startswith(f"{name} got an unexpected keyword argument {typo!r}")
    assert f"did you mean {params[0]!r}?" in text
    assert "Its parameters are: " + ", ".join(params) in text
    assert "__init__" not in text
    assert isinstance(caught.value, TypeError)
    assert isinstance(caught.value, FedTreesError)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_too_many_positional_arguments_name_the_public_class(name: str) -> None:
    cls = getattr(fedtrees, name)
    params = inspect.signature(cls).parameters.values()
    positional = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    args = [None] * (len(positional) + 1)
    with pytest.raises(UnknownParameterError, match=f"^{name} takes at most"):
        cls(*args)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_scikit_learn_still_reads_the_parameters(name: str) -> None:
    cls = getattr(fedtrees, name)
    estimator = cls()
    params = estimator.get_params()
    assert list(params) == sorted(inspect.signature(cls).parameters)
    copy = clone(estimator)
    assert type(copy) is cls
    assert copy.get_params() == params
    with pytest.raises(
        ValueError, match=f"Invalid parameter 'n_job' for estimator {name}"
    ):
        estimator.set_params(n_job=2)


def test_the_forest_suggests_n_jobs_and_gbdt_names_itself_not_its_base() -> None:
    with pytest.raises(TypeError, match="did you mean 'n_jobs'"):
        fedtrees.FedForestClassifier(n_job=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^FedGBDTRegressor got an unexpected"):
        fedtrees.FedGBDTRegressor(n_job=2)  # type: ignore[call-arg]


# -- fit and fit_federation name the public class too (issue 38) --------------------
NO_SAMPLE_WEIGHT = [
    name
    for name in ESTIMATORS
    if "sample_weight" not in inspect.signature(getattr(fedtrees, name).fit).parameters
]


def _rows() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    return X, (X[:, 0] > 0).astype(int), np.repeat(["a", "b"], 6)


def test_the_methods_without_sample_weight_are_these() -> None:
    assert set(NO_SAMPLE_WEIGHT) == {
        "ICDTAClassifier",
        "FederatedID3Classifier",
        "SyntheticDataClassifier",
        "FedGAClassifier",
        "FedGARegressor",
    }


@pytest.mark.parametrize("name", NO_SAMPLE_WEIGHT)
def test_fit_with_sample_weight_names_the_public_class(name: str) -> None:
    # Python's own error named the private base that defines fit
    # ("SingleTreeClassifier.fit() got an unexpected keyword argument").
    X, y, groups = _rows()
    cls = getattr(fedtrees, name)
    with pytest.raises(UnknownParameterError, match=rf"^{name}\.fit got") as caught:
        cls().fit(X, y, groups, sample_weight=np.ones(12))
    text = str(caught.value)
    assert text.startswith(
        f"{name}.fit got an unexpected keyword argument 'sample_weight'"
    )
    params = inspect.signature(cls.fit).parameters
    assert "Its parameters are: " + ", ".join(list(params)[1:]) in text
    assert "SingleTree" not in text
    assert "_FedGA" not in text
    assert isinstance(caught.value, TypeError)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_misspelt_fit_keyword_names_the_public_class(name: str) -> None:
    X, y, groups = _rows()
    cls = getattr(fedtrees, name)
    with pytest.raises(UnknownParameterError, match=rf"^{name}\.fit got") as caught:
        cls().fit(X, y, groups, nosie_seed=0)
    assert str(caught.value).startswith(
        f"{name}.fit got an unexpected keyword argument 'nosie_seed'; "
        "did you mean 'noise_seed'?"
    )
    federation = Federation.from_groups(X, y, groups)
    with pytest.raises(
        UnknownParameterError, match=rf"^{name}\.fit_federation"
    ) as caught:
        cls().fit_federation(federation, callback=[])
    assert str(caught.value).startswith(
        f"{name}.fit_federation got an unexpected keyword argument 'callback'; "
        "did you mean 'callbacks'?"
    )
