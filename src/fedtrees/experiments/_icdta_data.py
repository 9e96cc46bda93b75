"""The ICDTA4FL experiment's data: datasets, client partitions, per-client folds.

A *cell* is one (dataset, partition, K): the clients' rows and every client's own
cross-validation folds; fold j of a cell pools every client's training part of
fold j, and keeps every client's test part of fold j apart (see
:mod:`fedtrees.experiments.icdta` for the protocol and the Decisions). Every
random draw is keyed from the seed and the cell's identifiers.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Final, Protocol

import numpy as np
import pandas as pd
from sklearn.model_selection import KFold, StratifiedKFold

from fedtrees._random import keyed_rng
from fedtrees._typing import IntArray
from fedtrees._validation import invalid
from fedtrees.datasets import load, partition
from fedtrees.exceptions import ValidationError

__all__ = [
    "DATASETS",
    "PARTITIONS",
    "Cell",
    "Fold",
    "fold_of",
    "load_rows",
    "make_cell",
]

DATASETS: Final = ("nursery", "adult", "car", "credit_default")
PARTITIONS: Final = ("iid", "non-iid")
SEED_BOUND: Final = 2**31 - 1
_SUBSAMPLE, _PARTITION, _FOLDS = 1, 2, 3  # keyed random streams


class DataConfig(Protocol):
    """The configuration fields that shape the data (ICDTAConfig has them)."""

    @property
    def n_folds(self) -> int: ...
    @property
    def dirichlet_alpha(self) -> float: ...
    @property
    def min_rows(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def max_rows(self) -> int | None: ...


@dataclass(frozen=True, eq=False)
class Cell:
    """One (dataset, partition, K): the rows, and every client's folds."""

    X: pd.DataFrame
    y: np.ndarray
    names: tuple[str, ...]
    folds: tuple[list[tuple[IntArray, IntArray]], ...]
    keys: dict[str, Any]


@dataclass(frozen=True, eq=False)
class Fold:
    """Fold j: the pooled training rows with their clients; per-client tests."""

    X: pd.DataFrame
    y: np.ndarray
    groups: np.ndarray
    X_test: pd.DataFrame
    y_test: np.ndarray
    test_clients: np.ndarray


def load_rows(config: DataConfig, name: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Return X and y of a dataset (Adult: both files, complete rows; subsampled)."""
    data = load(name, dropna=True) if name == "adult" else load(name)
    X, y = data.X, data.y.to_numpy()
    if config.max_rows is not None and config.max_rows < len(y):
        rng = keyed_rng(config.seed, _SUBSAMPLE, DATASETS.index(name))
        rows = np.sort(rng.choice(len(y), config.max_rows, replace=False))
        X, y = X.iloc[rows].reset_index(drop=True), y[rows]
    return X, y


def _partition(
    config: DataConfig, y: np.ndarray, kind: str, k: int, rng: np.random.Generator
) -> tuple[partition.Partition, bool]:
    """Return the clients' rows and whether the non-IID floor was needed."""
    if kind == "iid":
        return partition.iid(len(y), k, random_state=rng), False
    alpha, floor = config.dirichlet_alpha, config.min_rows
    try:
        skew = partition.dirichlet_label_skew(
            y, k, alpha=alpha, random_state=rng, min_samples=floor
        )
    except ValidationError:
        return _floored_skew(y, k, alpha, floor, rng), True
    return skew, False


def _floored_skew(
    y: np.ndarray, k: int, alpha: float, floor: int, rng: np.random.Generator
) -> partition.Partition:
    """``floor`` random rows per client, the rest by Dirichlet label skew."""
    if floor * k > len(y):
        raise invalid("min_rows", "ICDTAConfig", f"at most {len(y) // k}", floor)
    order = rng.permutation(len(y))
    base, rest = order[: floor * k], order[floor * k :]
    skew = partition.dirichlet_label_skew(y[rest], k, alpha, rng, min_samples=0)
    parts = [
        np.sort(np.concatenate([chunk, rest[part]]))
        for chunk, part in zip(np.split(base, k), skew, strict=True)
    ]
    return partition.Partition(tuple(parts), skew.names)


def _client_folds(
    y: np.ndarray, n_folds: int, seed: int
) -> list[tuple[IntArray, IntArray]]:
    """Stratified folds of one client's rows (plain folds if no class has enough)."""
    stratify = np.unique(y, return_counts=True)[1].max() >= n_folds
    kind = StratifiedKFold if stratify else KFold
    splitter = kind(n_splits=n_folds, shuffle=True, random_state=seed)
    with warnings.catch_warnings():  # a rare class cannot reach every fold: fine
        warnings.filterwarnings("ignore", "The least populated class", UserWarning)
        return list(splitter.split(np.zeros((len(y), 1)), y))


def make_cell(
    config: DataConfig,
    data: tuple[pd.DataFrame, np.ndarray],
    name: str,
    kind: str,
    k: int,
) -> Cell:
    """Partition ``data`` into ``k`` clients and split every client into folds."""
    X, y = data
    key = (DATASETS.index(name), PARTITIONS.index(kind), k)
    rng = keyed_rng(config.seed, _PARTITION, *key)
    split, floored = _partition(config, y, kind, k, rng)
    folds = []
    for c, rows in enumerate(split):
        if len(rows) < config.n_folds:
            raise invalid(
                "n_clients",
                "ICDTAConfig",
                f"small enough that every client of {name} ({kind}) holds "
                f"n_folds={config.n_folds} rows (or raise max_rows)",
                k,
            )
        seed = int(keyed_rng(config.seed, _FOLDS, *key, c).integers(SEED_BOUND))
        local = _client_folds(y[rows], config.n_folds, seed)
        folds.append([(rows[a], rows[b]) for a, b in local])
    keys = {
        "dataset": name,
        "partition": kind,
        "n_clients": k,
        "floored": floored,
        "min_client_rows": min(split.sizes),
        "max_client_rows": max(split.sizes),
    }
    return Cell(X, y, split.names, tuple(folds), keys)


def fold_of(cell: Cell, j: int) -> Fold:
    """Return fold ``j`` of every client, training parts pooled."""
    train = [f[j][0] for f in cell.folds]
    test = [f[j][1] for f in cell.folds]
    tr, te = np.concatenate(train), np.concatenate(test)
    names = np.asarray(cell.names, dtype=object)
    return Fold(
        cell.X.iloc[tr].reset_index(drop=True),
        cell.y[tr],
        np.repeat(names, [len(t) for t in train]),
        cell.X.iloc[te].reset_index(drop=True),
        cell.y[te],
        np.repeat(names, [len(t) for t in test]),
    )
