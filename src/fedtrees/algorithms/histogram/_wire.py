"""The engine on the wire: the grid round's reply, the grid a client keeps.

Shared by every protocol on the engine (FedForest ``"hist"``, FedGBDT):

- :func:`matrix_with_missing` and :func:`skipped_columns`: a client's matrix
  (NaN allowed, infinity refused) and the checks of a grid request;
- :func:`grid_reply_fields` and :func:`check_grid_reply`: what a client's
  summary of its numeric columns must look like (the engine's
  :class:`~fedtrees.algorithms.histogram.GridSketch`); :func:`grid_reply_spec`:
  that summary, or under secure aggregation the masked fine histograms;
- :class:`GridState` and :func:`keep_grid`: the agreed grid travels in a
  protocol's first level request and in every full request; the client keeps
  it for the run and checks that it describes its columns;
- :class:`MaskedLevel`: what a level request's masked fields mean, for both;
- :func:`level_reply_fields` and :func:`check_level_reply`: a plain level
  reply of node statistics and sparse bins, and its check.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

import numpy as np

from fedtrees._typing import BoolArray, FloatArray
from fedtrees.algorithms._requests import check_request_size, request_error
from fedtrees.algorithms.histogram._dense import FINE_BINS, DenseLayout
from fedtrees.algorithms.histogram._grid import MAX_BINS, MISSING, Grid
from fedtrees.algorithms.histogram._histograms import Histograms
from fedtrees.exceptions import ValidationError
from fedtrees.federation import (
    ClientData,
    ClientState,
    Field,
    InvalidField,
    Payload,
    ReplySpec,
    check_same_stats,
    masked_spec,
    payload,
)

__all__ = [
    "GridFields",
    "GridState",
    "MaskedLevel",
    "check_grid_reply",
    "check_level_reply",
    "grid_reply_fields",
    "grid_reply_spec",
    "is_categorical",
    "keep_grid",
    "level_reply_fields",
    "matrix_with_missing",
    "skipped_columns",
]

_COUNTS: Final = "fiu"


def is_categorical(data: ClientData) -> BoolArray:
    """Which of the client's columns are categorical."""
    return np.array([k == "categorical" for k in data.feature_kinds], dtype=bool)


def matrix_with_missing(data: ClientData) -> FloatArray:
    """Return the client's matrix: NaN allowed (numeric or categorical), not inf."""
    X = data.matrix
    infinite = np.isinf(X)
    if infinite.any():
        column = data.X.columns[int(np.flatnonzero(infinite.any(axis=0))[0])]
        raise ValidationError(
            f"Client {data.client_id!r}: column {column!r} holds infinite values; "
            "replace them (missing values may stay NaN)."
        )
    return np.ascontiguousarray(X)


class GridAsk(Protocol):
    """The fields of a request for the grid summary."""

    @property
    def kind(self) -> str: ...

    @property
    def n_features(self) -> int: ...

    @property
    def max_bins(self) -> int: ...

    @property
    def columns(self) -> np.ndarray: ...


def skipped_columns(request: GridAsk, data: ClientData) -> BoolArray:
    """Check a grid request against the client; return the columns not summarised.

    Raises
    ------
    ValidationError
        Naming ``n_features``, ``max_bins`` or ``columns`` and what was expected.
    """
    n_features = len(data.feature_kinds)
    if request.n_features != n_features:
        raise request_error(
            request.kind, "n_features", f"{n_features} (this client's columns)",
            request.n_features,
        )  # fmt: skip
    check_request_size(
        request.kind, "max_bins", request.max_bins, MAX_BINS, "the grid's limit", low=2
    )
    columns = np.asarray(request.columns, dtype=bool)
    if columns.shape != (n_features,):
        raise request_error(
            request.kind, "columns", f"{n_features} flags, one per column",
            f"{columns.shape[0]} flags",
        )  # fmt: skip
    skipped: BoolArray = is_categorical(data) | ~columns
    return skipped


def grid_reply_fields(n_features: int, max_bins: int) -> dict[str, Field]:
    """Sorted, NaN-padded points per feature; counts; completeness flags."""
    shape = (n_features, max_bins + 1)
    return {
        "points": Field.array("f", shape, nan_padding=True, nondecreasing=True),
        "weights": Field.array("f", shape, finite=False, weights=True),
        "counts": Field.array(_COUNTS, (n_features,), nonnegative=True, weights=True),
        "complete": Field.array("b", (n_features,)),
    }


def check_grid_reply(reply: Any) -> None:
    """Require a complete column's value weights >= 0, adding up to its count."""
    complete = np.asarray(reply.complete, dtype=bool)
    weights = np.asarray(reply.weights, dtype=np.float64)[complete]
    if np.any(weights < 0) or np.any(np.isinf(weights)):
        raise InvalidField("weights", "holds negative or infinite value weights")
    check_same_stats(
        "weights",
        np.nansum(weights, axis=1),
        np.asarray(reply.counts, dtype=np.float64)[complete],
        "a complete feature's value weights sum",
        False,
    )


class MaskedGridAsk(GridAsk, Protocol):
    """A grid request's masking fields (``mask_round`` -1: plain)."""

    @property
    def mask_round(self) -> int: ...

    @property
    def cohort(self) -> np.ndarray: ...


def grid_reply_spec(request: MaskedGridAsk, reply: type[Payload]) -> ReplySpec:
    """Return a grid request's expected reply: a ``reply`` of the summary's fields.

    Masked (secure aggregation): the fine histograms of the summarised columns.
    """
    if request.mask_round >= 0:
        n_fine = int(np.count_nonzero(request.columns)) * FINE_BINS
        return masked_spec(n_fine, sites=request.cohort.shape[0])
    fields = grid_reply_fields(request.n_features, request.max_bins)
    return ReplySpec(reply, fields, check=check_grid_reply)


@payload("histogram.grid_state")
class GridState(Payload):
    """The agreed grid a client keeps for the run."""

    fit_id: int
    edges: np.ndarray
    edge_ptr: np.ndarray
    n_bins: np.ndarray


class GridFields(Protocol):
    """The request fields that carry the grid (empty edges: the client kept it)."""

    @property
    def kind(self) -> str: ...

    @property
    def fit_id(self) -> int: ...

    @property
    def feature_bins(self) -> np.ndarray: ...

    @property
    def grid_edges(self) -> np.ndarray: ...

    @property
    def grid_edge_ptr(self) -> np.ndarray: ...


def keep_grid(
    request: GridFields, data: ClientData, state: ClientState, key: str
) -> Grid | None:
    """Return the request's grid (kept under ``key``), else the one kept before.

    None when no grid of the request's fit is kept (the client answers resync).

    Raises
    ------
    ValidationError
        A grid that does not describe the client's columns, or bin counts
        other than the kept grid's, naming the field.
    """
    if request.grid_edge_ptr.shape[0]:
        kept = GridState(
            request.fit_id,
            np.asarray(request.grid_edges, dtype=np.float64),
            np.asarray(request.grid_edge_ptr, dtype=np.int64),
            np.asarray(request.feature_bins, dtype=np.int64),
        )
        _check_grid(request.kind, kept, data)
        state.put(key, kept)
    found = state.get(key, GridState)
    if found is None or found.fit_id != request.fit_id:
        return None
    if not np.array_equal(found.n_bins, np.asarray(request.feature_bins, np.int64)):
        raise request_error(
            request.kind, "feature_bins", "the bins of the grid kept for this fit",
            "other counts",
        )  # fmt: skip
    return Grid(found.edges, found.edge_ptr, found.n_bins, is_categorical(data))


def _check_grid(kind: str, kept: GridState, data: ClientData) -> None:
    """Refuse a grid that does not describe this client's columns.

    Numeric columns: finite, strictly increasing edges, one bin more than
    edges, at most 255 bins; categorical columns: no edges, one bin per
    agreed category.

    Raises
    ------
    ValidationError
        Naming the field (``grid_edge_ptr``, ``grid_edges``, ``feature_bins``).
    """
    is_cat = is_categorical(data)
    n_features = is_cat.shape[0]
    ptr, edges, n_bins = kept.edge_ptr, kept.edges, kept.n_bins
    if (
        ptr.shape != (n_features + 1,)
        or ptr[0] != 0
        or ptr[-1] != edges.shape[0]
        or np.any(np.diff(ptr) < 0)
    ):
        raise request_error(
            kind, "grid_edge_ptr", f"{n_features + 1} offsets rising from 0 to "
            "the number of edges", f"{ptr.shape[0]} offsets",
        )  # fmt: skip
    step = np.diff(edges)
    inside = np.ones(step.shape[0], dtype=bool)
    starts = ptr[1:-1]  # a feature's first edge: the step into it crosses features
    inside[starts[(starts > 0) & (starts < edges.shape[0])] - 1] = False
    if not np.all(np.isfinite(edges)) or np.any(step[inside] <= 0):
        raise request_error(
            kind, "grid_edges", "finite and strictly increasing per feature",
            "other edges",
        )  # fmt: skip
    n_edges = np.diff(ptr)
    categories = np.array([len(c or ()) for c in data.categories], dtype=np.int64)
    if (
        n_bins.shape != (n_features,)
        or np.any(n_bins[~is_cat] != n_edges[~is_cat] + 1)
        or np.any(n_edges[is_cat] != 0)
        or np.any(n_bins[is_cat] != categories[is_cat])
        or np.any(n_bins > MISSING)
    ):
        raise request_error(
            kind, "feature_bins", f"per feature (of {n_features}) one bin more "
            f"than its edges, one per category, at most {MISSING}", "other counts",
        )  # fmt: skip


class MaskedLevel:
    """The masked fields of a level request, one meaning for every protocol.

    A mixin of the request payloads (FedForest's ``fedforest.histogram``,
    FedGBDT's ``fedgbdt.level``): each declares ``mask_round`` (-1: plain),
    ``cohort`` and ``cohort_keys`` itself, last, since a payload's field order
    is its order on the wire. A masked reply is the request's dense layout
    (:meth:`dense_layout`) in fixed point, two words per value where
    :attr:`wide_mask` (docs/histogram.md, "Secure pooling").
    """

    mask_round: int
    cohort: np.ndarray

    @property
    def wide_mask(self) -> bool:
        """Whether a masked value takes two words (the method's statistics)."""
        raise NotImplementedError

    def dense_layout(self) -> DenseLayout:
        """Return the masked reply's layout (the method's)."""
        raise NotImplementedError

    def masked_reply_spec(self) -> ReplySpec | None:
        """Return the masked reply's spec, or None for a plain request."""
        if self.mask_round < 0:
            return None
        return masked_spec(
            self.dense_layout().length,
            sites=self.cohort.shape[0],
            wide=self.wide_mask,
        )


def level_reply_fields(
    n_open: int, fp: int, stats: Field, bins: Field
) -> dict[str, Field]:
    """Return a plain level reply's fields: ``node_stats`` (``stats``), the bins.

    ``bin_count`` per (open node, pair slot), then every bin's code and its
    statistics (``bins``; shapes ``(n_open, S)`` and ``(None, S)``).
    """
    return {
        "node_stats": stats,
        "bin_count": Field.array("iu", (n_open, fp), low=0, high=MAX_BINS + 1),
        "bin_code": Field.array("iu", (None,), low=0, high=MISSING),
        "bin_stats": bins,
    }


def check_level_reply(
    reply: Any, pair_feature: np.ndarray, feature_bins: np.ndarray, relative: bool
) -> None:
    """Require bins in code order, inside the grid, adding up to their node.

    ``relative``: compare the sums with a relative tolerance (real-valued
    statistics), else exactly (whole counts).

    Raises
    ------
    InvalidField
        Naming ``bin_count``, ``bin_code`` or ``bin_stats``.
    """
    if reply.bin_code.shape[0] != reply.bin_stats.shape[0]:
        raise InvalidField("bin_stats", "needs one row per bin_code entry")
    count = np.asarray(reply.bin_count, dtype=np.int64)
    bins = Histograms(count.ravel(), reply.bin_code, reply.bin_stats)
    sums = bins.checked_sums(pair_feature, feature_bins)
    asked = (np.asarray(pair_feature) >= 0).ravel()
    node = np.asarray(reply.node_stats, dtype=np.float64)
    want = np.repeat(node, count.shape[1], axis=0)
    check_same_stats(
        "bin_stats",
        sums[asked],
        want[asked],
        "a pair's bins sum (vs its node's statistics)",
        relative,
    )
