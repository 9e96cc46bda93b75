from __future__ import annotations

import math
from dataclasses import FrozenInstanceError

import numpy as np
import pytest
from scipy import stats

from fedtrees.exceptions import ValidationError
from fedtrees.privacy import ClippedLaplace, Laplace

N = 200_000


@pytest.mark.parametrize(
    ("epsilon", "sensitivity"), [(0.1, 1.0), (1.0, 1.0), (2.0, 3.0)]
)
def test_laplace_noise_has_the_analytic_scale(
    epsilon: float, sensitivity: float
) -> None:
    mech = Laplace(epsilon, sensitivity)
    assert mech.scale == sensitivity / epsilon
    noise = mech.sample(np.full(N, 5.0), np.random.default_rng(2024)) - 5.0
    b = mech.scale
    assert abs(noise.mean()) < 5 * math.sqrt(mech.variance() / N)
    assert noise.var() == pytest.approx(mech.variance(), rel=0.02)
    assert np.median(np.abs(noise)) == pytest.approx(b * math.log(2), rel=0.02)
    assert stats.kstest(noise, stats.laplace(scale=b).cdf).pvalue > 1e-3


def test_laplace_satisfies_epsilon_dp_on_neighbouring_inputs() -> None:
    # Empirical check of P[M(0) in S] <= e^eps P[M(1) in S] over interval events.
    eps = 0.5
    mech = Laplace(eps)
    rng = np.random.default_rng(7)
    a, b = mech.sample(np.zeros(N), rng), mech.sample(np.ones(N), rng)
    edges = np.linspace(-6, 7, 27)
    pa = np.histogram(a, edges)[0] / N
    pb = np.histogram(b, edges)[0] / N
    enough = (pa > 2e-3) & (pb > 2e-3)
    ratio = np.maximum(pa[enough] / pb[enough], pb[enough] / pa[enough])
    assert ratio.max() <= math.exp(eps) * 1.15  # sampling slack
    assert ratio.max() >= math.exp(eps) * 0.85  # and the bound is nearly tight


def test_clipped_laplace_is_never_below_lower_and_clips_the_right_mass() -> None:
    mech = ClippedLaplace(epsilon=0.5)
    rng = np.random.default_rng(3)
    for value in (0.0, 1.0, 4.0):
        out = mech.sample(np.full(N, value), rng)
        assert out.min() >= 0.0
        expected = 0.5 * math.exp(-value / mech.scale)  # P[value + Lap(b) <= 0]
        assert np.mean(out == 0.0) == pytest.approx(expected, abs=0.005)


def test_clipping_to_a_window() -> None:
    out = ClippedLaplace(0.01, lower=-1.0, upper=1.0).sample(
        np.zeros(1000), np.random.default_rng(0)
    )
    assert out.min() == -1.0
    assert out.max() == 1.0


def test_same_seed_same_noise_and_infinite_epsilon_is_noise_free() -> None:
    a = Laplace(1.0).sample(np.zeros(10), np.random.default_rng(5))
    b = Laplace(1.0).sample(np.zeros(10), np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(Laplace(math.inf).sample(x, None), x)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epsilon": 0.0}, "'epsilon' parameter of Laplace must be a float"),
        ({"epsilon": -1.0}, "'epsilon' parameter of Laplace"),
        ({"epsilon": float("nan")}, "'epsilon' parameter of Laplace"),
        ({"epsilon": "1"}, "'epsilon' parameter of Laplace"),
        ({"epsilon": 1.0, "sensitivity": 0.0}, "'sensitivity' parameter of Laplace"),
        (
            {"epsilon": 1.0, "sampler": "torch"},
            "'sampler' parameter of Laplace must be one of",
        ),
    ],
)
def test_invalid_parameters(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Laplace(**kwargs)  # type: ignore[arg-type]


def test_invalid_clipping_and_inputs() -> None:
    with pytest.raises(ValidationError, match="'upper' parameter of ClippedLaplace"):
        ClippedLaplace(1.0, lower=1.0, upper=0.0)
    with pytest.raises(ValidationError, match=r"'rng' parameter of Laplace\.sample"):
        Laplace(1.0).sample([0.0], None)
    with pytest.raises(ValidationError, match=r"'value' parameter of Laplace\.sample"):
        Laplace(1.0).sample([np.nan], np.random.default_rng(0))


def test_mechanisms_are_frozen() -> None:
    with pytest.raises(FrozenInstanceError, match="epsilon"):
        Laplace(1.0).epsilon = 2.0  # type: ignore[misc]


def test_opendp_sampler_has_the_same_distribution() -> None:
    pytest.importorskip("opendp")
    mech = ClippedLaplace(
        epsilon=0.5, sensitivity=2.0, sampler="opendp", lower=-math.inf
    )
    noise = mech.sample(np.zeros(4000), None)
    # OpenDP cannot be seeded; the KS threshold makes a false alarm a 1e-6 event.
    assert stats.kstest(noise, stats.laplace(scale=mech.scale).cdf).pvalue > 1e-6
    assert (
        ClippedLaplace(0.5, sampler="opendp").sample(np.zeros(500), None).min() >= 0.0
    )
