"""The ``fedtrees demo`` job: four hospitals, one local tree each, scored everywhere.

A pure runner (no I/O): it returns a :class:`DemoResult` that the command line
renders. It shows why federation matters — each hospital's own tree, scored on
every hospital's held-out patients (FLamby's preparation and split).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.tree import DecisionTreeClassifier

from fedtrees._validation import check_int
from fedtrees.datasets import Dataset, load

__all__ = ["DemoResult", "run_demo"]


@dataclass(frozen=True, eq=False)
class DemoResult:
    """Per-site counts and the cross-site accuracy of per-site trees."""

    sites: pd.DataFrame
    """Index: site; columns: train rows, test rows, positives (all rows)."""
    accuracy: pd.DataFrame
    """Index: the site a tree was trained on; columns: the site it is scored on."""


def run_demo(*, max_depth: int = 4, random_state: int = 0) -> DemoResult:
    """Fit a scikit-learn tree per hospital and score it on every hospital's test rows.

    Examples
    --------
    >>> result = run_demo()
    >>> result.accuracy.shape
    (4, 4)
    """
    depth = check_int(max_depth, "max_depth", "run_demo", min_value=1)
    data = load("heart_disease", flamby=True)
    assert data.clients is not None
    train, test = data.train(), data.test()
    sites = [str(s) for s in pd.unique(data.clients)]
    trees = {site: _fit_site(train, site, depth, random_state) for site in sites}
    accuracy = pd.DataFrame(
        [[_score(trees[a], test, b) for b in sites] for a in sites],
        index=pd.Index(sites, name="trained on"),
        columns=pd.Index(sites, name="scored on"),
    )
    return DemoResult(sites=_site_table(data, sites), accuracy=accuracy)


def _rows_of(data: Dataset, site: str) -> np.ndarray:
    assert data.clients is not None
    return (data.clients == site).to_numpy()


def _fit_site(
    train: Dataset, site: str, depth: int, seed: int
) -> DecisionTreeClassifier:
    rows = _rows_of(train, site)
    tree = DecisionTreeClassifier(max_depth=depth, random_state=seed)
    return tree.fit(train.X[rows], train.y[rows])


def _score(tree: DecisionTreeClassifier, test: Dataset, site: str) -> float:
    rows = _rows_of(test, site)
    return float(np.mean(tree.predict(test.X[rows]) == test.y[rows].to_numpy()))


def _site_table(data: Dataset, sites: list[str]) -> pd.DataFrame:
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
    return table.loc[sites]
