"""UCI Heart Disease, four hospitals (the FLamby Fed-Heart-Disease benchmark).

Two preparations:

- raw (default): the 13 UCI attributes, categorical ones typed, ``?`` as NaN,
  the target ``num`` in 0..4, 920 rows;
- ``flamby=True``: FLamby's preparation (docs/fedforest.md) — drop slope, ca, thal,
  drop rows with a missing value (740 remain), one-hot ``cp`` and ``restecg``
  dropping the first level (13 numeric features), label ``num > 0``, and FLamby's
  per-site split: ``train_test_split(train_size=0.66, random_state=43,
  shuffle=True)`` stratified on the label when both classes have more than two rows
  (train/test 199/104, 172/89, 30/16, 85/45).
"""

from __future__ import annotations

from typing import Final

import numpy as np
import pandas as pd

from fedtrees.datasets._bundled import bundled_text
from fedtrees.datasets._dataset import Dataset, FeatureKind

__all__ = ["load_heart_disease"]

SITES: Final = {
    "cleveland": "Cleveland",
    "hungarian": "Hungary",
    "switzerland": "Switzerland",
    "va": "Long Beach VA",
}
COLUMNS: Final = (
    "age", "sex", "cp", "trestbps", "chol", "fbs", "restecg",
    "thalach", "exang", "oldpeak", "slope", "ca", "thal", "num",
)  # fmt: skip
CATEGORICAL: Final = ("sex", "cp", "fbs", "restecg", "exang", "slope", "thal")
_TRAIN_FRACTION: Final = 0.66
_SPLIT_SEED: Final = 43


def load_heart_disease(*, flamby: bool = False) -> Dataset:
    """Load the four hospitals; ``flamby=True`` gives FLamby's preparation and split.

    Examples
    --------
    >>> ds = load_heart_disease(flamby=True)
    >>> ds.n_samples, ds.n_features, ds.clients.nunique()
    (740, 13, 4)
    """
    frames = {site: _read_site(stem) for stem, site in SITES.items()}
    if flamby:
        return _flamby(frames)
    raw = pd.concat(frames.values(), ignore_index=True)
    clients = pd.Series(
        np.repeat(list(frames), [len(f) for f in frames.values()]), name="site"
    )
    X = raw.drop(columns="num")
    for column in CATEGORICAL:
        X[column] = pd.Categorical(X[column].astype("Int64"))
    kinds: dict[str, FeatureKind] = {
        c: "categorical" if c in CATEGORICAL else "numeric" for c in X.columns
    }
    return Dataset(
        name="heart_disease",
        X=X,
        y=raw["num"].astype(np.int64).rename("num"),
        feature_kinds=kinds,
        clients=clients,
        description="UCI Heart Disease (4 sites); '?' is NaN; target num in 0..4.",
    )


def _read_site(stem: str) -> pd.DataFrame:
    text = bundled_text(f"heart_disease/processed.{stem}.data")
    return pd.read_csv(text, header=None, names=list(COLUMNS), na_values="?")


def _flamby(frames: dict[str, pd.DataFrame]) -> Dataset:
    parts, sites, splits = [], [], []
    for site, frame in frames.items():
        kept = (
            frame.drop(columns=["slope", "ca", "thal"]).dropna().reset_index(drop=True)
        )
        parts.append(kept)
        sites += [site] * len(kept)
        splits += _flamby_split((kept["num"] > 0).astype(int))
    data = pd.concat(parts, ignore_index=True)
    X = pd.get_dummies(
        data.drop(columns="num"), columns=["cp", "restecg"], drop_first=True
    )
    X.columns = [_dummy_name(c) for c in X.columns]
    X = X.astype(np.float64)
    return Dataset(
        name="heart_disease",
        X=X,
        y=(data["num"] > 0).astype(np.int64).rename("disease"),
        feature_kinds=dict.fromkeys(X.columns, "numeric"),
        clients=pd.Series(sites, name="site"),
        split=pd.Series(splits, name="split"),
        description="FLamby Fed-Heart-Disease preparation (740 rows, 13 features).",
    )


def _flamby_split(labels: pd.Series) -> list[str]:
    """FLamby's per-site split, reproduced call for call."""
    from sklearn.model_selection import train_test_split  # heavy: imported on use

    levels = np.unique(labels)
    stratify = (
        labels
        if len(levels) > 1 and all((labels == lev).sum() > 2 for lev in levels)
        else None
    )
    _, test = train_test_split(
        np.arange(len(labels)),
        test_size=1.0 - _TRAIN_FRACTION,
        train_size=_TRAIN_FRACTION,
        random_state=_SPLIT_SEED,
        shuffle=True,
        stratify=stratify,
    )
    is_test = np.zeros(len(labels), dtype=bool)
    is_test[test] = True
    return ["test" if t else "train" for t in is_test.tolist()]


def _dummy_name(column: object) -> str:
    # get_dummies names them e.g. "cp_2.0"; keep "cp_2".
    text = str(column)
    return text[:-2] if text.endswith(".0") else text
