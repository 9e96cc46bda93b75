"""Loaders of the bundled UCI tables and the hotel IoT arrays."""

from __future__ import annotations

import io
from typing import Final

import numpy as np
import pandas as pd

from fedtrees.datasets._bundled import bundled_bytes, bundled_text
from fedtrees.datasets._dataset import Dataset, FeatureKind

__all__ = [
    "load_adult",
    "load_car",
    "load_credit_default",
    "load_hotel_ac_iot",
    "load_nursery",
]

ADULT_COLUMNS: Final = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
)  # fmt: skip
NURSERY_COLUMNS: Final = (
    "parents", "has_nurs", "form", "children", "housing", "finance", "social",
    "health", "class",
)  # fmt: skip
CAR_COLUMNS: Final = (
    "buying",
    "maint",
    "doors",
    "persons",
    "lug_boot",
    "safety",
    "class",
)
CREDIT_CATEGORICAL: Final = ("SEX", "EDUCATION", "MARRIAGE")
CREDIT_TARGET: Final = "default.payment.next.month"
HOTELS: Final = ("F1", "F2", "F3", "F4")


def _typed(X: pd.DataFrame, categorical: tuple[str, ...]) -> dict[str, FeatureKind]:
    """Give categorical columns the ``category`` dtype (categories sorted)."""
    for column in categorical:
        X[column] = pd.Categorical(X[column])
    return {c: "categorical" if c in categorical else "numeric" for c in X.columns}


def load_adult(*, dropna: bool = False) -> Dataset:
    """Load UCI Adult: adult.data ("train", 32,561 rows), adult.test ("test", 16,281).

    ``?`` cells (workclass, occupation, native-country) are NaN; ``dropna=True``
    drops those rows. Test labels lose their trailing ``.``.
    """
    parts = []
    for file, split in (("adult.data", "train"), ("adult.test", "test")):
        frame = pd.read_csv(
            bundled_text(f"adult/{file}"),
            header=None,
            names=list(ADULT_COLUMNS),
            skiprows=1 if split == "test" else 0,
            skipinitialspace=True,
            na_values="?",
        )
        frame["split"] = split
        parts.append(frame)
    data = pd.concat(parts, ignore_index=True)
    if dropna:
        data = data.dropna().reset_index(drop=True)
    X = data[list(ADULT_COLUMNS[:-1])].copy()
    categorical = tuple(c for c in X.columns if X[c].dtype.kind not in "iuf")
    return Dataset(
        name="adult",
        X=X,
        y=data["income"].str.rstrip(".").rename("income"),
        feature_kinds=_typed(X, categorical),
        split=data["split"].rename("split"),
        description="UCI Adult (census income), train and test files.",
    )


def _categorical_table(relative: str, columns: tuple[str, ...], name: str) -> Dataset:
    data = pd.read_csv(
        bundled_text(relative), header=None, names=list(columns), dtype=str
    )
    X = data[list(columns[:-1])].copy()
    return Dataset(
        name=name,
        X=X,
        y=data[columns[-1]].rename("class"),
        feature_kinds=_typed(X, tuple(X.columns)),
        description=f"UCI {name} (all features categorical).",
    )


def load_nursery() -> Dataset:
    """UCI Nursery: 12,960 rows, 8 categorical features, 5 classes."""
    return _categorical_table("nursery/nursery.data", NURSERY_COLUMNS, "nursery")


def load_car() -> Dataset:
    """UCI Car Evaluation: 1,728 rows, 6 categorical features, 4 classes."""
    return _categorical_table("car/car.data", CAR_COLUMNS, "car")


def load_credit_default() -> Dataset:
    """Default of credit card clients (Taiwan): 30,000 rows, 23 features, 0/1 target.

    The ``ID`` column is dropped; SEX, EDUCATION and MARRIAGE are categorical.
    """
    data = pd.read_csv(bundled_text("credit_default_taiwan/UCI_Credit_Card.csv"))
    X = data.drop(columns=["ID", CREDIT_TARGET])
    return Dataset(
        name="credit_default",
        X=X,
        y=data[CREDIT_TARGET].astype(np.int64).rename("default"),
        feature_kinds=_typed(X, CREDIT_CATEGORICAL),
        description="UCI default of credit card clients (CSV conversion), ID dropped.",
    )


def load_hotel_ac_iot() -> Dataset:
    """Hotel air-conditioning IoT faults: 4 hotels (clients), 17 features, 0/1 label.

    The source does not document the feature names, so they are x01..x17.
    """
    frames, hotels = [], []
    for hotel in HOTELS:
        raw = bundled_bytes(f"hotel_ac_iot/{hotel}_Equal.npy")
        array = np.load(io.BytesIO(raw), allow_pickle=False)
        frames.append(array)
        hotels += [hotel] * array.shape[0]
    data = np.concatenate(frames)
    columns = [f"x{i:02d}" for i in range(1, data.shape[1])]
    X = pd.DataFrame(data[:, :-1], columns=columns)
    return Dataset(
        name="hotel_ac_iot",
        X=X,
        y=pd.Series(data[:, -1].astype(np.int64), name="fault"),
        feature_kinds=dict.fromkeys(columns, "numeric"),
        clients=pd.Series(hotels, name="hotel"),
        description="Hotel AC IoT fault data (Zhang et al. 2021), one file per hotel.",
    )
