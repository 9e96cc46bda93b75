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
from typing import Any

import numpy as np

from fedtrees.algorithms.fedforest._payloads import LevelFields
from fedtrees.algorithms.histogram import (
    DenseLayout,
    MaskedLevel,
    check_level_reply,
    grid_reply_spec,
    level_reply_fields,
)
from fedtrees.federation import (
    Payload,
    ReplySpec,
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
        return grid_reply_spec(self, GridReply)


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
        stats, bins = (
            self._stats((self.n_open,), self.width),
            self._stats((None,), self.width),
        )
        return ReplySpec(
            HistogramReply,
            level_reply_fields(self.n_open, fp, stats, bins),
            check=self._check_histograms,
        )

    def _check_histograms(self, reply: Any) -> None:
        """Bins inside the layout and the grid, adding up to each node's totals."""
        relative = self.task == "regression"
        check_level_reply(reply, self.pair_feature, self.feature_bins, relative)
