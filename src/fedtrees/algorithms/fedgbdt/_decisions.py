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
from fedtrees.algorithms.histogram import MISSING

__all__ = ["KIND_CATEGORICAL", "KIND_LEAF", "KIND_NUMERIC", "Decisions", "route"]

KIND_LEAF: Final = 0
KIND_NUMERIC: Final = 1
KIND_CATEGORICAL: Final = 2


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
    def from_fields(cls, source: Any, prefix: str = "d_") -> Decisions:
        """Read the decision columns of a payload (``d_node``, ...)."""
        values = {f.name: getattr(source, prefix + f.name) for f in fields(cls)}
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

    def as_fields(self, prefix: str = "d_") -> dict[str, np.ndarray]:
        """Return the decision columns as payload fields."""
        return {prefix + f.name: getattr(self, f.name) for f in fields(self)}

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


def route(
    table: Decisions, n_trees: int, columns: npt.NDArray[np.uint8]
) -> tuple[IntArray, FloatArray]:
    """Route every row through one finished iteration's trees, in code space.

    ``table`` holds that iteration's decisions; ``columns`` the codes by
    feature, (F, n). Returns each row's leaf per tree, (n_trees, n), and the
    leaf values, (n_trees, n). Vectorised over rows: one step per level.
    """
    n = columns.shape[1]
    size = int(max(table.node.max(initial=-1), n_trees - 1)) + 1
    kind = np.zeros(size, np.int8)
    feature = np.zeros(size, np.int64)
    limit = np.zeros(size, np.int64)
    missing_left = np.zeros(size, bool)
    left = np.zeros(size, np.int64)
    right = np.zeros(size, np.int64)
    value = np.zeros(size)
    set_row = np.full(size, -1, np.int64)
    set_index, sets = table.left_sets()
    splits = table.kind != KIND_LEAF
    at = table.node[splits]
    kind[at] = table.kind[splits]
    feature[at], limit[at] = table.feature[splits], table.bin[splits]
    missing_left[at] = table.missing_left[splits]
    left[at], right[at] = table.left[splits], table.right[splits]
    set_row[at] = set_index[splits]
    leaves = ~splits  # last: a leaf decision overrides a pruned split
    kind[table.node[leaves]] = KIND_LEAF
    value[table.node[leaves]] = table.value[leaves]
    node = np.repeat(np.arange(n_trees, dtype=np.int64)[:, None], n, axis=1)
    rows = np.broadcast_to(np.arange(n), node.shape)
    active = kind[node] != KIND_LEAF
    while active.any():
        t, i = np.nonzero(active)
        g = node[t, i]
        code = columns[feature[g], rows[t, i]]
        numeric = kind[g] == KIND_NUMERIC
        go_left = np.where(
            code == MISSING, missing_left[g], code.astype(np.int64) <= limit[g]
        )
        categorical = ~numeric
        if categorical.any():
            go_left[categorical] = sets[set_row[g[categorical]], code[categorical]]
        node[t, i] = np.where(go_left, left[g], right[g])
        active[t, i] = kind[node[t, i]] != KIND_LEAF
    return node, value[node]
