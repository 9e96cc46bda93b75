"""The boosted model as the clients learn it: a table of decisions, in code space.

Every tree the server grows reaches the clients as *decisions*, appended in
order: a split (node, feature, grid bin or category set, where missing values
go, the two children's ids) as soon as a level is decided, and a leaf (node,
value) when its iteration is finished. Node ids are local to an iteration: the
roots are ``0 .. K-1`` (one tree per output), children get the next ids. A
leaf decision may follow a split of the same node (pruning by ``gamma``): the
leaf wins.

A client keeps the table (its per-run state) and its length is the version: a
request carries the decisions after ``base``, the whole table when full.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees.algorithms.fedgbdt._route_kernel import route_rows
from fedtrees.algorithms.histogram import MISSING

__all__ = [
    "KIND_CATEGORICAL",
    "KIND_LEAF",
    "KIND_NUMERIC",
    "DecisionLog",
    "Decisions",
    "route",
]

KIND_LEAF: Final = 0
KIND_NUMERIC: Final = 1
KIND_CATEGORICAL: Final = 2


_WIRE: Final[dict[str, str]] = {
    "iteration": "d_iteration",
    "node": "d_node",
    "kind": "d_kind",
    "feature": "d_feature",
    "bin": "d_bin",
    "missing_left": "d_missing_left",
    "left": "d_left",
    "right": "d_right",
    "value": "d_value",
    "set_ptr": "d_set_ptr",
    "set_codes": "d_set_codes",
}
"""Each decision column and its payload field (``d_node``, ...): requests and state
carry the decision rows under these names."""


@dataclass(frozen=True, eq=False)
class Decisions:
    """Decision rows (see the module docstring); ``set_*``: categorical left sets.

    ``bin``: a numeric split sends codes ``<= bin`` left; ``missing_left``:
    where the missing code goes (numeric splits; a categorical set lists
    :data:`MISSING` when missing values go left).
    """

    iteration: IntArray
    node: IntArray
    kind: npt.NDArray[np.int8]
    feature: IntArray
    bin: IntArray
    missing_left: BoolArray
    left: IntArray
    right: IntArray
    value: FloatArray
    set_ptr: IntArray
    set_codes: npt.NDArray[np.uint8]

    @classmethod
    def empty(cls) -> Decisions:
        """No decision yet."""
        z = np.zeros(0, np.int64)
        return cls(
            z, z, np.zeros(0, np.int8), z, z, np.zeros(0, bool), z, z, np.zeros(0),
            np.zeros(1, np.int64), np.zeros(0, np.uint8),
        )  # fmt: skip

    @classmethod
    def from_fields(cls, source: Any) -> Decisions:
        """Read the decision columns of a payload (``d_node``, ...)."""
        values = {name: getattr(source, wire) for name, wire in _WIRE.items()}
        return cls(
            np.asarray(values["iteration"], np.int64),
            np.asarray(values["node"], np.int64),
            np.asarray(values["kind"], np.int8),
            np.asarray(values["feature"], np.int64),
            np.asarray(values["bin"], np.int64),
            np.asarray(values["missing_left"], bool),
            np.asarray(values["left"], np.int64),
            np.asarray(values["right"], np.int64),
            np.asarray(values["value"], np.float64),
            np.asarray(values["set_ptr"], np.int64),
            np.asarray(values["set_codes"], np.uint8),
        )

    def as_fields(self) -> dict[str, np.ndarray]:
        """Return the decision columns as payload fields."""
        return {wire: getattr(self, name) for name, wire in _WIRE.items()}

    def __len__(self) -> int:
        return int(self.node.shape[0])

    def after(self, base: int) -> Decisions:
        """Return the decisions from row ``base`` on."""
        ptr = self.set_ptr[base:]
        return Decisions(
            self.iteration[base:], self.node[base:], self.kind[base:],
            self.feature[base:], self.bin[base:], self.missing_left[base:],
            self.left[base:], self.right[base:], self.value[base:], ptr - ptr[0],
            self.set_codes[ptr[0] : ptr[-1]],
        )  # fmt: skip

    def then(self, more: Decisions) -> Decisions:
        """Return these decisions followed by ``more``."""
        if not len(more):
            return self
        columns = {
            f.name: np.concatenate([getattr(self, f.name), getattr(more, f.name)])
            for f in fields(self)
            if f.name not in ("set_ptr", "set_codes")
        }
        return Decisions(
            **columns,
            set_ptr=np.concatenate([self.set_ptr, more.set_ptr[1:] + self.set_ptr[-1]]),
            set_codes=np.concatenate([self.set_codes, more.set_codes]),
        )

    def of_iteration(self, t: int) -> Decisions:
        """Return the decisions of iteration ``t`` (a contiguous run of rows)."""
        lo, hi = np.searchsorted(self.iteration, [t, t + 1])
        return self.after(int(lo)).first(int(hi - lo))

    def first(self, n: int) -> Decisions:
        """Return the first ``n`` decisions."""
        ptr = self.set_ptr[: n + 1]
        return Decisions(
            self.iteration[:n], self.node[:n], self.kind[:n], self.feature[:n],
            self.bin[:n], self.missing_left[:n], self.left[:n], self.right[:n],
            self.value[:n], ptr, self.set_codes[: ptr[-1]],
        )  # fmt: skip

    def left_sets(self) -> tuple[IntArray, npt.NDArray[np.bool_]]:
        """One row of 256 codes per decision with a set; ``set_index`` per row."""
        sizes = np.diff(self.set_ptr)
        has = np.flatnonzero(sizes > 0)
        index = np.full(len(self), -1, dtype=np.int64)
        index[has] = np.arange(has.shape[0])
        sets = np.zeros((has.shape[0], 256), dtype=bool)
        rows = np.repeat(np.arange(has.shape[0]), sizes[has])
        sets[rows, self.set_codes] = True
        return index, sets


class DecisionLog:
    """A growing table of decisions: appending costs the new rows only.

    The client's kept table grows by a few rows every round for the whole fit;
    concatenating it every round would cost the square of its length. The log
    keeps spare room (doubling when full) and hands out views of its rows.
    """

    def __init__(self, fit_id: int, table: Decisions) -> None:
        self.fit_id = fit_id
        self._rows = table
        self._n = len(table)
        self._n_codes = int(table.set_ptr[self._n])

    def __len__(self) -> int:
        return self._n

    @property
    def table(self) -> Decisions:
        """The decisions so far (views of the log's arrays)."""
        return self._rows.first(self._n)

    def append(self, more: Decisions) -> Decisions:
        """Add ``more`` after the kept rows; return the whole table."""
        n, m = self._n, len(more)
        codes = int(more.set_ptr[m])
        if n + m > len(self._rows) or self._n_codes + codes > self._rows.set_codes.size:
            self._grow(2 * (n + m), 2 * (self._n_codes + codes) + 1)
        rows = self._rows
        for f in fields(rows):
            if f.name not in ("set_ptr", "set_codes"):
                getattr(rows, f.name)[n : n + m] = getattr(more, f.name)
        rows.set_ptr[n + 1 : n + m + 1] = more.set_ptr[1:] + self._n_codes
        rows.set_codes[self._n_codes : self._n_codes + codes] = more.set_codes
        self._n, self._n_codes = n + m, self._n_codes + codes
        return self.table

    def _grow(self, size: int, n_codes: int) -> None:
        old = self._rows.first(self._n)
        columns: dict[str, np.ndarray] = {}
        for f in fields(old):
            values = getattr(old, f.name)
            length = {"set_ptr": size + 1, "set_codes": n_codes}.get(f.name, size)
            columns[f.name] = np.zeros(length, values.dtype)
            columns[f.name][: values.shape[0]] = values
        self._rows = Decisions(**columns)


def route(
    table: Decisions, n_trees: int, columns: npt.NDArray[np.uint8], max_depth: int
) -> tuple[IntArray, FloatArray] | None:
    """Route every row through one finished iteration's trees, in code space.

    ``table`` holds that iteration's decisions; ``columns`` the codes by
    feature, (F, n). Returns each row's leaf per tree, (n_trees, n), and the
    leaf values, (n_trees, n); None when a path is deeper than ``max_depth``
    (children that point back up: no tree the server grows).
    """
    n = columns.shape[1]
    size = int(max(table.node.max(initial=-1), n_trees - 1)) + 1
    kind = np.full(size, KIND_LEAF, np.int8)
    feature = np.zeros(size, np.int64)
    limit = np.zeros(size, np.int64)
    missing_left = np.zeros(size, bool)
    left = np.zeros(size, np.int64)
    right = np.zeros(size, np.int64)
    value = np.zeros(size)
    set_row = np.zeros(size, np.int64)
    set_index, sets = table.left_sets()
    splits = table.kind != KIND_LEAF
    at = table.node[splits]
    kind[at] = table.kind[splits]
    feature[at], limit[at] = table.feature[splits], table.bin[splits]
    missing_left[at] = table.missing_left[splits]
    left[at], right[at] = table.left[splits], table.right[splits]
    set_row[at] = np.maximum(set_index[splits], 0)
    leaves = ~splits  # last: a leaf decision overrides a pruned split
    kind[table.node[leaves]] = KIND_LEAF
    value[table.node[leaves]] = table.value[leaves]
    node = np.empty((n_trees, n), np.int64)
    if sets.shape[0] == 0:
        sets = np.zeros((1, 256), bool)
    done = route_rows(
        kind == KIND_NUMERIC, kind == KIND_LEAF, feature, limit, missing_left, left,
        right, set_row, sets, columns, MISSING, max_depth, node,
    )  # fmt: skip
    if not done:
        return None
    return node, value[node]
