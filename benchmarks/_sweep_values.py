"""Extreme X values, constant columns and many tiny clients, for every estimator.

References, so a wrong result shows:

- *scale invariance*: a tree method fitted on X·2^k predicts, on X·2^k, what it
  predicts on X fitted on X (a power of two scales exactly; splits compare).
  The DP forest and the synthetic data scale their declared ranges alike.
- *constant columns*: nothing can be learned, so a classifier predicts one class
  and a regressor one value inside the target's range.
- *many tiny clients*: one row per client gives the model of one client holding
  every row, where the docs promise it (FedForest ``"hist"`` on an exact grid,
  FedGBDT), else a model that still learns separable data.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from _sweep_core import (
    RANGES,
    SMALL,
    Verdict,
    blobs,
    case,
    check,
    correct,
    data_for,
    documented,
    fit,
    is_regressor,
    make,
    predict,
    same,
    wrong,
)

from fedtrees.exceptions import ValidationError

BIG = 2.0**1019  # |X| <= 30 -> |X·BIG| <= 1.68e308, just below the largest float
F32_OVER = 2.0**128  # |X| in [1, 30] -> 3.4e38 to 1e40, beyond float32's range
SMALL_SCALE = 2.0**-30  # 9.3e-10: normal floats, gaps below float32's 1e-7
TINY = 2.0**-1074  # integer X -> subnormals k·2^-1074, exact
EXACT_TREE = {"n_estimators": 1, "bootstrap": False, "max_features": None}


def _integer_data(sizes: tuple[int, ...] = (23, 37, 41)) -> tuple[Any, Any, Any]:
    """Integer-valued features in [-30, 30] (exact at every power-of-two scale)."""
    X, y, groups = blobs(sizes)
    return np.clip(np.round(X), -30, 30), y, groups


def _scaled_params(name: str, factor: float) -> dict[str, Any]:
    if "feature_ranges" in SMALL[name]:
        ranges = np.asarray(RANGES) / 60.0 * 30.0 * factor
        return {"feature_ranges": [tuple(r) for r in ranges]}
    return {}


def _scale_invariance(name: str, factor: float, **params: Any) -> Verdict:
    X, y, groups = _integer_data()
    if is_regressor(name):
        y = 3.0 * X[:, 0] - X[:, 1]
    base = fit(name, (X, y, groups), **params, **_scaled_params(name, 1.0))
    big = X * factor
    scaled = fit(name, (big, y, groups), **params, **_scaled_params(name, factor))
    expected, got = predict(base, X, groups), predict(scaled, big, groups)
    agree = float(np.mean(np.asarray(expected) == np.asarray(got)))
    return check(
        same(expected, got),
        f"predictions on X·{factor:.3g} equal those on X",
        f"predictions on X·{factor:.3g} differ from those on X on {1 - agree:.0%} "
        f"of rows (accuracy {np.mean(np.asarray(got) == y):.2f} vs "
        f"{np.mean(np.asarray(expected) == y):.2f} at scale 1)"
        if not is_regressor(name)
        else f"predictions on X·{factor:.3g} differ from those on X",
    )


SCALES: list[tuple[str, str, float, dict[str, Any], tuple[str, ...]]] = [
    ("pm1.7e308-exact", "FedForestClassifier", BIG,
     {**EXACT_TREE, "candidates": "exact"}, ("x0",)),
    ("pm1.7e308-hist", "FedForestClassifier", BIG, {}, ("x0",)),
    ("pm1.7e308-quantile", "FedForestRegressor", BIG,
     {"candidates": "quantile"}, ("x0",)),
    ("pm1.7e308-uniform", "FedForestClassifier", BIG,
     {"candidates": "uniform"}, ("x0",)),
    ("pm1.7e308", "FedGBDTClassifier", BIG, {}, ("x0",)),
    ("pm1.7e308", "FedGBDTRegressor", BIG, {}, ("x0",)),
    ("pm1.7e308", "ICDTAClassifier", BIG, {}, ("x0",)),
    ("pm1.7e308", "FederatedID3Classifier", BIG, {}, ("x0",)),
    # Noise-free: each site's noise is bound to its rows, so scaled rows draw
    # other noise (docs/security.md); FedGA's sizes at ε = 1e300 are exact.
    ("pm1.7e308", "DPForestClassifier", BIG, {"epsilon": math.inf},
     ("x0|feature_ranges",)),
    ("pm1.7e308", "FedGAClassifier", BIG, {"epsilon": 1e300}, ("x0",)),
    ("pm1.7e308", "LocalModelsRegressor", BIG, {}, ("x0",)),
    ("3.5e38-exact", "FedForestClassifier", F32_OVER,
     {**EXACT_TREE, "candidates": "exact"}, ("x0",)),
    ("3.5e38", "LocalEnsembleClassifier", F32_OVER, {}, ("x0",)),
    ("3.5e38", "ICDTAClassifier", F32_OVER, {"base": "cart"}, ("x0",)),
    ("3.5e38", "FedGARegressor", F32_OVER, {"epsilon": 1e300}, ("x0",)),
    ("3.5e38", "FedGBDTClassifier", F32_OVER, {}, ("x0",)),
    ("X-times-1e-9-hist", "FedForestClassifier", SMALL_SCALE, {}, ("x0",)),
    ("X-times-1e-9", "FedGBDTRegressor", SMALL_SCALE, {}, ("x0",)),
    ("X-times-1e-9", "ICDTAClassifier", SMALL_SCALE, {}, ("x0",)),
    ("subnormal-hist", "FedForestRegressor", TINY, EXACT_TREE, ("x0",)),
    ("subnormal", "FedGBDTClassifier", TINY, {}, ("x0",)),
    ("subnormal", "FederatedID3Classifier", TINY, {}, ("x0",)),
]  # fmt: skip


def _register_scale(
    label: str, name: str, factor: float, params: dict[str, Any], names: tuple[str, ...]
) -> None:
    @case(f"{name}-{label}", "values", names)
    def run() -> Verdict:
        return _scale_invariance(name, factor, **params)


for _row in SCALES:
    _register_scale(*_row)


def _continuous_invariance(name: str, factor: float, **params: Any) -> Verdict:
    """As :func:`_scale_invariance` on 400 distinct values per column (sketched)."""
    X, y, groups = blobs((130, 140, 130))
    X = np.clip(X, -30.0, 30.0)
    base = make(name, **params).fit(X, y, groups).predict(X)
    got = make(name, **params).fit(X * factor, y, groups).predict(X * factor)
    return check(
        same(base, got),
        f"predictions on X·{factor:.3g} equal those on X",
        f"predictions on X·{factor:.3g} differ on {np.mean(base != got):.0%} of rows "
        f"(accuracy {np.mean(got == y):.2f} vs {np.mean(base == y):.2f})",
    )


case("FedForestClassifier-pm1.7e308-hist-sketched", "values", ("x0",))(
    lambda: _continuous_invariance("FedForestClassifier", BIG)
)
case("FedForestClassifier-subnormal-quantile", "values", ("x0",))(
    lambda: _continuous_invariance(
        "FedForestClassifier", TINY * 2.0**40, candidates="quantile"
    )
)


@case("SyntheticDataClassifier-pm1.7e308", "values", ("x0|feature_ranges",))
def synthetic_float64_edge() -> Verdict:
    """At float64's edge the fills stop at the largest float (docs/synthetic.md)."""
    X, y, groups = _integer_data()
    name = "SyntheticDataClassifier"
    outside = {"fill": "outside"}  # the fill that reaches beyond the range
    model = fit(name, (X, y, groups), **outside, **_scaled_params(name, 1.0))
    base = predict(model, X, groups)
    big = X * BIG
    scaled = fit(name, (big, y, groups), **outside, **_scaled_params(name, BIG))
    got = predict(scaled, big, groups)
    if same(base, got):
        return correct("predictions equal those at scale 1")
    lost = float(np.mean(base == y) - np.mean(got == y))
    if lost <= 0.05:
        return documented(
            f"fills cut at the largest float (docs/synthetic.md): accuracy {lost:+.2f} "
            "below scale 1"
        )
    return wrong(f"accuracy {lost:.2f} below scale 1")


@case("SyntheticDataClassifier-X-times-1e-9", "values", ("x0",))
def synthetic_tiny_gaps() -> Verdict:
    """scikit-learn's client trees do not split gaps below 1e-7 (docs/synthetic.md)."""
    X, y, groups = _integer_data()
    try:
        name = "SyntheticDataClassifier"
        fit(name, (X * SMALL_SCALE, y, groups), **_scaled_params(name, SMALL_SCALE))
    except ValidationError as exc:
        if "1e-7 apart" in str(exc):
            return documented("every tree one leaf: the error names gaps below 1e-7")
        raise
    return wrong("fitted on values scikit-learn's trees cannot split")


@case("LocalModelsClassifier-subnormal", "values", ("x0",))
def local_subnormal() -> Verdict:
    """scikit-learn's forests read X as float32 (docs/fedforest.md): subnormals: 0."""
    X, y, groups = _integer_data()
    tiny = X * TINY
    rounded = tiny.astype(np.float32).astype(np.float64)
    got = predict(fit("LocalModelsClassifier", (tiny, y, groups)), tiny, groups)
    expected = predict(
        fit("LocalModelsClassifier", (rounded, y, groups)), rounded, groups
    )
    if same(expected, got):
        return documented("as scikit-learn on X read as float32 (docs/fedforest.md)")
    return wrong("differs from the forests fitted on X read as float32")


@case("FedAvgClassifier-pm1.7e308", "values", ("x0",))
def fedavg_huge() -> Verdict:
    """Standardized logistic regression: scale-invariant up to rounding."""
    X, y, groups = _integer_data()
    base = fit("FedAvgClassifier", (X, y, groups)).predict(X)
    got = fit("FedAvgClassifier", (X * BIG, y, groups)).predict(X * BIG)
    agree = float(np.mean(base == got))
    return check(
        agree >= 0.95,
        f"{agree:.0%} of predictions as at scale 1",
        f"only {agree:.0%} of predictions as at scale 1 (accuracy "
        f"{np.mean(got == y):.2f} vs {np.mean(base == y):.2f})",
    )


# -- constant columns ---------------------------------------------------------------
def _constant(name: str) -> Verdict:
    X, y, groups = data_for(name)
    X = np.full_like(X, 7.25)
    predicted = predict(fit(name, (X, y, groups)), X, groups)
    if is_regressor(name):
        inside = bool(np.all((predicted >= y.min()) & (predicted <= y.max())))
        per_client = all(np.ptp(predicted[groups == g]) == 0 for g in np.unique(groups))
        return check(
            inside and per_client,
            "one value per model, inside the target's range",
            f"predictions {np.unique(predicted)[:4]} on constant X",
        )
    values, counts = np.unique(y, return_counts=True)
    majority = values[np.argmax(counts)]
    if np.all(predicted == majority):
        return correct("the majority class everywhere")
    if all(np.ptp(predicted[groups == g]) == 0 for g in np.unique(groups)):
        return documented("one class per model (noise, prior or a client's own)")
    return wrong(f"several classes predicted on identical rows: {np.unique(predicted)}")


for _name in SMALL:
    case(f"{_name}-constant-columns", "values", ("single leaf|constant",))(
        lambda _name=_name: _constant(_name)
    )


# -- many tiny clients ----------------------------------------------------------------
TINY_CLIENTS = 120


def _one_row_each(name: str) -> tuple[Any, Any, Any, Any]:
    X, y, _ = data_for(name, sizes=(TINY_CLIENTS,))
    return X, y, np.arange(TINY_CLIENTS), np.zeros(TINY_CLIENTS, int)


@case("FedForestClassifier-120-one-row-clients", "values", ("client",))
def fedforest_tiny() -> Verdict:
    X, y, many, one = _one_row_each("FedForestClassifier")
    a = make("FedForestClassifier", **EXACT_TREE).fit(X, y, many).predict_proba(X)
    b = make("FedForestClassifier", **EXACT_TREE).fit(X, y, one).predict_proba(X)
    return check(
        same(a, b),
        "the one-client forest (exact grid)",
        "differs from the one-client forest on an exact grid",
    )


@case("FedGBDTRegressor-120-one-row-clients", "values", ("client",))
def fedgbdt_tiny() -> Verdict:
    X, y, many, one = _one_row_each("FedGBDTRegressor")
    a = make("FedGBDTRegressor").fit(X, y, many).predict(X)
    b = make("FedGBDTRegressor").fit(X, y, one).predict(X)
    gap = float(np.max(np.abs(a - b)))
    return check(gap <= 1e-9, "the one-client model", f"differs by {gap:.3g}")


@case("FederatedID3Classifier-120-one-row-clients", "values", ("client",))
def fedid3_tiny() -> Verdict:
    """Exact pooled counts: one row per client learns as one client does."""
    X, y, many, one = _one_row_each("FederatedID3Classifier")
    a = make("FederatedID3Classifier").fit(X, y, many).predict(X)
    b = make("FederatedID3Classifier").fit(X, y, one).predict(X)
    agree = float(np.mean(a == b))
    return check(
        agree >= 0.95,
        f"{agree:.0%} as the one-client tree",
        f"only {agree:.0%} as the one-client tree (accuracy {np.mean(a == y):.2f})",
    )


@case("FedAvgClassifier-120-one-row-clients-global", "values", ("client",))
def fedavg_tiny() -> Verdict:
    """Pooled standardization: one-row clients still learn separable data."""
    X, y, many, _ = _one_row_each("FedAvgClassifier")
    model = make(
        "FedAvgClassifier", standardize="global", n_rounds=20, learning_rate=0.1
    ).fit(X, y, many)
    score = float(np.mean(model.predict(X) == y))
    return check(score >= 0.8, f"accuracy {score:.2f}", f"accuracy {score:.2f}")


def _tiny_runs(name: str) -> Verdict:
    """Local models of one row learn little; they must still predict labels."""
    X, y, many, _ = _one_row_each(name)
    predicted = predict(make(name).fit(X, y, many), X, many)
    valid = (
        bool(np.all(np.isfinite(predicted)))
        if is_regressor(name)
        else bool(np.all(np.isin(predicted, np.unique(y))))
    )
    return (
        documented("fits; local models of one row each")
        if valid
        else wrong(f"invalid predictions {np.unique(predicted)[:4]}")
    )


for _name in (
    "DPForestClassifier",
    "ICDTAClassifier",
    "FedGAClassifier",
    "SyntheticDataClassifier",
    "LocalModelsClassifier",
    "LocalEnsembleRegressor",
):
    case(f"{_name}-120-one-row-clients", "values", ("client|row|single leaf",))(
        lambda _name=_name: _tiny_runs(_name)
    )
