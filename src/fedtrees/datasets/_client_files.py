"""Client data files: what a site's SuperNode points ``data-path`` at.

Two formats:

- ``.npz`` written by :func:`save_client_file` — self-describing and exact: every
  column's values (categorical columns as codes plus their category list), the
  target with its dtype, no pickle. Every member is checked against the metadata
  before it is used (present, 1-D, one value per row, a numeric dtype, codes
  within their categories), and a failure names the file, member and column;
- ``.csv`` with a header row; the target is the column named by ``target``
  (default: the last column). How a column's kind is decided, and how a site
  declares missing tokens and categorical columns, is
  :mod:`fedtrees.datasets._client_csv`'s rule. Text columns become categorical
  with the categories found in the file, so every site should list the same ones.

Both are read within bounds on their size and width
(:mod:`fedtrees.datasets._site_file`).
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pandas as pd

from fedtrees.datasets._client_csv import as_tokens, parse_csv
from fedtrees.datasets._site_file import (
    MAX_COLUMNS,
    MAX_FILE_BYTES,
    FileBounds,
    SiteFile,
    read_site_file,
)
from fedtrees.exceptions import ValidationError

__all__ = [
    "client_arrays",
    "client_frames",
    "client_meta",
    "load_client_file",
    "parse_client_file",
    "save_client_file",
]

_FORMAT = "fedtrees.client-data"
_TARGET_KINDS: Final = "biufU"
_UNREADABLE: Final = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error)


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
    arrays: Mapping[str, npt.NDArray[np.generic]],
    meta: Mapping[str, Any],
    name: str = "client data",
) -> tuple[pd.DataFrame, pd.Series]:
    """Return ``(X, y)`` from the arrays and metadata of :func:`client_arrays`.

    Every array is checked against the metadata first (:func:`_check_member`),
    so a file whose members disagree with it is refused naming ``name``, the
    member and the column, never with pandas' or numpy's error.
    """
    target = _check_target(arrays, name)
    columns: dict[str, Any] = {}
    for i, entry in enumerate(meta["columns"]):
        values = _check_member(arrays, f"c{i}", entry, target.shape[0], name)
        if "categories" in entry:
            columns[entry["name"]] = pd.Categorical.from_codes(
                values.astype(np.int64), entry["categories"]
            )
        else:
            columns[entry["name"]] = values
    return pd.DataFrame(columns), pd.Series(target, name=meta.get("target_name"))


def _check_target(
    arrays: Mapping[str, npt.NDArray[np.generic]], name: str
) -> npt.NDArray[np.generic]:
    target = arrays.get("__target__")
    if target is None:
        raise ValidationError(
            f"Client data file {name!r} has no member '__target__' (the labels)."
        )
    if target.ndim != 1 or target.dtype.kind not in _TARGET_KINDS:
        raise ValidationError(
            f"Client data file {name!r}: member '__target__' (the labels) is a "
            f"{target.ndim}-D {target.dtype} array; 1-D numbers or text expected."
        )
    return target


def _check_member(
    arrays: Mapping[str, npt.NDArray[np.generic]],
    member: str,
    entry: Mapping[str, Any],
    n_rows: int,
    name: str,
) -> npt.NDArray[np.generic]:
    """Return column ``member``'s values, checked against its metadata ``entry``."""
    where = f"Client data file {name!r}: member {member!r} (column {entry['name']!r})"
    values = arrays.get(member)
    if values is None:
        raise ValidationError(f"{where} is missing.")
    categories = entry.get("categories")
    kinds = "iu" if categories is not None else "biuf"
    if values.ndim != 1 or values.dtype.kind not in kinds:
        expected = "integer category codes" if categories is not None else "numbers"
        raise ValidationError(
            f"{where} is a {values.ndim}-D {values.dtype} array; 1-D {expected} "
            "expected."
        )
    if values.shape[0] != n_rows:
        raise ValidationError(
            f"{where} does not hold one value per row (its length differs from "
            "the labels')."
        )
    if (
        categories is not None
        and values.size
        and (values.min() < -1 or values.max() >= len(categories))
    ):
        raise ValidationError(
            f"{where} holds category codes outside its {len(categories)} "
            "categories (a code is -1, missing, or 0 to one less than the number "
            "of categories)."
        )
    return values


def load_client_file(
    path: str | Path,
    target: str | None = None,
    *,
    na_values: str | Sequence[str] = (),
    categorical: str | Sequence[str] = (),
    max_bytes: int = MAX_FILE_BYTES,
    max_columns: int = MAX_COLUMNS,
) -> tuple[pd.DataFrame, pd.Series]:
    r"""Read a client data file (``.npz`` from :func:`save_client_file`, or ``.csv``).

    Parameters
    ----------
    path : str or Path
        The file; ``.npz`` or ``.csv``.
    target : str, optional
        A CSV file's label column (default: its last column).
    na_values : str or list of str
        A CSV file's missing tokens, besides the empty cell (e.g. ``"?"``).
    categorical : str or list of str
        The CSV columns to read as categories, whatever their cells look like.
    max_bytes, max_columns : int
        Bounds on the file's size (unpacked, for ``.npz``) and its columns
        (:data:`~fedtrees.datasets.MAX_FILE_BYTES`,
        :data:`~fedtrees.datasets.MAX_COLUMNS`).

    Raises
    ------
    DataNotFoundError
        If the file does not exist.
    ValidationError
        Naming the file (and the column, line or member): not a client data
        file, beyond a bound, a CSV column with both numbers and text, and the
        other rules of docs/flower.md, "A site's data file".

    Examples
    --------
    >>> import tempfile
    >>> site = Path(tempfile.mkdtemp()) / "site.csv"
    >>> _ = site.write_text("age,cp,label\n50,a,no\n?,b,yes\n")
    >>> X, y = load_client_file(site, na_values="?")
    >>> X["age"].tolist(), X["cp"].dtype.name, y.tolist()
    ([50.0, nan], 'category', ['no', 'yes'])
    """
    bounds = FileBounds(max_bytes, max_columns)
    return parse_client_file(
        read_site_file(path, bounds), target, na_values, categorical
    )


def parse_client_file(
    file: SiteFile,
    target: str | None = None,
    na_values: str | Sequence[str] = (),
    categorical: str | Sequence[str] = (),
) -> tuple[pd.DataFrame, pd.Series]:
    """Return ``(X, y)`` of a site file's bytes (:func:`load_client_file`)."""
    tokens = as_tokens(na_values, "na_values")
    declared = as_tokens(categorical, "categorical")
    if file.suffix == ".csv":
        return parse_csv(file, target, tokens, declared)
    if tokens or declared:
        raise file.refuse(
            "is an .npz file, whose columns carry their kinds and missing values: "
            "na_values and categorical (node config na-values, categorical) "
            "describe CSV files only."
        )
    return _parse_npz(file)


def _parse_npz(file: SiteFile) -> tuple[pd.DataFrame, pd.Series]:
    try:
        archive = np.load(io.BytesIO(file.data), allow_pickle=False)
    except _UNREADABLE as exc:
        raise file.refuse(
            f"is not a readable .npz archive ({type(exc).__name__})."
        ) from exc
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise file.refuse("holds a single array, not a client data file's archive.")
    with archive:
        _check_archive(file, archive)
        meta = client_meta(archive, file.name)
        _check_meta(file, meta)
        arrays = {m: _member(file, archive, m) for m in archive.files}
    return client_frames(arrays, meta, file.name)


def _check_archive(file: SiteFile, archive: np.lib.npyio.NpzFile) -> None:
    """Bound the members' number and unpacked size before reading any."""
    infos = [] if archive.zip is None else archive.zip.infolist()
    if len(infos) > file.bounds.max_columns + 2:
        raise file.refuse(
            f"holds {len(infos)} members, more than the bound on a site data "
            f"file's columns ({file.bounds.max_columns}, "
            "fedtrees.datasets.MAX_COLUMNS) allows."
        )
    if sum(info.file_size for info in infos) > file.bounds.max_bytes:
        raise file.refuse(
            f"unpacks to more than {file.bounds.max_bytes} bytes, the bound on a "
            "site's data file (fedtrees.datasets.MAX_FILE_BYTES)."
        )


def _member(
    file: SiteFile, archive: np.lib.npyio.NpzFile, member: str
) -> npt.NDArray[np.generic]:
    try:
        values: npt.NDArray[np.generic] = archive[member]
    except _UNREADABLE as exc:
        pickled = "pickle" in str(exc) or "Object arrays" in str(exc)
        why = (
            "a pickled object array (client data files hold no pickle)"
            if pickled
            else f"unreadable ({type(exc).__name__})"
        )
        raise file.refuse(f": member {member!r} is {why}.") from exc
    return values


def _check_meta(file: SiteFile, meta: Mapping[str, Any]) -> None:
    """Refuse metadata whose columns are not a list of named entries."""
    columns = meta.get("columns")
    if not isinstance(columns, list):
        raise file.refuse(": its metadata has no list of columns.")
    if len(columns) > file.bounds.max_columns:
        raise file.refuse(
            f"has {len(columns)} columns, more than {file.bounds.max_columns}, the "
            "bound on a site data file's columns (fedtrees.datasets.MAX_COLUMNS)."
        )
    for i, entry in enumerate(columns):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise file.refuse(f": its metadata for column {i} has no name.")
        categories = entry.get("categories")
        if categories is not None and not (
            isinstance(categories, list)
            and all(isinstance(c, str) for c in categories)
            and len(set(categories)) == len(categories)
        ):
            raise file.refuse(
                f": the categories of column {entry['name']!r} are not a list of "
                "distinct names."
            )
    if not isinstance(meta.get("target_name"), str | None):
        raise file.refuse(": its metadata's target_name is not a name.")


def client_meta(archive: Mapping[str, npt.NDArray[np.generic]], name: str) -> Any:
    """Return the metadata of a client data file's arrays, or raise naming it."""
    try:
        meta = json.loads(str(archive["__meta__"]))
    except (KeyError, ValueError, RecursionError):
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        raise ValidationError(f"{name!r} is not a fedtrees client data file.")
    return meta
