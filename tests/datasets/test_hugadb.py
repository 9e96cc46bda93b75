from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from fedtrees import datasets
from fedtrees.exceptions import DataNotFoundError, ValidationError

ROWS_PER_PARTICIPANT = {
    1: 15512,
    2: 12248,
    3: 8557,
    4: 17451,
    5: 19281,
    6: 22210,
    7: 19331,
    8: 16761,
    9: 13198,
    10: 16530,
    11: 12254,
    12: 16010,
    13: 15976,
    14: 18820,
    15: 8559,
    16: 21221,
    17: 19995,
    18: 12598,
}
ACTIVITY_TOTALS = {
    1: 75_900,
    2: 13_472,
    3: 31_221,
    4: 24_502,
    5: 20_915,
    6: 5_574,
    7: 5_769,
    8: 57_263,
    10: 30_193,
    11: 21_703,
}


@pytest.fixture(scope="module")
def hugadb(hugadb_path: Path) -> datasets.Dataset:
    return datasets.load("hugadb", path=hugadb_path)


def test_counts_match_the_data_readme(hugadb: datasets.Dataset) -> None:
    assert (hugadb.n_samples, hugadb.n_features) == (286_512, 38)
    assert hugadb.clients is not None
    assert hugadb.clients.value_counts().sort_index().to_dict() == ROWS_PER_PARTICIPANT
    assert hugadb.y.value_counts().sort_index().to_dict() == ACTIVITY_TOTALS
    assert hugadb.X.columns[0] == "acc_rf_x"
    assert list(hugadb.X.columns[-2:]) == ["EMG_r", "EMG_l"]


def test_activity_filter(hugadb_path: Path) -> None:
    kept = (1, 3, 4, 5, 6, 7, 8)
    data = datasets.load("hugadb", path=hugadb_path, activities=kept)
    assert set(data.y.unique()) == set(kept)
    assert data.n_samples == sum(ACTIVITY_TOTALS[a] for a in kept)
    assert datasets.ACTIVITIES[6] == "sitting_down"


def test_crlf_files_read_the_same(hugadb_path: Path, tmp_path: Path) -> None:
    source = next(hugadb_path.glob("HuGaDB_v1_various_03_*.txt"))
    (tmp_path / source.name).write_bytes(source.read_bytes().replace(b"\n", b"\r\n"))
    lf_dir = tmp_path / "lf"
    lf_dir.mkdir()
    shutil.copy(source, lf_dir / source.name)
    crlf, lf = (
        datasets.load("hugadb", path=tmp_path),
        datasets.load("hugadb", path=lf_dir),
    )
    np.testing.assert_array_equal(crlf.X.to_numpy(), lf.X.to_numpy())
    assert crlf.clients is not None
    assert set(crlf.clients) == {3}


def test_missing_and_empty_folders(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError, match="does not exist; pass the folder"):
        datasets.load("hugadb", path=tmp_path / "nowhere")
    with pytest.raises(DataNotFoundError, match="No HuGaDB_v1_"):
        datasets.load("hugadb", path=tmp_path)


def test_malformed_file_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "HuGaDB_v1_walking_01_00.txt").write_text(
        "#Activity\twalking\na\tb\tact\n1\t2\t1\n"
    )
    with pytest.raises(
        ValidationError, match=r"HuGaDB file 'HuGaDB_v1_walking_01_00\.txt' has columns"
    ):
        datasets.load("hugadb", path=tmp_path)
