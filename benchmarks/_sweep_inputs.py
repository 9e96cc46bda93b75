"""Categories, labels and predict-time inputs.

References: a method that splits categories by set or multiway must fit labels
that are any function of a 400-category column; a column whose category order
(or the type of its category values) changes between fit and predict must be
routed by value or refused naming it; labels must come back as they were given.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from _sweep_core import (
    Verdict,
    accepted,
    blobs,
    case,
    check,
    data_for,
    documented,
    fit,
    make,
    predict,
    regression,
    same,
    wrong,
)

N_CATEGORIES = 400


def _many_categories(ordered: bool) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """A 400-category column that decides the label, and a noise column."""
    rng = np.random.default_rng(3)
    names = [f"c{k:03d}" for k in range(N_CATEGORIES)]
    codes = np.tile(np.arange(N_CATEGORIES), 2)
    lookup = (
        np.arange(N_CATEGORIES) < N_CATEGORIES // 2
        if ordered
        else rng.permutation(np.arange(N_CATEGORIES) % 2).astype(bool)
    )
    X = pd.DataFrame(
        {
            "noise": rng.normal(size=codes.shape[0]),
            "ward": pd.Categorical.from_codes(codes, categories=names),
        }
    )
    groups = np.array(["a", "b", "c"])[rng.integers(0, 3, codes.shape[0])]
    return X, lookup[codes].astype(np.int64), groups


SET_SPLITS = {  # estimator -> params: methods that split categories by set/multiway
    "FedForestClassifier": {"max_depth": 2, "bootstrap": False, "max_features": None},
    "FedGBDTClassifier": {"max_depth": 2, "n_estimators": 5},
    "FederatedID3Classifier": {},
}
CODED = {  # estimator -> params: codes as numbers or one-hot, or rules (ICDTA)
    "ICDTAClassifier": {},
    "LocalEnsembleClassifier": {},
    "DPForestClassifier": {"feature_ranges": {"noise": (-5.0, 5.0)}},
    "FedGAClassifier": {},
    "SyntheticDataClassifier": {"feature_ranges": {"noise": (-5.0, 5.0)}},
    "FedAvgClassifier": {},
}


def _high_cardinality(name: str, params: dict[str, Any], ordered: bool) -> Verdict:
    X, y, groups = _many_categories(ordered)
    predicted = predict(make(name, **params).fit(X, y, groups), X, groups)
    score = float(np.mean(predicted == y))
    if not ordered:
        return check(
            score >= 0.95,
            f"training accuracy {score:.2f}",
            f"training accuracy {score:.2f}: the category splits lost the labels",
        )
    if not np.all(np.isin(predicted, [0, 1])):
        return wrong(f"predictions outside the classes: {np.unique(predicted)[:4]}")
    return documented(f"fits 400 categories (training accuracy {score:.2f})")


for _name, _params in SET_SPLITS.items():
    case(f"{_name}-400-categories", "categories", ("ward",))(
        lambda _n=_name, _p=_params: _high_cardinality(_n, _p, ordered=False)
    )
for _name, _params in CODED.items():
    case(f"{_name}-400-categories", "categories", ("ward",))(
        lambda _n=_name, _p=_params: _high_cardinality(_n, _p, ordered=True)
    )


def _small_categorical(values: list[Any]) -> tuple[pd.DataFrame, np.ndarray, Any]:
    """A numeric column and a 3-category column (of ``values``) that sets the label."""
    rng = np.random.default_rng(5)
    n = 90
    codes = rng.integers(0, 3, n)
    X = pd.DataFrame(
        {
            "age": rng.normal(50.0, 10.0, n),
            "ward": pd.Categorical.from_codes(codes, categories=values),
        }
    )
    return X, (codes == 1).astype(np.int64), np.repeat(["a", "b", "c"], n // 3)


def _age_range(name: str) -> dict[str, Any]:
    """The declared range of the numeric column, for the methods that need one."""
    needs = "DP" in name or "Synthetic" in name
    return {"feature_ranges": {"age": (0.0, 100.0)}} if needs else {}


def _changed_at_predict(name: str, change: str) -> Verdict:
    """Fit on categories [1, 2, 3]; predict with the same rows re-typed/re-ordered."""
    X, y, groups = _small_categorical([1, 2, 3])
    model = make(name, **_age_range(name)).fit(X, y, groups)
    expected = predict(model, X, groups)
    if change == "float":
        ward = pd.Categorical(X["ward"].astype(float), categories=[1.0, 2.0, 3.0])
    elif change == "reordered":
        ward = X["ward"].cat.reorder_categories([3, 1, 2])
    else:  # str
        ward = pd.Categorical(X["ward"].astype(str), categories=["1", "2", "3"])
    got = predict(model, X.assign(ward=ward), groups)
    return check(
        same(expected, got),
        f"{change} categories route by value",
        f"{change} categories at predict change {np.mean(expected != got):.0%} of "
        "predictions, without an error",
    )


for _name in (
    "FedForestClassifier",
    "FedGBDTClassifier",
    "ICDTAClassifier",
    "FedAvgClassifier",
    "LocalModelsClassifier",
    "SyntheticDataClassifier",
):
    case(f"{_name}-categories-reordered-at-predict", "categories", ("ward",))(
        lambda _n=_name: _changed_at_predict(_n, "reordered")
    )
for _name in ("FedForestClassifier", "FederatedID3Classifier", "DPForestClassifier"):
    case(f"{_name}-int-categories-float-at-predict", "categories", ("ward",))(
        lambda _n=_name: _changed_at_predict(_n, "float")
    )
case("FedGBDTClassifier-int-categories-str-at-predict", "categories", ("ward",))(
    lambda: _changed_at_predict("FedGBDTClassifier", "str")
)


@case("FedForestClassifier-categories-1-and-str-1", "categories", ("ward",))
def int_and_str_category() -> Verdict:
    """Categories 1 and '1' are distinct values; the label says which."""
    X, _, groups = _small_categorical([1, "1", 2])
    y = (X["ward"].cat.codes == 1).to_numpy().astype(np.int64)
    model = make("FedForestClassifier", bootstrap=False, max_features=None)
    score = float(np.mean(model.fit(X, y, groups).predict(X) == y))
    return check(score == 1.0, "1 and '1' kept apart", f"accuracy {score:.2f}")


def _unseen(name: str) -> Verdict:
    X, y, groups = _small_categorical(["n", "s", "e"])
    model = make(name, **_age_range(name)).fit(X, y, groups)
    unseen = X.assign(ward=pd.Categorical(["w"] * X.shape[0]))
    got = predict(model, unseen, groups)
    ok = bool(np.all(np.isin(got, [0, 1])))
    return (
        documented("an unseen category is routed (docs/getting-started.md)")
        if ok
        else wrong(f"predictions outside the classes: {np.unique(got)}")
    )


for _name in (
    "FedGBDTClassifier",
    "FederatedID3Classifier",
    "FedAvgClassifier",
    "SyntheticDataClassifier",
    "LocalEnsembleClassifier",
    "DPForestClassifier",
    "FedGAClassifier",
):
    case(f"{_name}-unseen-category", "categories", ("ward",))(
        lambda _n=_name: _unseen(_n)
    )


@case("FedForestClassifier-500-declared-3-used", "categories", ("ward",))
def unused_categories() -> Verdict:
    X, y, groups = _small_categorical(["n", "s", "e"])
    wide = X.assign(ward=X["ward"].cat.add_categories([f"u{k}" for k in range(497)]))
    a = make("FedForestClassifier").fit(X, y, groups).predict(X)
    b = make("FedForestClassifier").fit(wide, y, groups).predict(wide)
    return check(
        same(a, b), "unused categories change nothing", "unused categories change it"
    )


# -- labels ---------------------------------------------------------------------------
@case("FedGBDTClassifier-string-labels", "labels", ("y",))
def string_labels() -> Verdict:
    X, y, groups = blobs()
    words = np.array(["no", "yes"])[y]
    a = make("FedGBDTClassifier").fit(X, y, groups).predict(X)
    b = make("FedGBDTClassifier").fit(X, words, groups).predict(X)
    return check(
        same(np.array(["no", "yes"])[a], b), "labels as given", "labels changed"
    )


def _bad_labels(name: str, y: np.ndarray) -> Verdict:
    X, _, groups = data_for(name)
    fit(name, (X, y, groups))
    return accepted(f"y {y[:3]!r}...")


case("FedForestClassifier-nan-label", "labels", (r"\by\b",))(
    lambda: _bad_labels("FedForestClassifier", np.r_[np.nan, np.zeros(100)])
)
case("ICDTAClassifier-none-label", "labels", (r"\by\b",))(
    lambda: _bad_labels(
        "ICDTAClassifier", np.array([None] + ["a", "b"] * 50, dtype=object)
    )
)
case("FedGBDTRegressor-nan-target", "labels", (r"\by\b",))(
    lambda: _bad_labels("FedGBDTRegressor", np.r_[np.nan, np.zeros(100)])
)
case("FedGARegressor-inf-target", "labels", (r"\by\b",))(
    lambda: _bad_labels("FedGARegressor", np.r_[np.inf, np.zeros(100)])
)


def _one_class(name: str) -> Verdict:
    X, _, groups = data_for(name)
    y = np.full(X.shape[0], 4)
    predicted = predict(fit(name, (X, y, groups)), X, groups)
    return check(
        bool(np.all(predicted == 4)),
        "predicts the one class",
        f"one class 4 in y, predicts {np.unique(predicted)}",
    )


for _name in (
    "FedGBDTClassifier",
    "FedAvgClassifier",
    "DPForestClassifier",
    "FederatedID3Classifier",
    "LocalModelsClassifier",
):
    case(f"{_name}-one-class", "labels", (r"\by\b|class",))(
        lambda _n=_name: _one_class(_n)
    )


BIG_LABEL = np.int64(2**60)  # float64 spacing there is 256: 16 labels tie as floats


def _big_int_labels(name: str) -> Verdict:
    """16 int labels 2^60 + k: distinct as ints, one value as float64.

    The model must be the one fitted on labels 0..15 (classes in the same,
    sorted order), its labels shifted. With 16 tied labels an order that
    follows ``str`` hashing is sorted by chance once in 16! runs.
    """
    X, _, groups = data_for(name)
    y = np.digitize(X[:, 0], np.quantile(X[:, 0], np.linspace(0, 1, 17)[1:-1]))
    labels = BIG_LABEL + y
    model = fit(name, (X, labels, groups))
    predicted = predict(model, X, groups)
    reference = BIG_LABEL + predict(fit(name, (X, y, groups)), X, groups)
    differ = f"{np.mean(predicted != reference):.0%}"
    if not same(model.classes_, np.unique(labels)):
        shown = [int(c - BIG_LABEL) for c in model.classes_]
        return wrong(
            f"classes_ (minus 2^60) {shown}: not sorted (ordered by float64, where "
            "they tie, then by str hashing, so it changes with PYTHONHASHSEED); "
            f"predictions differ from the 0..15 fit on {differ} of rows"
        )
    return check(
        same(predicted, reference),
        "labels 2^60 + k kept apart, in order",
        f"labels 2^60 + k: predictions differ from the 0..15 fit on {differ} of rows",
    )


for _name in (
    "FedForestClassifier",
    "FedGBDTClassifier",
    "ICDTAClassifier",
    "FedAvgClassifier",
    "SyntheticDataClassifier",
    "FedGAClassifier",
):
    case(f"{_name}-labels-2**60-plus-0-to-15", "labels", (r"\by\b",))(
        lambda _n=_name: _big_int_labels(_n)
    )


@case("FedForestClassifier-bool-labels", "labels", (r"\by\b",))
def bool_labels() -> Verdict:
    X, y, groups = blobs()
    got = make("FedForestClassifier").fit(X, y.astype(bool), groups).predict(X)
    ref = make("FedForestClassifier").fit(X, y, groups).predict(X)
    return check(
        got.dtype == bool and same(got, ref.astype(bool)),
        "bool labels come back as bool",
        f"bool labels came back as {got.dtype}",
    )


@case("LocalEnsembleClassifier-empty-string-label", "labels", (r"\by\b",))
def empty_string_label() -> Verdict:
    X, y, groups = blobs()
    words = np.array(["", "0"])[y]
    got = make("LocalEnsembleClassifier").fit(X, words, groups).predict(X)
    ref = make("LocalEnsembleClassifier").fit(X, y, groups).predict(X)
    return check(
        same(got, np.array(["", "0"])[ref]), "'' is a label", "'' label mangled"
    )


@case("FedForestRegressor-constant-target", "labels", (r"\by\b",))
def constant_target() -> Verdict:
    X, _, groups = regression()
    got = make("FedForestRegressor").fit(X, np.full(X.shape[0], 0.1), groups)
    predicted = got.predict(X)
    return check(
        bool(np.allclose(predicted, 0.1, rtol=1e-12, atol=0.0)),
        "predicts the constant",
        f"predicts {np.unique(predicted)[:3]} for a constant 0.1",
    )


# -- predict --------------------------------------------------------------------------
def _frame(name: str) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    X, y, groups = data_for(name)
    return pd.DataFrame(X, columns=["u", "v", "w"]), y, groups


@case("FedForestClassifier-predict-columns-reordered", "predict", ("u|column",))
def columns_reordered() -> Verdict:
    X, y, groups = _frame("FedForestClassifier")
    model = make("FedForestClassifier").fit(X, y, groups)
    got = model.predict(X[["w", "u", "v"]])
    return check(
        same(got, model.predict(X)),
        "columns matched by name",
        "columns taken by position: predictions changed",
    )


@case("FedGBDTRegressor-predict-extra-column", "predict", ("z|column|feature",))
def extra_column() -> Verdict:
    X, y, groups = _frame("FedGBDTRegressor")
    model = make("FedGBDTRegressor").fit(X, y, groups)
    model.predict(X.assign(z=1.0))
    return accepted("an extra column at predict")


def _empty_predict(name: str) -> Verdict:
    X, y, groups = data_for(name)
    model = fit(name, (X, y, groups))
    got = model.predict(X[:0])
    return check(
        np.asarray(got).shape == (0,), "0 rows in, 0 out", f"shape {np.shape(got)}"
    )


for _name in ("FedForestRegressor", "ICDTAClassifier", "FedGBDTClassifier"):
    case(f"{_name}-predict-no-rows", "predict", ("X|sample|rows",))(
        lambda _n=_name: _empty_predict(_n)
    )


def _unknown_client(name: str) -> Verdict:
    X, y, groups = data_for(name)
    fit(name, (X, y, groups)).predict(X, client="zzz")
    return accepted("client='zzz' at predict")


for _name in ("LocalModelsRegressor", "FedGAClassifier"):
    case(f"{_name}-predict-unknown-client", "predict", ("zzz",))(
        lambda _n=_name: _unknown_client(_n)
    )


@case("FedGBDTClassifier-predict-inf", "predict", ("x1|column",))
def predict_inf() -> Verdict:
    X, y, groups = blobs()
    model = make("FedGBDTClassifier").fit(X, y, groups)
    bad = X.copy()
    bad[3, 1] = np.inf
    model.predict(bad)
    return accepted("inf in X at predict")


@case("ICDTAClassifier-predict-nan", "predict", ("x1|column|missing",))
def predict_nan() -> Verdict:
    X, y, groups = blobs()
    model = make("ICDTAClassifier").fit(X, y, groups)
    bad = X.copy()
    bad[3, 1] = np.nan
    got = model.predict(bad)
    return (
        documented("NaN routed at predict")
        if np.all(np.isin(got, [0, 1]))
        else wrong(f"{got[:4]}")
    )


@case("FedForestClassifier-predict-array-after-categories", "predict", ("ward|x1",))
def array_after_frame() -> Verdict:
    X, y, groups = _small_categorical(["n", "s", "e"])
    model = make("FedForestClassifier").fit(X, y, groups)
    model.predict(np.column_stack([X["age"], X["ward"].cat.codes]))
    return accepted("a numpy array for a categorical fit")


@case("FedForestClassifier-split_on_client-unknown-client", "predict", ("client",))
def unknown_client_split() -> Verdict:
    X, y, groups = blobs()
    model = make("FedForestClassifier", split_on_client=True).fit(X, y, groups)
    got = model.predict(X, client="zzz")
    return (
        documented("no known client: both branches mix (docs/getting-started.md)")
        if np.all(np.isin(got, [0, 1]))
        else wrong(f"{got[:4]}")
    )
