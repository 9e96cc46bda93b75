"""HuGaDB (human gait database) from a user-given folder; participants are clients.

Files are named ``HuGaDB_v1_<activity>_<PP>_<CC>.txt`` (participant PP, counter
CC); each begins with ``#`` header lines (``#Activity``, ``#ActivityID``, ``#Date``),
then a tab-separated column-name line and the rows: 36 IMU channels (int16),
2 EMG channels (uint8) and the activity ID ``act``. Line endings may be LF or CRLF.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Final

import numpy as np
import pandas as pd

from fedtrees.datasets._dataset import Dataset
from fedtrees.exceptions import DataNotFoundError, ValidationError

__all__ = ["ACTIVITIES", "load_hugadb"]

ACTIVITIES: Final = {
    1: "walking", 2: "running", 3: "going_up", 4: "going_down", 5: "sitting",
    6: "sitting_down", 7: "standing_up", 8: "standing", 9: "bicycling",
    10: "up_by_elevator", 11: "down_by_elevator", 12: "sitting_in_car",
}  # fmt: skip
_FILE = re.compile(r"^HuGaDB_v1_[A-Za-z]+_(\d{2})_(\d{2})\.txt$")
_N_CHANNELS: Final = 38


def load_hugadb(
    path: str | Path, *, activities: Iterable[int] | None = None
) -> Dataset:
    """Read every ``HuGaDB_v1_*.txt`` file of ``path``.

    Parameters
    ----------
    path : folder
        The HuGaDB data folder.
    activities : iterable of int, optional
        Keep only these activity IDs (e.g. ``(1, 3, 4, 5, 6, 7, 8)`` for the DP
        forest experiment); all by default.

    Raises
    ------
    DataNotFoundError
        If the folder does not exist or holds no HuGaDB files.
    ValidationError
        If a file does not have the 39 expected columns.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise DataNotFoundError(
            f"HuGaDB folder {str(folder)!r} does not exist; pass the folder "
            "holding the HuGaDB_v1_*.txt files as path=..."
        )
    files = sorted(f for f in folder.iterdir() if _FILE.match(f.name))
    if not files:
        raise DataNotFoundError(
            f"No HuGaDB_v1_<activity>_<PP>_<CC>.txt files in {str(folder)!r}."
        )
    frames = [_read_file(f) for f in files]
    data = pd.concat(frames, ignore_index=True)
    if activities is not None:
        data = data[data["act"].isin(list(activities))].reset_index(drop=True)
    X = data.drop(columns=["act", "participant"]).astype(np.float64)
    return Dataset(
        name="hugadb",
        X=X,
        y=data["act"].astype(np.int64).rename("activity"),
        feature_kinds=dict.fromkeys(X.columns, "numeric"),
        clients=data["participant"].rename("participant"),
        description=f"HuGaDB v1, {len(files)} files; activity IDs as in ACTIVITIES.",
    )


def _read_file(file: Path) -> pd.DataFrame:
    match = _FILE.match(file.name)
    assert match is not None
    with file.open("r", newline=None) as handle:
        n_header = 0
        while handle.readline().startswith("#"):
            n_header += 1
    frame = pd.read_csv(file, sep="\t", skiprows=n_header, header=0, dtype=np.int64)
    frame.columns = [str(c).strip() for c in frame.columns]
    if frame.shape[1] != _N_CHANNELS + 1 or frame.columns[-1] != "act":
        raise ValidationError(
            f"HuGaDB file {file.name!r} has columns {list(frame.columns)[:3]}... "
            f"({frame.shape[1]} in all); {_N_CHANNELS} channels and 'act' were "
            "expected."
        )
    frame["participant"] = int(match.group(1))
    return frame
