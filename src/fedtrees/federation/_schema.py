"""The opening agreement of every federation (ALGORITHMS.md §0).

Round 0 of every run: each client reports its feature names, kinds and category
lists, and (for classification) its label set; the server checks that the schema
is the same everywhere — refusing to start otherwise, naming the client and the
column — and agrees on the sorted union of the labels. Every later class-count
vector uses that label order. Row counts are *not* reported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from fedtrees.exceptions import SchemaMismatchError
from fedtrees.federation._checks import InvalidField
from fedtrees.federation._client import handler
from fedtrees.federation._data import ClientData, label_strings
from fedtrees.federation._payload import Field, Payload, ReplySpec, payload

__all__ = ["Schema", "SchemaReply", "SchemaRequest", "Task", "agree"]

Task = Literal["classification", "regression", "features"]
"""What round 0 agrees on besides the columns: labels (classification), a numeric
target (regression), or nothing more (``"features"``: e.g. predicting the client)."""
_LABEL_TYPES: Final = ("int", "float", "bool", "str")


@payload("federation.schema_reply")
class SchemaReply(Payload):
    """A client's schema: columns, kinds, categories and (classification) labels.

    ``categories`` concatenates the category lists of the categorical columns;
    ``n_categories[j]`` is column j's share (0 for numeric columns).
    """

    feature_names: np.ndarray
    feature_kinds: np.ndarray
    categories: np.ndarray
    n_categories: np.ndarray
    labels: np.ndarray
    label_type: str


@payload("federation.schema")
class SchemaRequest(Payload):
    """Ask a client for its schema; ``task`` is "classification" or "regression"."""

    task: str

    def expected_reply(self) -> ReplySpec:
        """Names, kinds and category counts of equal length; labels as strings."""
        return ReplySpec(
            SchemaReply,
            {
                "feature_names": Field.array("U", (None,)),
                "feature_kinds": Field.array("U", (None,)),
                "categories": Field.array("U", (None,)),
                "n_categories": Field.array("iu", (None,), nonnegative=True),
                "labels": Field.array("U", (None,)),
            },
            check=_consistent,
        )


def _consistent(reply: SchemaReply) -> None:
    n = reply.feature_names.shape[0]
    if reply.feature_kinds.shape[0] != n or reply.n_categories.shape[0] != n:
        raise InvalidField("feature_kinds", "must have one entry per feature name")
    if not set(reply.feature_kinds.tolist()) <= {"numeric", "categorical"}:
        raise InvalidField("feature_kinds", "must be 'numeric' or 'categorical'")
    if int(reply.n_categories.sum()) != reply.categories.shape[0]:
        raise InvalidField("n_categories", "must add up to the number of categories")
    if reply.label_type not in _LABEL_TYPES:
        raise InvalidField("label_type", f"must be one of {_LABEL_TYPES}")


@handler("federation.schema")
def report_schema(request: SchemaRequest, data: ClientData) -> SchemaReply:
    """Client side: describe the local columns and labels (not the row count)."""
    categories = data.categories
    flat = [c for entry in categories if entry is not None for c in entry]
    counts = [0 if entry is None else len(entry) for entry in categories]
    if request.task != "classification":
        if request.task == "regression":
            data.targets()  # refuse a non-numeric target here, with a clear message
        labels, label_type = np.zeros(0, dtype="<U1"), "float"
    else:
        labels, label_type = label_strings(data.y), _label_type(data.y.to_numpy())
    return SchemaReply(
        feature_names=np.asarray(list(data.X.columns), dtype=str),
        feature_kinds=np.asarray(data.feature_kinds, dtype=str),
        categories=np.asarray(flat, dtype=str).reshape(-1),
        n_categories=np.asarray(counts, dtype=np.int64),
        labels=labels.astype(str),
        label_type=label_type,
    )


def _label_type(values: npt.NDArray[np.generic]) -> str:
    kind = values.dtype.kind
    if kind == "b":
        return "bool"
    if kind in "iu":
        return "int"
    if kind == "f":
        return "float"
    return "str"


@dataclass(frozen=True)
class Schema:
    """What every client agreed on: the columns and, for classification, the labels."""

    feature_names: tuple[str, ...]
    feature_kinds: tuple[str, ...]
    categories: tuple[tuple[str, ...] | None, ...]
    task: Task
    classes: tuple[str, ...]
    label_type: str

    @property
    def n_features(self) -> int:
        """Number of feature columns."""
        return len(self.feature_names)


def agree(replies: Mapping[str, SchemaReply], task: Task) -> Schema:
    """Server side: check that all schemas match; agree on the sorted label union.

    Raises
    ------
    SchemaMismatchError
        Naming the client and the column (or the label type) that differs from
        the first client (in client-id order).
    """
    ordered = sorted(replies)
    reference_client = ordered[0]
    reference = _columns(replies[reference_client])
    for client in ordered[1:]:
        _compare(reference_client, reference, client, _columns(replies[client]))
    label_types = {replies[c].label_type for c in ordered}
    if task == "classification" and len(label_types) > 1:
        found = {c: replies[c].label_type for c in ordered}
        raise SchemaMismatchError(f"Clients disagree on the label type: {found}.")
    names, kinds, cats = reference
    labels = _sorted_union(
        [replies[c].labels for c in ordered], replies[reference_client].label_type
    )
    return Schema(
        names, kinds, cats, task, labels, replies[reference_client].label_type
    )


Columns = tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, ...] | None, ...]]


def _columns(reply: SchemaReply) -> Columns:
    names = tuple(reply.feature_names.tolist())
    kinds = tuple(reply.feature_kinds.tolist())
    bounds = np.concatenate([[0], np.cumsum(reply.n_categories)])
    flat = reply.categories.tolist()
    cats = tuple(
        tuple(flat[bounds[j] : bounds[j + 1]]) if kinds[j] == "categorical" else None
        for j in range(len(names))
    )
    return names, kinds, cats


def _compare(ref_client: str, ref: Columns, client: str, other: Columns) -> None:
    (ref_names, ref_kinds, ref_cats), (names, kinds, cats) = ref, other
    if names != ref_names:
        missing = [c for c in ref_names if c not in names]
        extra = [c for c in names if c not in ref_names]
        if missing or extra:
            detail = (
                f"missing columns {missing}" if missing else f"extra columns {extra}"
            )
        else:
            column = next(a for a, b in zip(names, ref_names, strict=True) if a != b)
            detail = f"column {column!r} is in another position"
        raise SchemaMismatchError(
            f"Client {client!r} does not have the columns of client {ref_client!r}: "
            f"{detail}."
        )
    for j, column in enumerate(names):
        if kinds[j] != ref_kinds[j]:
            raise SchemaMismatchError(
                f"Column {column!r} is {kinds[j]} at client {client!r} but "
                f"{ref_kinds[j]} at client {ref_client!r}."
            )
        if cats[j] != ref_cats[j]:
            raise SchemaMismatchError(
                f"Column {column!r} has categories {list(cats[j] or ())} at client "
                f"{client!r} but {list(ref_cats[j] or ())} at client {ref_client!r}; "
                "declare the same categories everywhere (a pandas CategoricalDtype)."
            )


def _sorted_union(label_sets: list[np.ndarray], label_type: str) -> tuple[str, ...]:
    union = sorted(
        {str(v) for labels in label_sets for v in labels.tolist()},
        key=_sort_key(label_type),
    )
    return tuple(union)


def _sort_key(label_type: str) -> Callable[[str], Any]:
    if label_type in ("int", "float"):
        return float
    if label_type == "bool":
        return lambda v: v == "True"
    return str
