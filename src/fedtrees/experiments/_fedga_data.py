"""FedGA-Tree experiment data: Table I datasets, the split and the discretization.

Protocol (docs/fedga.md; paper 000, Sec. IV and Appendix A): a random 10 %
of the rows is the common test set; the other 90 % is split at random into N
equal client parts (sizes differ by at most one row). For classification every
numeric feature becomes one of 5 quantile bins whose edges are fitted on the
training rows (``KBinsDiscretizer(strategy="quantile")``); categorical features
(nursery, adult) keep their category codes. Regression features stay as they are.

**Decision:** a bin holds ``edges[i-1] < x <= edges[i]``, the convention of
:class:`fedtrees.algorithms.fedid3.FederatedID3Classifier`, so the IBM tree
(given the same edges) sees exactly the bins every other method sees.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import pandas as pd
from sklearn.preprocessing import KBinsDiscretizer

from fedtrees._random import keyed_rng
from fedtrees._typing import FloatArray, IntArray
from fedtrees.datasets import FEDGA_DATASETS, load, load_fedga

__all__ = [
    "CLASSIFICATION",
    "REGRESSION",
    "Problem",
    "Split",
    "load_problem",
    "subsample",
]

CLASSIFICATION: Final = (
    "nursery",
    "adult",
    *(n for n, (_, t) in FEDGA_DATASETS.items() if t == "classification"),
)
"""The 14 classification datasets of Table I (nursery and adult are bundled)."""
REGRESSION: Final = tuple(
    n for n, (_, t) in FEDGA_DATASETS.items() if t == "regression"
)
"""The 14 regression datasets of Table I."""
SPLIT_STREAM: Final = 31
SUBSAMPLE_STREAM: Final = 33


@dataclass(frozen=True, eq=False)
class Problem:
    """One dataset with its task; categorical columns have category dtype."""

    name: str
    task: str
    X: pd.DataFrame
    y: np.ndarray


@dataclass(frozen=True, eq=False)
class Split:
    """One random split: raw and coded rows, clients, and the bin edges."""

    X_train: pd.DataFrame
    X_test: pd.DataFrame
    codes_train: pd.DataFrame
    codes_test: pd.DataFrame
    y_train: np.ndarray
    y_test: np.ndarray
    clients: IntArray
    bin_edges: dict[str, list[float]]


def load_problem(name: str, data: str | Path | None) -> Problem:
    """Load a Table I dataset (raises DataNotFoundError when its file is absent)."""
    if name in ("nursery", "adult"):
        options = {"dropna": True} if name == "adult" else {}
        dataset = load(name, **options)
        task = "classification"
    else:
        dataset = load_fedga(name, data or None)
        task = FEDGA_DATASETS[name][1]
    y = dataset.y.to_numpy()
    y = y.astype(str) if task == "classification" else y.astype(np.float64)
    return Problem(name, task, dataset.X.reset_index(drop=True), y)


def subsample(problem: Problem, max_rows: int | None, seed: int) -> Problem:
    """Return ``problem`` with at most ``max_rows`` rows drawn at random (None: all).

    The quick run's way to a dataset of a few thousand rows; the draw is keyed
    by ``[seed, 33]``, and the rows keep their order.
    """
    n = problem.X.shape[0]
    if max_rows is None or n <= max_rows:
        return problem
    keep = np.sort(keyed_rng(seed, SUBSAMPLE_STREAM).permutation(n)[:max_rows])
    X = problem.X.iloc[keep].reset_index(drop=True)
    return Problem(problem.name, problem.task, X, problem.y[keep])


def make_split(
    problem: Problem,
    n_clients: int,
    *,
    seed: int,
    split: int,
    test_size: float = 0.1,
    n_bins: int = 5,
) -> Split:
    """Return split number ``split``: common test rows and N equal client parts."""
    n = problem.X.shape[0]
    order = keyed_rng(seed, SPLIT_STREAM, split).permutation(n)
    n_test = max(round(test_size * n), 1)
    test, train = np.sort(order[:n_test]), order[n_test:]
    clients = np.empty(train.shape[0], dtype=np.int64)
    for k, part in enumerate(np.array_split(np.arange(train.shape[0]), n_clients)):
        clients[part] = k
    X_train = problem.X.iloc[train].reset_index(drop=True)
    X_test = problem.X.iloc[test].reset_index(drop=True)
    edges: dict[str, list[float]] = {}
    if problem.task == "classification":
        edges = _quantile_edges(X_train, n_bins)
    return Split(
        X_train=X_train,
        X_test=X_test,
        codes_train=_codes(X_train, edges),
        codes_test=_codes(X_test, edges),
        y_train=problem.y[train],
        y_test=problem.y[test],
        clients=clients,
        bin_edges=edges,
    )


def _numeric(X: pd.DataFrame) -> list[str]:
    return [c for c in X.columns if not isinstance(X[c].dtype, pd.CategoricalDtype)]


def _quantile_edges(X_train: pd.DataFrame, n_bins: int) -> dict[str, list[float]]:
    """Interior quantile edges per numeric column, fitted on the training rows."""
    numeric = _numeric(X_train)
    if not numeric:
        return {}
    binner = KBinsDiscretizer(n_bins=n_bins, encode="ordinal", strategy="quantile")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "bins whose width are too small" merged
        binner.fit(X_train[numeric].to_numpy(np.float64))
    edges = {}
    for column, e in zip(numeric, binner.bin_edges_, strict=True):
        interior = np.unique(np.asarray(e, dtype=np.float64)[1:-1])
        edges[str(column)] = interior.tolist() or [float(e[0])]
    return edges


def _codes(X: pd.DataFrame, edges: dict[str, list[float]]) -> pd.DataFrame:
    """Every column as float codes: bins (edges), categories, or the raw value."""
    out = {}
    for column in X.columns:
        values = X[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            out[column] = values.cat.codes.to_numpy(np.float64)
        elif str(column) in edges:
            raw: FloatArray = values.to_numpy(np.float64)
            bins = np.searchsorted(edges[str(column)], raw, side="left")
            out[column] = bins.astype(np.float64)
        else:
            out[column] = values.to_numpy(np.float64)
    return pd.DataFrame(out, columns=X.columns)
