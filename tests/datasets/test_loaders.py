from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedtrees import datasets
from fedtrees.datasets._bundled import manifest
from fedtrees.exceptions import ValidationError


@pytest.mark.parametrize("relative", sorted(manifest()))
def test_bundled_copies_are_byte_identical_to_the_verified_originals(
    relative: str,
) -> None:
    assert datasets.verify_bundled(relative)


@pytest.mark.parametrize(
    ("name", "rows", "features", "classes"),
    [
        ("heart_disease", 920, 13, 5),
        ("adult", 48_842, 14, 2),
        ("nursery", 12_960, 8, 5),
        ("car", 1_728, 6, 4),
        ("credit_default", 30_000, 23, 2),
        ("hotel_ac_iot", 37_580, 17, 2),
    ],
)
def test_counts_match_the_data_readme(
    name: str, rows: int, features: int, classes: int
) -> None:
    data = datasets.load(name)
    assert (data.n_samples, data.n_features, len(data.classes)) == (
        rows,
        features,
        classes,
    )
    assert list(data.feature_kinds) == list(data.X.columns)
    for column in data.categorical_features:
        assert isinstance(data.X[column].dtype, pd.CategoricalDtype)


def test_heart_disease_sites_classes_and_missing_cells() -> None:
    data = datasets.load("heart_disease")
    assert data.clients is not None
    table = pd.crosstab(data.clients, data.y)
    assert table.loc["Cleveland"].tolist() == [164, 55, 36, 35, 13]
    assert table.loc["Switzerland"].tolist() == [8, 48, 32, 30, 5]
    assert table.loc["Long Beach VA"].tolist() == [51, 56, 41, 42, 10]
    assert table.loc["Hungary"].tolist() == [188, 106, 0, 0, 0]
    missing = data.X.isna().sum(axis=1).groupby(data.clients).sum()
    assert missing.to_dict() == {
        "Cleveland": 6,
        "Hungary": 782,
        "Long Beach VA": 698,
        "Switzerland": 273,
    }


def test_heart_disease_flamby_preparation_and_split() -> None:
    data = datasets.load("heart_disease", flamby=True)
    assert (data.n_samples, data.n_features) == (740, 13)
    assert data.X.isna().sum().sum() == 0
    assert set(data.classes.tolist()) == {0, 1}
    assert data.clients is not None
    assert data.split is not None
    split = pd.crosstab(data.clients, data.split)
    assert split.loc[
        ["Cleveland", "Hungary", "Switzerland", "Long Beach VA"]
    ].values.tolist() == [[104, 199], [89, 172], [16, 30], [45, 85]]
    swiss = (data.clients == "Switzerland").to_numpy()
    # Switzerland keeps a single negative row; FLamby's seed-43 split puts it in test
    # (only FLamby's older unshuffled "first 66 %" split had it in train).
    assert (data.y[swiss] == 0).sum() == 1
    assert data.split[swiss & (data.y == 0).to_numpy()].tolist() == ["test"]
    for column in ("cp_2", "cp_3", "cp_4", "restecg_1", "restecg_2"):
        assert set(data.X[column].unique()) <= {0.0, 1.0}


def test_adult_train_test_classes_and_missing_cells() -> None:
    data = datasets.load("adult")
    train, test = data.train(), data.test()
    assert (train.n_samples, test.n_samples) == (32_561, 16_281)
    assert train.y.value_counts().to_dict() == {"<=50K": 24_720, ">50K": 7_841}
    assert test.y.value_counts().to_dict() == {"<=50K": 12_435, ">50K": 3_846}
    assert (int(train.X.isna().sum().sum()), int(test.X.isna().sum().sum())) == (
        4_262,
        2_203,
    )
    clean = datasets.load("adult", dropna=True)
    assert clean.test().n_samples == 15_060
    assert clean.X.isna().sum().sum() == 0


def test_nursery_car_credit_and_hotel_class_counts() -> None:
    assert datasets.load("nursery").y.value_counts().to_dict() == {
        "not_recom": 4320,
        "priority": 4266,
        "spec_prior": 4044,
        "very_recom": 328,
        "recommend": 2,
    }
    assert datasets.load("car").y.value_counts().to_dict() == {
        "unacc": 1210,
        "acc": 384,
        "good": 69,
        "vgood": 65,
    }
    assert datasets.load("credit_default").y.value_counts().to_dict() == {
        0: 23_364,
        1: 6_636,
    }
    hotel = datasets.load("hotel_ac_iot")
    assert hotel.clients is not None
    assert pd.crosstab(hotel.clients, hotel.y).values.tolist() == [
        [4584, 4924],
        [4510, 4546],
        [4601, 4907],
        [4608, 4900],
    ]


def test_dataset_helpers() -> None:
    data = datasets.load("heart_disease", flamby=True)
    sub = data.subset(np.arange(10))
    assert sub.n_samples == 10
    assert sub.clients is not None
    assert sub.clients.shape[0] == 10
    assert data.client_table().loc["Switzerland", "rows"] == 46
    assert "n_samples=740" in repr(data)
    with pytest.raises(ValidationError, match="defines no train/test split"):
        datasets.load("car").train()


def test_unknown_dataset_and_unknown_option() -> None:
    with pytest.raises(
        ValidationError, match="'name' parameter of load must be one of 'heart_disease'"
    ):
        datasets.load("heart")
    with pytest.raises(ValidationError, match=r"'options' parameter of load\('car'\)"):
        datasets.load("car", flamby=True)
    with pytest.raises(
        ValidationError, match=r"'options' parameter of load\('hugadb'\)"
    ):
        datasets.load("hugadb")
    assert "hugadb" in datasets.available()
