"""The value search: every client's rows, columns and labels, indexed for lookup."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

from fedtrees._typing import FloatArray
from fedtrees.federation import (
    ClientData,
)

__all__ = ["MIN_RUN", "Needles"]

MIN_RUN: Final = 8
"""Columns and label vectors of clients with fewer rows are not searched."""

_NAN: Final = -1.2345678901234567e308  # stands for NaN in searches (NaN != NaN)
_SEPARATOR: Final = np.array([np.nan])  # NaN never survives _canonical: in no run
_WEIGHTS: Final = np.random.default_rng(12).integers(1, 2**63, MIN_RUN, np.uint64) | 1


@dataclass
class _Runs:
    """Value sequences to look for, each with a description of whose it is."""

    values: list[FloatArray] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)

    def add(self, values: FloatArray, label: str) -> None:
        for variant in _variants(values):
            self.values.append(variant)
            self.labels.append(label)

    def index(self) -> _RunIndex:
        """Hash the runs, grouped by length."""
        return _RunIndex(self)


class _RunIndex:
    """Every run indexed by a hash of its most varied stretch of MIN_RUN values.

    An array is hashed window by window (MIN_RUN values each) once; a run is
    compared value by value only where its anchor's hash occurs, aligned on the
    anchor: one sort-based lookup per array, whatever the number of runs.
    """

    def __init__(self, runs: _Runs) -> None:
        self.runs = runs
        anchors = [_anchor(v) for v in runs.values]
        hashes = np.array(
            [
                _gram_hashes(v[a : a + MIN_RUN])[0]
                for v, a in zip(runs.values, anchors, strict=True)
            ],
            dtype=np.uint64,
        )
        order = np.argsort(hashes, kind="stable")
        self.hashes, self.ids = hashes[order], order
        self.anchors = np.array(anchors, dtype=np.int64)

    def found_in(self, flat: FloatArray) -> list[str]:
        """Labels of the runs that occur in ``flat``."""
        if flat.size < MIN_RUN or not self.hashes.size:
            return []
        grams = _gram_hashes(flat)
        at = np.flatnonzero(_member(self.hashes, grams)[0])
        lo = np.searchsorted(self.hashes, grams[at], side="left")
        hi = np.searchsorted(self.hashes, grams[at], side="right")
        found: list[str] = []
        for position, first, last in zip(
            at.tolist(), lo.tolist(), hi.tolist(), strict=True
        ):
            for i in self.ids[first:last].tolist():
                run, label = self.runs.values[i], self.runs.labels[i]
                start = position - int(self.anchors[i])
                if (
                    label not in found
                    and 0 <= start <= flat.size - run.size
                    and np.array_equal(flat[start : start + run.size], run)
                ):
                    found.append(label)
        return found


def _member(ordered: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which ``values`` are in the sorted array ``ordered``, and where."""
    index = np.minimum(np.searchsorted(ordered, values), max(ordered.size - 1, 0))
    if not ordered.size:
        return np.zeros(values.shape, dtype=bool), index
    return ordered[index] == values, index


def _as_bytes(flat: FloatArray) -> FloatArray:
    """Whole numbers 0-255 read as the bytes of float64 values, at every offset.

    The eight readings are joined by a separator no run holds; empty when
    ``flat`` holds other values.
    """
    if not flat.size or np.any((flat < 0) | (flat > 255) | (flat != np.floor(flat))):
        return np.zeros(0)
    raw = flat.astype(np.uint8)
    readings = []
    for offset in range(8):
        end = offset + (raw.size - offset) // 8 * 8
        readings += [_canonical(raw[offset:end].view(np.float64)), _SEPARATOR]
    return np.concatenate(readings)


def _anchor(values: FloatArray) -> int:
    """Offset of the stretch of MIN_RUN values with the most distinct values."""
    ordered = np.sort(sliding_window_view(values, MIN_RUN), axis=1)
    distinct = 1 + (ordered[:, 1:] != ordered[:, :-1]).sum(axis=1)
    return int(np.argmax(distinct))


def _gram_hashes(values: FloatArray) -> npt.NDArray[np.uint64]:
    """Hash every window of MIN_RUN values (their bits, wrapping uint64)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    windows = sliding_window_view(bits, MIN_RUN)
    mixed = (windows ^ (windows >> np.uint64(29))) * _WEIGHTS
    out: npt.NDArray[np.uint64] = mixed.sum(axis=1, dtype=np.uint64)
    return out


@dataclass
class Needles:
    """Every client's rows, columns, labels and category values, indexed."""

    rows: npt.NDArray[np.void]
    row_owner: npt.NDArray[np.int64]
    row_firsts: FloatArray
    width: int
    clients: tuple[str, ...]
    run_index: _RunIndex
    string_runs: list[tuple[npt.NDArray[np.str_], str]]
    categories: dict[str, frozenset[str]]
    notes: tuple[str, ...]

    @classmethod
    def build(cls, data: Mapping[str, ClientData]) -> Needles:
        clients = tuple(sorted(data))
        widths = {data[c].matrix.shape[1] for c in clients}
        width = widths.pop() if len(widths) == 1 else 0
        notes: list[str] = []
        row_blocks, owners, runs = [], [], _Runs()
        string_runs: list[tuple[npt.NDArray[np.str_], str]] = []
        classes = _classes(data)
        for i, client in enumerate(clients):
            d = data[client]
            rows = _informative_rows(client, d, width, notes)
            for variant in _variants(rows):
                row_blocks.append(variant)
                owners.append(np.full(variant.shape[0], i))
            if d.n_rows < MIN_RUN:
                notes.append(
                    f"client {client!r}: {d.n_rows} rows, fewer than {MIN_RUN}: "
                    "columns and labels not searched"
                )
                continue
            notes += _add_columns(runs, client, d)
            _add_labels(runs, string_runs, client, d, classes)
        categories = _category_values(data, classes, notes)
        matrix = (
            np.concatenate(row_blocks) if row_blocks else np.zeros((0, max(width, 1)))
        )
        row_bytes = _as_void(matrix)
        order = np.argsort(row_bytes, kind="stable")
        owner = np.concatenate(owners) if owners else np.zeros(0, np.int64)
        return cls(
            rows=row_bytes[order],
            row_owner=owner[order],
            row_firsts=np.unique(matrix[:, 0]) if matrix.size else np.zeros(0),
            width=width,
            clients=clients,
            run_index=runs.index(),
            string_runs=string_runs,
            categories=categories,
            notes=tuple(notes),
        )

    def search(self, value: np.ndarray) -> list[str]:
        """Describe every row, column or label vector found in ``value``.

        Complex arrays are searched in their real and imaginary parts; arrays of
        byte values (whole numbers 0-255) also as the raw bytes of float64
        values, at every offset.
        """
        kind = value.dtype.kind
        if kind in "US":
            flat = value.astype(str).reshape(-1)
            return [label for run, label in self.string_runs if _has_run(flat, run)]
        if kind == "c":
            return self.search(value.real) + self.search(value.imag)
        if kind not in "biuf":
            return []
        flat = _canonical(value.reshape(-1).astype(np.float64))
        found = self._numbers_in(flat)
        raw = _as_bytes(flat)
        if raw.size >= 8 * MIN_RUN:
            found += [f"{f} (as raw float64 bytes)" for f in self._numbers_in(raw)]
        return found

    def _numbers_in(self, flat: FloatArray) -> list[str]:
        return self.run_index.found_in(flat) + self._rows_in(flat)

    def _rows_in(self, flat: FloatArray) -> list[str]:
        if self.width < 2 or flat.size < self.width or not self.rows.size:
            return []
        starts = np.flatnonzero(
            _member(self.row_firsts, flat[: flat.size - self.width + 1])[0]
        )
        if not starts.size:
            return []
        windows = _as_void(sliding_window_view(flat, self.width)[starts])
        hit, index = _member(self.rows, windows)
        owners = self.row_owner[np.unique(index[hit])]
        return [
            f"holds {int(np.count_nonzero(owners == i))} row(s) of client "
            f"{self.clients[i]!r}"
            for i in np.unique(owners).tolist()
        ]

    def category_owners(self, value: np.ndarray) -> list[str]:
        """Clients whose category values appear in a string array."""
        if value.dtype.kind not in "US" or not value.size:
            return []
        present = set(value.astype(str).reshape(-1).tolist())
        return [c for c, cats in self.categories.items() if cats & present]


def _add_columns(runs: _Runs, client: str, d: ClientData) -> list[str]:
    notes = []
    matrix = _canonical(d.matrix)
    for j, name in enumerate(d.X.columns):
        column = matrix[:, j]
        if np.unique(column).size < 2:
            notes.append(
                f"client {client!r}: column {name!r} is constant, not searched"
            )
            continue
        runs.add(column, f"holds column {name!r} of client {client!r}")
        runs.add(np.sort(column), f"holds column {name!r} of client {client!r}, sorted")
        distinct = np.unique(column)
        if MIN_RUN <= distinct.size < column.size:
            runs.add(
                distinct,
                f"holds the distinct values of column {name!r} of client {client!r}",
            )
    return notes


def _add_labels(
    runs: _Runs,
    string_runs: list[tuple[npt.NDArray[np.str_], str]],
    client: str,
    d: ClientData,
    classes: npt.NDArray[np.str_],
) -> None:
    label = f"holds the labels of client {client!r}"
    strings = d.y.astype(str).to_numpy().astype(str)
    if np.unique(strings).size < 2:
        return
    string_runs.append((strings, label))
    runs.add(np.searchsorted(classes, strings).astype(np.float64), label)
    numeric = np.asarray(d.y.to_numpy())
    if numeric.dtype.kind in "biuf":
        runs.add(_canonical(numeric.astype(np.float64)), label)


def _classes(data: Mapping[str, ClientData]) -> npt.NDArray[np.str_]:
    labels = [d.y.astype(str).to_numpy().astype(str) for d in data.values()]
    return np.unique(np.concatenate(labels)) if labels else np.zeros(0, str)


def _category_values(
    data: Mapping[str, ClientData], classes: npt.NDArray[np.str_], notes: list[str]
) -> dict[str, frozenset[str]]:
    """Each client's category values, less the strings every party knows anyway.

    A value equal to a client id, a label or a column name cannot be told apart
    from them in a message; it is left out, with a note.
    """
    public = {*data, *classes.tolist()}
    public.update(str(c) for d in data.values() for c in d.X.columns)
    out = {}
    for client in sorted(data):
        values = {v for cats in data[client].categories if cats for v in cats}
        if values & public:
            notes.append(
                f"client {client!r}: category values {sorted(values & public)} equal "
                "a client id, a label or a column name; not searched"
            )
        out[client] = frozenset(values - public)
    return out


def _informative_rows(
    client: str, d: ClientData, width: int, notes: list[str]
) -> FloatArray:
    """Distinct rows worth searching: two values at least, one not an integer."""
    matrix = _canonical(d.matrix)
    if width < 2 or matrix.shape[1] != width:
        notes.append(f"client {client!r}: rows of fewer than two features not searched")
        return np.zeros((0, max(width, 1)))
    varied = matrix.min(axis=1) != matrix.max(axis=1)
    fractional = (matrix != np.round(matrix)).any(axis=1)
    keep = varied & fractional
    if not keep.all():
        notes.append(
            f"client {client!r}: {int((~keep).sum())} of {d.n_rows} rows not searched "
            "(all values equal, or all integers: codes and counts look alike)"
        )
    return np.unique(matrix[keep], axis=0)


def _variants(values: FloatArray) -> list[FloatArray]:
    with np.errstate(over="ignore"):  # the NaN stand-in is beyond float32: inf
        rounded = _canonical(values.astype(np.float32).astype(np.float64))
    same = np.array_equal(rounded, values)
    return [values] if same else [values, rounded]


def _canonical(values: FloatArray) -> FloatArray:
    """NaN as a sentinel and -0.0 as 0.0, so that equal values compare equal."""
    out: FloatArray = np.where(np.isnan(values), _NAN, values + 0.0)
    return out


def _as_void(matrix: FloatArray) -> npt.NDArray[np.void]:
    contiguous = np.ascontiguousarray(matrix, dtype=np.float64)
    width = contiguous.shape[1] * 8 if contiguous.ndim == 2 else 8
    return contiguous.view(np.dtype((np.void, width))).reshape(-1)


def _has_run(flat: np.ndarray, run: np.ndarray) -> bool:
    """Whether ``run`` occurs as a contiguous stretch of ``flat`` (strings)."""
    m = run.shape[0]
    if m == 0 or flat.shape[0] < m:
        return False
    starts = np.flatnonzero(flat[: flat.shape[0] - m + 1] == run[0])
    return any(np.array_equal(flat[i : i + m], run) for i in starts.tolist())
