"""FedGA-Tree Table I datasets (paper 000) from a user-given folder.

The folder holds the CSVs of the tabular benchmark of Grinsztajn et al. in
sub-folders ``clf_num``, ``clf_cat``, ``reg_num`` and ``reg_cat``; every file has
one header row and the target in the last column, and every feature is numeric.
The folder is given as ``path=`` or by the environment variable
``FEDTREES_FEDGA``. ``nursery`` and ``adult`` are bundled and not read here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final, Literal

import numpy as np
import pandas as pd

from fedtrees._validation import invalid
from fedtrees.datasets._dataset import Dataset
from fedtrees.exceptions import DataNotFoundError

__all__ = ["FEDGA_DATASETS", "FEDGA_ENV", "fedga_folder", "load_fedga"]

FEDGA_ENV: Final = "FEDTREES_FEDGA"
"""Environment variable naming the FedGA data folder when no path is given."""

Task = Literal["classification", "regression"]

FEDGA_DATASETS: Final[dict[str, tuple[str, Task]]] = {
    "california": ("clf_num/california.csv", "classification"),
    "compas": ("clf_cat/compas-two-years.csv", "classification"),
    "creditcard": ("clf_cat/default-of-credit-card-clients.csv", "classification"),
    "diabetes": ("clf_num/Diabetes130US.csv", "classification"),
    "electric": ("clf_cat/electricity.csv", "classification"),
    "eyemvt": ("clf_cat/eye_movements.csv", "classification"),
    "heloc": ("clf_num/heloc.csv", "classification"),
    "house16H": ("clf_num/house_16H.csv", "classification"),
    "kaggle": ("clf_num/credit.csv", "classification"),
    "marketing": ("clf_num/bank-marketing.csv", "classification"),
    "pol": ("clf_num/pol.csv", "classification"),
    "telescope": ("clf_num/MagicTelescope.csv", "classification"),
    "analcatdata": ("reg_cat/analcatdata_supreme.csv", "regression"),
    "abalone": ("reg_cat/abalone.csv", "regression"),
    "bikesharing": ("reg_cat/Bike_Sharing_Demand.csv", "regression"),
    "brazil": ("reg_cat/Brazilian_houses.csv", "regression"),
    "cpu": ("reg_num/cpu_act.csv", "regression"),
    "elevators": ("reg_num/elevators.csv", "regression"),
    "house16H_reg": ("reg_num/house_16H.csv", "regression"),
    "houses": ("reg_num/houses.csv", "regression"),
    "housesales": ("reg_cat/house_sales.csv", "regression"),
    "miami": ("reg_num/MiamiHousing2016.csv", "regression"),
    "soil": ("reg_cat/visualizing_soil.csv", "regression"),
    "sulfur": ("reg_num/sulfur.csv", "regression"),
    "wine": ("reg_num/wine_quality.csv", "regression"),
    "yprop": ("reg_num/yprop_4_1.csv", "regression"),
}
"""Paper name -> (file inside the folder, task), for the 26 CSV datasets of Table I.

``house16H`` is the classification version, ``house16H_reg`` the regression one.
"""


def fedga_folder(path: str | Path | None = None) -> Path:
    """Return the FedGA data folder: ``path``, else ``$FEDTREES_FEDGA``.

    Raises
    ------
    DataNotFoundError
        If neither is given or the folder does not exist.
    """
    chosen = path if path not in (None, "") else os.environ.get(FEDGA_ENV, "")
    if not chosen:
        raise DataNotFoundError(
            "No FedGA data folder: pass path=... or set FEDTREES_FEDGA to the "
            "folder holding clf_num/, clf_cat/, reg_num/ and reg_cat/."
        )
    folder = Path(chosen)
    if not folder.is_dir():
        raise DataNotFoundError(f"FedGA data folder {str(folder)!r} does not exist.")
    return folder


def load_fedga(name: str, path: str | Path | None = None) -> Dataset:
    """Read one FedGA Table I dataset (all features numeric, target last).

    Parameters
    ----------
    name : str
        A key of :data:`FEDGA_DATASETS` (the paper's name).
    path : folder, optional
        The FedGA data folder; ``$FEDTREES_FEDGA`` when omitted.

    Raises
    ------
    ValidationError
        For an unknown name.
    DataNotFoundError
        If the folder or the dataset's file is missing.
    """
    if name not in FEDGA_DATASETS:
        choices = ", ".join(repr(n) for n in FEDGA_DATASETS)
        raise invalid("name", "load_fedga", f"one of {choices}", name)
    relative, task = FEDGA_DATASETS[name]
    file = fedga_folder(path) / relative
    if not file.is_file():
        raise DataNotFoundError(f"FedGA dataset {name!r}: no file {str(file)!r}.")
    frame = pd.read_csv(file)
    X = frame.iloc[:, :-1].astype(np.float64)
    y = frame.iloc[:, -1]
    y = y.astype(str) if task == "classification" else y.astype(np.float64)
    return Dataset(
        name=name,
        X=X,
        y=y,
        feature_kinds=dict.fromkeys(X.columns, "numeric"),
        description=f"FedGA-Tree Table I ({task}): {relative} of the benchmark.",
    )
