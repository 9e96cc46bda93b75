"""FedGBDT against Flower-style federated boosting, under label skew (docs/fedgbdt.md).

Settings: ``adult`` (its own train/test split) and ``credit_default`` (a
stratified 75/25 split, seeded per repeat), the training rows shared out over
``n_clients`` clients by Dirichlet label skew for every ``alpha`` (smaller is
more skewed: at 0.1 most clients hold almost one label); and ``heart`` (the
four hospitals, FLamby's split). Methods, all with the same trees (number,
depth, learning rate, bins):

- **FedGBDT**: the histogram protocol, which grows the pooled model;
- **bagging** and **cyclic**: Flower's ``FedXgbBagging`` and ``FedXgbCyclic``
  on FedGBDT's grid and learner (``protocol=``), so only the protocol differs;
- **local-only**: every client's own XGBoost on its own rows, scored on the
  pooled test set (the mean over clients);
- **pooled XGBoost**: XGBoost ``hist`` on all training rows (no federation),
  the reference FedGBDT should match.

Accuracy and AUC on the pooled test set; rounds and MiB moved (up and down) of
the federated methods.

**Decision:** XGBoost is given the same number of bins and categorical columns
as pandas categories (``enable_categorical``, its default one-hot threshold);
local-only models start from ``base_score`` 0.5, so that a client holding a
single label trains (XGBoost estimates no starting score from one label).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from fedtrees._random import keyed_rng
from fedtrees._validation import check_float, check_int, invalid
from fedtrees.algorithms import check_size
from fedtrees.algorithms.fedgbdt import (
    MAX_BOOSTING_DEPTH,
    MAX_BOOSTING_ROUNDS,
    FedGBDTClassifier,
)
from fedtrees.datasets import Dataset, load, partition
from fedtrees.exceptions import ValidationError
from fedtrees.experiments._report import Plot, Progress, Report, pivot_mean, pivot_sd

__all__ = ["FedGBDTConfig", "n_steps", "run_fedgbdt"]

SKEWED: Final = ("adult", "credit_default")
"""Datasets shared out by Dirichlet label skew."""
POOLED: Final = "Pooled XGBoost"
METHODS: Final = ("fedgbdt", "bagging", "cyclic", "local", "pooled")
LABELS: Final = {
    "fedgbdt": "FedGBDT",
    "bagging": "Bagging (Flower-style)",
    "cyclic": "Cyclic (Flower-style)",
    "local": "Local-only (mean of clients)",
    "pooled": POOLED,
}


@dataclass(frozen=True)
class FedGBDTConfig:
    """What to run; the defaults are the full experiment."""

    datasets: tuple[str, ...] = ("adult", "credit_default", "heart")
    alphas: tuple[float, ...] = (100.0, 1.0, 0.3, 0.1)
    n_clients: int = 10
    n_repeats: int = 2
    n_estimators: int = 100
    max_depth: int = 6
    learning_rate: float = 0.1
    max_bins: int = 255
    max_train_rows: int | None = None
    """Draw at most this many training rows (stratified); None: all of them."""
    methods: tuple[str, ...] = METHODS
    seed: int = 0

    @classmethod
    def quick(cls) -> FedGBDTConfig:
        """Return a CI-sized run: credit and heart, two skews, small trees."""
        return cls(
            datasets=("credit_default", "heart"),
            alphas=(100.0, 0.1),
            n_repeats=1,
            n_estimators=10,
            max_depth=3,
            learning_rate=0.3,
            max_train_rows=4000,
        )

    def validated(self) -> FedGBDTConfig:
        """Return self if every field is in range (errors name the field)."""
        where = "FedGBDTConfig"
        check_int(self.n_repeats, "n_repeats", where, min_value=1)
        check_int(self.seed, "seed", where, min_value=0)
        check_size(self.n_estimators, "n_estimators", where, 1, MAX_BOOSTING_ROUNDS)
        check_int(
            self.max_depth,
            "max_depth",
            where,
            min_value=1,
            max_value=MAX_BOOSTING_DEPTH,
        )
        check_int(self.n_clients, "n_clients", where, min_value=2)
        check_int(self.max_bins, "max_bins", where, min_value=2, max_value=255)
        check_float(self.learning_rate, "learning_rate", where, min_value=0.0,
                    min_inclusive=False)  # fmt: skip
        if self.max_train_rows is not None:
            check_int(self.max_train_rows, "max_train_rows", where, min_value=100)
        for name, allowed in (("datasets", (*SKEWED, "heart")), ("methods", METHODS)):
            chosen = getattr(self, name)
            if not chosen or not set(chosen) <= set(allowed):
                raise invalid(
                    name, where, f"a non-empty subset of {list(allowed)}", chosen
                )
        if set(SKEWED) & set(self.datasets) and not self.alphas:
            raise invalid("alphas", where, "at least one Dirichlet alpha", self.alphas)
        for alpha in self.alphas:
            check_float(alpha, "alphas", where, min_value=0.0, min_inclusive=False)
        return self


@dataclass(frozen=True)
class _Setting:
    """One federation: its name, the training rows by client, the test rows."""

    dataset: str
    name: str
    alpha: float | None
    train: Dataset
    groups: np.ndarray
    test: Dataset


Score = tuple[np.ndarray, int | None, float | None]
"""Positive-class probabilities of the test rows, rounds, MiB (None: no messages)."""
Method = Callable[[_Setting, FedGBDTConfig, int], Score]


def n_steps(config: FedGBDTConfig) -> int:
    """Return the number of fits the run performs (for a progress bar)."""
    skewed = sum(d in SKEWED for d in config.datasets) * len(config.alphas)
    heart = int("heart" in config.datasets)
    return (skewed + heart) * len(config.methods) * config.n_repeats


def run_fedgbdt(
    config: FedGBDTConfig | None = None, progress: Progress | None = None
) -> Report:
    """Fit every method on every setting ``n_repeats`` times; return the report.

    Examples
    --------
    >>> report = run_fedgbdt(dataclasses.replace(
    ...     FedGBDTConfig.quick(), datasets=("heart",), n_estimators=2))
    >>> sorted(report.tables)[:2]
    ['AUC (mean over repeats)', 'Accuracy (mean over repeats)']
    """
    config = (config or FedGBDTConfig()).validated()
    _require_xgboost()
    rows = []
    for repeat in range(config.n_repeats):
        seed = int(keyed_rng(config.seed, repeat).integers(2**31 - 1))
        for setting in _settings(config, seed):
            classes = np.unique(setting.train.y.to_numpy())
            truth = setting.test.y.to_numpy() == classes[-1]
            for method in config.methods:
                proba, rounds, mib = _METHODS[method](setting, config, seed)
                accuracy, auc = _metrics(proba, truth)
                rows.append({
                    "dataset": setting.dataset, "setting": setting.name,
                    "alpha": setting.alpha, "method": LABELS[method],
                    "repeat": repeat, "accuracy": accuracy, "auc": auc,
                    "rounds": rounds, "mib": mib,
                })  # fmt: skip
                if progress is not None:
                    progress(f"repeat {repeat}: {setting.name}, {LABELS[method]}")
    return _report(config, pd.DataFrame(rows))


def _metrics(proba: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """Accuracy and AUC; for one model per client (2-d), their means."""
    models = np.atleast_2d(proba)
    accuracy = [float(np.mean((p > 0.5) == truth)) for p in models]
    auc = [float(roc_auc_score(truth, p)) for p in models]
    return float(np.mean(accuracy)), float(np.mean(auc))


def _require_xgboost() -> None:
    try:
        import xgboost  # noqa: F401
    except ImportError as exc:
        raise ValidationError(
            "The FedGBDT experiment compares with XGBoost, which is not installed; "
            "install it with the 'export' extra (pip install -e \".[export]\")."
        ) from exc


# -- the settings ---------------------------------------------------------------------
def _settings(config: FedGBDTConfig, seed: int) -> list[_Setting]:
    out = []
    for name in config.datasets:
        if name == "heart":
            out.append(_heart(config, seed))
            continue
        train, test = _split(load(name), seed)
        train = _at_most(train, config.max_train_rows, seed)
        for alpha in config.alphas:
            draw = keyed_rng(seed, 1, round(alpha * 1000)).integers(2**31)
            shares = partition.dirichlet_label_skew(
                train.y.to_numpy(), config.n_clients, alpha=alpha,
                random_state=int(draw), min_samples=10,
            )  # fmt: skip
            groups = np.empty(train.X.shape[0], dtype=object)
            for client, rows in zip(shares.names, shares, strict=True):
                groups[rows] = client
            label = f"{name} alpha={alpha:g}"
            out.append(_Setting(name, label, alpha, train, groups, test))
    return out


def _split(data: Dataset, seed: int) -> tuple[Dataset, Dataset]:
    """Return the dataset's own split where it has one, else stratified 75/25."""
    if data.split is not None:
        return data.train(), data.test()
    rows = np.arange(data.X.shape[0])
    train, test = train_test_split(
        rows, test_size=0.25, stratify=data.y, random_state=seed
    )
    return data.subset(np.sort(train)), data.subset(np.sort(test))


def _at_most(data: Dataset, rows: int | None, seed: int) -> Dataset:
    if rows is None or data.X.shape[0] <= rows:
        return data
    kept, _ = train_test_split(
        np.arange(data.X.shape[0]), train_size=rows, stratify=data.y, random_state=seed
    )
    return data.subset(np.sort(kept))


def _heart(config: FedGBDTConfig, seed: int) -> _Setting:
    data = load("heart_disease", flamby=True)
    train, test = data.train(), data.test()
    train = _at_most(train, config.max_train_rows, seed)
    assert train.clients is not None
    groups = train.clients.to_numpy().astype(str)
    return _Setting("heart", "heart (4 hospitals)", None, train, groups, test)


# -- the methods ----------------------------------------------------------------------
def _federated(protocol: str) -> Method:
    def fit(setting: _Setting, config: FedGBDTConfig, seed: int) -> Score:
        model = FedGBDTClassifier(
            n_estimators=config.n_estimators, max_depth=config.max_depth,
            learning_rate=config.learning_rate, max_bins=config.max_bins,
            protocol=protocol, random_state=seed,
        ).fit(setting.train.X, setting.train.y, groups=setting.groups)  # fmt: skip
        ledger = model.communication_
        mib = (ledger.bytes_up + ledger.bytes_down) / 2**20
        return model.predict_proba(setting.test.X)[:, 1], ledger.rounds, mib

    return fit


def _xgboost_params(config: FedGBDTConfig, seed: int) -> dict[str, Any]:
    return {
        "objective": "binary:logistic", "tree_method": "hist",
        "max_depth": config.max_depth, "eta": config.learning_rate,
        "max_bin": config.max_bins, "seed": seed, "nthread": 1,
    }  # fmt: skip


def _xgboost(
    X: pd.DataFrame, positive: np.ndarray, config: FedGBDTConfig, params: dict[str, Any]
) -> Any:
    import xgboost

    matrix = xgboost.DMatrix(X, label=positive.astype(float), enable_categorical=True)
    return xgboost.train(params, matrix, num_boost_round=config.n_estimators)


def _score(booster: Any, X: pd.DataFrame) -> np.ndarray:
    import xgboost

    proba: np.ndarray = booster.predict(xgboost.DMatrix(X, enable_categorical=True))
    return proba


def _positive(setting: _Setting) -> np.ndarray:
    y = setting.train.y.to_numpy()
    return np.asarray(y == np.unique(y)[-1])


def _pooled(setting: _Setting, config: FedGBDTConfig, seed: int) -> Score:
    params = _xgboost_params(config, seed)
    booster = _xgboost(setting.train.X, _positive(setting), config, params)
    return _score(booster, setting.test.X), None, None


def _local(setting: _Setting, config: FedGBDTConfig, seed: int) -> Score:
    """Every client's own model on the pooled test set: one row per client."""
    params = {**_xgboost_params(config, seed), "base_score": 0.5}
    positive = _positive(setting)
    probas = []
    for client in np.unique(setting.groups):
        own = setting.groups == client
        booster = _xgboost(setting.train.X[own], positive[own], config, params)
        probas.append(_score(booster, setting.test.X))
    return np.stack(probas), None, None


_METHODS: Final[dict[str, Method]] = {
    "fedgbdt": _federated("histogram"),
    "bagging": _federated("bagging"),
    "cyclic": _federated("cyclic"),
    "local": _local,
    "pooled": _pooled,
}


# -- the report -----------------------------------------------------------------------
def _report(config: FedGBDTConfig, raw: pd.DataFrame) -> Report:
    accuracy = pivot_mean(raw, rows="method", columns="setting", value="accuracy")
    auc = pivot_mean(raw, rows="method", columns="setting", value="auc")
    tables = {
        "Accuracy (mean over repeats)": accuracy.round(4),
        "AUC (mean over repeats)": auc.round(4),
    }
    if config.n_repeats > 1:
        sd = pivot_sd(raw, rows="method", columns="setting", value="accuracy")
        tables["Accuracy sd over repeats"] = sd.round(4)
    if POOLED in accuracy.index:
        gap = (accuracy - accuracy.loc[POOLED]) * 100
        tables[f"Accuracy gap to {POOLED} (points)"] = gap.drop(index=POOLED).round(2)
    federated = raw.dropna(subset=["rounds"])
    if not federated.empty:
        rounds = pivot_mean(federated, rows="method", columns="setting", value="rounds")
        tables["Rounds"] = rounds.round().astype(int)
        mib = pivot_mean(federated, rows="method", columns="setting", value="mib")
        tables["MiB moved (up + down)"] = mib.round(2)
    return Report(
        name="fedgbdt",
        title="FedGBDT against bagging and cyclic federated boosting, label skew",
        config=dataclasses.asdict(config),
        tables=tables,
        raw=raw,
        notes=_NOTES,
        plots=_plots(raw),
    )


def _repeats(rows: pd.DataFrame) -> str:
    n = rows["repeat"].nunique()
    return "one repeat" if n == 1 else f"{n} repeats"


def _plots(raw: pd.DataFrame) -> tuple[Plot, ...]:
    """Per skewed dataset, each method's accuracy against the skew; heart's bars.

    With pooled XGBoost in the run, the lines show the gap to it in points (its
    own line would hide FedGBDT's: they coincide).
    """
    gap = _gap_points(raw)
    frame = raw if gap is None else gap
    plots = []
    for dataset in SKEWED:
        rows = frame[frame["dataset"] == dataset]
        if rows.empty:
            continue
        value = "accuracy" if gap is None else "gap"
        values = pivot_mean(rows, rows="alpha", columns="method", value=value)
        errors = pivot_sd(rows, rows="alpha", columns="method", value=value)
        labels = pd.Index([f"{a:g}" for a in values.index], name="alpha")
        plots.append(
            Plot(
                f"accuracy_{dataset}",
                f"{dataset}: test accuracy vs label skew ({_repeats(rows)})",
                "lines",
                values.set_axis(labels),
                "Dirichlet alpha (smaller: more skew)",
                "accuracy" if gap is None else f"accuracy minus {POOLED}'s (points)",
                errors=errors.set_axis(labels),
                errors_note="bars: sd over repeats",
            )
        )
    heart = raw[raw["dataset"] == "heart"]
    if not heart.empty:
        values = pivot_mean(heart, rows="method", columns="setting", value="accuracy")
        plots.append(
            Plot(
                "accuracy_heart",
                "heart (4 hospitals): test accuracy",
                "bars",
                values,
                "method",
                "accuracy",
                errors=pivot_sd(
                    heart, rows="method", columns="setting", value="accuracy"
                ),
                errors_note="bars: sd over repeats",
            )
        )
    return tuple(plots)


def _gap_points(raw: pd.DataFrame) -> pd.DataFrame | None:
    """Return the other methods' rows with ``gap``, in points; None without pooled.

    ``gap`` is the row's accuracy minus pooled XGBoost's in the same setting
    and repeat.
    """
    pooled = raw[raw["method"] == POOLED]
    if pooled.empty:
        return None
    base = pooled.set_index(["setting", "repeat"])["accuracy"]
    others = raw[raw["method"] != POOLED].copy()
    keys = pd.MultiIndex.from_frame(others[["setting", "repeat"]])
    others["gap"] = 100 * (
        others["accuracy"].to_numpy() - base.reindex(keys).to_numpy()
    )
    return others


_NOTES: Final = (
    "FedGBDT grows the model XGBoost would grow on the pooled rows (same grid "
    "up to the federated quantile sketch), so its gap to pooled XGBoost stays "
    "small at every skew; bagging and cyclic boost on one client's rows at a "
    "time, which under label skew sees mostly one label.",
    "Bagging appends every client's tree of a round, as Flower's FedXgbBagging "
    "does: with 10 clients each round moves the score 10 steps of the learning "
    "rate, which overshoots even without skew.",
    "Local-only: the mean accuracy and AUC of the clients' own models on the "
    "pooled test set (a client with one label predicts it everywhere).",
    "Rounds and MiB: the whole fit, every client, both directions; pooled "
    "XGBoost and local-only send nothing.",
)
