"""FedForest messages of ``candidates="hist"``: the grid round and the level round.

The histogram engine (:mod:`fedtrees.algorithms.histogram`) on FedForest's
protocol v2: requests carry the forest delta like every FedForest request.

- ``fedforest.grid``: each client summarises every numeric column of its rows
  (:class:`GridReply`, the engine's :class:`~fedtrees.algorithms.histogram.
  GridSketch`), once per fit; skipped when every numeric column's edges are
  declared.
- Under secure aggregation (``mask_round`` >= 0, docs/security.md) both rounds
  are masked: the grid round sums fine histograms over the declared ``ranges``
  of the columns, the level round dense histograms (the engine's
  ``DenseLayout``); a reply is a ``federation.masked_reply`` of that length.
- ``fedforest.histogram``: one round per level. The agreed grid travels in the
  first level's request and in every full request (:class:`HistogramRequest`;
  the client keeps it, the engine's ``GridState``). Each client answers, per open node,
  its statistics, and per (open node, considered feature) pair the non-zero
  bins of its statistics (:class:`HistogramReply`): ``bin_count`` per pair,
  then every bin's code (``uint8``, ascending within a pair, 255 = missing)
  and statistics. A node asked with no features (a larger child whose
  histogram the server derives by subtraction) gets its statistics only.

Every reply is checked on arrival: bins in code order and inside the grid
(a code below its feature's bin count, or the missing code), no bins for
unused pairs, and every pair's bins adding up to its node's statistics.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Final

import numpy as np

from fedtrees.algorithms.fedforest._payloads import LevelFields
from fedtrees.algorithms.histogram import (
    FINE_BINS,
    MAX_BINS,
    MISSING,
    DenseLayout,
    Histograms,
    MaskedLevel,
    check_grid_reply,
    grid_reply_fields,
)
from fedtrees.federation import (
    Field,
    InvalidField,
    Payload,
    ReplySpec,
    check_same_stats,
    masked_spec,
    no_cohort,
    no_cohort_keys,
    payload,
)

__all__ = [
    "GridReply",
    "GridRequest",
    "HistogramReply",
    "HistogramRequest",
    "wide_statistics",
]

_MOST_BINS: Final = MAX_BINS + 1  # the missing code's bin included


@payload("fedforest.grid_reply")
class GridReply(Payload):
    """A client's summary of every numeric column (the engine's ``GridSketch``)."""

    points: np.ndarray
    weights: np.ndarray
    counts: np.ndarray
    complete: np.ndarray


@payload("fedforest.grid")
class GridRequest(LevelFields):
    """Summarise the numeric ``columns`` at the root, once, for the bin grid.

    ``columns[j]``: whether column j is summarised (numeric, edges not declared).
    """

    n_features: int
    max_bins: int
    columns: np.ndarray
    ranges: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    mask_round: int = -1
    cohort: np.ndarray = field(default_factory=no_cohort)
    cohort_keys: np.ndarray = field(default_factory=no_cohort_keys)

    def expected_reply(self) -> ReplySpec:
        """Expect the engine's summary; masked: fine histograms of the columns."""
        if self.mask_round >= 0:
            return masked_spec(
                int(np.count_nonzero(self.columns)) * FINE_BINS,
                sites=self.cohort.shape[0],
            )
        return ReplySpec(
            GridReply,
            grid_reply_fields(self.n_features, self.max_bins),
            check=check_grid_reply,
        )


@payload("fedforest.histogram_reply")
class HistogramReply(Payload):
    """Node statistics and the non-zero bins of every asked pair (module doc)."""

    node_stats: np.ndarray
    bin_count: np.ndarray
    bin_code: np.ndarray
    bin_stats: np.ndarray


def wide_statistics(task: str) -> bool:
    """Whether masked values take two words: regression moments (docs/security.md).

    Σw·y and Σw·y² grow with the target; class counts stay below one word's range.
    """
    return task == "regression"


@payload("fedforest.histogram")
class HistogramRequest(LevelFields, MaskedLevel):
    """Histograms of every (open node, considered feature): one round a level.

    ``feature_bins[j]`` is feature j's number of codes (bins, or categories);
    ``grid_edges`` and ``grid_edge_ptr`` carry the numeric edges in the first
    level's request and in full requests, empty otherwise (the client kept them).
    """

    feature_bins: np.ndarray
    grid_edges: np.ndarray
    grid_edge_ptr: np.ndarray
    mask_round: int = -1
    cohort: np.ndarray = field(default_factory=no_cohort)
    cohort_keys: np.ndarray = field(default_factory=no_cohort_keys)

    @property
    def wide_mask(self) -> bool:
        """Whether a masked value takes two words (:func:`wide_statistics`)."""
        return wide_statistics(self.task)

    def dense_layout(self) -> DenseLayout:
        """Return the masked reply's layout: node statistics, then the bins."""
        return DenseLayout(
            np.asarray(self.pair_feature, np.int64),
            np.asarray(self.feature_bins, np.int64),
            self.width,
        )

    def expected_reply(self) -> ReplySpec:
        """Statistics per node; per pair its bins, inside the grid; their sums."""
        masked = self.masked_reply_spec()
        if masked is not None:
            return masked
        fp = int(self.pair_feature.shape[1])
        return ReplySpec(
            HistogramReply,
            {
                "node_stats": self._stats((self.n_open,), self.width),
                "bin_count": Field.array(
                    "iu", (self.n_open, fp), low=0, high=_MOST_BINS
                ),
                "bin_code": Field.array("iu", (None,), low=0, high=MISSING),
                "bin_stats": self._stats((None,), self.width),
            },
            check=self._check_histograms,
        )

    def _check_histograms(self, reply: Any) -> None:
        """Bins inside the layout and the grid, adding up to each node's totals."""
        if reply.bin_code.shape[0] != reply.bin_stats.shape[0]:
            raise InvalidField("bin_stats", "needs one row per bin_code entry")
        count = np.asarray(reply.bin_count, dtype=np.int64)
        bins = Histograms(count.ravel(), reply.bin_code, reply.bin_stats)
        sums = bins.checked_sums(self.pair_feature, self.feature_bins)
        asked = (np.asarray(self.pair_feature) >= 0).ravel()
        node = np.asarray(reply.node_stats, dtype=np.float64)
        want = np.repeat(node, count.shape[1], axis=0)
        check_same_stats(
            "bin_stats",
            sums[asked],
            want[asked],
            "a pair's bins sum (vs its node's statistics)",
            self.task == "regression",
        )
