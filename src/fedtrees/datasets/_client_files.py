"""Client data files: what a site's SuperNode points ``data-path`` at.

Two formats:

- ``.npz`` written by :func:`save_client_file` — self-describing and exact: every
  column's values (categorical columns as codes plus their category list), the
  target with its dtype, no pickle;
- ``.csv`` with a header row; the target is the column named by ``target``
  (default: the last column). Text columns become categorical with the categories
  found in the file, so every site should list the same ones.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from fedtrees.exceptions import DataNotFoundError, ValidationError

__all__ = [
    "client_arrays",
    "client_frames",
    "client_meta",
    "load_client_file",
    "save_client_file",
]

_FORMAT = "fedtrees.client-data"


def save_client_file(path: str | Path, X: pd.DataFrame, y: npt.ArrayLike) -> Path:
    """Write one client's rows to ``path`` (``.npz``); return the path.

    Examples
    --------
    >>> import tempfile, pandas as pd
    >>> folder = tempfile.mkdtemp()
    >>> X = pd.DataFrame({"age": [50.0, 61.0], "cp": pd.Categorical(["a", "b"])})
    >>> path = save_client_file(f"{folder}/site.npz", X, ["no", "yes"])
    >>> X2, y2 = load_client_file(path)
    >>> X2.equals(X), y2.tolist()
    (True, ['no', 'yes'])
    """
    arrays, meta = client_arrays(X, y)
    target_path = Path(path)
    with target_path.open("wb") as handle:
        np.savez_compressed(handle, **arrays, __meta__=np.array(json.dumps(meta)))  # type: ignore[arg-type]
    return target_path


def client_arrays(
    X: pd.DataFrame, y: npt.ArrayLike
) -> tuple[dict[str, npt.NDArray[np.generic]], dict[str, Any]]:
    """Return the arrays and the metadata a client data file holds.

    Numeric columns keep a numpy dtype (bool, int, float; any other becomes
    float64), categorical ones are their codes plus the category names, and the
    target keeps its dtype (text as ``str``) and its name: :func:`client_frames`
    gives the same frames back.
    """
    target = np.asarray(y)
    if target.dtype.kind == "O":
        target = target.astype(str)
    if target.shape[0] != X.shape[0]:
        raise ValidationError(
            f"save_client_file: y has {target.shape[0]} rows, X {X.shape[0]}."
        )
    arrays: dict[str, npt.NDArray[np.generic]] = {"__target__": target}
    columns: list[dict[str, object]] = []
    for i, column in enumerate(X.columns):
        series = X[column]
        entry: dict[str, object] = {"name": str(column)}
        if isinstance(series.dtype, pd.CategoricalDtype):
            arrays[f"c{i}"] = series.cat.codes.to_numpy()
            entry["categories"] = [str(c) for c in series.cat.categories]
        elif isinstance(series.dtype, np.dtype) and series.dtype.kind in "biuf":
            arrays[f"c{i}"] = series.to_numpy()
        else:
            arrays[f"c{i}"] = series.to_numpy(dtype=np.float64)
        columns.append(entry)
    name = y.name if isinstance(y, pd.Series) and isinstance(y.name, str) else None
    return arrays, {
        "format": _FORMAT,
        "version": 1,
        "columns": columns,
        "target_name": name,
    }


def client_frames(
    arrays: Mapping[str, npt.NDArray[np.generic]], meta: Mapping[str, Any]
) -> tuple[pd.DataFrame, pd.Series]:
    """Return ``(X, y)`` from the arrays and metadata of :func:`client_arrays`."""
    columns: dict[str, Any] = {}
    for i, entry in enumerate(meta["columns"]):
        values: Any = arrays[f"c{i}"]
        if "categories" in entry:
            columns[entry["name"]] = pd.Categorical.from_codes(
                values, entry["categories"]
            )
        else:
            columns[entry["name"]] = values
    return pd.DataFrame(columns), pd.Series(
        arrays["__target__"], name=meta.get("target_name")
    )


def load_client_file(
    path: str | Path, target: str | None = None
) -> tuple[pd.DataFrame, pd.Series]:
    """Read a client data file (``.npz`` from :func:`save_client_file`, or ``.csv``).

    Raises
    ------
    DataNotFoundError
        If the file does not exist.
    ValidationError
        If it is not a client data file, or the target column is missing.
    """
    source = Path(path)
    if not source.is_file():
        raise DataNotFoundError(f"Client data file {str(source)!r} does not exist.")
    if source.suffix == ".csv":
        return _read_csv(source, target)
    if source.suffix != ".npz":
        raise ValidationError(f"Client data file {source.name!r}: use .npz or .csv.")
    return _read_npz(source)


def _read_csv(source: Path, target: str | None) -> tuple[pd.DataFrame, pd.Series]:
    frame = pd.read_csv(source)
    name = target if target is not None else str(frame.columns[-1])
    if name not in frame.columns:
        raise ValidationError(
            f"Client data file {source.name!r} has no column {name!r}."
        )
    X = frame.drop(columns=name)
    for column in X.columns:
        if not pd.api.types.is_numeric_dtype(X[column]):
            X[column] = pd.Categorical(X[column])
    return X, frame[name]


def _read_npz(source: Path) -> tuple[pd.DataFrame, pd.Series]:
    with np.load(source, allow_pickle=False) as archive:
        return client_frames(archive, client_meta(archive, source.name))


def client_meta(archive: Mapping[str, npt.NDArray[np.generic]], name: str) -> Any:
    """Return the metadata of a client data file's arrays, or raise naming it."""
    try:
        meta = json.loads(str(archive["__meta__"]))
    except (KeyError, ValueError):
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        raise ValidationError(f"{name!r} is not a fedtrees client data file.")
    return meta
