"""A declaration of categories written from data files the user may read.

``fedtrees flower categories FILE.csv ...`` (docs/flower.md, "Sites whose
categories differ") reads files by the very rules a site reads its data file
(:func:`~fedtrees.datasets.load_client_file`) and returns, per categorical
column, the union of the names found, sorted by text: the order the agreement
gives the same sites' lists (docs/runtime.md), so a run declaring it grows the
model a run without it grows. Meant for public metadata — a codebook, a schema
file, a public sample — which is what a declaration is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from fedtrees.datasets._client_files import load_client_file
from fedtrees.exceptions import ValidationError

__all__ = ["categories_of_files", "declaration_text"]


def categories_of_files(
    paths: Sequence[str | Path],
    target: str | None = None,
    *,
    na_values: str | Sequence[str] = (),
    categorical: str | Sequence[str] = (),
    columns: Sequence[str] | None = None,
) -> dict[str, list[str]]:
    r"""Return column -> the sorted union of its category names in ``paths``.

    Each file is read as a site reads its data file (``target``, ``na_values``
    and ``categorical`` as in :func:`~fedtrees.datasets.load_client_file`);
    the target column is not a feature and is left out. ``columns`` keeps only
    those (each must be categorical in some file); by default every column
    categorical in some file. Missing cells are no category.

    Raises
    ------
    ValidationError
        Naming the file or the column: a file a site could not read, or a
        ``columns`` entry that is not a categorical column of any file.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.csv").write_text("ward,age,y\nB,50,no\nA,61,yes\n")
    >>> _ = (folder / "b.csv").write_text("ward,age,y\nC,40,no\n")
    >>> categories_of_files([folder / "a.csv", folder / "b.csv"])
    {'ward': ['A', 'B', 'C']}
    """
    if not paths:
        raise ValidationError("categories_of_files: give at least one data file.")
    found: dict[str, set[str]] = {}
    for path in paths:
        X, _ = load_client_file(
            path, target, na_values=na_values, categorical=categorical
        )
        for column in X.columns:
            series = X[column]
            if isinstance(series.dtype, pd.CategoricalDtype):
                names = {str(v) for v in series.dropna().unique()}
                found.setdefault(str(column), set()).update(names)
    wanted = list(found) if columns is None else [str(c) for c in columns]
    unknown = [c for c in wanted if c not in found]
    if unknown:
        raise ValidationError(
            f"categories_of_files: column {unknown[0]!r} is not a categorical "
            f"column of these files (their categorical columns: {sorted(found)})."
        )
    return {column: sorted(found[column]) for column in wanted}


def declaration_text(categories: dict[str, list[str]], *, toml: bool = False) -> str:
    r"""Return the declaration as the run config's JSON text, or a job.toml line.

    ``toml=True`` gives ``categories = "..."``, the JSON as a TOML basic string
    (JSON's string escapes are TOML's), to append to a job.toml.

    Examples
    --------
    >>> print(declaration_text({"ward": ["A", "B"]}))
    {"ward": ["A", "B"]}
    >>> print(declaration_text({"ward": ["A", "B"]}, toml=True))
    categories = "{\"ward\": [\"A\", \"B\"]}"
    """
    text = json.dumps(categories, ensure_ascii=False)
    if not toml:
        return text
    quoted = json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")
    return f"categories = {quoted}"  # TOML allows no raw DEL in a string
