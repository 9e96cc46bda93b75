"""Federated-ID3's trust assumption: full noise per client, or Truex et al.'s share.

``noise="honest_clients"`` divides each client's noise *variance* by t − 1 (t
honest clients), and charges each client what its releases then cost against
the server, ``ε·sqrt(t − 1)`` (docs/icdta.md, docs/security.md). The variance
is tested statistically on the noise itself: each client's released counts
minus its exact counts, over thousands of cells.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fedtrees import FederatedID3Classifier
from fedtrees.algorithms.fedid3 import LevelReply, LevelRequest
from fedtrees.audit import recording
from fedtrees.exceptions import RemoteProtocolError, ValidationError
from fedtrees.federation import (
    ClientState,
    Envelope,
    Federation,
    decode,
    encode,
    serve,
)

K, F, ARITY, C = 6, 10, 10, 10  # clients, features, values per feature, classes


def _data(seed: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, ARITY, size=(K * 40, F))
    X = pd.DataFrame(
        {
            f"f{j}": pd.Categorical(codes[:, j], categories=range(ARITY))
            for j in range(F)
        }
    )
    y = rng.integers(0, C, size=K * 40)
    return X, y, np.repeat(np.arange(K), 40)


def _root_counts(model: FederatedID3Classifier) -> tuple[dict[str, np.ndarray], Any]:
    """Every client's counts at the root (level 0) and the level-0 request."""
    X, y, groups = _data()
    with recording() as ledgers:  # the sites' noise seed: the same draws each fit
        model.fit(X, y, groups=groups, noise_seed=0)
    (ledger,) = ledgers
    counts, request = {}, None
    for message in ledger.captured:
        payload = decode(message.data).payload
        if isinstance(payload, LevelRequest) and payload.level == 0:
            request = payload
        if isinstance(payload, LevelReply) and message.round == 1:
            counts[message.client] = payload.counts
    assert len(counts) == K
    return counts, request


@cache
def _exact() -> dict[str, np.ndarray]:
    return _root_counts(FederatedID3Classifier(max_depth=1))[0]


def _noise(noise: str, **params: Any) -> tuple[np.ndarray, Any, FederatedID3Classifier]:
    """Each client's root noise (released − exact counts), flattened over clients."""
    exact = _exact()
    model = FederatedID3Classifier(
        epsilon=1.0, max_depth=1, noise=noise, random_state=3, **params
    )
    noisy, request = _root_counts(model)
    draws = np.concatenate([noisy[c] - exact[c] for c in sorted(exact)])
    return draws, request, model


def _within(draws: np.ndarray, variance: float, summed: int = 1) -> None:
    """Sample variance within 5 sds of ``variance``.

    The draws are Laplace, or sums of ``summed`` Laplace draws: kurtosis
    3 + 3/summed, so the sample variance's relative sd is sqrt((kurtosis − 1)/n).
    """
    n = draws.size
    assert n >= 1000
    tolerance = 5 * math.sqrt((2 + 3 / summed) / n)
    assert abs(draws.var() / variance - 1) < tolerance, (draws.var(), variance)
    assert abs(draws.mean()) < 5 * math.sqrt(variance / n)


def test_per_client_noise_is_the_full_laplace_and_the_default() -> None:
    draws, request, model = _noise("per_client")
    share = 1.0 / F  # ε over d = 1 level, shared by the F tables of the root
    assert request.query_epsilon == pytest.approx(share, rel=1e-12)
    assert request.noise_reduction == 1.0
    _within(draws, 2.0 / share**2)
    assert model.noise_reduction_ == 1.0
    assert set(model.epsilon_spent_.values()) == {1.0}
    exact, (noisy, _) = (
        _exact(),
        _root_counts(FederatedID3Classifier(epsilon=1.0, max_depth=1, random_state=3)),
    )  # noise left at its default
    default = np.concatenate([noisy[c] - exact[c] for c in sorted(exact)])
    X, y, groups = _data()
    implicit = FederatedID3Classifier(epsilon=1.0, max_depth=1, random_state=3)
    np.testing.assert_array_equal(
        implicit.fit(X, y, groups=groups, noise_seed=0).predict(X), model.predict(X)
    )
    np.testing.assert_array_equal(default, draws)


@pytest.mark.parametrize("honest", [None, 3])
def test_honest_clients_divide_each_clients_noise_variance_by_t_minus_1(
    honest: int | None,
) -> None:
    full, _, _ = _noise("per_client")
    draws, request, model = _noise("honest_clients", honest_clients=honest)
    t = K if honest is None else honest
    assert request.noise_reduction == model.noise_reduction_ == t - 1
    _within(draws, 2.0 * F**2 / (t - 1))  # the full variance ÷ (t − 1)
    ratio = full.var() / draws.var()
    assert abs(ratio / (t - 1) - 1) < 0.25
    # t − 1 clients' shares add up to the variance of one full draw.
    pooled = draws.reshape(K, -1)[: t - 1].sum(axis=0)
    _within(pooled, 2.0 * F**2, summed=t - 1)
    # Honest accounting: each release is ε'·sqrt(t − 1)-DP against the server.
    cost = math.sqrt(t - 1)
    assert request.query_epsilon == pytest.approx(cost / F, rel=1e-12)
    assert list(model.epsilon_spent_.values()) == [pytest.approx(cost, rel=1e-12)] * K
    assert list(model.epsilon_queried_.values()) == [pytest.approx(cost, rel=1e-12)] * K


def test_a_site_budget_is_charged_what_the_reduced_noise_costs() -> None:
    X, y, groups = _data()
    budget = {"privacy_budget": 2.0}  # per client: ε = 1 fits, 1·sqrt(K - 1) does not
    per_client = FederatedID3Classifier(epsilon=1.0, max_depth=1, random_state=0)
    per_client.fit_federation(Federation.from_groups(X, y, groups, **budget))
    honest = FederatedID3Classifier(
        epsilon=1.0, max_depth=1, noise="honest_clients", random_state=0
    )
    federation = Federation.from_groups(X, y, groups, **budget)
    with pytest.raises(RemoteProtocolError, match=r"budget"):
        honest.fit_federation(federation)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"noise": "secure"}, r"'noise' parameter .* one of 'per_client'"),
        ({"noise": "honest_clients", "epsilon": None}, r"'noise' .* epsilon is None"),
        ({"noise": "honest_clients", "honest_clients": 1}, r"'honest_clients'"),
        (
            {"noise": "honest_clients", "honest_clients": 7},
            r"'honest_clients'.*\[2, 6\]",
        ),
        ({"noise": "honest_clients", "honest_clients": 2.5}, r"'honest_clients'"),
    ],
)
def test_bad_trust_settings_are_refused_by_name(
    params: dict[str, Any], match: str
) -> None:
    X, y, groups = _data()
    model = FederatedID3Classifier(**{"epsilon": 1.0, "max_depth": 1, **params})
    with pytest.raises(ValidationError, match=match):
        model.fit(X, y, groups=groups)


@pytest.mark.parametrize("value", [0.5, math.nan, math.inf, -3.0])
def test_a_site_refuses_an_impossible_noise_reduction_by_name(value: float) -> None:
    X, y, groups = _data()
    federation = Federation.from_groups(X, y, groups)
    with recording() as ledgers:
        FederatedID3Classifier(epsilon=1.0, max_depth=1, random_state=0).fit(
            X, y, groups=groups
        )
    (ledger,) = ledgers
    message = next(m for m in ledger.captured if m.kind == "fedid3.level")
    envelope = decode(message.data)
    bad = dataclasses.replace(envelope.payload, noise_reduction=value)
    site = federation.on_each_site(lambda data: data)[message.client]
    data = encode(
        Envelope("request", envelope.round, envelope.client, envelope.kind, bad)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        answer = decode(serve(data, site, state=ClientState()))
    assert answer.type == "error"
    assert answer.error is not None
    assert "field 'noise_reduction' must be a finite number >= 1" in answer.error
