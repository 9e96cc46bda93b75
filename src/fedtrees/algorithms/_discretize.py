"""Federated discretization of numeric features: one home for ID3-style methods.

ICDTA4FL-ID3 and Federated-ID3 split on categories, so every numeric column is
cut into ``n_bins`` quantile bins first (docs/icdta.md: 5 bins). A column's
edges are either **declared** by the user (``bin_edges={"age": [30, 45, 60]}``:
public metadata, nothing is learned from the rows) or found in **one extra
round**: each client sends, per undeclared numeric column, its row count and
``q + 1`` quantile points — never values — and the server inverts the mixture of
the client CDFs at ``1/b, ..., (b-1)/b`` (:func:`fedtrees.stats.quantile_bin_edges`).

The resulting :class:`Binning` travels in every later request (clients code their
rows with it) and is kept by the fitted estimator (it codes X at predict). Bin
``i`` of a column holds ``edges[i-1] < x <= edges[i]``; categorical columns keep
their category codes.

**Decision (privacy):** the sketch round releases exact quantiles of the clients'
rows. A method with a differential-privacy guarantee therefore refuses it
(``allow_sketch=False``): its numeric columns need declared edges, and the error
names the first column without them.

Size: one module past ~400 lines, by choice: the binning, its sketch round and
its checks are one protocol step both ID3-style methods share; 96 lines are
docstrings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees._validation import check_size, invalid
from fedtrees.algorithms._params import MAX_GRID
from fedtrees.algorithms._ranges import column_position
from fedtrees.algorithms._requests import (
    check_column_sizes,
    check_request_size,
    local_category_counts,
    request_error,
)
from fedtrees.federation import (
    ClientData,
    Field,
    InvalidField,
    Payload,
    ReplySpec,
    Schema,
    handler,
    payload,
)
from fedtrees.stats import (
    bin_labels,
    bin_sketches,
    check_edges,
    digitize,
    quantile_bin_edges,
)

__all__ = [
    "SKETCH_POINTS",
    "BinSketchReply",
    "BinSketchRequest",
    "BinnedFields",
    "Binning",
    "BinningRound",
    "unbinned_fields",
]

SKETCH_POINTS: Final = 256
"""Quantile points per column in the sketch round (rank error <= 1/256)."""


@dataclass(frozen=True, eq=False)
class Binning:
    """How every column becomes codes: its categories, or bins of numeric edges.

    ``edges[f]`` is None for a categorical column, else its interior bin edges;
    ``arity[f]`` is the number of codes; ``labels[f]`` names them (category names
    or bin ranges such as ``"(37.5, 45]"``).
    """

    edges: tuple[FloatArray | None, ...]
    labels: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, schema: Schema, found: Mapping[int, FloatArray]) -> Binning:
        """Combine the schema's categories with the numeric columns' edges."""
        per_column: list[FloatArray | None] = []
        labels: list[tuple[str, ...]] = []
        for f, categories in enumerate(schema.categories):
            if categories is not None:
                per_column.append(None)
                labels.append(tuple(categories))
            else:
                per_column.append(np.asarray(found[f], dtype=np.float64))
                labels.append(bin_labels(found[f]))
        return cls(tuple(per_column), tuple(labels))

    @property
    def arity(self) -> IntArray:
        """Number of codes of every column."""
        return np.asarray([len(names) for names in self.labels], dtype=np.int64)

    @property
    def binned(self) -> BoolArray:
        """Which columns are numeric (cut into bins)."""
        return np.asarray([e is not None for e in self.edges], dtype=bool)

    @property
    def categorical(self) -> BoolArray:
        """Which columns are categorical (nominal codes)."""
        result: BoolArray = ~self.binned
        return result

    def transform(self, matrix: FloatArray) -> FloatArray:
        """Codes of every row (numeric columns binned), as float64 for trees.

        A categorical code outside the agreed categories (an unseen category at
        predict) is kept: no split lists it.
        """
        return _bin_columns(matrix, self.edges)

    def fields(self) -> dict[str, np.ndarray]:
        """Return the binning as request fields (see :class:`BinnedFields`)."""
        binned = self.binned
        pieces = [e if e is not None else np.zeros(0) for e in self.edges]
        sizes = [p.shape[0] for p in pieces]
        return {
            "binned": binned,
            "bin_edges": np.concatenate([np.zeros(0), *pieces]),
            "bin_ptr": np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            "arity": self.arity,
        }


@dataclass(frozen=True, eq=False)
class BinnedFields(Payload):
    """Request fields that carry a :class:`Binning` to the clients.

    ``bin_edges[bin_ptr[f]:bin_ptr[f+1]]`` are column f's edges when
    ``binned[f]``; ``arity[f]`` is its number of codes.
    """

    binned: np.ndarray
    bin_edges: np.ndarray
    bin_ptr: np.ndarray
    arity: np.ndarray

    def codes(self, data: ClientData) -> FloatArray:
        """Return the client's rows as codes (numeric columns binned), float64.

        Checks the binning against this client's columns first
        (:meth:`check_sizes`).
        """
        self.check_sizes(data)
        edges = [
            self.bin_edges[self.bin_ptr[f] : self.bin_ptr[f + 1]] if binned else None
            for f, binned in enumerate(self.binned.tolist())
        ]
        return _bin_columns(data.finite_matrix(), edges)

    def check_sizes(self, data: ClientData) -> None:
        """Refuse a binning that does not fit this client's columns, by field.

        ``binned``, ``arity`` have one entry per column, ``bin_ptr`` one more,
        rising from 0 to the number of ``bin_edges``; only numeric columns are
        binned; ``arity`` (which sizes every count table) is, per column, its
        number of categories or its bins (edges + 1) — or 0 everywhere when
        nothing is binned (a CART base). Checked before anything is allocated.

        Raises
        ------
        ValidationError
            Naming the request kind and the field (:mod:`._requests`).
        """
        kind, n = self.kind, len(data.feature_kinds)
        _check_vector(kind, "binned", self.binned, n, "b")
        ptr = _check_vector(kind, "bin_ptr", self.bin_ptr, n + 1, "iu")
        if ptr[0] != 0 or np.any(np.diff(ptr) < 0) or ptr[-1] != self.bin_edges.size:
            raise request_error(
                kind,
                "bin_ptr",
                f"pointers rising from 0 to the {self.bin_edges.size} bin edges",
                f"{ptr[0]}..{ptr[-1]}",
            )
        binned = np.asarray(self.binned, dtype=bool)
        categorical = local_category_counts(data)
        numeric = np.asarray([k == "numeric" for k in data.feature_kinds])
        if np.any(binned & ~numeric):
            column = data.X.columns[int(np.flatnonzero(binned & ~numeric)[0])]
            raise request_error(
                kind, "binned", "False for categorical columns", f"{column!r}: True"
            )
        expected = np.where(binned, np.diff(ptr) + 1, categorical)
        arity = np.asarray(self.arity)
        if not binned.any() and arity.shape == (n,) and not np.any(arity):
            return  # nothing binned: arity is not used
        check_column_sizes(
            kind,
            "arity",
            arity,
            expected.astype(np.int64),
            "the column's categories here, or its bin edges + 1",
            [str(c) for c in data.X.columns],
        )


def _check_vector(
    kind: str, name: str, values: np.ndarray, n: int, dtypes: str
) -> IntArray:
    """Return a request's per-column vector as int64 (``n`` entries of ``dtypes``)."""
    if values.shape != (n,) or values.dtype.kind not in dtypes:
        raise request_error(
            kind,
            name,
            f"{n} values of kind {dtypes!r}",
            f"shape {values.shape}, dtype {values.dtype}",
        )
    out: IntArray = values.astype(np.int64)
    return out


def unbinned_fields(n_features: int) -> dict[str, np.ndarray]:
    """Return :class:`BinnedFields` values that leave every column as it is."""
    return {
        "binned": np.zeros(n_features, dtype=bool),
        "bin_edges": np.zeros(0),
        "bin_ptr": np.zeros(n_features + 1, dtype=np.int64),
        "arity": np.zeros(n_features, dtype=np.int64),
    }


def _bin_columns(matrix: FloatArray, edges: Sequence[FloatArray | None]) -> FloatArray:
    """Replace every numeric column by its bin codes (float64, for trees)."""
    out = np.array(matrix, dtype=np.float64, copy=True)
    for f, column_edges in enumerate(edges):
        if column_edges is not None:
            out[:, f] = digitize(matrix[:, f], column_edges)
    return out


@payload("discretize.sketch_reply")
class BinSketchReply(Payload):
    """Row count and quantile points of every requested numeric column."""

    counts: np.ndarray
    points: np.ndarray


@payload("discretize.sketch")
class BinSketchRequest(Payload):
    """Sketch the numeric columns ``columns`` with ``q + 1`` points each."""

    columns: np.ndarray
    q: int

    def expected_reply(self) -> ReplySpec:
        """One count and q + 1 sorted points (NaN padding) per column."""
        k = int(self.columns.shape[0])
        return ReplySpec(
            BinSketchReply,
            {
                "counts": Field.array("f", (k,), nonnegative=True, rows=True),
                "points": Field.array(
                    "f", (k, self.q + 1), nan_padding=True, nondecreasing=True
                ),
            },
            check=self._check,
        )

    def _check(self, reply: BinSketchReply) -> None:
        _points_match_counts(reply)
        rows = np.asarray(reply.counts, dtype=np.float64)
        n_points = (~np.isnan(reply.points)).sum(axis=1)
        wanted = np.where(rows > 0, np.minimum(self.q, rows) + 1, 0)
        if np.any(n_points != wanted):
            raise InvalidField(
                "points",
                f"holds {n_points.tolist()} points per column; min(q, rows) + 1 = "
                f"{wanted.astype(int).tolist()} expected",
            )


def _points_match_counts(reply: BinSketchReply) -> None:
    """Refuse a column with rows but < 2 points, or points but no rows.

    Counts are whole row counts, at most the client's declared row bound; every
    requested column counts the same rows (missing values are refused before).
    """
    if np.any(reply.counts != np.floor(reply.counts)) or np.any(
        reply.counts != reply.counts[:1]
    ):
        raise InvalidField(
            "counts", "must be the same whole row count for every column"
        )
    n_points = (~np.isnan(reply.points)).sum(axis=1)
    if np.any((reply.counts > 0) & (n_points < 2)) or np.any(
        (reply.counts == 0) & (n_points > 0)
    ):
        raise InvalidField(
            "points", "must hold >= 2 points where counts > 0, else none"
        )


@handler("discretize.sketch")
def sketch_columns(request: BinSketchRequest, data: ClientData) -> BinSketchReply:
    """Client: counts and quantile points of the requested columns (no values).

    ``columns`` must be distinct columns of this client and ``q`` within the
    grid limit the server validates (checked before allocating).
    """
    kind, n = request.kind, len(data.feature_kinds)
    columns = request.columns
    if (
        columns.ndim != 1
        or columns.dtype.kind not in "iu"
        or np.any(columns < 0)
        or np.any(columns >= n)
        or np.unique(columns).size != columns.size
    ):
        raise request_error(kind, "columns", f"distinct columns in [0, {n})", columns)
    check_request_size(kind, "q", request.q, MAX_GRID, "the grid limit", low=1)
    matrix = data.finite_matrix()[:, columns.astype(np.int64)]
    counts, points = bin_sketches(matrix, request.q)
    return BinSketchReply(counts=counts, points=points)


class BinningRound:
    """Server side: resolve declared edges; plan and absorb the sketch round.

    Parameters
    ----------
    declared : mapping column (name or position) -> edges, or None
    n_bins : int >= 2
        Quantile bins of every undeclared numeric column.
    allow_sketch : bool
        False when the method promises differential privacy (see the module).
    owner : str
        The estimator, for messages.
    """

    def __init__(
        self, declared: object, n_bins: int, allow_sketch: bool, owner: str
    ) -> None:
        self.n_bins = check_size(n_bins, "n_bins", owner, 2, MAX_GRID)
        self.declared, self.allow_sketch, self.owner = declared, allow_sketch, owner
        self.schema: Schema | None = None
        self.edges: dict[int, FloatArray] = {}
        self.missing: IntArray = np.zeros(0, dtype=np.int64)
        self.binning: Binning | None = None

    def start(self, schema: Schema) -> Binning:
        """Check the declared edges; list the numeric columns still to sketch.

        Returns the binning so far: the declared edges, and one bin (no edge,
        labelled ``"all"``) for every column still to sketch.
        """
        self.schema = schema
        self.edges = _declared_edges(self.declared, schema, self.owner)
        numeric = [f for f, c in enumerate(schema.categories) if c is None]
        self.missing = np.asarray(
            [f for f in numeric if f not in self.edges], dtype=np.int64
        )
        if self.missing.size and not self.allow_sketch:
            column = schema.feature_names[int(self.missing[0])]
            raise invalid(
                "bin_edges",
                self.owner,
                f"declared edges for every numeric column (column {column!r} has "
                "none, and this method's privacy guarantee rules out the sketch "
                "round that would find them; discretize the column before fitting "
                "or declare bin_edges={" + repr(column) + ": [...]})",
                _shown(self.declared),
            )
        if not self.missing.size:
            self.binning = Binning.of(schema, self.edges)
            return self.binning
        one_bin = {f: np.zeros(0) for f in self.missing.tolist()}
        return Binning.of(schema, {**self.edges, **one_bin})

    @property
    def pending(self) -> bool:
        """Whether the sketch round is still to run."""
        return self.binning is None

    def request(self) -> BinSketchRequest:
        """Return the sketch request for the undeclared numeric columns."""
        return BinSketchRequest(columns=self.missing, q=SKETCH_POINTS)

    def absorb(self, replies: Sequence[Payload]) -> Binning:
        """Pool the sketches into quantile edges; return the complete binning."""
        assert self.schema is not None
        sketches = [r for r in replies if isinstance(r, BinSketchReply)]
        points = np.stack([s.points for s in sketches])
        counts = np.stack([s.counts for s in sketches])
        found = quantile_bin_edges(points, counts, self.n_bins)
        edges = dict(self.edges)
        edges.update(zip(self.missing.tolist(), found, strict=True))
        self.binning = Binning.of(self.schema, edges)
        return self.binning


def _declared_edges(
    declared: object, schema: Schema, owner: str
) -> dict[int, FloatArray]:
    """Return the declared edges by column position; errors name the column."""
    if declared is None:
        return {}
    if not isinstance(declared, Mapping):
        raise invalid(
            "bin_edges", owner, "None or a dict {column: edges}", _shown(declared)
        )
    names = list(schema.feature_names)
    out: dict[int, FloatArray] = {}
    for key, edges in declared.items():
        f = _column(key, names, owner)
        if schema.categories[f] is not None:
            raise invalid(
                f"bin_edges[{key!r}]",
                owner,
                "edges of a numeric column (this one is categorical)",
                edges,
            )
        out[f] = check_edges(edges, names[f], owner)
    return out


def _column(key: object, names: list[str], owner: str) -> int:
    position = column_position(key, names)
    if position is not None:
        return position
    raise invalid(
        "bin_edges", owner, f"keys among the columns {names} (or positions)", key
    )


def _shown(value: object) -> object:
    return value if value is None or isinstance(value, Mapping) else repr(value)
