"""The level rounds of one fit: pooled node statistics and bins, one home.

A protocol on the engine (docs/histogram.md) asks one round per level of
every tree at once. :class:`LevelRounds` holds what the engine keeps between
levels — the split parents' pooled histograms, for **histogram subtraction** —
and does the parts of a level every protocol shares:

- **what to ask** (:meth:`LevelRounds.plan`): the smaller child only where its
  parent's histograms are kept (:func:`~fedtrees.algorithms.histogram.plan_level`);
- **pooling** (:meth:`LevelRounds.pooled`): the plain replies' node statistics
  summed, and their bins pooled with the derived siblings; or, under secure
  aggregation, the same read back from the masked total
  (:meth:`LevelRounds.read`, after the protocol's checks of the sum);
- **what to keep** (:meth:`LevelRounds.keep`): the split nodes' pooled bins;
- **the after-dropout rule** (:meth:`LevelRounds.drop`,
  :meth:`LevelRounds.repeat`). **Decision**: a dropout during a level whose
  round used subtraction repeats that level without it — the kept parents
  hold the dropped client's rows, so a sibling derived from them would too.

The method keeps only what is its own: the scores, the decisions, the leaves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.histogram._dense import DenseLayout
from fedtrees.algorithms.histogram._histograms import Bins
from fedtrees.algorithms.histogram._level import (
    BinsReply,
    Kept,
    LevelPlan,
    derive_level,
    keep_split,
    level_histograms,
    node_weights,
    plan_level,
)

__all__ = ["LevelReplyStats", "LevelRounds"]


class LevelReplyStats(BinsReply, Protocol):
    """A client's plain level reply: its asked nodes' statistics and their bins."""

    @property
    def node_stats(self) -> np.ndarray: ...


@dataclass(eq=False)
class LevelRounds:
    """The engine's side of a fit's level rounds (module docstring).

    ``width``: statistics per node and bin; ``count_col``: their weight column
    (-1: the sum of the columns, class counts); ``subtract``: whether split
    parents are kept for subtraction (every feature considered, and asked for).
    """

    width: int
    count_col: int
    subtract: bool
    kept: Kept
    dropped: bool = False
    """A client dropped out since the level was asked."""

    @classmethod
    def begin(cls, width: int, count_col: int, subtract: bool) -> LevelRounds:
        """Start with nothing kept."""
        return cls(width, count_col, subtract, Kept.none(width))

    def plan(
        self, nodes: IntArray, pairs: IntArray, parents: IntArray, stats: FloatArray
    ) -> LevelPlan:
        """Return what the level asks: ``pairs`` per open node, derivations.

        ``stats``: the open nodes' pooled statistics (their weights choose the
        smaller child).
        """
        weights = node_weights(stats, self.count_col)
        return plan_level(nodes, pairs, parents, weights, self.kept)

    def drop(self) -> None:
        """Forget the kept parents: a client dropped out (they hold its rows)."""
        self.forget()
        self.dropped = True

    def repeat(self, plan: LevelPlan | None) -> bool:
        """Return whether the level is asked again (the after-dropout rule).

        ``plan``: what the level asked (None: no client answered). True when
        a client dropped out and the level used subtraction.
        """
        again = plan is None or (self.dropped and bool(plan.derived.size))
        self.dropped = False
        return again

    def pooled(
        self,
        plan: LevelPlan,
        replies: Sequence[tuple[IntArray, LevelReplyStats]],
        n_nodes: int,
    ) -> tuple[FloatArray, Callable[[], Bins]]:
        """Return the pooled node statistics and the level's bins (on demand).

        ``replies``: per client, the open-node positions it was asked about
        and its reply.
        """
        stats = np.zeros((n_nodes, self.width))
        for asked, reply in replies:
            stats[asked] += np.asarray(reply.node_stats, dtype=np.float64)
        kept = self.kept
        width, count_col = self.width, self.count_col
        return stats, lambda: level_histograms(replies, plan, kept, width, count_col)

    def read(
        self, plan: LevelPlan, layout: DenseLayout, total: FloatArray
    ) -> tuple[FloatArray, Callable[[], Bins]]:
        """Return the masked total's node statistics and the level's bins."""
        stats, pooled = layout.sparse(total)
        kept, count_col = self.kept, self.count_col
        return stats, lambda: derive_level(pooled, plan, kept, count_col)

    def keep(
        self, bins: Bins, split_nodes: IntArray, positions: IntArray, n_pairs: int
    ) -> None:
        """Keep the split nodes' bins (at ``positions`` of the level), if useful."""
        self.kept = (
            keep_split(bins, split_nodes, positions, n_pairs)
            if self.subtract
            else Kept.none(self.width)
        )

    def forget(self) -> None:
        """Keep nothing (a new iteration, or a dropout)."""
        self.kept = Kept.none(self.width)
