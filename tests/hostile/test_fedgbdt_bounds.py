"""FedGBDT's losses, gradients and leaves held to what the server knows (issue 37).

Round four of the hostile cases found that one site's reported loss weights of
1e300 alone decided early stopping, and that a site's huge but finite
squared-error gradients, or its bagging leaves, got an honest site blamed for
an infinite loss (the honest site computed it from the model the lie built).
Each value now has a bound that follows from the site's start reply (its rows'
weights and target spread) and the trees grown so far (docs/fedgbdt.md,
"Plausibility bounds"): the lie is refused naming its site and field, honest
sites pass, and a model that the server's own appending drives too far stops
with an error naming the protocol, not a site.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from fedtrees import FedGBDTClassifier, FedGBDTRegressor
from fedtrees.algorithms.fedgbdt._payloads import LevelReply, LocalReply, StartReply
from fedtrees.exceptions import RemoteProtocolError, ValidationError
from fedtrees.federation import Fault, Federation, Payload

Mutation = Callable[[Any], Any]
SITES = ("a", "b", "c", "d")


def _only(kind: type[Payload], change: Mutation) -> Callable[[Payload], Payload]:
    def mutate(reply: Payload) -> Payload:
        return change(reply) if isinstance(reply, kind) else reply

    return mutate


def _data(task: str, rows: int = 80, seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(len(SITES) * rows, 4))
    score = X[:, 0] - 0.5 * X[:, 1] + 0.3 * rng.normal(size=X.shape[0])
    y = score if task == "regression" else (score > 0).astype(int)
    return X, y, np.repeat(SITES, rows)


def _fed(task: str, *faults: Fault, scale: float = 1.0) -> Federation:
    X, y, groups = _data(task)
    return Federation.from_groups(X, y * scale, groups, faults=faults)


def _classifier(**params: Any) -> FedGBDTClassifier:
    defaults = {"n_estimators": 30, "max_depth": 3, "early_stopping_rounds": 3}
    return FedGBDTClassifier(**{**defaults, **params}, random_state=0)


def _regressor(**params: Any) -> FedGBDTRegressor:
    defaults = {"n_estimators": 8, "max_depth": 3, "early_stopping_rounds": 3}
    return FedGBDTRegressor(**{**defaults, **params}, random_state=0)


def _loss(change: Callable[[np.ndarray], np.ndarray]) -> Mutation:
    """Change the losses of a report (replies that report none pass unchanged)."""

    def mutate(reply: Any) -> Any:
        if not np.asarray(reply.loss).any():
            return reply
        return dataclasses.replace(reply, loss=change(np.array(reply.loss)))

    return mutate


def _weighted(value: float) -> Callable[[np.ndarray], np.ndarray]:
    def change(loss: np.ndarray) -> np.ndarray:
        loss[2:] = [value * loss[2] / loss[3], value]  # the same mean, any weight
        return loss

    return change


# -- loss weights and losses ---------------------------------------------------------
@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("weight", [1e300, 1e6], ids=["1e300", "1e6"])
def test_a_sites_validation_loss_weight_beyond_its_rows_is_refused(
    weight: float,
) -> None:
    # It used to decide early stopping alone: the fit kept one tree (0.95 -> 0.89).
    fault = Fault("b", "mutate", mutate=_only(LevelReply, _loss(_weighted(weight))))
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'b', round \d+, 'fedgbdt.level': field 'loss' weighs its "
        r"validation loss by .*but its validation rows weigh 8.0 in its start reply",
    ):
        _classifier().fit_federation(_fed("classification", fault))


@pytest.mark.hostile("clear_error")
def test_a_sites_training_loss_weight_other_than_its_rows_is_refused() -> None:
    def half(loss: np.ndarray) -> np.ndarray:
        loss[:2] /= 2.0  # the same mean loss over half the weight
        return loss

    fault = Fault("c", "mutate", mutate=_only(LevelReply, _loss(half)))
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'c', round \d+, 'fedgbdt.level': field 'loss' weighs its "
        r"training loss by 36.0, but its training rows weigh 72.0",
    ):
        _classifier().fit_federation(_fed("classification", fault))


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("protocol", ["bagging", "cyclic"])
def test_a_baseline_sites_loss_weight_beyond_its_rows_is_refused(
    protocol: str,
) -> None:
    fault = Fault("b", "mutate", mutate=_only(LocalReply, _loss(_weighted(1e300))))
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'b', round \d+, 'fedgbdt.local': field 'loss' weighs its "
        r"validation loss by 1e\+300",
    ):
        _classifier(protocol=protocol, n_estimators=8).fit_federation(
            _fed("classification", fault)
        )


@pytest.mark.hostile("clear_error")
def test_a_squared_error_beyond_what_the_sites_rows_give_is_refused() -> None:
    # Rows of weight W and target spread L about the starting score give at most
    # (sqrt(W)·R + sqrt(L))² under a model that moves a prediction by R.
    def inflate(loss: np.ndarray) -> np.ndarray:
        loss[2] *= 1e6  # the weights are honest, the validation error is not
        return loss

    fault = Fault("d", "mutate", mutate=_only(LevelReply, _loss(inflate)))
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'd', round \d+, 'fedgbdt.level': field 'loss' holds a "
        r"validation squared error of .*, more than the .* that rows of weight 8.0",
    ):
        _regressor().fit_federation(_fed("regression", fault))


# -- gradients and leaves that make an honest site's loss infinite ------------------
def _huge_gradients(reply: LevelReply) -> LevelReply:
    """Multiply every Σg by 1e150: finite, consistent (bins still add up)."""
    node, bins = np.array(reply.node_gh), np.array(reply.bin_stats)
    node[:, 0] *= 1e150
    bins[:, 0] *= 1e150
    return dataclasses.replace(reply, node_gh=node, bin_stats=bins)


@pytest.mark.hostile("clear_error")
def test_huge_finite_squared_error_gradients_are_refused_naming_their_site() -> None:
    # The server's leaves from them reached 1e149: the next round's honest site
    # computed an infinite loss and was blamed for it.
    fault = Fault("b", "mutate", round=3, mutate=_only(LevelReply, _huge_gradients))
    with pytest.raises(RemoteProtocolError, match=r"'fedgbdt\.level'") as info:
        _regressor().fit_federation(_fed("regression", fault))
    assert (info.value.client, info.value.field) == ("b", "node_gh")
    assert "|Σg| vs W·R + sqrt(W·Σw(y - m)²)" in str(info.value)


def _huge_leaves(reply: LocalReply) -> LocalReply:
    return dataclasses.replace(reply, d_value=np.asarray(reply.d_value) * 1e150)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("protocol", ["bagging", "cyclic"])
def test_huge_finite_baseline_leaves_are_refused_naming_their_site(
    protocol: str,
) -> None:
    fault = Fault("c", "mutate", mutate=_only(LocalReply, _huge_leaves))
    with pytest.raises(RemoteProtocolError, match=r"'fedgbdt\.local'") as info:
        _regressor(protocol=protocol, n_estimators=12).fit_federation(
            _fed("regression", fault)
        )
    assert (info.value.client, info.value.field) == ("c", "d_value")
    assert "|a leaf weight| of local tree" in str(info.value)


@pytest.mark.hostile("clear_error")
def test_a_start_prior_beyond_what_the_servers_sums_hold_is_refused_by_name() -> None:
    def spread(reply: StartReply) -> StartReply:
        w, s1, _ = reply.prior
        return dataclasses.replace(reply, prior=np.array([w, s1, 1e305]))

    fault = Fault("a", "mutate", mutate=_only(StartReply, spread))
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'a', round 1, 'fedgbdt.start': field 'prior' holds moments "
        r"whose spread .* is beyond what the server's sums hold",
    ):
        _regressor().fit_federation(_fed("regression", fault))


@pytest.mark.hostile("clear_error")
def test_bagging_that_diverges_stops_naming_the_protocol_not_a_site() -> None:
    # Ten honest sites each fit the whole residual at learning_rate 1: every
    # round overshoots it ninefold, until a site's loss used to overflow and
    # that honest site was blamed ("field 'loss' holds NaN or inf").
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=400)
    groups = np.repeat(list("abcdefghij"), 40)
    model = FedGBDTRegressor(
        protocol="bagging", n_estimators=200, max_depth=2, learning_rate=1.0,
        reg_lambda=0.0, random_state=0,
    )  # fmt: skip
    with pytest.raises(
        ValidationError,
        match=r"FedGBDTRegressor \(protocol='bagging'\): the model's predictions "
        r"diverged: .*lower learning_rate .* or use protocol='histogram'",
    ):
        model.fit(X, y, groups)


# -- honest sites pass every bound ---------------------------------------------------
HONEST = {
    "classifier": (_classifier, "classification", {}),
    "classifier, subsample": (_classifier, "classification", {"subsample": 0.5}),
    "softmax": (_classifier, "softmax", {}),
    "regressor": (_regressor, "regression", {}),
    "regressor, base_score": (_regressor, "regression", {"base_score": -40.0}),
    "regressor, subsample": (_regressor, "regression", {"subsample": 0.6}),
    "bagging": (_regressor, "regression", {"protocol": "bagging"}),
    "cyclic": (_regressor, "regression", {"protocol": "cyclic"}),
    "bagging, classifier": (_classifier, "classification", {"protocol": "bagging"}),
}


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("case", list(HONEST))
def test_honest_sites_with_weights_pass_every_bound_at_any_scale(case: str) -> None:
    make, task, params = HONEST[case]
    X, y, groups = _data("regression" if task == "regression" else "classification")
    if task == "softmax":
        y = np.digitize(X[:, 0] - 0.5 * X[:, 1], [-0.5, 0.5])
    weights = np.random.default_rng(1).uniform(0.05, 3.0, y.shape[0])
    # Targets of 2^10 and of 2^300 (2e90, near the agreed |y| <= 1e100): squared
    # error is scale-free and a power of two scales every sum exactly, so the
    # trees are the same and the predictions scale; labels do not scale.
    small, big = (2.0**10, 2.0**300) if task == "regression" else (1.0, 1.0)
    base = params.get("base_score")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no dropout, no overflow
        one, two = (
            make(
                **{**params, **({} if base is None else {"base_score": base * s})}
            ).fit(X, y * s, groups, sample_weight=weights)
            for s in (small, big)
        )
    np.testing.assert_array_equal(two.predict(X), one.predict(X) * (big / small))
    assert two.n_iter_ == one.n_iter_ > 1


@pytest.mark.hostile("clear_error")
def test_a_site_whose_targets_pass_the_agreed_range_is_refused_up_front() -> None:
    # The range |y| <= 1e100 that fit() asks of pooled targets now holds at every
    # site: a site of 1e160 used to be blamed for its own infinite prior.
    X, y, groups = _data("regression")
    sites = {g: (X[groups == g], y[groups == g]) for g in SITES}
    sites["c"] = (sites["c"][0], sites["c"][1] * 1e160)
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'c', round 0, 'federation.schema': .*regression targets "
        r"must lie within \|y\| <= 1e\+100",
    ):
        _regressor().fit_federation(Federation.from_clients(sites))
