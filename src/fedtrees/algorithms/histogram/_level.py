"""One level on the server: what to ask, pooled and derived histograms.

Steps 3 and 4 of the engine for a whole level of every tree at once:

1. **What to ask** (:func:`plan_level`). Where every feature of a parent was
   computed and both its children are open, the clients send the histograms
   of the child with less pooled weight only; the other child's come from the
   parent's pooled histograms, kept from the level before, minus its sibling's
   (**histogram subtraction**). A node derived that way is asked with no
   features (its statistics only).
2. **Pooled histograms** (:func:`level_histograms`): every client's non-zero
   bins summed pair by pair (exact for whole counts), and the derived ones.
3. **What to keep** (:func:`keep_split`): the split nodes' pooled histograms,
   the parents of the next level.

:class:`LevelRounds` holds what the engine keeps between a fit's levels (the
split parents' pooled histograms) and does the parts of a level round every
protocol shares:

- **what to ask** (:meth:`LevelRounds.plan`): the steps above;
- **pooling** (:meth:`LevelRounds.pooled`): the plain replies' node statistics
  summed, and their bins pooled with the derived siblings; or, under secure
  aggregation, the same read back from the masked total
  (:meth:`LevelRounds.read`, after the protocol's checks of the sum);
- **what to keep** (:meth:`LevelRounds.keep`);
- **the after-dropout rule** (:meth:`LevelRounds.drop`,
  :meth:`LevelRounds.repeat`). **Decision**: a dropout during a level whose
  round used subtraction repeats that level without it — the kept parents
  hold the dropped client's rows, so a sibling derived from them would too.

The method keeps only what is its own: the scores, the decisions, the leaves
(docs/histogram.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.histogram._dense import DenseLayout
from fedtrees.algorithms.histogram._histograms import (
    Bins,
    Histograms,
    pool,
    subtract,
)

__all__ = [
    "BinsReply",
    "Kept",
    "LevelPlan",
    "LevelReplyStats",
    "LevelRounds",
    "derive_level",
    "keep_split",
    "level_histograms",
    "node_weights",
    "plan_level",
]


class BinsReply(Protocol):
    """A client's histograms of a level, as the protocols send them."""

    @property
    def bin_count(self) -> np.ndarray: ...

    @property
    def bin_code(self) -> np.ndarray: ...

    @property
    def bin_stats(self) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)
class Kept:
    """Pooled histograms kept from the last level: split nodes, F' pairs each."""

    nodes: IntArray  # sorted node ids
    bins: Bins

    @classmethod
    def none(cls, width: int) -> Kept:
        """Nothing kept."""
        empty = np.zeros(0, np.int64)
        return cls(
            empty, Bins(np.zeros(0, np.uint8), np.zeros((0, width)), empty, empty)
        )


@dataclass(frozen=True, eq=False)
class LevelPlan:
    """What a level asks: features per open node (-1 rows: derived), derivations.

    ``derived[i]`` (an open-node position) gets parent ``Kept.nodes[parent[i]]``
    minus the histograms of its sibling at position ``sibling[i]``.
    """

    pairs: IntArray
    derived: IntArray
    parent: IntArray
    sibling: IntArray


def node_weights(stats: np.ndarray, count_col: int) -> FloatArray:
    """Return each node's weight: its ``count_col`` statistic, or (-1) their sum.

    One home for a node's weight from its statistics: class counts sum to it,
    regression moments hold it first, boosting's ``(Σg, Σh, Σw)`` last.

    Examples
    --------
    >>> node_weights(np.array([[1.0, 2.0], [3.0, 0.0]]), -1).tolist()
    [3.0, 3.0]
    """
    values = np.asarray(stats)
    out: FloatArray = values[:, count_col] if count_col >= 0 else values.sum(axis=1)
    return out


def plan_level(
    open_nodes: IntArray,
    pairs: IntArray,
    parents: IntArray,
    weights: FloatArray,
    kept: Kept,
) -> LevelPlan:
    """Ask the smaller child of every kept parent whose children are both open.

    ``parents[i]``: open node i's parent (-1 for a root); ``weights[i]``: its
    pooled weight (known from its parent's split). Ties: the left child (the
    smaller id) is asked.
    """
    n = open_nodes.shape[0]
    at = np.searchsorted(kept.nodes, parents)
    at = np.minimum(at, max(kept.nodes.shape[0] - 1, 0))
    has = (kept.nodes.shape[0] > 0) & (parents >= 0)
    has &= kept.nodes[at] == parents if kept.nodes.size else has
    # both children open: the parent appears twice among the open nodes
    key = np.where(has, parents, -1)
    order = np.argsort(key, kind="stable")
    pair_up = np.zeros(n, dtype=bool)
    same = (key[order][1:] == key[order][:-1]) & (key[order][1:] >= 0)
    first, second = order[:-1][same], order[1:][same]
    pair_up[first] = pair_up[second] = True
    larger = np.where(weights[second] > weights[first], second, first)
    smaller = np.where(larger == second, first, second)
    asked = pairs.copy()
    asked[larger] = -1
    return LevelPlan(asked, larger, at[larger], smaller)


def _client_parts(
    replies: Sequence[tuple[IntArray, BinsReply]], fp: int
) -> list[tuple[IntArray, Histograms]]:
    """Return each client's bins as histograms, with the level's pair of each."""
    parts = []
    for asked, reply in replies:
        count = np.asarray(reply.bin_count, dtype=np.int64).ravel()
        pairs = (asked[:, None] * fp + np.arange(fp)[None, :]).ravel()
        # whole counts stay in their small dtype: the pooling reads any
        parts.append((pairs, Histograms(count, reply.bin_code, reply.bin_stats)))
    return parts


def level_histograms(
    replies: Sequence[tuple[IntArray, BinsReply]],
    plan: LevelPlan,
    kept: Kept,
    width: int,
    count_col: int,
) -> Bins:
    """Return the level's histograms of every pair: pooled, or derived.

    ``replies``: per client, the open-node positions it was asked and its
    reply; ``count_col``: the statistics' weight column (-1: the sum of the
    columns, class counts).
    """
    n_pairs = plan.pairs.size
    fp = plan.pairs.shape[1]
    return derive_level(
        pool(_client_parts(replies, fp), n_pairs, width), plan, kept, count_col
    )


def derive_level(
    pooled_bins: Histograms, plan: LevelPlan, kept: Kept, count_col: int
) -> Bins:
    """Return the level's histograms from the pooled ones of every asked pair.

    The derived pairs (asked with no features) get their parent's kept
    histograms minus their sibling's (subtraction); ``pooled_bins`` holds every
    pair of the level in order (a secure sum, or :func:`pool`'s).
    """
    fp = plan.pairs.shape[1]
    pooled = Bins.of(pooled_bins)
    if plan.derived.size == 0:
        return pooled
    slots = np.arange(fp)
    parent = kept.bins.take((plan.parent[:, None] * fp + slots).ravel())
    sibling = pooled.take((plan.sibling[:, None] * fp + slots).ravel())
    derived = subtract(parent, sibling, count_col)
    return pooled.with_pairs((plan.derived[:, None] * fp + slots).ravel(), derived)


def keep_split(bins: Bins, nodes: IntArray, positions: IntArray, fp: int) -> Kept:
    """Return the histograms of the split ``nodes`` (at level ``positions``)."""
    order = np.argsort(nodes, kind="stable")
    pairs = (positions[order][:, None] * fp + np.arange(fp)).ravel()
    return Kept(nodes[order], bins.take(pairs))


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
