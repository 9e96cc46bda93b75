"""The grid agreement, both sides: one home for every protocol on the engine.

The numeric columns' bin edges are agreed once per fit (docs/histogram.md):

- **declared** ``bin_edges`` are checked and used as they are; a column with
  declared edges is not summarised by anyone;
- every other numeric column is **summarised** by every client in one round:
  plainly, its sorted distinct values or type-1 quantile points
  (:func:`~fedtrees.algorithms.histogram.sketch_columns`), and the server cuts
  the pooled mixture (:func:`~fedtrees.algorithms.histogram.agree_grid`);
  under secure aggregation, the weighted counts of its values over the fine
  bins of the declared ``feature_ranges``, summed securely, and the server cuts
  the pooled fine histograms (:func:`~fedtrees.algorithms.histogram.fine_edges`);
- the two are **merged** by column and the categorical columns take one bin
  per agreed category.

:class:`GridAgreement` is the server's side: it begins from the agreed
:class:`~fedtrees.federation.FederationInfo`, gives the request's fields, and
agrees from the plain replies or from the masked total. A protocol may carry
more in the same round (FedGBDT's priors follow the fine histograms in one
masked vector). :func:`summarise_columns` is the client's side.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from fedtrees._typing import BoolArray, FloatArray
from fedtrees.algorithms._ranges import secure_ranges
from fedtrees.algorithms.histogram._dense import FINE_BINS, fine_edges, fine_histograms
from fedtrees.algorithms.histogram._grid import (
    Grid,
    GridSketch,
    agree_grid,
    declared_grid,
    merged_grid,
    sketch_columns,
)
from fedtrees.algorithms.histogram._pooled import check_pooled_fine
from fedtrees.federation import FederationInfo

__all__ = ["GridAgreement", "SketchReply", "summarise_columns"]


class SketchReply(Protocol):
    """A client's plain reply to the grid round (the engine's sketch fields)."""

    @property
    def points(self) -> np.ndarray: ...

    @property
    def weights(self) -> np.ndarray: ...

    @property
    def counts(self) -> np.ndarray: ...

    @property
    def complete(self) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)
class GridAgreement:
    """The server's side of the grid agreement of one fit (module docstring).

    Built complete by :meth:`begin`. ``columns[j]``: whether numeric column j
    is summarised by the clients (its edges are not declared); ``ranges``: the
    declared ``(low, high)`` per column of a secure grid (shape ``(F, 2)``;
    zeros where no column is summarised), or None without secure aggregation.
    """

    owner: str
    max_bins: int
    declared: Mapping[int, FloatArray]
    columns: BoolArray
    is_categorical: BoolArray
    n_categories: tuple[int, ...]
    ranges: FloatArray | None

    @classmethod
    def begin(
        cls,
        info: FederationInfo,
        *,
        owner: str,
        max_bins: int,
        bin_edges: Mapping[object, Any] | None,
        feature_ranges: object,
        secure: bool,
    ) -> GridAgreement:
        """Check the declared edges (and, secure, the declared ranges).

        Raises
        ------
        ValidationError
            Naming ``bin_edges`` or ``feature_ranges`` and the column.
        """
        schema = info.schema
        names = list(schema.feature_names)
        is_cat = np.array([k == "categorical" for k in schema.feature_kinds], bool)
        declared = declared_grid(bin_edges or {}, names, is_cat, max_bins, owner)
        columns = ~is_cat & ~np.isin(np.arange(is_cat.shape[0]), list(declared))
        ranges = None
        if secure:
            ranges = (
                secure_ranges(feature_ranges, info, columns, owner)
                if columns.any()
                else np.zeros((is_cat.shape[0], 2))
            )
        return cls(
            owner, max_bins, declared, columns, is_cat,
            tuple(len(c or ()) for c in schema.categories), ranges,
        )  # fmt: skip

    @property
    def needed(self) -> bool:
        """Whether a column must be summarised by the clients (a grid round)."""
        return bool(self.columns.any())

    @property
    def n_fine(self) -> int:
        """Entries of the masked fine histograms (0 without secure aggregation)."""
        return 0 if self.ranges is None else int(self.columns.sum()) * FINE_BINS

    def request_fields(self) -> dict[str, Any]:
        """Return the grid request's fields (``ranges`` under secure aggregation)."""
        fields: dict[str, Any] = {
            "n_features": int(self.columns.shape[0]),
            "max_bins": self.max_bins,
            "columns": self.columns.copy(),
        }
        if self.ranges is not None:
            fields["ranges"] = self.ranges
        return fields

    def declared_only(self) -> Grid:
        """Return the grid when no column is summarised (no grid round).

        Raises
        ------
        LocalProtocolError
            If a column is still to agree (:func:`merged_grid`).
        """
        return self._merged({})

    def before(self) -> Grid:
        """Return the grid before the agreement: a column to agree has one bin.

        What a protocol's state holds until the grid round; never sent.
        """
        edges = [
            None if c else self.declared.get(j, np.zeros(0))
            for j, c in enumerate(self.is_categorical.tolist())
        ]
        return Grid.from_lists(edges, list(self.n_categories))

    def agree(self, replies: Sequence[SketchReply]) -> Grid:
        """Agree the summarised columns' edges from the plain replies; merge."""
        sketches = [
            GridSketch(r.points, r.weights, r.counts.astype(np.float64), r.complete)
            for r in replies
        ]
        if not (sketches and self.needed):
            return self._merged({})
        agreed = agree_grid(
            sketches, self.is_categorical | ~self.columns,
            np.asarray(self.n_categories, np.int64), self.max_bins,
        )  # fmt: skip
        summarised = np.flatnonzero(self.columns).tolist()
        return self._merged({j: agreed.feature_edges(j) for j in summarised})

    def fine(self, total: FloatArray) -> FloatArray:
        """Return the masked total's fine histograms, one row per summarised column."""
        n_columns = int(self.columns.sum())
        return total[: n_columns * FINE_BINS].reshape(n_columns, FINE_BINS)

    def check_fine(self, total: FloatArray, *, sites: int, bound: float) -> None:
        """Require pooled fine histograms no honest sites can break (engine checks)."""
        check_pooled_fine(self.fine(total), sites=sites, bound=bound)

    def agree_masked(self, total: FloatArray) -> Grid:
        """Cut the securely summed fine histograms of the summarised columns; merge."""
        ranges = self.ranges if self.ranges is not None else np.zeros((0, 2))
        cut = fine_edges(total, self.columns, ranges, self.max_bins)
        return self._merged(cut)

    def _merged(self, agreed: Mapping[int, FloatArray]) -> Grid:
        return merged_grid(
            self.declared, agreed, self.is_categorical, list(self.n_categories)
        )


class SummaryAsk(Protocol):
    """The grid request's fields a client's summary reads."""

    @property
    def max_bins(self) -> int: ...

    @property
    def ranges(self) -> np.ndarray: ...


def summarise_columns(
    request: SummaryAsk,
    X: FloatArray,
    skipped: BoolArray,
    weight: FloatArray | None,
    masked: bool,
) -> GridSketch | FloatArray:
    """Return a client's summary of its columns for the grid round.

    Plain: the engine's sketch of every column not ``skipped``
    (:func:`~fedtrees.algorithms.histogram.sketch_columns`). ``masked``
    (secure aggregation): the weighted counts of their values over the fine
    bins of the request's ``ranges``, flat (``n_columns * FINE_BINS``), to be
    masked. ``weight``: the rows' weights (None: one each).
    """
    if not masked:
        return sketch_columns(X, skipped, request.max_bins, weight)
    w = np.ones(X.shape[0]) if weight is None else weight
    fine: FloatArray = fine_histograms(X, request.ranges, ~skipped, w).ravel()
    return fine
