"""Integer settings of any integral type meet one bound check (issue 24, family 1).

Every integer setting goes through :func:`fedtrees._validation.check_int` (via
``is_integral``): a numpy integer meets the same bounds as a Python ``int``, a
Python ``int`` beyond 64 bits meets them too, and a setting that travels to the
clients in a request is bounded at ``fit``, by name, before any round — so a
client is never blamed for the server's own parameter. Where a numpy integer
used to be refused (``max_features``, ``hidden_layer_sizes``, ``Tree``), it now
gives the model of the equal ``int``.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from typing import Any

import numpy as np
import pytest

import fedtrees
from fedtrees import Federation, stats
from fedtrees.algorithms import run_toy
from fedtrees.exceptions import ValidationError
from fedtrees.experiments.fedforest_heart import HeartConfig
from fedtrees.experiments.fedgbdt import FedGBDTConfig
from fedtrees.federation import (
    Field,
    InvalidField,
    Payload,
    ReplySpec,
    RoundEnv,
    check_reply,
    payload,
)
from fedtrees.learners import fit_cart

HUGE = 2**70  # an int beyond the 64 bits a request carries


def _data(n: int = 30) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    return X, (X[:, 0] > 0).astype(np.int64), np.repeat(["a", "b", "c"], n // 3)


def _no_round(env: RoundEnv) -> None:
    """Fail the fit as soon as a round after the agreement has run."""
    if env.round >= 1:
        raise AssertionError(f"round {env.round} ran before the setting was refused")


def _fit_without_rounds(name: str, params: dict[str, Any]) -> None:
    X, y, groups = _data()
    federation = Federation.from_groups(X, y, groups)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        getattr(fedtrees, name)(**params).fit_federation(
            federation, callbacks=[_no_round]
        )


# -- settings that travel to the clients, or count rounds --------------------------
SENT_OR_COUNTED = [
    # Rounds beyond the loop's cap: the run used to stop there, short.
    ("FedAvgClassifier", {"n_rounds": np.int64(10**6)}, r"'n_rounds'.*99999"),
    (
        "FedGAClassifier",
        {"population_size": 4, "n_generations": np.int64(10**6)},
        r"'n_generations'.*99996",
    ),
    # Checked only by the clients: each one failed, blamed for the setting.
    ("FedAvgClassifier", {"local_steps": np.int64(2**30)}, r"'local_steps'"),
    ("FedAvgClassifier", {"local_epochs": np.int64(2**20)}, r"'local_epochs'"),
    ("FedAvgClassifier", {"batch_size": 2**62 + 1}, r"'batch_size'"),
    ("FedAvgClassifier", {"batch_size": HUGE}, r"'batch_size'"),
    (
        "SyntheticDataClassifier",
        {"min_samples_split": np.int64(2**40)},
        r"'min_samples_split'.*2147483647",
    ),
    (
        "SyntheticDataClassifier",
        {"min_samples_leaf": np.uint64(2**40)},
        r"'min_samples_leaf'.*2147483647",
    ),
    # Beyond 64 bits: the codec refused the request, naming no setting.
    ("SyntheticDataClassifier", {"client_max_depth": HUGE}, r"'client_max_depth'"),
    ("ICDTAClassifier", {"max_depth": HUGE}, r"'max_depth'.*2147483647"),
    ("ICDTAClassifier", {"base": "cart", "max_depth": HUGE}, r"'max_depth'"),
    ("FederatedID3Classifier", {"max_depth": HUGE}, r"'max_depth'"),
    # scikit-learn's C ints: every client failed with an OverflowError.
    ("LocalEnsembleClassifier", {"max_depth": HUGE}, r"'max_depth'"),
    ("LocalModelsClassifier", {"max_depth": np.int64(2**40)}, r"'max_depth'"),
]


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("name", "params", "match"),
    SENT_OR_COUNTED,
    ids=[f"{n}-{list(p)[-1]}" for n, p, _ in SENT_OR_COUNTED],
)
def test_a_setting_is_bounded_by_name_before_any_round(
    name: str, params: dict[str, Any], match: str
) -> None:
    with pytest.raises(ValidationError, match=rf"{match}"):
        _fit_without_rounds(name, params)


@pytest.mark.hostile("clear_error")
def test_more_classes_than_fedgbdt_grows_trees_for_names_y_before_any_round() -> None:
    # Every client used to refuse the first level ('n_trees'), blamed for it.
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(1100, 2)), np.arange(1100)
    federation = Federation.from_groups(X, y, np.repeat(["a", "b"], 550))
    model = fedtrees.FedGBDTClassifier(n_estimators=1, max_depth=1)
    with pytest.raises(ValidationError, match=r"'y' .*at most 1024 classes"):
        model.fit_federation(federation, callbacks=[_no_round])


@pytest.mark.hostile("clear_error")
def test_cv_folds_no_client_can_hold_is_refused_naming_it() -> None:
    # Every client used to fail its K-fold split, each error stating its rows.
    with pytest.raises(ValidationError, match=r"'cv_folds' .*no client holds"):
        _fit_without_rounds(
            "FedGAClassifier", {"population_size": 4, "cv_folds": np.int64(10**9)}
        )


@pytest.mark.hostile("clear_error")
def test_a_client_too_small_for_the_folds_says_so_without_its_row_count() -> None:
    X, y, _ = _data(45)
    groups = np.repeat(["a", "b", "c"], [7, 19, 19])  # a: 7 rows, bound 8
    model = fedtrees.FedGAClassifier(
        population_size=4, n_generations=1, cv_folds=8, random_state=0
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y, groups)
    dropped = [str(w.message) for w in caught if "Client 'a'" in str(w.message)]
    assert dropped, "client 'a' cannot make 8 folds of 7 rows"
    assert all("folds=8" in m and not re.search(r"\b7\b", m) for m in dropped)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"population_size": 0}, r"'population_size'.*\[2, 10000\]"),
        ({"population_size": np.int64(0)}, r"'population_size'"),
        ({"depth_range": (2.7, 4.2)}, r"'depth_range' .*ints"),
    ],
    ids=["zero", "numpy-zero", "floats"],
)
def test_fedga_settings_are_not_replaced_or_truncated(
    params: dict[str, Any], match: str
) -> None:
    # 0 used to mean the default population; 2.7 was truncated to depth 2.
    with pytest.raises(ValidationError, match=match):
        _fit_without_rounds("FedGAClassifier", {"n_generations": 1, **params})


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("config", "match"),
    [
        (HeartConfig(n_estimators=np.int64(10**9)), r"'n_estimators'.*100000"),
        (HeartConfig(n_quantiles=np.int64(10**7)), r"'n_quantiles'.*4096"),
        (FedGBDTConfig(n_estimators=np.int64(10**9)), r"'n_estimators'.*10000"),
        (FedGBDTConfig(max_depth=np.int64(40)), r"'max_depth'.*16"),
    ],
    ids=["heart-trees", "heart-quantiles", "gbdt-trees", "gbdt-depth"],
)
def test_experiment_configs_bound_what_their_estimators_bound(
    config: Any, match: str
) -> None:
    # The configs took any int: the pooled scikit-learn baselines (built with
    # the same n_estimators) then ran out of memory.
    with pytest.raises(ValidationError, match=match):
        config.validated()


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: stats.quantile_sketch([1.0, 2.0], q=np.int64(2**40)), r"'q'.*4096"),
        (lambda: stats.bin_sketches([[1.0], [2.0]], q=2**40), r"'q'.*4096"),
        (
            lambda: stats.uniform_candidates(np.zeros((1, 1, 2)), q=np.uint64(2**40)),
            r"'q' parameter of uniform_candidates",
        ),
        (
            lambda: stats.quantile_bin_edges(
                np.array([[[1.0, 2.0]]]), np.array([[2.0]]), np.int64(2**40)
            ),
            r"'n_bins' parameter of quantile_bin_edges",
        ),
    ],
    ids=["quantile_sketch", "bin_sketches", "uniform_candidates", "bin_edges"],
)
def test_a_grid_width_is_bounded_in_the_statistics_too(call: Any, match: str) -> None:
    # The statistics took any q: numpy's MemoryError for 2^40 columns.
    with pytest.raises(ValidationError, match=match):
        call()


@pytest.mark.hostile("clear_error")
def test_the_toy_protocol_bounds_its_rounds() -> None:
    X, y, groups = _data()
    federation = Federation.from_groups(X, y, groups)
    with pytest.raises(ValidationError, match=r"'n_rounds' parameter of run_toy"):
        run_toy(federation, n_rounds=np.int64(10**6), callbacks=[_no_round])


# -- numpy integers that used to be refused ---------------------------------------
@pytest.mark.hostile("correct")
@pytest.mark.parametrize("name", ["FedForestClassifier", "LocalEnsembleClassifier"])
def test_a_numpy_max_features_gives_the_model_of_the_int(name: str) -> None:
    X, y, groups = _data()

    def predict(value: object) -> np.ndarray:
        model = getattr(fedtrees, name)(
            n_estimators=2, max_features=value, random_state=0
        )
        return np.asarray(model.fit(X, y, groups).predict_proba(X))

    np.testing.assert_array_equal(predict(np.int64(2)), predict(2))


@pytest.mark.hostile("correct")
def test_numpy_hidden_layer_sizes_give_the_network_of_the_ints() -> None:
    X, y, groups = _data()

    def coefs(sizes: tuple[object, ...]) -> list[np.ndarray]:
        model = fedtrees.FedAvgClassifier(sizes, n_rounds=1, random_state=0)
        return list(model.fit(X, y, groups).coefs_)

    for a, b in zip(coefs((np.int64(4), np.int32(3))), coefs((4, 3)), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.hostile("correct")
def test_a_numpy_class_weight_is_a_weight() -> None:
    X, y, groups = _data()

    def tree(weights: dict[int, object]) -> Any:
        model = fedtrees.SyntheticDataClassifier(class_weight=weights, random_state=0)
        return model.fit(X, y, groups).tree_

    a, b = tree({0: np.int64(2), 1: np.float32(1.0)}), tree({0: 2, 1: 1.0})
    np.testing.assert_array_equal(a.threshold, b.threshold)


@pytest.mark.hostile("correct")
def test_a_tree_takes_a_numpy_n_features_as_an_int() -> None:
    X, y, _ = _data()
    tree = fit_cart(X, y, n_classes=2, max_depth=2, seed=0)
    same = dataclasses.replace(tree, n_features=np.int64(3))
    assert type(same.n_features) is int
    assert fedtrees.Tree.from_dict(same.to_dict()).n_features == 3


# -- a reply's scalar bounds ------------------------------------------------------
@payload("test.integral_reply")
class _Reply(Payload):
    count: int


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("value", [np.int64(10), np.uint8(10), np.float32(10.0)])
def test_a_reply_scalar_of_a_numpy_type_meets_its_bounds(value: object) -> None:
    # Only int and float met Field bounds: a numpy scalar skipped them.
    spec = ReplySpec(_Reply, {"count": Field.scalar(low=0.0, high=5.0)})
    with pytest.raises(InvalidField, match=r"at most 5\.0 expected"):
        check_reply(spec, _Reply(value))  # type: ignore[arg-type]
