"""FedGBDT's plausibility bounds against brute-force numpy (docs/fedgbdt.md).

Each bound of :mod:`fedtrees.algorithms.fedgbdt._bounds` must hold for any
rows, weights and raw predictions within the model's reach: an honest site is
never refused. Random rows, adversarial predictions (every raw prediction at
the reach's edge, on the side that makes the sum largest), tiny and huge
scales, far-off means.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fedtrees import FedGBDTRegressor
from fedtrees.algorithms.fedgbdt._bounds import (
    Prior,
    check_gradients,
    check_leaves,
    check_report,
    check_target_scale,
    loss_bound,
)
from fedtrees.algorithms.fedgbdt._config import make_config
from fedtrees.algorithms.fedgbdt._payloads import LocalReply
from fedtrees.exceptions import ValidationError
from fedtrees.federation import InvalidField

SEEDS = range(40)


def _rows(seed: int) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Targets, weights, a starting score and a reach, of varied scales."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    scale = 10.0 ** rng.uniform(-30, 90)
    y = (rng.normal(size=n) + rng.uniform(-1e3, 1e3) * (seed % 3 == 0)) * scale
    w = rng.uniform(0.0, 5.0, n) * 10.0 ** rng.uniform(-20, 20)
    m = float(np.average(y, weights=w + 1e-300) + rng.normal() * scale)
    reach = float(rng.uniform(0, 3) * scale)
    return y, w, m, reach


def _moments(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    return np.array([w.sum(), w @ y, w @ (y * y)])


def _worst_raw(y: np.ndarray, m: float, reach: float) -> np.ndarray:
    """Raw predictions within ``reach`` of m, each as far from its target as it goes."""
    return m + reach * np.where(y > m, -1.0, 1.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_spread_bound_holds_and_is_close(seed: int) -> None:
    y, w, m, _ = _rows(seed)
    prior = Prior.of(_moments(y, w), _moments(y[:0], w[:0]), "squared_error", [m])
    exact = float(w @ ((y - m) ** 2))
    assert prior.train_spread >= exact
    # close, unless the mean is far from the spread (then the moments cancel)
    size = float(w @ (y * y) + 2 * abs(m * (w @ y)) + m * m * w.sum())
    assert prior.train_spread <= exact + 1e-8 * size + 1e-300


@pytest.mark.parametrize("seed", SEEDS)
def test_the_loss_bound_holds_for_the_worst_predictions(seed: int) -> None:
    y, w, m, reach = _rows(seed)
    prior = Prior.of(_moments(y, w), _moments(y[:0], w[:0]), "squared_error", [m])
    raw = _worst_raw(y, m, reach)
    loss = np.array([w @ ((raw - y) ** 2), w.sum(), 0.0, 0.0])
    check_report(loss, prior, "squared_error", reach)  # never refused
    assert loss[0] <= loss_bound(w.sum(), prior.train_spread, reach) * (1 + 1e-6)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_gradient_bound_holds_for_any_node(seed: int) -> None:
    y, w, m, reach = _rows(seed)
    rng = np.random.default_rng(1000 + seed)
    prior = Prior.of(_moments(y, w), _moments(y[:0], w[:0]), "squared_error", [m])
    raw = _worst_raw(y, m, reach)
    for _ in range(20):  # nodes: random subsets, subsampled weights
        take = rng.random(y.shape[0]) < rng.uniform(0.1, 1.0)
        sub = w * take * (rng.random(y.shape[0]) < 0.8)
        g = sub @ (raw - y)
        stats = np.array([[g, sub.sum(), sub.sum()]])
        check_gradients("node_gh", stats, prior, reach, "squared_error")


def test_the_gradient_bound_refuses_a_sum_beyond_it() -> None:
    prior = Prior.of(np.array([4.0, 0.0, 4.0]), np.zeros(3), "squared_error", [0.0])
    # rows of weight 4 with y = ±1 about m = 0, reach 0: |G| <= sqrt(4·4) = 4
    check_gradients("node_gh", np.array([[4.0, 4.0, 4.0]]), prior, 0.0, "squared_error")
    with pytest.raises(InvalidField, match=r"node_gh: is inconsistent .*\|Σg\|"):
        check_gradients(
            "node_gh", np.array([[4.1, 4.0, 4.0]]), prior, 0.0, "squared_error"
        )
    with pytest.raises(InvalidField, match="a weight vs the training rows'"):
        check_gradients(
            "node_gh", np.array([[0.0, 5.0, 5.0]]), prior, 0.0, "squared_error"
        )


def test_loss_weights_must_be_the_rows_weights() -> None:
    prior = Prior(train=72.0, held=8.0)
    check_report(np.array([30.0, 72.0, 4.0, 8.0]), prior, "binary", 0.0)
    for loss, what in (
        ([30.0, 72.0, 4.0, 1e300], "validation loss by 1e\\+300"),
        ([15.0, 36.0, 4.0, 8.0], "training loss by 36.0"),
    ):
        with pytest.raises(InvalidField, match=f"weighs its {what}"):
            check_report(np.array(loss), prior, "binary", 0.0)
    # a masked sum of a smaller cohort: at most the start's weights
    check_report(np.array([30.0, 50.0, 4.0, 6.0]), prior, "binary", 0.0, exact=False)


def test_targets_whose_pooled_spread_overflows_the_sums_are_refused_up_front() -> None:
    check_target_scale(Prior(1e50, 0.0, 4e250), "FedGBDTRegressor")  # |y| <= 1e100
    with pytest.raises(
        ValidationError, match=r"FedGBDTRegressor: the sites' targets are too large"
    ):
        check_target_scale(Prior(1e52, 0.0, 1e260), "FedGBDTRegressor")


def _one_leaf(value: float, cover: float) -> LocalReply:
    """A site's local tree of one leaf (a bagging reply)."""
    one = np.zeros(1, np.int64)
    return LocalReply(
        d_iteration=one, d_node=one, d_kind=np.zeros(1, np.int8), d_feature=one - 1,
        d_bin=one - 1, d_missing_left=np.zeros(1, bool), d_left=one - 1,
        d_right=one - 1, d_value=np.array([value]), d_set_ptr=np.zeros(2, np.int64),
        d_set_codes=np.zeros(0, np.uint8), cover=np.array([cover]), loss=np.zeros(4),
    )  # fmt: skip


@pytest.mark.parametrize("seed", SEEDS)
def test_the_leaf_bound_holds_for_a_leaf_of_any_rows(seed: int) -> None:
    y, w, m, reach = _rows(seed)
    rng = np.random.default_rng(2000 + seed)
    prior = Prior.of(_moments(y, w), _moments(y[:0], w[:0]), "squared_error", [m])
    raw = _worst_raw(y, m, reach)
    config = dataclasses.replace(
        _CONFIG,
        learning_rate=float(rng.uniform(0.01, 1.0)),
        reg_lambda=float(rng.choice([0.0, 1.0, 1e-3])),
    )
    take = rng.random(y.shape[0]) < 0.5
    c = float((w * take).sum())
    g = float((w * take) @ (raw - y))  # h = w: H is the cover
    value = -config.learning_rate * g / (c + config.reg_lambda) if c > 0 else 0.0
    check_leaves(_one_leaf(value, c), prior, reach, config)


def test_the_leaf_bound_refuses_a_leaf_beyond_it() -> None:
    prior = Prior.of(np.array([4.0, 0.0, 4.0]), np.zeros(3), "squared_error", [0.0])
    config = dataclasses.replace(_CONFIG, learning_rate=0.5, reg_lambda=0.0)
    check_leaves(_one_leaf(0.5, 4.0), prior, 0.0, config)  # η·sqrt(4·4)/4
    with pytest.raises(InvalidField, match=r"d_value: .*\|a leaf weight\| of local"):
        check_leaves(_one_leaf(0.6, 4.0), prior, 0.0, config)
    with pytest.raises(InvalidField, match=r"d_value: "):
        check_leaves(_one_leaf(1e-9, 0.0), prior, 0.0, config)  # no rows: 0


_CONFIG = make_config(
    FedGBDTRegressor().get_params(), "squared_error", 0, "FedGBDTRegressor", 0
)
