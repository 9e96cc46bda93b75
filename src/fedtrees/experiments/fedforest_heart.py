"""FedForest paper, Sec. 5.2: Fed-Heart-Disease (docs/fedforest.md).

FLamby's preparation and split (740 rows, 13 features, per-site stratified 66/34
train/test with seed 43). Methods: FedForest quantiles and AvgImp, the Federated
Histogram, local learning (each hospital's own forest, scored on every hospital),
local ensembling, a centralized scikit-learn RF on the pooled training rows, and
FedAvg logistic regression with FLamby's settings (plus our default learning rate
and a one-hidden-layer MLP). Accuracy per site, the mean over the four sites and on
the pooled test set; the model seeds vary over ``n_repeats`` (the split is fixed),
and FLamby's published accuracies are printed beside ours.

**Decision:** every forest uses 100 trees, ``max_features="sqrt"``, no depth
limit, min_samples_leaf 1 (scikit-learn's defaults); trees see raw features, only
FedAvg standardizes (per site, FLamby's way).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier

from fedtrees._random import keyed_rng
from fedtrees._validation import check_int, invalid
from fedtrees.algorithms import (
    MAX_GRID,
    MAX_N_ESTIMATORS,
    FedAvgClassifier,
    FedForestClassifier,
    LocalEnsembleClassifier,
    LocalModelsClassifier,
    check_size,
)
from fedtrees.datasets import Dataset, load
from fedtrees.experiments._report import (
    Plot,
    Progress,
    Report,
    pivot_mean,
    pivot_sd,
)
from fedtrees.federation import Ledger

__all__ = ["PUBLISHED", "HeartConfig", "run_fedforest_heart"]

SITES: Final = ("Cleveland", "Hungary", "Switzerland", "Long Beach VA")

PUBLISHED: Final = pd.DataFrame(
    {
        "mean of sites": ["0.735", "0.685", "0.731", "0.567 to 0.722", "≈0.815"],
        "pooled": ["0.795", "0.748", "0.779", "-", "≈0.788"],
    },
    index=pd.Index(
        [
            "Pooled-training logistic regression (FLamby)",
            "FedAvg logistic regression (FLamby)",
            "Best strategy, FedYogi/FedAdagrad (FLamby)",
            "Local models (FLamby)",
            "Pooled scikit-learn RF, 100 trees (ours, not FLamby's: docs/fedforest.md)",
        ],
        name="reference",
    ),
)
"""The reference accuracies: FLamby's published figures, and our own pooled forest.

The last row is not FLamby's: it is scikit-learn's random forest on the pooled
rows, run by us (docs/fedforest.md)."""
REFERENCE_TABLE: Final = "Reference accuracies: FLamby's published, our pooled RF"
"""The title of :data:`PUBLISHED`'s table (its file:
``fedforest_heart_reference_accuracies.csv``)."""


@dataclass(frozen=True)
class HeartConfig:
    """What to run; the defaults are the full experiment."""

    n_repeats: int = 5
    seed: int = 0
    n_estimators: int = 100
    n_quantiles: int = 32
    methods: tuple[str, ...] = (
        "fedforest",
        "avgimp",
        "histogram",
        "local",
        "ensemble",
        "centralized",
        "fedavg-flamby",
        "fedavg",
        "fedavg-mlp",
    )
    verbose: bool = False

    @classmethod
    def quick(cls) -> HeartConfig:
        """Return a CI-sized run: one repeat, 20 trees."""
        return cls(n_repeats=1, n_estimators=20)

    def validated(self) -> HeartConfig:
        """Return self if every field is in range (errors name the field)."""
        check_int(self.n_repeats, "n_repeats", "HeartConfig", min_value=1)
        check_int(self.seed, "seed", "HeartConfig", min_value=0)
        check_size(
            self.n_estimators, "n_estimators", "HeartConfig", 1, MAX_N_ESTIMATORS
        )
        check_size(self.n_quantiles, "n_quantiles", "HeartConfig", 2, MAX_GRID)
        unknown = sorted(set(self.methods) - set(METHODS))
        if unknown or not self.methods:
            raise invalid(
                "methods",
                "HeartConfig",
                f"a non-empty subset of {list(METHODS)}",
                self.methods,
            )
        return self


Outcome = tuple[dict[str, np.ndarray], Ledger | None]
"""Predictions for the pooled test rows (one entry per reported model), ledger."""
Method = Callable[[Dataset, Dataset, HeartConfig, int], Outcome]


def _sites(data: Dataset) -> np.ndarray:
    assert data.clients is not None
    return data.clients.to_numpy().astype(str)


def fedforest(label: str, **options: Any) -> Method:
    """FedForestClassifier with ``options``; every test row tagged with its site."""

    def fit(train: Dataset, test: Dataset, config: HeartConfig, seed: int) -> Outcome:
        model = FedForestClassifier(
            n_estimators=config.n_estimators,
            n_quantiles=config.n_quantiles,
            random_state=seed,
            verbose=config.verbose,
            **{"candidates": "quantile", **options},  # the paper's candidates
        ).fit(train.X, train.y, groups=_sites(train))
        return {label: model.predict(test.X)}, model.communication_

    return fit


def centralized(
    train: Dataset, test: Dataset, config: HeartConfig, seed: int
) -> Outcome:
    """scikit-learn RF on the pooled training rows (no federation)."""
    model = RandomForestClassifier(
        n_estimators=config.n_estimators, random_state=seed, n_jobs=1
    ).fit(train.X, train.y)
    return {"Centralized RF (pooled rows)": model.predict(test.X)}, None


def local_ensembling(
    train: Dataset, test: Dataset, config: HeartConfig, seed: int
) -> Outcome:
    """Every hospital's forest, pooled (Hauschild et al. 2022)."""
    model = LocalEnsembleClassifier(
        n_estimators=config.n_estimators, random_state=seed, verbose=config.verbose
    )
    model.fit(train.X, train.y, groups=_sites(train))
    return {"Local ensembling": model.predict(test.X)}, model.communication_


def local_learning(
    train: Dataset, test: Dataset, config: HeartConfig, seed: int
) -> Outcome:
    """Each hospital's own forest, scored on every hospital's test rows."""
    model = LocalModelsClassifier(
        n_estimators=config.n_estimators, random_state=seed, verbose=config.verbose
    )
    model.fit(train.X, train.y, groups=_sites(train))
    predictions = {
        f"Local learning ({site})": model.predict(test.X, client=site)
        for site in model.clients_
    }
    return predictions, None


def fedavg(label: str, hidden: tuple[int, ...], learning_rate: float) -> Method:
    """FedAvg with FLamby's heart settings (batch 4, 100 local steps, 15 rounds)."""

    def fit(train: Dataset, test: Dataset, config: HeartConfig, seed: int) -> Outcome:
        model = FedAvgClassifier(
            hidden,
            learning_rate=learning_rate,
            random_state=seed,
            verbose=config.verbose,
        ).fit(train.X, train.y, groups=_sites(train))
        return {label: model.predict(test.X, client=_sites(test))}, model.communication_

    return fit


METHODS: Final[dict[str, Method]] = {
    "fedforest": fedforest("FedForest quantiles"),
    "avgimp": fedforest("FedForest AvgImp", gain="avgimp"),
    "histogram": fedforest("Federated Histogram", candidates="uniform"),
    "local": local_learning,
    "ensemble": local_ensembling,
    "centralized": centralized,
    "fedavg-flamby": fedavg("FedAvg LR (FLamby: lr 1e-4)", (), 1e-4),
    "fedavg": fedavg("FedAvg LR (lr 0.01)", (), 0.01),
    "fedavg-mlp": fedavg("FedAvg MLP, 16 hidden (lr 0.01)", (16,), 0.01),
}


def n_steps(config: HeartConfig) -> int:
    """Return the number of fits the run performs (for a progress bar)."""
    return len(config.methods) * config.n_repeats


def run_fedforest_heart(
    config: HeartConfig | None = None, progress: Progress | None = None
) -> Report:
    """Fit every method ``n_repeats`` times; return the report (no I/O).

    Examples
    --------
    >>> report = run_fedforest_heart(dataclasses.replace(HeartConfig.quick(),
    ...                                                   n_estimators=3))
    >>> list(report.tables["Accuracy (mean over repeats)"].columns)[-2:]
    ['mean of sites', 'pooled']
    """
    config = (config or HeartConfig()).validated()
    data = load("heart_disease", flamby=True)
    train, test = data.train(), data.test()
    truth, sites = test.y.to_numpy(), _sites(test)
    rows = []
    for repeat in range(config.n_repeats):
        seed = int(keyed_rng(config.seed, repeat).integers(2**31 - 1))
        for name in config.methods:
            predictions, ledger = METHODS[name](train, test, config, seed)
            for label, predicted in predictions.items():
                rows += _accuracy_rows(label, repeat, predicted, truth, sites, ledger)
            if progress is not None:
                progress(f"repeat {repeat}: {', '.join(predictions)}")
    return _report(config, pd.DataFrame(rows))


def _accuracy_rows(
    label: str,
    repeat: int,
    predicted: np.ndarray,
    truth: np.ndarray,
    sites: np.ndarray,
    ledger: Ledger | None,
) -> list[dict[str, Any]]:
    correct = np.asarray(predicted) == truth
    per_site = {site: float(np.mean(correct[sites == site])) for site in SITES}
    scores = {
        **per_site,
        "mean of sites": float(np.mean(list(per_site.values()))),
        "pooled": float(np.mean(correct)),
    }
    common = {
        "method": label,
        "repeat": repeat,
        "rounds": np.nan if ledger is None else ledger.rounds,
        "kib": np.nan
        if ledger is None
        else (ledger.bytes_up + ledger.bytes_down) / 1024,
    }
    return [{**common, "test set": k, "accuracy": v} for k, v in scores.items()]


def _report(config: HeartConfig, raw: pd.DataFrame) -> Report:
    mean = pivot_mean(raw, rows="method", columns="test set", value="accuracy")
    sd = pivot_sd(raw, rows="method", columns="test set", value="accuracy")
    summary = mean[["mean of sites", "pooled"]]
    tables = {"Accuracy (mean over repeats)": mean.round(3)}
    if config.n_repeats > 1:  # one repeat has no spread: no column of zeros
        tables["Accuracy sd over repeats"] = sd.round(3)
    tables[REFERENCE_TABLE] = PUBLISHED
    cost, silent = communication(raw)
    tables["Communication (mean rounds, KiB)"] = cost
    return Report(
        name="fedforest_heart",
        title="FedForest on Fed-Heart-Disease (paper Sec. 5.2, FLamby split)",
        config=dataclasses.asdict(config),
        tables=tables,
        raw=raw,
        notes=(*_NOTES, _silent_note(silent)) if silent else _NOTES,
        plots=(
            Plot(
                "accuracy",
                "Fed-Heart-Disease: accuracy, mean of the 4 sites and pooled test",
                "bars",
                summary,
                "method",
                "accuracy",
                errors=sd[["mean of sites", "pooled"]],
                errors_note="bars: sd over repeats",
            ),
            Plot(
                "sites",
                "Fed-Heart-Disease: accuracy per hospital test set",
                "bars",
                mean[list(SITES)].T,
                "hospital test set",
                "accuracy",
            ),
        ),
    )


def communication(raw: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Return the mean rounds and KiB of every federated method, and the others.

    **Decision:** methods without a federation (the centralized RF, local
    learning) get no row of NaN; a note names them instead. Rounds print as
    integers (the mean over repeats, rounded: FedForest and FedAvg run the same
    number of rounds for every seed), and so do whole KiB.
    """
    cost = raw.groupby("method", sort=False)[["rounds", "kib"]].mean()
    silent = [str(m) for m in cost.index[cost["rounds"].isna()]]
    cost = cost.dropna(subset=["rounds"])
    return (
        pd.DataFrame(
            {
                "rounds": cost["rounds"].round().astype(int),
                "KiB": cost["kib"].round().astype(int),
            },
            index=cost.index,
        ),
        silent,
    )


def _silent_note(methods: list[str]) -> str:
    return (
        f"No messages, so no communication row: {', '.join(methods)} (trained "
        "without a federation)."
    )


_NOTES: Final = (
    "Switzerland's train part is all positive (FLamby's seed-43 split puts its "
    "single negative row in test), and its test set is almost all positive: "
    "per-site accuracy there mostly measures the positive rate.",
    "Local learning (site): that hospital's forest scored on every hospital; FLamby "
    "reports local models between 0.567 and 0.722.",
    "FedAvg (FLamby: lr 1e-4) uses FLamby's exact settings; in 15 rounds the model "
    "barely leaves its initialisation, so its seeds vary widely.",
)
