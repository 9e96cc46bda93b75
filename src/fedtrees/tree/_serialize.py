"""The versioned JSON document of a :class:`fedtrees.tree.Tree` — its only persistence.

Arrays are stored as ``{"dtype", "shape", "data"}`` with NaN written as JSON ``null``
(the tree allows no infinities), so the document is standard JSON and the round trip
``Tree.from_dict(tree.to_dict()) == tree`` is exact: Python writes floats with the
shortest representation that parses back to the same double.

Documents come from files and other parties, so decoding checks every field and
raises :class:`fedtrees.exceptions.SerializationError` naming it.

Versions: 2 added the node field ``"missing"`` (a :class:`fedtrees.tree.Missing`
per node, required). A version-1 document has no such field; it loads with every
node ``Missing.LARGER`` (version 1 stored no learned direction).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, Final, TypeVar

import numpy as np
import numpy.typing as npt

from fedtrees._validation import is_integral
from fedtrees.exceptions import SerializationError, ValidationError

if TYPE_CHECKING:
    from fedtrees.tree._arrays import TreeArrays

T = TypeVar("T", bound="TreeArrays")
"""The tree class a reader builds (:class:`fedtrees.tree.Tree`)."""

__all__ = ["FORMAT", "VERSION", "tree_from_dict", "tree_from_json", "tree_to_dict"]

FORMAT: Final = "fedtrees.tree"
VERSION: Final = 2

_V1_NODE_FIELDS: Final = {
    "kind": "i",
    "feature": "i",
    "threshold": "f",
    "left": "i",
    "right": "i",
    "branch_ptr": "i",
    "branch_code": "i",
    "branch_child": "i",
    "value": "f",
    "count": "f",
    "impurity": "f",
}
_NODE_FIELDS: Final = {**_V1_NODE_FIELDS, "missing": "i"}


def tree_to_dict(tree: TreeArrays) -> dict[str, Any]:
    """Return the JSON-compatible document of ``tree`` (format :data:`VERSION`)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "n_features": tree.n_features,
        "classes": None if tree.classes is None else encode_array(tree.classes),
        "feature_names": None
        if tree.feature_names is None
        else list(tree.feature_names),
        "categories": None
        if tree.categories is None
        else [None if c is None else list(c) for c in tree.categories],
        "clients": None if tree.clients is None else list(tree.clients),
        "nodes": {name: encode_array(getattr(tree, name)) for name in _NODE_FIELDS},
    }


def encode_array(array: npt.NDArray[Any]) -> dict[str, Any]:
    """Encode a numeric, boolean or string array; NaN becomes ``null``."""
    flat = array.ravel()
    if array.dtype.kind == "f" and np.isnan(flat).any():
        boxed = flat.astype(object)
        boxed[np.isnan(flat)] = None
        data = boxed.tolist()
    else:
        data = flat.tolist()
    return {"dtype": array.dtype.str, "shape": list(array.shape), "data": data}


def tree_from_json(text: str, tree_class: type[T]) -> T:
    """Parse a JSON string written by :meth:`Tree.to_json`."""
    try:
        document = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise SerializationError(f"Not a JSON tree document: {exc}") from exc
    return tree_from_dict(document, tree_class)


def tree_from_dict(document: object, tree_class: type[T]) -> T:
    """Rebuild a tree from its document, checking format, version and every field."""
    doc = _require_mapping(document, "document")
    version = _check_header(doc)
    nodes = _require_mapping(doc.get("nodes"), "nodes")
    # Version 1 has no "missing": the Tree's default (every node LARGER).
    fields = _V1_NODE_FIELDS if version == 1 else _NODE_FIELDS
    arrays = {
        name: decode_array(nodes.get(name), f"nodes.{name}", kind)
        for name, kind in fields.items()
    }
    classes = doc.get("classes")
    try:
        return tree_class(
            **arrays,
            n_features=_require_int(doc.get("n_features"), "n_features"),
            classes=None
            if classes is None
            else decode_array(classes, "classes", "iufbU"),
            feature_names=_optional_strings(doc.get("feature_names"), "feature_names"),
            categories=_categories(doc.get("categories")),
            clients=_optional_strings(doc.get("clients"), "clients"),
        )
    except ValidationError as exc:
        raise SerializationError(f"Invalid tree document: {exc}") from exc


def _check_header(doc: dict[str, Any]) -> int:
    """Check format and version; return the version."""
    if doc.get("format") != FORMAT:
        raise SerializationError(
            f"Not a fedtrees tree document: field 'format' is {doc.get('format')!r}, "
            f"expected {FORMAT!r}."
        )
    version = doc.get("version")
    if not is_integral(version) or version < 1:
        raise SerializationError(
            f"Unknown tree document version {version!r}; expected an int >= 1."
        )
    if version > VERSION:
        raise SerializationError(
            f"This tree document has format version {version}, newer than the "
            f"version {VERSION} this fedtrees reads; upgrade fedtrees to load it."
        )
    return int(version)


def decode_array(field: object, name: str, kinds: str) -> npt.NDArray[Any]:
    """Decode an array written by :func:`encode_array` (dtype kind in ``kinds``)."""
    spec = _require_mapping(field, name)
    try:
        dtype = np.dtype(spec.get("dtype"))
    except TypeError as exc:
        raise SerializationError(f"Field {name!r} has an invalid dtype.") from exc
    shape = spec.get("shape")
    data = spec.get("data")
    if dtype.kind not in kinds:
        raise SerializationError(
            f"Field {name!r} has dtype {dtype}, not one of kind {kinds!r}."
        )
    if not isinstance(shape, list) or not all(is_integral(s) and s >= 0 for s in shape):
        raise SerializationError(
            f"Field {name!r} needs 'shape' as a list of ints >= 0."
        )
    if not isinstance(data, list) or len(data) != math.prod(shape):
        raise SerializationError(
            f"Field {name!r} needs 'data' as a list of {math.prod(shape)} values."
        )
    return _typed(data, dtype, name).reshape(shape)


def _typed(data: list[Any], dtype: np.dtype[Any], name: str) -> npt.NDArray[Any]:
    if not data:
        return np.zeros(0, dtype=dtype)
    try:
        inferred = np.array(data, dtype=np.float64 if dtype.kind == "f" else None)
    except (TypeError, ValueError) as exc:
        raise SerializationError(
            f"Field {name!r} holds values of the wrong type."
        ) from exc
    compatible = {"f": "f", "i": "iu", "u": "iu", "b": "b", "U": "U"}[dtype.kind]
    if inferred.dtype.kind not in compatible or inferred.ndim != 1:
        raise SerializationError(
            f"Field {name!r} holds {inferred.dtype.kind!r}-kind values; dtype "
            f"{dtype} expected."
        )
    typed = inferred.astype(dtype)
    if dtype.kind in "iu" and not np.array_equal(typed, inferred):
        raise SerializationError(
            f"Field {name!r} holds values out of the range of dtype {dtype}."
        )
    return typed


def _require_mapping(value: object, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SerializationError(
            f"Field {name!r} must be an object, got {type(value).__name__}."
        )
    return value


def _require_int(value: object, name: str) -> int:
    if not is_integral(value):
        raise SerializationError(f"Field {name!r} must be an int, got {value!r}.")
    return int(value)


def _optional_strings(value: object, name: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SerializationError(f"Field {name!r} must be a list of strings or null.")
    return tuple(value)


def _categories(value: object) -> tuple[tuple[str, ...] | None, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise SerializationError("Field 'categories' must be a list or null.")
    return tuple(_optional_strings(v, "categories[]") for v in value)
