"""One home for the benchmarks' random federations of bundled datasets.

A federation here is a bundled dataset split at random: 2/3 of the rows for
training, dealt at random to ``clients`` clients (or kept at their natural
sites), 1/3 for testing, every test row given a client too (for the methods
that predict per client). No test names these splits: they measure defaults on
data the tests did not tune anything on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fedtrees import datasets

NATURAL = "sites"
"""``clients`` value that keeps a dataset's natural sites (heart, hotel_ac_iot)."""


@dataclass(frozen=True)
class Split:
    """A random federation: training rows with their client, test rows with theirs."""

    name: str
    X: pd.DataFrame
    y: pd.Series
    groups: np.ndarray
    X_test: pd.DataFrame
    y_test: pd.Series
    groups_test: np.ndarray

    @property
    def n_clients(self) -> int:
        return int(np.unique(self.groups).shape[0])

    @property
    def majority(self) -> float:
        """Test accuracy of always predicting the training set's majority class."""
        return float((self.y_test == self.y.mode().iloc[0]).mean())

    @property
    def mean_r2(self) -> float:
        """Test R² of always predicting the training mean (about 0)."""
        residual = ((self.y_test - self.y.mean()) ** 2).sum()
        return float(1 - residual / ((self.y_test - self.y_test.mean()) ** 2).sum())


def load(name: str) -> datasets.Dataset:
    """The bundled dataset, rows with missing values dropped where they occur."""
    if name == "adult":
        return datasets.load("adult", dropna=True)
    if name == "heart_disease":
        return datasets.load("heart_disease", flamby=True)  # no missing values
    return datasets.load(name)


def random_split(
    name: str,
    clients: int | str,
    seed: int,
    *,
    target: str | None = None,
    rows: int | None = None,
) -> Split:
    """Split ``name`` at random: 2/3 train dealt to ``clients``, 1/3 test.

    ``clients`` is a count, or ``"sites"`` for the dataset's natural clients.
    ``target`` names a numeric column to predict instead of the label (a
    regression task; the label is dropped); ``rows`` keeps a random subset.
    """
    data = load(name)
    X, y = data.X, data.y
    if target is not None:
        X, y = X.drop(columns=target), X[target].astype(float)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))[: rows or len(y)]
    cut = 2 * len(order) // 3
    train, test = np.sort(order[:cut]), np.sort(order[cut:])
    if clients == NATURAL:
        sites = data.clients.to_numpy()
        groups, groups_test = sites[train], sites[test]
    else:
        groups = rng.integers(0, int(clients), size=len(train)).astype(str)
        groups_test = rng.choice(np.unique(groups), size=len(test))
    return Split(
        name,
        X.iloc[train].reset_index(drop=True),
        y.iloc[train].reset_index(drop=True),
        groups,
        X.iloc[test].reset_index(drop=True),
        y.iloc[test].reset_index(drop=True),
        groups_test,
    )
