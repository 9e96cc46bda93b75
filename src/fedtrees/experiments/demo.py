"""The ``fedtrees demo`` job: four hospitals, FedForest against the alternatives.

A short run of the heart experiment (:mod:`fedtrees.experiments.fedforest_heart`)
on FLamby's preparation and split: FedForest across the four hospitals, each
hospital's own forest (local models, scored on every hospital) and a centralized
random forest on the pooled rows — the bound federation tries to reach without
moving a row. A pure runner: it returns a :class:`DemoResult` that the command
line renders.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from fedtrees._validation import check_int
from fedtrees.datasets import Dataset, load
from fedtrees.experiments.fedforest_heart import HeartConfig, run_fedforest_heart

__all__ = ["DemoResult", "run_demo"]


@dataclass(frozen=True, eq=False)
class DemoResult:
    """Per-site counts, accuracies and FedForest's communication."""

    sites: pd.DataFrame
    """Index: site; columns: train rows, test rows, positives (all rows)."""
    accuracy: pd.DataFrame
    """Index: model; columns: each hospital's test set, their mean, the pooled set."""
    communication: pd.DataFrame
    """Index: federated model; columns: rounds, KiB exchanged."""


def run_demo(
    *, n_estimators: int = 50, random_state: int = 0, verbose: bool = False
) -> DemoResult:
    """Fit FedForest, local models and a centralized RF; score them per hospital.

    ``verbose`` shows each federated fit's progress bar with per-round metrics.

    Examples
    --------
    >>> result = run_demo(n_estimators=5)
    >>> result.accuracy.shape
    (6, 6)
    """
    trees = check_int(n_estimators, "n_estimators", "run_demo", min_value=1)
    config = HeartConfig(
        n_repeats=1,
        seed=check_int(random_state, "random_state", "run_demo", min_value=0),
        n_estimators=trees,
        methods=("fedforest", "local", "centralized"),
        verbose=verbose,
    )
    report = run_fedforest_heart(config)
    communication = report.tables["Communication (mean rounds, KiB)"].dropna()
    return DemoResult(
        sites=_site_table(load("heart_disease", flamby=True)),
        accuracy=report.tables["Accuracy (mean over repeats)"],
        communication=communication,
    )


def _site_table(data: Dataset) -> pd.DataFrame:
    assert data.clients is not None
    assert data.split is not None
    frame = pd.DataFrame({"site": data.clients, "split": data.split, "y": data.y})
    table = pd.DataFrame(
        {
            "train rows": frame[frame.split == "train"].groupby("site").size(),
            "test rows": frame[frame.split == "test"].groupby("site").size(),
            "positives": frame.groupby("site")["y"].sum(),
        }
    )
    return table.loc[list(pd.unique(data.clients))]
