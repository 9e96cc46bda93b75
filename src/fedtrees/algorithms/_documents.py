"""Read a job's result document, checking every field before a model is built.

A result document (:mod:`fedtrees.algorithms._jobs`) is JSON written by a
ServerApp — or by anyone: like a reply, it is checked field by field before
it touches an estimator, and a bad field is refused with a
:class:`~fedtrees.exceptions.SerializationError` naming it (``"Result document
field 'trees[3]' ..."``), never a raw ``KeyError`` deep inside.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import pandas as pd

from fedtrees._typing import FloatArray
from fedtrees._validation import is_integral, is_real, load_json, shown
from fedtrees.algorithms._discretize import Binning
from fedtrees.algorithms._jobs import JOB_FORMAT, JOB_VERSION
from fedtrees.algorithms._params import MAX_GRID
from fedtrees.exceptions import (
    DataNotFoundError,
    SerializationError,
    ValidationError,
)
from fedtrees.federation import Schema
from fedtrees.stats import check_increasing
from fedtrees.tree import Tree

__all__ = [
    "bad_field",
    "bins_field",
    "client_map",
    "column_lists",
    "floats",
    "history_field",
    "int_list",
    "label_list",
    "losses_field",
    "mapping",
    "ranges_field",
    "read_document",
    "tree_at",
]

_WHAT: Final = "Result document"


def bad_field(name: str, expected: str, got: object) -> SerializationError:
    """Return the error of field ``name``: what it must be, what it holds.

    Examples
    --------
    >>> str(bad_field("job", "the name of a fitting job", 3))
    "Result document field 'job' must be the name of a fitting job; got 3."
    """
    return SerializationError(
        f"{_WHAT} field {name!r} must be {expected}; got {shown(got)}."
    )


def read_document(source: object) -> dict[str, Any]:
    """Return the document ``source`` holds, its format and version checked.

    ``source``: a path to the JSON file (``str`` or ``os.PathLike``), the
    JSON text itself (a ``str`` whose first non-blank character is ``{``), or
    the parsed dict.

    Raises
    ------
    DataNotFoundError
        No file at the path.
    SerializationError
        Not JSON, not an object, another format, or a version this fedtrees
        does not read (naming the field).
    """
    if isinstance(source, Mapping):
        document: object = dict(source)
    elif isinstance(source, str) and source.lstrip().startswith("{"):
        document = _parsed(source, f"{_WHAT} text")
    elif isinstance(source, str | os.PathLike):
        document = _parsed(_file_text(Path(source)), f"{_WHAT} {str(source)!r}")
    else:
        raise SerializationError(
            "fedtrees.load takes a result document: a path to its JSON file, the "
            f"JSON text or the parsed dict; got {type(source).__name__}."
        )
    if not isinstance(document, dict):
        raise SerializationError(
            f"{_WHAT}: a JSON object is expected; got {type(document).__name__}."
        )
    _check_header(document)
    return document


def _file_text(path: Path) -> str:
    if not path.is_file():
        raise DataNotFoundError(
            f"No result document at {str(path)!r}: the job writes it at its "
            "output-path (a JSON file)."
        )
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SerializationError(
            f"{_WHAT} {str(path)!r} is not UTF-8 text (not a JSON document)."
        ) from None


def _parsed(text: str, what: str) -> object:
    """Parse JSON text; its nesting is bounded before parsing (no size bound)."""
    try:
        return load_json(text, what, max_chars=None)
    except ValidationError as exc:
        raise SerializationError(str(exc)) from None


def _check_header(document: Mapping[str, Any]) -> None:
    """Refuse another format, or a version this fedtrees does not read."""
    if document.get("format") != JOB_FORMAT:
        raise bad_field(
            "format",
            f"{JOB_FORMAT!r} (a fedtrees job's result; documents written before "
            "fedtrees named their format cannot be loaded: run the job again)",
            document.get("format"),
        )
    version = document.get("version")
    if not is_integral(version) or version < 1:
        raise bad_field("version", "an int >= 1", version)
    if version > JOB_VERSION:
        raise SerializationError(
            f"{_WHAT} has version {version}, newer than the version {JOB_VERSION} "
            "this fedtrees reads; upgrade fedtrees to load it."
        )


def mapping(document: Mapping[str, Any], name: str) -> dict[str, Any]:
    """Return field ``name``: a JSON object."""
    value = document.get(name)
    if not isinstance(value, dict):
        raise bad_field(name, "a JSON object", value)
    return value


def _text_list(value: object, name: str, *, unique: bool = True) -> list[str]:
    """Return a non-empty list of strings (distinct unless ``unique=False``)."""
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) for v in value)
    ):
        raise bad_field(name, "a non-empty list of strings", value)
    if unique and len(set(value)) != len(value):
        raise bad_field(name, "a list of distinct strings", value)
    return list(value)


def column_lists(
    document: Mapping[str, Any],
) -> tuple[list[str], list[tuple[str, ...] | None], list[str]]:
    """Return the agreed columns and the clients: names, categories, client ids.

    ``categories`` has one entry per column: None (numeric) or its distinct
    category names.
    """
    names = _text_list(document.get("feature_names"), "feature_names")
    given = document.get("categories")
    if not isinstance(given, list) or len(given) != len(names):
        raise bad_field("categories", f"a list of {len(names)} entries", given)
    categories = [
        None if c is None else tuple(_text_list(c, f"categories[{j}]"))
        for j, c in enumerate(given)
    ]
    clients = _text_list(document.get("clients"), "clients")
    return names, categories, clients


_LABEL_TYPES: Final = (("bool", bool), ("int", int), ("float", float), ("str", str))


def label_list(value: object, classification: bool) -> tuple[tuple[str, ...], str]:
    """Return the class labels as text and their label type (``"int"``, ...).

    The document lists them as JSON values of one type (numbers, booleans or
    strings), as the estimator's ``classes_`` held them; a regression
    document lists none (``()``, ``"str"``).
    """
    if not classification:
        if value is not None:
            raise bad_field("classes", "null for a regression model", value)
        return (), "str"
    if not isinstance(value, list) or not value:
        raise bad_field("classes", "a non-empty list of labels", value)
    for label_type, kind in _LABEL_TYPES:  # bool first: a bool is an int too
        if all(isinstance(v, kind) for v in value) and not (
            kind is int and any(isinstance(v, bool) for v in value)
        ):
            if kind is float and not all(math.isfinite(v) for v in value):
                break
            texts = tuple(str(v) for v in value)
            if len(set(texts)) != len(texts):
                break
            return texts, label_type
    raise bad_field(
        "classes",
        "distinct labels of one type (finite numbers, booleans or text)",
        value,
    )


def floats(value: object, name: str, length: int | None = None) -> FloatArray:
    """Return a list of finite numbers as float64 (of ``length`` if given)."""
    if (
        not isinstance(value, list)
        or not all(is_real(v) for v in value)
        or (length is not None and len(value) != length)
        or not all(math.isfinite(v) for v in value)
    ):
        size = "" if length is None else f"{length} "
        raise bad_field(name, f"a list of {size}finite numbers", value)
    return np.asarray(value, dtype=np.float64)


def client_map(
    document: Mapping[str, Any], name: str, clients: Sequence[str]
) -> dict[str, Any]:
    """Return field ``name``: a JSON object keyed by (at least one) clients."""
    value = mapping(document, name)
    if not value or any(c not in clients for c in value):
        raise bad_field(name, f"an object keyed by clients of {list(clients)}", value)
    return value


def tree_at(value: object, name: str, n_features: int, n_outputs: int) -> Tree:
    """Return the tree of field ``name``: ``n_features`` columns, ``n_outputs`` values.

    :meth:`fedtrees.tree.Tree.from_dict` checks the tree itself (its arrays,
    links and codes); this checks that it fits the model.
    """
    try:
        tree = Tree.from_dict(value)  # type: ignore[arg-type]
    except SerializationError as exc:
        raise SerializationError(f"{_WHAT} field {name!r}: {exc}") from None
    if tree.n_features != n_features or tree.value.shape[1] != n_outputs:
        raise bad_field(
            name,
            f"a tree of {n_features} features and {n_outputs} outputs per node",
            f"a tree of {tree.n_features} features and {tree.value.shape[1]} outputs",
        )
    return tree


def ranges_field(value: object, schema: Schema) -> Any:
    """Return the DP forest's ranges, shape (n_features, 2): [low, high] per column.

    A categorical column's range is that of its codes; ``[null, null]`` (NaN)
    stands for a range not used.
    """
    n = schema.n_features
    if not isinstance(value, list) or len(value) != n:
        raise bad_field("feature_ranges", f"a list of {n} [low, high] pairs", value)
    rows = []
    for j, pair in enumerate(value):
        if pair == [None, None]:
            rows.append([np.nan, np.nan])
            continue
        low, high = floats(pair, f"feature_ranges[{j}]", 2)
        if not low <= high:
            raise bad_field(f"feature_ranges[{j}]", "[low, high], low <= high", pair)
        rows.append([low, high])
    return np.asarray(rows, dtype=np.float64).reshape(n, 2)


def bins_field(value: object, schema: Schema) -> Binning:
    """Return the bins: interior edges per numeric column, null per categorical one."""
    if not isinstance(value, list) or len(value) != schema.n_features:
        raise bad_field("bins", f"a list of {schema.n_features} entries", value)
    found = {}
    for j, (edges, categories) in enumerate(zip(value, schema.categories, strict=True)):
        if categories is not None or edges is None:
            if categories is None or edges is not None:
                raise bad_field(
                    f"bins[{j}]", "null exactly for a categorical column", edges
                )
            continue
        found[j] = np.zeros(0) if edges == [] else _checked_edges(edges, j)
    return Binning.of(schema, found)


def _checked_edges(edges: object, j: int) -> Any:
    try:
        return check_increasing(edges, f"bins[{j}]", "fedtrees.load", MAX_GRID - 1)
    except ValidationError as exc:
        raise SerializationError(f"Result document field 'bins[{j}]': {exc}") from None


def int_list(value: object, name: str) -> Any:
    if not isinstance(value, list) or not all(is_integral(v) for v in value):
        raise bad_field(name, "a list of ints", value)
    return np.asarray(value, dtype=np.int64)


def history_field(value: object) -> pd.DataFrame:
    """FedGA's fitness per generation: [best, mean] pairs, generations from 1."""
    if not isinstance(value, list) or not all(
        isinstance(pair, list) and len(pair) == 2 for pair in value
    ):
        raise bad_field("fitness_history", "a list of [best, mean] pairs", value)
    rows = [floats(pair, f"fitness_history[{g}]", 2) for g, pair in enumerate(value)]
    history = pd.DataFrame(
        np.asarray(rows).reshape(-1, 2), columns=["best", "mean"]
    ).rename_axis("generation")
    history.index += 1
    return history


def losses_field(value: object) -> dict[str, list[float]]:
    if not isinstance(value, dict):
        raise bad_field("evals_result", "an object of per-iteration losses", value)
    return {
        str(name): floats(losses, f"evals_result[{name!r}]").tolist()
        for name, losses in value.items()
    }
