"""The opening agreement of every federation (docs/runtime.md).

Round 0 of every run: each client reports its feature names, kinds and category
lists, and (for classification) its label set; the server checks that the schema
is the same everywhere — refusing to start otherwise, naming the client and the
column — and agrees on the sorted union of the labels. Every later class-count
vector uses that label order.

Row counts are *not* reported; each client declares two bounds instead, so that
the server can refuse inflated statistics (:mod:`fedtrees.federation._checks`):
``row_bound``, the smallest power of two >= its row count n, and
``weight_bound``, the smallest power of two >= n * max(w) for sample weights w
(n without weights, so then both bounds are equal). n * max(w) bounds the total
weight of the rows and of any bootstrap resample of them (n draws). Being
powers of two, the bounds reveal only ceil(log2 n) and ceil(log2(n * max w)),
never n itself. They bound what a buggy client can send; a client that lies
about them is not caught (this is not a Byzantine defence).

**What the agreement reveals to the server.** Without a declaration: the column
names, their order and kinds (numeric or categorical); for every categorical
column, each client's list of categories — the categories of a pandas
``category`` dtype (used or not), or the distinct values present in a
string/object column — so every distinct value a client holds in such a column
leaves it; for classification, the set of labels each client holds (needed to
agree on the class order) and, for every task, the label type; and the two
bounds above. Never a row, a row count, or which row holds what.

**Declared categories** (``run(..., categories={column: names})``, public
metadata, like the DP forest's ``feature_ranges``): the request carries the
declared lists *down* (``declared_columns``, ``declared_categories``,
``n_declared``); each client checks that a declared column is categorical there
and holds only declared values, re-codes it to the declared order
(:meth:`ClientData.declare_categories`) and replies with no category of it,
echoing the declared column names (``declared_columns``). No category value of a
declared column leaves a client; what such a reply still reveals is that the
client's values are among the declared ones (else it fails, naming itself and
the column — neither the value nor how many rows hold it). The agreed
:attr:`Schema.categories` of a declared column is the declared list, in its
order. Undeclared categorical columns behave as above.

**Declared classes** (``run(..., classes=labels)``, classification): the labels
travel down (``declared_classes``); each client checks that its labels are
among them (compared as ``str``; else it fails naming itself, neither the label
nor its number of rows) and sends an empty label set. The agreed classes are the
declared ones, sorted as the label type orders them. Without it, each client's
label set travels (needed to agree on the class order); the label type always
does. A label set its type cannot hold — text or ``"1.0"`` under ``"int"``,
``"nan"`` or ``"inf"`` under ``"float"``, a repeated label — is that client's
malformed reply (field ``labels``), refused before any class is agreed
(:func:`fedtrees.federation._values.label_text_problem`).

**Sites whose categories differ** (docs/runtime.md): an undeclared categorical
column whose lists are equal at every client keeps that list (its order
included). Where they differ — a rare value at one site only — the server
agrees on their **union, sorted by text** (the order ``pandas.Categorical``
gives the pooled texts, so the order ``fit`` in process gives the same files'
rows), and each client whose list differs from it is told where its own
categories sit in the union (:mod:`fedtrees.federation._agreement`) before any
statistic is computed. :attr:`Schema.agreed_columns` names those columns.

**Requiring declared categories** (``run(..., require_declared_categories=
True)``; run config ``require-declared-categories``): the request says so
(``require_declared``) and every client refuses, naming itself and the column,
never a value, to report the categories of an undeclared categorical column;
a site may refuse it for itself too (``ClientData.reports_categories``; on
Flower the node config's ``report-categories = false``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

import numpy as np
import numpy.typing as npt

from fedtrees._validation import check_class_labels
from fedtrees.exceptions import SchemaMismatchError, ValidationError
from fedtrees.federation._checks import InvalidField
from fedtrees.federation._client import handler
from fedtrees.federation._data import (
    ClientData,
    DeclaredCategories,
    check_categories,
    check_classes,
)
from fedtrees.federation._payload import Field, Payload, ReplySpec, payload
from fedtrees.federation._secure import KEY_BYTES, keep_new_key
from fedtrees.federation._state import ClientState
from fedtrees.federation._values import label_text_problem

__all__ = ["Schema", "SchemaReply", "SchemaRequest", "Task", "agree"]

Task = Literal["classification", "regression", "features"]
"""What round 0 agrees on besides the columns: labels (classification), a numeric
target (regression), or nothing more (``"features"``: e.g. predicting the client)."""
_TASKS: Final = get_args(Task)
_LABEL_TYPES: Final = ("int", "float", "bool", "str")


@payload("federation.schema_reply")
class SchemaReply(Payload):
    """A client's schema: columns, kinds, categories and (classification) labels.

    ``categories`` concatenates the category lists of the categorical columns;
    ``n_categories[j]`` is column j's share (0 for numeric columns and for the
    ``declared_columns``, whose categories the request declared).
    """

    feature_names: np.ndarray
    feature_kinds: np.ndarray
    categories: np.ndarray
    n_categories: np.ndarray
    labels: np.ndarray
    label_type: str
    row_bound: int
    weight_bound: float
    declared_columns: np.ndarray
    public_key: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    """The client's X25519 public key (``secure``), else empty."""


def _no_strings() -> np.ndarray:
    return np.zeros(0, dtype="<U1")


def _no_counts() -> np.ndarray:
    return np.zeros(0, dtype=np.int64)


@payload("federation.schema")
class SchemaRequest(Payload):
    """Ask a client for its schema; ``task`` is "classification" or "regression".

    ``declared_columns`` name the columns whose categories the run declares,
    ``declared_categories`` concatenates their lists (``n_declared[k]`` is column
    k's share): public metadata, sent down (see the module docstring). With
    ``classes_declared``, ``declared_classes`` are the class labels (as ``str``):
    clients check theirs against them and send no label set. ``secure``: each
    client also draws a key pair for secure aggregation, keeps the private key
    and sends the public one (:mod:`fedtrees.federation._secure`). Build one
    with :meth:`declaring`.
    """

    task: str
    declared_columns: np.ndarray = field(default_factory=_no_strings)
    declared_categories: np.ndarray = field(default_factory=_no_strings)
    n_declared: np.ndarray = field(default_factory=_no_counts)
    classes_declared: bool = False
    declared_classes: np.ndarray = field(default_factory=_no_strings)
    secure: bool = False
    require_declared: bool = False
    """Every categorical column must be declared: clients send no category."""

    @classmethod
    def declaring(
        cls,
        task: str,
        categories: Mapping[str, Sequence[str]] | None = None,
        classes: Sequence[object] | None = None,
        *,
        secure: bool = False,
        require_declared: bool = False,
    ) -> SchemaRequest:
        """Return the request of ``task`` declaring ``categories`` and ``classes``.

        ``categories``: column -> category names; ``classes``: the class labels
        (classification only); ``require_declared``: every categorical column
        must be among ``categories`` (module docstring).

        Raises
        ------
        ValidationError
            A malformed declaration (naming the column), or classes declared for
            another task.
        """
        declared = check_categories(categories, "run")
        names = [name for values in declared.values() for name in values]
        labels = check_classes(classes, "run")
        if labels is not None and task != "classification":
            raise ValidationError(f"run: classes are declared for a {task} task.")
        return cls(
            task,
            np.asarray(list(declared), dtype=str).reshape(-1),
            np.asarray(names, dtype=str).reshape(-1),
            np.asarray([len(v) for v in declared.values()], dtype=np.int64),
            labels is not None,
            np.asarray(labels or (), dtype=str).reshape(-1),
            secure,
            bool(require_declared),
        )

    def declared_class_labels(self) -> tuple[str, ...] | None:
        """Return the declared class labels, or None when none are declared.

        Raises
        ------
        ValidationError
            If they are empty or repeat a label (a malformed request).
        """
        if not self.classes_declared:
            return None
        return check_classes(self.declared_classes.reshape(-1), "SchemaRequest")

    def declared(self) -> DeclaredCategories:
        """Return the declared categories, column -> names (checking the counts)."""
        columns = self.declared_columns.tolist()
        counts = self.n_declared.tolist()
        wrong = len(counts) != len(columns) or any(c < 0 for c in counts)
        if wrong or sum(counts) != len(self.declared_categories):
            raise ValidationError(
                "SchemaRequest: n_declared must give one count per declared column, "
                "adding up to the declared categories."
            )
        bounds = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
        flat = self.declared_categories.tolist()
        return {
            str(column): tuple(str(v) for v in flat[bounds[k] : bounds[k + 1]])
            for k, column in enumerate(columns)
        }

    def expected_reply(self) -> ReplySpec:
        """Names, kinds and category counts of equal length; labels as strings.

        The labels must be distinct texts of the label type. The reply must echo
        ``declared_columns`` and list no category of them.
        """
        return ReplySpec(
            SchemaReply,
            {
                "feature_names": Field.array("U", (None,)),
                "feature_kinds": Field.array("U", (None,)),
                "categories": Field.array("U", (None,)),
                "n_categories": Field.array("iu", (None,), nonnegative=True),
                "labels": Field.array("U", (0,) if self.classes_declared else (None,)),
                "row_bound": Field.scalar(low=1),
                "weight_bound": Field.scalar(low=0.0),
                "declared_columns": Field.array(
                    "U", (None,), equals=self.declared_columns
                ),
                "public_key": Field.array("u", (KEY_BYTES if self.secure else 0,)),
            },
            check=_check_declared(
                self.declared_columns.tolist(),
                self.task == "classification" and not self.classes_declared,
                self.require_declared,
            ),
        )


def _check_declared(
    declared: list[str], needs_labels: bool, require_declared: bool = False
) -> Callable[[SchemaReply], None]:
    """Check the reply, and that declared columns are categorical with no values.

    ``needs_labels``: classification without declared classes, where a client
    (it has rows) holds at least one label. ``require_declared``: the reply
    lists no category at all.
    """

    def check(reply: SchemaReply) -> None:
        _consistent(reply)
        if require_declared and reply.categories.shape[0]:
            raise InvalidField(
                "categories", "are listed though the run requires declared categories"
            )
        if needs_labels and reply.labels.shape[0] == 0:
            raise InvalidField("labels", "is empty; a client with rows has labels")
        names = reply.feature_names.tolist()
        for column in declared:
            if column not in names:
                raise InvalidField(
                    "feature_names", f"lack the declared column {column!r}"
                )
            j = names.index(column)
            if reply.feature_kinds[j] != "categorical":
                raise InvalidField(
                    "feature_kinds", f"say the declared column {column!r} is numeric"
                )
            if int(reply.n_categories[j]) != 0:
                raise InvalidField(
                    "n_categories",
                    f"list categories of the declared column {column!r}",
                )

    return check


def _consistent(reply: SchemaReply) -> None:
    n = reply.feature_names.shape[0]
    if reply.feature_kinds.shape[0] != n or reply.n_categories.shape[0] != n:
        raise InvalidField("feature_kinds", "must have one entry per feature name")
    if not set(reply.feature_kinds.tolist()) <= {"numeric", "categorical"}:
        raise InvalidField("feature_kinds", "must be 'numeric' or 'categorical'")
    if int(reply.n_categories.sum()) != reply.categories.shape[0]:
        raise InvalidField("n_categories", "must add up to the number of categories")
    names = reply.feature_names.tolist()
    if len(set(names)) != n:
        raise InvalidField("feature_names", "repeat a column name")
    bounds = np.concatenate([[0], np.cumsum(reply.n_categories)]).tolist()
    flat = reply.categories.tolist()
    for j, kind in enumerate(reply.feature_kinds.tolist()):
        own = flat[bounds[j] : bounds[j + 1]]
        if kind == "numeric" and own:
            raise InvalidField("n_categories", f"give numeric column {names[j]!r} some")
        if len(set(own)) != len(own):
            raise InvalidField("categories", f"repeat a name of column {names[j]!r}")
    if reply.label_type not in _LABEL_TYPES:
        raise InvalidField("label_type", f"must be one of {_LABEL_TYPES}")
    problem = label_text_problem(reply.labels.tolist(), reply.label_type)
    if problem is not None:  # e.g. text under "int", "nan" under "float"
        raise InvalidField("labels", f"{problem} ({reply.label_type!r} labels)")
    for name in ("row_bound", "weight_bound"):
        value = getattr(reply, name)
        if value != power_of_two_at_least(value):
            raise InvalidField(name, f"is {value!r}; a power of two was expected")


def power_of_two_at_least(x: float) -> float:
    """Return the smallest power of two >= ``x`` (0.0 for ``x <= 0``), exactly."""
    if x <= 0:
        return 0.0
    mantissa, exponent = math.frexp(x)  # x = mantissa * 2**exponent, 0.5 <= m < 1
    return math.ldexp(1.0, exponent - 1 if mantissa == 0.5 else exponent)


def declared_bounds(data: ClientData) -> tuple[int, float]:
    """Return a client's ``(row_bound, weight_bound)`` (module docstring)."""
    n = data.n_rows
    heaviest = 1.0 if data.weights is None else float(np.max(data.weights))
    return 1 << max(n - 1, 0).bit_length(), power_of_two_at_least(n * heaviest)


@handler("federation.schema", stateful=True)
def report_schema(
    request: SchemaRequest, data: ClientData, state: ClientState
) -> SchemaReply:
    """Client side: describe the columns and labels, and bound the rows (not n).

    With ``secure``, draws the run's key pair (keeping the private key in
    ``state``) and sends the public key. First re-codes the declared columns
    (:meth:`ClientData.declare_categories`, which refuses a numeric column or
    a value outside the declaration); their categories are not reported. An
    unknown ``task`` is refused, naming it.
    """
    if request.task not in _TASKS:
        raise ValidationError(
            f"Request 'federation.schema': field 'task' must be one of {_TASKS}; "
            f"got {request.task!r}."
        )
    data.declare_categories(request.declared())
    declared = set(data.declared_columns)
    _refuse_undeclared(data, declared, request.require_declared)
    categories = [
        None if str(column) in declared else entry
        for column, entry in zip(data.X.columns, data.categories, strict=True)
    ]
    for column, entry in zip(data.X.columns, categories, strict=True):
        if entry is not None and len(set(entry)) != len(entry):
            raise ValidationError(
                f"Client {data.client_id!r}: column {str(column)!r} has distinct "
                "categories that print alike (such as 1 and '1'); give it one type."
            )
    flat = [c for entry in categories if entry is not None for c in entry]
    counts = [0 if entry is None else len(entry) for entry in categories]
    if request.task != "classification":
        if request.task == "regression":
            data.targets()  # refuse a non-numeric target here, with a clear message
        labels, label_type = np.zeros(0, dtype="<U1"), "float"
    else:
        labels = data.label_set()  # first: labels that print alike are named so
        check_class_labels(data.y.to_numpy(), f"Client {data.client_id!r}", quote=False)
        label_type = _label_type(data.y.to_numpy())
        declared_classes = request.declared_class_labels()
        if declared_classes is not None:
            data.check_declared_classes(declared_classes)
            labels = np.zeros(0, dtype="<U1")
    return SchemaReply(
        feature_names=np.asarray(list(data.X.columns), dtype=str),
        feature_kinds=np.asarray(data.feature_kinds, dtype=str),
        categories=np.asarray(flat, dtype=str).reshape(-1),
        n_categories=np.asarray(counts, dtype=np.int64),
        labels=labels.astype(str),
        label_type=label_type,
        row_bound=declared_bounds(data)[0],
        weight_bound=declared_bounds(data)[1],
        declared_columns=np.asarray(data.declared_columns, dtype=str).reshape(-1),
        public_key=keep_new_key(state) if request.secure else np.zeros(0, np.uint8),
    )


def _refuse_undeclared(data: ClientData, declared: set[str], required: bool) -> None:
    """Refuse to report an undeclared categorical column's names, if told to.

    ``required``: the run requires declared categories; else the site's own
    setting (:attr:`ClientData.reports_categories`) decides. The error names
    the client and the column, never a value (it travels).
    """
    if not required and data.reports_categories:
        return
    undeclared = [
        str(column)
        for column, kind in zip(data.X.columns, data.feature_kinds, strict=True)
        if kind == "categorical" and str(column) not in declared
    ]
    if not undeclared:
        return
    why = (
        "this run requires declared categories (require_declared_categories)"
        if required
        else "this site reports no category names (its own setting: "
        + (
            "node config report-categories = false"
            if data.from_file
            else "reports_categories=False"
        )
        + ")"
    )
    raise ValidationError(
        f"Client {data.client_id!r}: column {undeclared[0]!r} is categorical and "
        f"its categories are not declared; {why}, so none of its names is sent. "
        f"{declare_advice(undeclared[0], data.from_file)}"
    )


def declare_advice(column: str, site_files: bool) -> str:
    """Say how to declare the categories of ``column``, for files or for frames.

    Examples
    --------
    >>> declare_advice("ward", site_files=False).startswith("Declare them: Federation")
    True
    """
    if site_files:
        return (
            "Declare them in the run config (job.toml): categories = "
            f'\'{{"{column}": ["A", "B"]}}\', which \'fedtrees flower categories '
            "FILE.csv ... --toml' writes from public files."
        )
    return (
        f"Declare them: Federation.from_clients(..., categories={{{column!r}: "
        "[...]}) (or fedtrees.federation.run(..., categories=...))."
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
    """What every client agreed on: the columns and, for classification, the labels.

    ``declared_columns``: the categorical columns whose categories the run
    declared (their ``categories`` are the declared lists; no client sent them).
    ``agreed_columns``: the undeclared ones whose lists differed between clients
    (their ``categories`` are the sorted union; module docstring).
    """

    feature_names: tuple[str, ...]
    feature_kinds: tuple[str, ...]
    categories: tuple[tuple[str, ...] | None, ...]
    task: Task
    classes: tuple[str, ...]
    label_type: str
    declared_columns: tuple[str, ...] = ()
    agreed_columns: tuple[str, ...] = ()

    @property
    def n_features(self) -> int:
        """Number of feature columns."""
        return len(self.feature_names)


def agree(
    replies: Mapping[str, SchemaReply],
    task: Task,
    categories: Mapping[str, Sequence[str]] | None = None,
    classes: Sequence[object] | None = None,
    *,
    site_files: bool = False,
) -> Schema:
    """Server side: check that all schemas match; agree on the sorted label union.

    ``categories`` is the run's declaration (column -> names): those columns get
    the declared lists (the replies carry none of them). An undeclared
    categorical column gets the clients' list where they all send the same,
    else their union sorted by text (module docstring). ``classes``, if
    declared, replace the union of the clients' labels; either way the classes
    are sorted as the label type orders them (numbers by value).
    ``site_files``: the clients are sites serving data files (Flower), so an
    error's advice names their settings rather than pandas dtypes.

    Raises
    ------
    SchemaMismatchError
        Naming the client and the column (or the label type) that differs from
        the first client (in client-id order), or a declared column no client has.
    """
    declared = check_categories(categories, "agree")
    ordered = sorted(replies)
    reference_client = ordered[0]
    columns = {c: _columns(replies[c], declared) for c in ordered}
    reference = columns[reference_client]
    for client in ordered[1:]:
        _compare(reference_client, reference, client, columns[client], site_files)
    agreed_lists = _agreed_categories(
        reference[0], [columns[c][2] for c in ordered], declared
    )
    missing = sorted(set(declared) - set(reference[0]))
    if missing:
        raise SchemaMismatchError(
            f"Categories are declared for columns {missing}, which client "
            f"{reference_client!r} does not have."
        )
    label_types = {replies[c].label_type for c in ordered}
    if task == "classification" and len(label_types) > 1:
        found = {c: replies[c].label_type for c in ordered}
        raise SchemaMismatchError(f"Clients disagree on the label type: {found}.")
    names, kinds, cats = reference[0], reference[1], agreed_lists.lists
    labels = _agreed_classes(
        [replies[c].labels for c in ordered],
        replies[reference_client].label_type,
        check_classes(classes, "agree"),
    )
    return Schema(
        names,
        kinds,
        cats,
        task,
        labels,
        replies[reference_client].label_type,
        tuple(c for c in names if c in declared),
        agreed_lists.differing,
    )


@dataclass(frozen=True)
class _AgreedLists:
    lists: tuple[tuple[str, ...] | None, ...]
    differing: tuple[str, ...]


def _agreed_categories(
    names: tuple[str, ...],
    per_client: list[tuple[tuple[str, ...] | None, ...]],
    declared: DeclaredCategories,
) -> _AgreedLists:
    """Each column's agreed list: the common one, or the union sorted by text."""
    lists: list[tuple[str, ...] | None] = []
    differing: list[str] = []
    for j, column in enumerate(names):
        found = [cats[j] for cats in per_client]
        first = found[0]
        if first is None or column in declared or all(f == first for f in found):
            lists.append(first)
            continue
        lists.append(tuple(sorted({name for f in found for name in f or ()})))
        differing.append(column)
    return _AgreedLists(tuple(lists), tuple(differing))


Columns = tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, ...] | None, ...]]


def _columns(reply: SchemaReply, declared: DeclaredCategories) -> Columns:
    names = tuple(reply.feature_names.tolist())
    kinds = tuple(reply.feature_kinds.tolist())
    bounds = np.concatenate([[0], np.cumsum(reply.n_categories)])
    flat = reply.categories.tolist()
    cats = tuple(
        declared.get(names[j], tuple(flat[bounds[j] : bounds[j + 1]]))
        if kinds[j] == "categorical"
        else None
        for j in range(len(names))
    )
    return names, kinds, cats


def _compare(
    ref_client: str, ref: Columns, client: str, other: Columns, site_files: bool
) -> None:
    """Refuse other columns or kinds (category lists may differ: the union)."""
    (ref_names, ref_kinds, _), (names, kinds, _) = ref, other
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
                f"{ref_kinds[j]} at client {ref_client!r}; "
                f"{_kind_advice(column, site_files)}"
            )


def _kind_advice(column: str, site_files: bool) -> str:
    """Say how to give ``column`` one kind everywhere, for files or for frames."""
    if site_files:
        return (
            "give it one kind at every site: declare it categorical in each "
            f'SuperNode\'s node config (categorical="{column}"; fedtrees flower '
            f"supernode --categorical {column}), or declare the text that marks a "
            'missing cell (na-values="?").'
        )
    return (
        "give it one kind at every client: make it a pandas category at each "
        f'(X[{column!r}] = X[{column!r}].astype("category")), or numbers at each.'
    )


def _agreed_classes(
    label_sets: list[np.ndarray], label_type: str, declared: tuple[str, ...] | None
) -> tuple[str, ...]:
    """Return the sorted union of the clients' labels, or the declared classes."""
    if declared is None:
        return _sorted_union(label_sets, label_type)
    try:
        return _sorted_union([np.asarray(declared, dtype=str)], label_type)
    except ValueError as exc:
        raise SchemaMismatchError(
            f"The declared classes {list(declared)} are not all {label_type} labels, "
            "the clients' label type."
        ) from exc


def _sorted_union(label_sets: list[np.ndarray], label_type: str) -> tuple[str, ...]:
    union = sorted(
        {str(v) for labels in label_sets for v in labels.tolist()},
        key=_sort_key(label_type),
    )
    return tuple(union)


def _sort_key(label_type: str) -> Callable[[str], Any]:
    """Order labels as their type does: ints exactly, floats by value, then text.

    Ints are compared as ints: as float64, 2**60 and 2**60 + 1 tie, and the
    order of tied labels would follow the set's (hash-seeded) iteration order.
    The text breaks the remaining ties (``0.0`` and ``-0.0``), so the order is
    always the same.
    """
    if label_type == "int":
        return lambda v: (int(v), v)
    if label_type == "float":
        return lambda v: (float(v), v)
    if label_type == "bool":
        return lambda v: v == "True"
    return str
