"""The one-shot synthetic-data experiment's data: splits, clients.

Three settings (paper 003, Sec. 3.1):

- ``"census"``: adult with the rows holding a ``?`` dropped; the official train
  file is federated, its rows dealt IID to ``n_clients`` clients (a random
  permutation keyed by the seed and the repeat), and the official test file
  (15,060 rows) is the test set;
- ``"iot-200"``: the four hotel files pooled, shuffled and split 75/25 (per
  repeat); the training rows dealt IID to ``n_clients`` clients;
- ``"iot-hotels"``: the four hotels as the natural clients, every hotel's rows
  split 75/25 (per repeat), the test parts pooled; ``n_clients`` is not used.

``max_rows`` subsamples once (seeded, the same for every repeat): census's train
and test files to at most ``max_rows`` rows each, the pooled IoT rows to
``max_rows``. Every random draw is keyed from ``(seed, stream, dataset, repeat)``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final

import numpy as np
import pandas as pd

from fedtrees._random import keyed_rng
from fedtrees.datasets import load, partition

__all__ = [
    "DATASETS",
    "GLOBAL_DEPTH",
    "SEED_BOUND",
    "Source",
    "Split",
    "load_source",
    "majority_rate",
    "make_split",
    "min_max_scaled",
    "one_hot",
]

DATASETS: Final = ("census", "iot-200", "iot-hotels")
GLOBAL_DEPTH: Final = {"census": 7, "iot-200": 4, "iot-hotels": 4}
"""The depth of the global tree: the paper's 7 (census) and 4 (IoT)."""
SEED_BOUND: Final = 2**31 - 1
TEST_SHARE: Final = 0.25
_SUBSAMPLE, _SPLIT, _DEAL = 1, 2, 3  # keyed random streams


@dataclass(frozen=True, eq=False)
class Source:
    """A dataset's rows as loaded: ``is_test`` (census) or ``hotels`` (IoT)."""

    name: str
    X: pd.DataFrame
    y: np.ndarray
    is_test: np.ndarray | None = None
    hotels: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class Split:
    """One repeat's training rows with their clients, and the pooled test rows."""

    name: str
    repeat: int
    X: pd.DataFrame
    y: np.ndarray
    groups: np.ndarray
    X_test: pd.DataFrame
    y_test: np.ndarray

    @property
    def majority(self) -> float:
        """The test set's majority-class rate: the bar every accuracy must beat."""
        return majority_rate(self.y_test)

    @property
    def majority_label(self) -> Any:
        """The test set's most frequent label."""
        return pd.Series(self.y_test).value_counts().index[0]


def majority_rate(y: np.ndarray) -> float:
    """Return the share of the most frequent label.

    Examples
    --------
    >>> majority_rate(np.array(["a", "b", "a", "a"]))
    0.75
    """
    return float(pd.Series(y).value_counts(normalize=True).iloc[0])


def _subsample(n: int, max_rows: int | None, rng: np.random.Generator) -> np.ndarray:
    if max_rows is None or max_rows >= n:
        return np.arange(n)
    return np.sort(rng.choice(n, max_rows, replace=False))


def load_source(name: str, max_rows: int | None, seed: int) -> Source:
    """Load a setting's rows (subsampled to ``max_rows`` where given)."""
    rng = keyed_rng(seed, _SUBSAMPLE, DATASETS.index(name))
    if name == "census":
        data = load("adult", dropna=True)
        assert data.split is not None  # adult keeps UCI's train/test files
        test = data.split.to_numpy() == "test"
        keep = [
            np.flatnonzero(part)[_subsample(int(part.sum()), max_rows, rng)]
            for part in (~test, test)
        ]
        rows = np.concatenate(keep)
        return Source(
            name,
            data.X.iloc[rows].reset_index(drop=True),
            data.y.to_numpy()[rows],
            is_test=test[rows],
        )
    data = load("hotel_ac_iot")
    assert data.clients is not None  # the four hotels
    rows = _subsample(len(data.y), max_rows, rng)
    return Source(
        name,
        data.X.iloc[rows].reset_index(drop=True),
        data.y.to_numpy()[rows],
        hotels=data.clients.astype(str).to_numpy()[rows],
    )


def _dealt(n: int, n_clients: int, seed: int, key: tuple[int, int]) -> np.ndarray:
    """Client of every training row: a keyed shuffle dealt in equal parts."""
    rng = keyed_rng(seed, _DEAL, *key)
    return partition.iid(n, n_clients, random_state=rng).groups(n)


def _test_rows(n: int, rng: np.random.Generator) -> np.ndarray:
    """Return a shuffled mask holding ``TEST_SHARE`` of ``n`` rows."""
    mask = np.zeros(n, dtype=bool)
    mask[rng.permutation(n)[: round(TEST_SHARE * n)]] = True
    return mask


def make_split(source: Source, n_clients: int, seed: int, repeat: int) -> Split:
    """Return repeat ``repeat``'s split of ``source`` (see the module docstring)."""
    key = (DATASETS.index(source.name), repeat)
    n = len(source.y)
    if source.is_test is not None:
        test = source.is_test
    elif source.name == "iot-200":
        test = _test_rows(n, keyed_rng(seed, _SPLIT, *key))
    else:
        test = _hotel_test_rows(source, keyed_rng(seed, _SPLIT, *key))
    train_rows = np.flatnonzero(~test)
    if source.name == "iot-hotels":
        assert source.hotels is not None
        groups = source.hotels[train_rows].astype(object)
    else:
        groups = _dealt(len(train_rows), n_clients, seed, key)
    return Split(
        source.name,
        repeat,
        source.X.iloc[train_rows].reset_index(drop=True),
        source.y[train_rows],
        groups,
        source.X.iloc[np.flatnonzero(test)].reset_index(drop=True),
        source.y[test],
    )


def _hotel_test_rows(source: Source, rng: np.random.Generator) -> np.ndarray:
    """Every hotel's own 75/25 split (hotels in sorted order, one stream)."""
    assert source.hotels is not None
    test = np.zeros(len(source.y), dtype=bool)
    for hotel in np.unique(source.hotels):
        rows = np.flatnonzero(source.hotels == hotel)
        test[rows[_test_rows(rows.shape[0], rng)]] = True
    return test


def min_max_scaled(split: Split) -> Split:
    """Scale numeric columns to [0, 1] with the pooled training rows' min and max.

    The authors' notebooks scale this way; a federation would need declared
    ranges (or a min/max round) for it, so it is an experiment shortcut. Test
    values are scaled with the same constants (they may leave [0, 1]).
    """
    numeric = split.X.select_dtypes("number").columns
    low = split.X[numeric].min()
    width = (split.X[numeric].max() - low).replace(0, 1)

    def scaled(X: pd.DataFrame) -> pd.DataFrame:
        out = X.copy()
        out[numeric] = (X[numeric] - low) / width
        return out

    return replace(split, X=scaled(split.X), X_test=scaled(split.X_test))


def one_hot(split: Split) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Training and test rows one-hot encoded (every category a column)."""
    train = pd.get_dummies(split.X, dtype=float)
    test = pd.get_dummies(split.X_test, dtype=float)
    return train, test.reindex(columns=train.columns, fill_value=0.0)
