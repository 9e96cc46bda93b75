"""The ``fedtrees demo`` job: four hospitals, FedForest against the alternatives.

FLamby's preparation and split of the heart-disease data (740 rows, binary): a
FedForest across the four hospitals, each hospital's own forest (every test
patient scored by their own hospital's forest) and a scikit-learn random forest
on the pooled training rows — the reference federation tries to reach without
moving a row. The full comparison (every local model on every hospital, more
methods, repeats) is :mod:`fedtrees.experiments.fedforest_heart`. A pure runner:
it returns a :class:`DemoResult` that the command line renders.

**Decision (depth):** every forest is grown to ``max_depth=6`` (default). Unlimited
trees reach depth 19 on 486 training rows, need 39 rounds and move 5.1 MiB; at
depth 6 FedForest needs 13 rounds and about 3 MiB, and its accuracy over five
seeds stays within a point of the unlimited forest's (0.787 vs 0.786 on the pooled
test set, 0.816 vs 0.817 mean of sites).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier

from fedtrees._validation import check_int
from fedtrees.algorithms import (
    MAX_N_ESTIMATORS,
    FedForestClassifier,
    LocalModelsClassifier,
    check_size,
)
from fedtrees.algorithms.fedforest import MAX_DEPTH_CAP
from fedtrees.datasets import Dataset, load
from fedtrees.federation import Ledger

__all__ = ["MESSAGES", "DemoResult", "run_demo"]

MESSAGES: Final = {
    "federation.schema": "agreement",
    "fedforest.grid": "bin grid (once)",
    "fedforest.histogram": "histograms",
}
"""Short names of FedForest's message kinds in the demo's communication table."""


@dataclass(frozen=True, eq=False)
class DemoResult:
    """Per-site counts, accuracies and FedForest's communication."""

    sites: pd.DataFrame
    """Index: site; columns: train rows, train positives, test rows, test positives."""
    accuracy: pd.DataFrame
    """Index: test set (each hospital, their mean, all test rows); columns: model."""
    communication: pd.DataFrame
    """Index: message (and ``total``); columns: messages, KiB down, KiB up."""
    rounds: int
    """FedForest's round trips, the agreement included."""
    max_depth: int
    """Depth limit of every forest."""


def run_demo(
    *,
    n_estimators: int = 50,
    max_depth: int = 6,
    random_state: int = 0,
    verbose: bool = False,
) -> DemoResult:
    """Fit FedForest, each hospital's forest and a pooled RF; score per hospital.

    ``verbose`` shows each federated fit's progress (a bar on a terminal, one
    line per level otherwise).

    Examples
    --------
    >>> result = run_demo(n_estimators=5)
    >>> result.accuracy.shape
    (6, 3)
    """
    owner = "run_demo"
    trees = check_size(n_estimators, "n_estimators", owner, 1, MAX_N_ESTIMATORS)
    depth = check_int(
        max_depth, "max_depth", owner, min_value=1, max_value=MAX_DEPTH_CAP
    )
    seed = check_int(random_state, "random_state", owner, min_value=0)
    data = load("heart_disease", flamby=True)
    train, test = data.train(), data.test()
    options: dict[str, Any] = {
        "n_estimators": trees,
        "max_depth": depth,
        "random_state": seed,
    }
    fedforest = FedForestClassifier(**options, verbose=verbose)
    fedforest.fit(train.X, train.y, groups=_sites(train))
    own = LocalModelsClassifier(**options, verbose=verbose)
    own.fit(train.X, train.y, groups=_sites(train))
    pooled = RandomForestClassifier(**options, n_jobs=1).fit(train.X, train.y)
    predictions = {
        "FedForest": fedforest.predict(test.X),
        "Own hospital": own.predict(test.X, client=_sites(test)),
        "Pooled RF": pooled.predict(test.X),
    }
    return DemoResult(
        sites=_site_table(data),
        accuracy=_accuracy_table(predictions, test),
        communication=_communication_table(fedforest.communication_),
        rounds=fedforest.communication_.rounds,
        max_depth=depth,
    )


def _sites(data: Dataset) -> np.ndarray:
    assert data.clients is not None
    return data.clients.to_numpy().astype(str)


def _site_table(data: Dataset) -> pd.DataFrame:
    assert data.split is not None
    frame = pd.DataFrame({"site": _sites(data), "split": data.split, "y": data.y})
    columns = {}
    for part in ("train", "test"):
        rows = frame[frame.split == part].groupby("site", sort=False)["y"]
        columns[f"{part} rows"] = rows.size()
        columns[f"{part} positives"] = rows.sum()
    table = pd.DataFrame(columns).astype(int)
    return table.loc[list(pd.unique(_sites(data)))]


def _accuracy_table(predictions: dict[str, np.ndarray], test: Dataset) -> pd.DataFrame:
    truth, sites = test.y.to_numpy(), _sites(test)
    names = list(pd.unique(sites))
    table = {}
    for model, predicted in predictions.items():
        correct = np.asarray(predicted) == truth
        per_site = [float(np.mean(correct[sites == s])) for s in names]
        table[model] = [*per_site, float(np.mean(per_site)), float(np.mean(correct))]
    index = pd.Index([*names, "mean of sites", "all test rows"], name="test set")
    return pd.DataFrame(table, index=index)


def _communication_table(ledger: Ledger) -> pd.DataFrame:
    first_round = ledger.to_frame().groupby("kind")["round"].min()
    kinds = ledger.by_kind().loc[first_round.sort_values(kind="stable").index]
    table = pd.DataFrame(
        {
            "messages": kinds["messages"].astype(int),
            "KiB down": kinds["bytes_down"] / 1024,
            "KiB up": kinds["bytes_up"] / 1024,
        }
    )
    table.index = pd.Index([MESSAGES.get(k, k) for k in kinds.index], name="message")
    table.loc["total"] = table.sum()
    return table.astype({"messages": int})
