"""Fresh cases: pandas dtypes, weights, groups, predict-time frames, scikit-learn
integration, odd targets and labels, privacy budgets, trees with unicode names.

A second look (issue 24) at inputs the other families do not try. References:
the same fit on cleaned input (plain float64 columns, numpy arrays, sorted
columns), scikit-learn's own estimators and helpers, and the rules the docs state.
"""

from __future__ import annotations

import pickle
import tempfile
import warnings
from typing import Any

import numpy as np
import pandas as pd
from _sweep_core import (
    SITES_NOISE_SEED,
    SIZES,
    Verdict,
    accepted,
    blobs,
    case,
    check,
    correct,
    documented,
    make,
    predict,
    regression,
    same,
    secret,
    secret_rows,
    wrong,
)

F = "fresh"


def _frame(n_features: int = 3, reg: bool = False) -> tuple[pd.DataFrame, Any, Any]:
    X, y, groups = regression() if reg else blobs()
    return pd.DataFrame(X, columns=["u", "v", "w"][:n_features]), y, groups


def _same_fit(
    name: str, X: Any, clean: Any, y: Any, groups: Any, **params: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Predictions of a fit on ``X`` and of the same fit on ``clean``."""
    a = predict(make(name, **params).fit(X, y, groups), X, groups)
    b = predict(make(name, **params).fit(clean, y, groups), clean, groups)
    return a, b


def _compare(name: str, X: Any, clean: Any, what: str, **params: Any) -> Verdict:
    _, y, groups = blobs()
    a, b = _same_fit(name, X, clean, y, groups, **params)
    return check(same(a, b), f"{what}: as the clean fit", f"{what}: predictions differ")


# -- pandas dtypes ---------------------------------------------------------------------
@case("FedForestClassifier-nullable-Int64-column", F, ("u|column",))
def nullable_int() -> Verdict:
    X, _, _ = _frame()
    rounded = X.round()
    return _compare(
        "FedForestClassifier",
        rounded.astype({"u": "Int64"}),
        rounded,
        "Int64 column",
    )


@case("FedGBDTClassifier-nullable-Int64-with-NA", F, ("u|column",))
def nullable_int_na() -> Verdict:
    X, _, _ = _frame()
    clean = X.round()
    clean.loc[5, "u"] = np.nan
    nullable = clean.astype({"u": "Int64"})
    return _compare("FedGBDTClassifier", nullable, clean, "Int64 with <NA>")


@case("FedForestClassifier-nullable-boolean-column", F, ("flag|column",))
def nullable_bool() -> Verdict:
    X, _, _ = _frame()
    flag = X["u"] > 0
    return _compare(
        "FedForestClassifier",
        X.assign(flag=flag.astype("boolean")),
        X.assign(flag=flag.astype(float)),
        "boolean column",
    )


@case("FedForestClassifier-string-dtype-column", F, ("ward",))
def string_dtype() -> Verdict:
    X, y, groups = _frame()
    bad = X.assign(ward=pd.array(np.where(y == 1, "x", "y"), dtype="string"))
    make("FedForestClassifier").fit(bad, y, groups)
    return accepted("a 'string' column (docs/getting-started.md: must be category)")


@case("FedForestClassifier-categorical-nan-and-unused", F, ("ward",))
def categorical_nan_unused() -> Verdict:
    X, y, groups = _frame()
    codes = np.where(y == 1, 0, 1)
    codes[::7] = -1  # NaN
    ward = pd.Categorical.from_codes(codes, categories=["p", "q", "r", "s"])
    got = make("FedForestClassifier").fit(X.assign(ward=ward), y, groups)
    out = got.predict(X.assign(ward=ward))
    return check(
        bool(np.all(np.isin(out, [0, 1]))) and float(np.mean(out == y)) > 0.9,
        "NaN category and unused categories fit",
        f"accuracy {np.mean(out == y):.2f}",
    )


@case("FedGBDTRegressor-datetime-column", F, ("when",))
def datetime_column() -> Verdict:
    X, y, groups = _frame(reg=True)
    when = pd.date_range("2020-01-01", periods=X.shape[0], freq="D")
    make("FedGBDTRegressor").fit(X.assign(when=when), y, groups)
    return accepted("a datetime64 column")


@case("FedForestClassifier-duplicated-index", F, ())
def duplicated_index() -> Verdict:
    X, y, groups = _frame()
    dup = X.set_axis(np.zeros(X.shape[0], dtype=int))
    ys = pd.Series(y, index=dup.index)
    a = make("FedForestClassifier").fit(dup, ys, groups).predict(dup)
    b = make("FedForestClassifier").fit(X, y, groups).predict(X)
    return check(same(a, b), "index ignored", "a duplicated index changes the fit")


@case("FedForestClassifier-y-series-shuffled-index", F, ())
def shuffled_y_index() -> Verdict:
    """y as a Series whose index is in another order: position, as scikit-learn."""
    X, y, groups = _frame()
    order = np.random.default_rng(1).permutation(X.shape[0])
    ys = pd.Series(y, index=order)
    a = make("FedForestClassifier").fit(X, ys, groups).predict(X)
    b = make("FedForestClassifier").fit(X, y, groups).predict(X)
    return check(same(a, b), "y by position", "y realigned by index")


@case("FedGBDTClassifier-MultiIndex-columns", F, ("column|feature",))
def multiindex_columns() -> Verdict:
    X, y, groups = _frame()
    X.columns = pd.MultiIndex.from_tuples([("a", "u"), ("a", "v"), ("b", "w")])
    model = make("FedGBDTClassifier").fit(X, y, groups)
    a = model.predict(X)
    b = make("FedGBDTClassifier").fit(X.to_numpy(), y, groups).predict(X.to_numpy())
    return check(same(a, b), "MultiIndex columns fit", "MultiIndex changes the fit")


@case("FedForestClassifier-int-column-names", F, ("column|feature",))
def int_column_names() -> Verdict:
    X, y, groups = _frame()
    X.columns = [2, 0, 1]
    model = make("FedForestClassifier").fit(X, y, groups)
    got = model.predict(X[[0, 1, 2]])
    return check(
        same(got, model.predict(X)),
        "int names matched by name (or refused)",
        "int column names taken by position at predict",
    )


@case("FedGBDTRegressor-tuple-column-names", F, ("column|feature",))
def tuple_column_names() -> Verdict:
    X, y, groups = _frame(reg=True)
    X.columns = [("a", 1), ("b", 2), ("c", 3)]
    a = make("FedGBDTRegressor").fit(X, y, groups).predict(X)
    b = make("FedGBDTRegressor").fit(X.to_numpy(), y, groups).predict(X.to_numpy())
    return check(same(a, b), "tuple names fit", "tuple names change the fit")


@case("ICDTAClassifier-mixed-int-str-column-names", F, ("column|feature|name",))
def mixed_column_names() -> Verdict:
    X, y, groups = _frame()
    named = X.set_axis(["0", "v", "w"], axis=1)
    X.columns = [0, "v", "w"]
    a = make("ICDTAClassifier").fit(X, y, groups).predict(X)
    b = make("ICDTAClassifier").fit(named, y, groups).predict(named)
    return check(same(a, b), "names taken as text", "mixed names change the fit")


def _row_secrets() -> None:
    """The clients' row counts, also as the floats a weighted count prints."""
    secret_rows(SIZES)
    for n in SIZES:
        secret(rf"(?<![\d.]){n}\.0\b")


# -- sample_weight --------------------------------------------------------------------
def _weights(kind: str) -> np.ndarray:
    n = sum(SIZES)
    w = np.ones(n)
    if kind == "zero-client":
        w[: SIZES[0]] = 0.0
    elif kind == "one-client":
        w[SIZES[0] :] = 0.0
    return w


@case("FedForestClassifier-zero-weight-whole-client", F, ())
def zero_weight_client() -> Verdict:
    """Weight 0 on client a: the fit is the fit without client a's rows."""
    X, y, groups = blobs()
    keep = groups != "a"
    a = make("FedForestClassifier", bootstrap=False, max_features=None)
    a.fit(X, y, groups, sample_weight=_weights("zero-client"))
    b = make("FedForestClassifier", bootstrap=False, max_features=None)
    b.fit(X[keep], y[keep], groups[keep])
    return check(
        same(a.predict(X), b.predict(X)),
        "as without the client",
        "weight 0 on a client differs from leaving it out",
    )


@case("FedGBDTRegressor-all-weight-on-one-client", F, ())
def all_weight_one_client() -> Verdict:
    X, y, groups = regression()
    keep = groups == "a"
    a = make("FedGBDTRegressor").fit(X, y, groups, sample_weight=_weights("one-client"))
    b = make("FedGBDTRegressor").fit(X[keep], y[keep], groups[keep])
    return check(
        bool(np.allclose(a.predict(X), b.predict(X))),
        "as client a alone",
        f"max diff {np.max(np.abs(a.predict(X) - b.predict(X))):.3g}",
    )


@case("FedForestRegressor-weights-1e300", F, ("sample_weight|weight",))
def huge_weights() -> Verdict:
    X, y, groups = regression()
    a = make("FedForestRegressor").fit(
        X, y, groups, sample_weight=np.full(len(y), 1e300)
    )
    b = make("FedForestRegressor").fit(X, y, groups)
    pa = a.predict(X)
    ok = bool(np.all(np.isfinite(pa)) and np.allclose(pa, b.predict(X)))
    return check(ok, "uniform 1e300 = unweighted", f"predictions {pa[:3]}")


@case("FedGBDTClassifier-weights-float16", F, ("sample_weight|weight",))
def float16_weights() -> Verdict:
    X, y, groups = blobs()
    w = np.random.default_rng(2).uniform(0.5, 2.0, len(y))
    a = make("FedGBDTClassifier").fit(X, y, groups, sample_weight=w.astype(np.float16))
    b = make("FedGBDTClassifier").fit(
        X, y, groups, sample_weight=w.astype(np.float16).astype(np.float64)
    )
    return check(same(a.predict(X), b.predict(X)), "float16 upcast", "differs")


@case("LocalEnsembleClassifier-weights-as-Series", F, ("sample_weight",))
def series_weights() -> Verdict:
    _row_secrets()
    X, y, groups = blobs()
    w = np.linspace(0.1, 2.0, len(y))
    a = make("LocalEnsembleClassifier").fit(
        X, y, groups, sample_weight=pd.Series(w, index=np.arange(len(y))[::-1])
    )
    b = make("LocalEnsembleClassifier").fit(X, y, groups, sample_weight=w)
    return check(same(a.predict(X), b.predict(X)), "by position", "realigned")


@case("FedAvgClassifier-weights-2d", F, ("sample_weight",))
def weights_2d() -> Verdict:
    X, y, groups = blobs()
    make("FedAvgClassifier").fit(X, y, groups, sample_weight=np.ones((len(y), 1)))
    return accepted("sample_weight of shape (n, 1)")


@case("FedForestClassifier-weights-negative-zero-total", F, ("sample_weight",))
def weights_minus_zero() -> Verdict:
    X, y, groups = blobs()
    make("FedForestClassifier").fit(X, y, groups, sample_weight=np.full(len(y), -0.0))
    return accepted("every weight -0.0")


# -- groups ----------------------------------------------------------------------------
@case("FedForestClassifier-nan-group", F, ("group|client",))
def nan_group() -> Verdict:
    X, y, _ = blobs()
    groups = np.where(np.arange(len(y)) % 2 == 0, 1.0, np.nan)
    model = make("FedForestClassifier").fit(X, y, groups)
    score = np.mean(model.predict(X) == y)
    return documented(f"NaN is a group of its own ('nan'); accuracy {score:.2f}")


@case("FedGBDTClassifier-groups-none-object-mixed", F, ("group|client",))
def none_group() -> Verdict:
    X, y, _ = blobs()
    groups = np.array([None, "a"] * (len(y) // 2) + ["a"] * (len(y) % 2), dtype=object)
    make("FedGBDTClassifier").fit(X, y, groups)
    return accepted("None as a group value")


@case("FedForestClassifier-groups-Categorical-unused", F, ("group|client",))
def categorical_groups() -> Verdict:
    X, y, groups = blobs()
    cat = pd.Categorical(groups, categories=["a", "b", "c", "zz"])
    a = make("FedForestClassifier").fit(X, y, cat).predict(X)
    b = make("FedForestClassifier").fit(X, y, groups).predict(X)
    return check(same(a, b), "unused category no client", "differs from str groups")


@case("LocalModelsClassifier-group-of-one-row", F, ("client|group",))
def one_row_group() -> Verdict:
    secret_rows([1])
    X, y, groups = blobs()
    groups = groups.astype(object)
    groups[0] = "solo"
    model = make("LocalModelsClassifier").fit(X, y, groups)
    got = model.predict(X[:1], client="solo")
    return check(
        got[0] == y[0], "a one-row client predicts its label", f"predicts {got}"
    )


@case("LocalModelsClassifier-predict-client-array-unknown", F, ("zzz",))
def unknown_client_array() -> Verdict:
    X, y, groups = blobs()
    model = make("LocalModelsClassifier").fit(X, y, groups)
    clients = groups.copy().astype(object)
    clients[4] = "zzz"
    model.predict(X, client=clients)
    return accepted("an unknown client id among per-row ids")


@case("FedGARegressor-predict-client-wrong-length", F, ("client",))
def client_wrong_length() -> Verdict:
    X, y, groups = regression()
    model = make("FedGARegressor").fit(X, y, groups)
    model.predict(X, client=groups[:-1])
    return accepted("client= one shorter than X")


@case("LocalModelsRegressor-predict-client-int-for-str-ids", F, ("client", r"\b7\b"))
def client_int() -> Verdict:
    X, y, _ = regression()
    groups = np.repeat([7, 8, 9], SIZES)
    model = make("LocalModelsRegressor").fit(X, y, groups)
    a = model.predict(X, client=7)
    b = model.predict(X, client="7")
    return check(same(a, b), "7 and '7' the same client", "7 and '7' differ")


# -- predict time ----------------------------------------------------------------------
@case("FedGBDTClassifier-predict-fewer-columns", F, ("w|column|feature",))
def fewer_columns() -> Verdict:
    X, y, groups = _frame()
    make("FedGBDTClassifier").fit(X, y, groups).predict(X[["u", "v"]])
    return accepted("a column missing at predict")


@case("FedForestClassifier-predict-frame-after-array", F, ())
def frame_after_array() -> Verdict:
    X, y, groups = blobs()
    model = make("FedForestClassifier").fit(X, y, groups)
    got = model.predict(pd.DataFrame(X, columns=["p", "q", "r"]))
    return check(same(got, model.predict(X)), "as scikit-learn (by position)", "differ")


@case("LocalEnsembleRegressor-predict-0-rows-frame", F, ("X|rows|sample",))
def empty_frame() -> Verdict:
    X, y, groups = _frame(reg=True)
    got = make("LocalEnsembleRegressor").fit(X, y, groups).predict(X.iloc[:0])
    return check(np.shape(got) == (0,), "0 rows, 0 out", f"shape {np.shape(got)}")


@case("LocalModelsClassifier-predict-0-rows", F, ("X|rows|sample",))
def empty_personal() -> Verdict:
    X, y, groups = blobs()
    model = make("LocalModelsClassifier").fit(X, y, groups)
    got = model.predict(X[:0], client=groups[:0])
    return check(np.shape(got) == (0,), "0 rows, 0 out", f"shape {np.shape(got)}")


@case("FedForestClassifier-predict_proba-0-rows", F, ("X|rows|sample",))
def empty_proba() -> Verdict:
    X, y, groups = blobs()
    got = make("FedForestClassifier").fit(X, y, groups).predict_proba(X[:0])
    return check(np.shape(got) == (0, 2), "shape (0, 2)", f"shape {np.shape(got)}")


@case("FedGBDTClassifier-predict-1d-row", F, ("X|2d|2D|reshape",))
def one_d_row() -> Verdict:
    X, y, groups = blobs()
    make("FedGBDTClassifier").fit(X, y, groups).predict(X[0])
    return accepted("a 1-d X at predict")


# -- scikit-learn integration ----------------------------------------------------------
@case("FedGBDTClassifier-in-Pipeline-with-groups", F, ())
def pipeline() -> Verdict:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, groups = blobs()
    pipe = make_pipeline(StandardScaler(), make("FedGBDTClassifier"))
    pipe.fit(X, y, fedgbdtclassifier__groups=groups)
    b = make("FedGBDTClassifier").fit(StandardScaler().fit_transform(X), y, groups)
    return check(
        same(pipe.predict(X), b.predict(StandardScaler().fit_transform(X))),
        "groups routed by Pipeline",
        "Pipeline fit differs",
    )


@case("FedForestClassifier-GridSearchCV", F, ())
def grid_search() -> Verdict:
    import warnings

    from sklearn.model_selection import GridSearchCV

    X, y, _ = blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = GridSearchCV(make("FedForestClassifier"), {"max_depth": [1, 3]}, cv=2)
        search.fit(X, y)
    return check(
        search.best_params_["max_depth"] in (1, 3) and search.best_score_ > 0.5,
        f"best {search.best_params_}",
        f"score {search.best_score_}",
    )


@case("FedGBDTRegressor-clone-after-fit", F, ())
def clone_after_fit() -> Verdict:
    from sklearn.base import clone

    X, y, groups = regression()
    model = make("FedGBDTRegressor").fit(X, y, groups)
    twin = clone(model)
    if hasattr(twin, "estimators_") or hasattr(twin, "n_features_in_"):
        return wrong("clone kept fitted attributes")
    return check(
        same(twin.fit(X, y, groups).predict(X), model.predict(X)),
        "clone refits the same",
        "clone refits differently",
    )


@case("LocalModelsRegressor-pickle-then-predict-client", F, ())
def pickle_personal() -> Verdict:
    X, y, groups = regression()
    model = make("LocalModelsRegressor").fit(X, y, groups)
    back = pickle.loads(pickle.dumps(model))
    return check(
        same(back.predict(X, client=groups), model.predict(X, client=groups)),
        "same after pickle",
        "differs after pickle",
    )


@case("FedForestClassifier-set_params-bad-then-fit", F, ("max_depth",))
def set_params_bad() -> Verdict:
    X, y, groups = blobs()
    make("FedForestClassifier").set_params(max_depth="deep").fit(X, y, groups)
    return accepted("max_depth='deep'")


@case("FedGBDTClassifier-set_params-unknown", F, ("bogus|parameter",))
def set_params_unknown() -> Verdict:
    """scikit-learn's own refusal (every BaseEstimator): a ValueError naming it."""
    try:
        make("FedGBDTClassifier").set_params(bogus=1)
    except ValueError as exc:
        if "bogus" in str(exc) and "Valid parameters" in str(exc):
            return documented("scikit-learn's set_params refusal, naming 'bogus'")
        raise
    return accepted("set_params(bogus=1)")


@case("FedForestClassifier-refit-other-shape", F, ())
def refit_shape() -> Verdict:
    X, y, groups = blobs()
    X5, y5, g5 = blobs(n_features=5, seed=4)
    model = make("FedForestClassifier").fit(X, y, groups)
    model.fit(X5, y5, g5)
    fresh = make("FedForestClassifier").fit(X5, y5, g5)
    return check(
        model.n_features_in_ == 5 and same(model.predict(X5), fresh.predict(X5)),
        "a refit forgets the first fit",
        "a refit keeps the first fit's shape",
    )


# -- targets and labels ----------------------------------------------------------------
@case("FedGBDTRegressor-constant-target", F, (r"\by\b",))
def gbdt_constant() -> Verdict:
    X, _, groups = regression()
    got = make("FedGBDTRegressor").fit(X, np.full(len(groups), 7.25), groups).predict(X)
    return check(bool(np.allclose(got, 7.25)), "predicts 7.25", f"{got[:3]}")


@case("FedForestRegressor-target-1e300", F, (r"\by\b",))
def huge_target() -> Verdict:
    X, y, groups = regression()
    got = make("FedForestRegressor").fit(X, y * 1e298, groups).predict(X)
    ref = make("FedForestRegressor").fit(X, y, groups).predict(X) * 1e298
    return check(
        bool(np.all(np.isfinite(got)) and np.allclose(got, ref, rtol=1e-9)),
        "scales",
        f"predictions {got[:3]} vs {ref[:3]}",
    )


@case("FedGBDTRegressor-target-1e-300", F, (r"\by\b",))
def tiny_target() -> Verdict:
    return _small_target(1e-300)


def _small_target(factor: float) -> Verdict:
    """Gains scale with y squared: XGBoost's gain floor leaves a tiny y unsplit.

    Documented when the fit warns that every tree is one leaf (docs/fedgbdt.md).
    """
    X, y, groups = regression()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = make("FedGBDTRegressor").fit(X, y * factor, groups).predict(X)
    ref = make("FedGBDTRegressor").fit(X, y, groups).predict(X) * factor
    if np.allclose(got, ref, rtol=1e-6, atol=0):
        return correct("scales")
    if any("single leaf" in str(w.message) for w in caught):
        return documented("every tree one leaf: the fit warns, naming the gain floor")
    return wrong(
        f"{len(np.unique(got))} distinct prediction(s); max rel err "
        f"{np.max(np.abs(got - ref) / np.abs(ref)):.3g}, without a warning"
    )


@case("FedForestClassifier-1000-classes", F, (r"\by\b|class",))
def many_classes() -> Verdict:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 2))
    y = np.repeat(np.arange(1000), 3)
    X[:, 0] += y * 10.0
    groups = np.array(["a", "b", "c"])[rng.integers(0, 3, len(y))]
    model = make("FedForestClassifier", max_depth=None, n_estimators=1)
    model.fit(X, y, groups)
    return check(
        len(model.classes_) == 1000 and model.predict_proba(X[:2]).shape == (2, 1000),
        "1000 classes kept",
        f"{len(model.classes_)} classes",
    )


@case("LocalEnsembleClassifier-unicode-labels", F, (r"\by\b",))
def unicode_labels() -> Verdict:
    X, y, groups = blobs()
    words = np.array(["😀 ok", "ünïcode\u200b"])[y]
    got = make("LocalEnsembleClassifier").fit(X, words, groups).predict(X)
    ref = make("LocalEnsembleClassifier").fit(X, y, groups).predict(X)
    return check(
        same(got, np.array(["😀 ok", "ünïcode\u200b"])[ref]), "exact", "mangled"
    )


@case("FedGBDTClassifier-label-string-nan", F, (r"\by\b",))
def string_nan_label() -> Verdict:
    X, y, groups = blobs()
    words = np.array(["nan", "ok"], dtype=object)[y]
    got = make("FedGBDTClassifier").fit(X, words, groups).predict(X)
    ref = make("FedGBDTClassifier").fit(X, y, groups).predict(X)
    return check(
        same(got.astype(str), np.array(["nan", "ok"])[ref]),
        "'nan' is a label",
        f"'nan' label mangled: {np.unique(got)}",
    )


@case("FedForestClassifier-labels-pd-Categorical", F, (r"\by\b",))
def categorical_labels() -> Verdict:
    X, y, groups = blobs()
    labels = pd.Categorical(np.array(["lo", "hi"])[y], categories=["lo", "hi", "mid"])
    got = make("FedForestClassifier").fit(X, labels, groups).predict(X)
    words = np.array(["lo", "hi"])[y]
    ref = make("FedForestClassifier").fit(X, words, groups).predict(X)
    return check(
        same(np.asarray(got, dtype=str), ref),
        "as the fit on the labels' text",
        "differs from the fit on the labels' text",
    )


# -- federation, privacy ---------------------------------------------------------------
@case("from_groups-categories-column-absent", F, ("ward",))
def categories_absent() -> Verdict:
    from fedtrees.federation import Federation

    X, y, groups = _frame()
    Federation.from_groups(X, y, groups, categories={"ward": ["a", "b"]})
    return accepted("categories for a column X does not have")


def _dp_budget(budget: Any) -> Any:
    from fedtrees.federation import Federation

    X, y, groups = blobs()
    fed = Federation.from_groups(X, y, groups, privacy_budget=budget)
    return make("DPForestClassifier").fit_federation(fed)


@case("privacy_budget-0", F, ("budget|privacy",))
def budget_zero() -> Verdict:
    _dp_budget(0.0)
    return accepted("privacy_budget=0 and a DP fit with epsilon 10")


@case("privacy_budget-negative", F, ("budget|privacy_budget",))
def budget_negative() -> Verdict:
    _dp_budget(-1.0)
    return accepted("privacy_budget=-1")


@case("privacy_budget-nan", F, ("budget|privacy_budget",))
def budget_nan() -> Verdict:
    _dp_budget(float("nan"))
    return accepted("privacy_budget=nan")


@case("privacy_budget-unknown-site", F, ("zzz",))
def budget_unknown_site() -> Verdict:
    _dp_budget({"zzz": 100.0})
    return accepted("a budget for a site that is not a client")


@case("privacy_ledger-is-a-directory", F, ("ledger|directory",))
def ledger_directory() -> Verdict:
    from fedtrees.federation import Federation

    X, y, groups = blobs()
    folder = tempfile.mkdtemp()
    fed = Federation.from_groups(
        X, y, groups, privacy_budget=100.0, privacy_ledger=folder
    )
    make("DPForestClassifier").fit_federation(fed)
    return accepted("a directory as the ledger file")


@case("DPForestClassifier-epsilon-float32", F, ("epsilon",))
def epsilon_float32() -> Verdict:
    X, y, groups = blobs()
    a = make("DPForestClassifier", epsilon=np.float32(1.0))
    b = make("DPForestClassifier", epsilon=1.0)
    a.fit(X, y, groups, noise_seed=SITES_NOISE_SEED)  # the sites' secret
    b.fit(X, y, groups, noise_seed=SITES_NOISE_SEED)
    return check(same(a.predict(X), b.predict(X)), "as epsilon=1.0", "differs")


@case("FedGBDTClassifier-early-stopping-1-round", F, ("early_stopping_rounds",))
def early_stop_one() -> Verdict:
    X, y, groups = blobs()
    model = make(
        "FedGBDTClassifier", n_estimators=50, early_stopping_rounds=1,
        validation_fraction=0.3,
    ).fit(X, y, groups)  # fmt: skip
    n = len(model.estimators_) if hasattr(model, "estimators_") else None
    return documented(f"stops early (docs/fedgbdt.md); trees {n}")


@case("FedGBDTRegressor-validation_fraction-0.99", F, ("validation_fraction",))
def validation_099() -> Verdict:
    X, y, groups = regression()
    model = make(
        "FedGBDTRegressor", n_estimators=5, early_stopping_rounds=2,
        validation_fraction=0.99,
    ).fit(X, y, groups)  # fmt: skip
    got = model.predict(X)
    return (
        documented("docs/fedgbdt.md: each site holds out validation_fraction")
        if np.all(np.isfinite(got))
        else wrong(f"predictions {got[:3]}")
    )


@case("Tree-json-unicode-feature-names", F, ())
def tree_unicode_names() -> Verdict:
    from sklearn.tree import DecisionTreeClassifier

    from fedtrees import Tree

    X, y, _ = blobs()
    frame = pd.DataFrame(X, columns=["âge 😀", 'a"b\\c', "\u200b"])
    tree = Tree.from_sklearn(DecisionTreeClassifier(max_depth=3).fit(frame, y))
    back = Tree.from_json(tree.to_json())
    return check(
        back == tree and back.feature_names == tree.feature_names,
        "names kept",
        f"names {back.feature_names}",
    )


@case("FedGBDTRegressor-target-times-1e-6", F, (r"\by\b",))
def target_1e6() -> Verdict:
    return _small_target(1e-6)


def _half_weights(name: str) -> Verdict:
    """Uniform weights 0.5: the same trees as no weights (CART is scale-free).

    scikit-learn's bootstrap draws rows in proportion to the weights, with
    another use of its generator, so the local forests compare without it.
    """
    _row_secrets()
    X, y, groups = regression() if name.endswith("Regressor") else blobs()
    params = {"bootstrap": False} if name.startswith("Local") else {}
    a = make(name, **params).fit(X, y, groups, sample_weight=np.full(len(y), 0.5))
    b = make(name, **params).fit(X, y, groups)
    return check(
        same(predict(a, X, groups), predict(b, X, groups)),
        "as unweighted",
        "uniform weights 0.5 change the fit",
    )


for _name in (
    "FedForestClassifier",
    "FedForestRegressor",
    "LocalEnsembleClassifier",
    "LocalEnsembleRegressor",
    "LocalModelsClassifier",
    "LocalModelsRegressor",
):
    case(f"{_name}-uniform-weights-0.5", F, ("sample_weight",))(
        lambda _n=_name: _half_weights(_n)
    )
