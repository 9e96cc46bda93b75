"""The FedGA-Tree Table I CSVs: counts of docs/data.md, folder handling."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from fedtrees import datasets
from fedtrees.exceptions import DataNotFoundError, ValidationError

PROJECT_ROOT = Path(__file__).resolve().parents[2]

# Table I (and docs/data.md): rows, features.
TABLE_I = {
    "california": (20_634, 8),
    "compas": (4_966, 11),
    "creditcard": (13_272, 21),
    "diabetes": (71_090, 7),
    "electric": (38_474, 8),
    "eyemvt": (7_608, 23),
    "heloc": (10_000, 22),
    "house16H": (13_488, 16),
    "kaggle": (16_714, 10),
    "marketing": (10_578, 7),
    "pol": (10_082, 26),
    "telescope": (13_376, 10),
    "analcatdata": (4_052, 7),
    "abalone": (4_177, 8),
    "bikesharing": (17_379, 11),
    "brazil": (10_692, 11),
    "cpu": (8_192, 21),
    "elevators": (16_599, 16),
    "house16H_reg": (22_784, 16),
    "houses": (20_640, 8),
    "housesales": (21_613, 17),
    "miami": (13_932, 13),
    "soil": (8_641, 4),
    "sulfur": (10_081, 6),
    "wine": (6_497, 11),
    "yprop": (8_885, 42),
}


@pytest.fixture(scope="module")
def fedga_path() -> Path:
    """$FEDTREES_FEDGA, else ../shared/data/fedga of the project; skip if absent."""
    env = os.environ.get("FEDTREES_FEDGA")
    path = Path(env) if env else PROJECT_ROOT.parent / "shared" / "data" / "fedga"
    if not path.is_dir():
        pytest.skip(f"FedGA data not found at {path}: set FEDTREES_FEDGA.")
    return path


def test_every_table_i_dataset_is_listed() -> None:
    assert set(datasets.FEDGA_DATASETS) == set(TABLE_I)


@pytest.mark.parametrize("name", sorted(TABLE_I))
def test_counts_match_table_i(fedga_path: Path, name: str) -> None:
    data = datasets.load_fedga(name, fedga_path)
    assert (data.n_samples, data.n_features) == TABLE_I[name]
    assert set(data.feature_kinds.values()) == {"numeric"}
    if datasets.FEDGA_DATASETS[name][1] == "classification":
        counts = data.y.value_counts()
        assert len(counts) == 2
        assert counts.iloc[0] == counts.iloc[1]  # balanced
    else:
        assert data.y.dtype == np.float64


def test_the_folder_comes_from_the_environment(
    fedga_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FEDTREES_FEDGA", str(fedga_path))
    assert datasets.load_fedga("soil").y.name == "track"


def test_missing_folder_or_file_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FEDTREES_FEDGA", raising=False)
    with pytest.raises(DataNotFoundError, match="FEDTREES_FEDGA"):
        datasets.load_fedga("compas")
    with pytest.raises(DataNotFoundError, match="does not exist"):
        datasets.load_fedga("compas", tmp_path / "nowhere")
    with pytest.raises(DataNotFoundError, match=r"compas-two-years\.csv"):
        datasets.load_fedga("compas", tmp_path)
    with pytest.raises(ValidationError, match="name"):
        datasets.load_fedga("mnist", tmp_path)
