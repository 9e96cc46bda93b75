"""How a level's arrays lie on the wire: each layout's encoding beside its decoding.

Pure functions of arrays (no strategy state, no payload class: a reply is read
through the fields it has, :class:`Bins` and :class:`Sketch`), shared by the
server steps, the payload checks and the client (docs/fedforest.md;
docs/runtime.md, "Per-run client state"):

- **dtypes** — :func:`compact` (counts in the smallest exact dtype) and
  :func:`compact_ints` (node ids, features);
- **ragged bins** — pair p (row-major) owns ``count[p] + 1`` consecutive bins
  (:func:`first_bins`; the replies' checks, beside their payloads in
  :mod:`._sketch_payloads`, sum each pair's bins with it);
- **a client's candidates** — the server sends each client only the candidates
  inside its own range at each pair, :func:`separating` (encode); the client's
  bins come back in that client's layout, :class:`BinLayout`, and
  :func:`pooled_bins` maps them back to the level's and sums them (decode);
- **folded bins** — a client alone at its nodes sends the bins of its own
  candidates: :func:`rebase_bins` moves them to the evaluation's layout;
- **sketches** — ragged quantile points: :func:`segments` lays them out for the
  mixture inversion, :func:`client_ranges` reads each client's range (its first
  and last point) back for :func:`separating`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.histogram import whole_max

__all__ = [
    "BinLayout",
    "Bins",
    "ClientRange",
    "Segments",
    "Sketch",
    "client_ranges",
    "compact",
    "compact_ints",
    "first_bins",
    "pooled_bins",
    "rebase_bins",
    "segments",
    "separating",
]


class Bins(Protocol):
    """A reply's sparse bins: an evaluation's, or a folded sketch's."""

    @property
    def bin_index(self) -> np.ndarray:
        """Increasing indices into the reply's ragged bin layout."""

    @property
    def bin_stats(self) -> np.ndarray:
        """The statistic of each indexed bin, ``(len(bin_index), S)``."""


class Sketch(Protocol):
    """A reply's sketch: node weights and ragged points per (node, feature)."""

    @property
    def counts(self) -> np.ndarray:
        """Node weights, one per asked node."""

    @property
    def n_points(self) -> np.ndarray:
        """Points per (asked node, feature) pair, row-major."""

    @property
    def points(self) -> np.ndarray:
        """Every pair's points, concatenated."""


Sketches = Sequence[tuple[int, IntArray, Sketch]]
"""A level's sketch replies: (client index, asked positions, reply)."""

Segments = tuple[IntArray, IntArray, IntArray, FloatArray, FloatArray]
"""Sketches as ragged segments: pair, start, length, weight, points."""


# -- dtypes -----------------------------------------------------------------------
def compact(values: np.ndarray) -> np.ndarray:
    """Return ``values`` in the smallest dtype that holds them exactly.

    Non-negative whole numbers (bootstrap counts) become uint8/16/32; anything
    else stays float64. Receivers convert back with ``astype(float)``: lossless.
    """
    x = np.ascontiguousarray(values, dtype=np.float64)
    if x.size == 0:
        return x.astype(np.uint8)
    top = whole_max(x.ravel())  # one compiled pass: replies hold millions of bins
    return x if top < 0 else x.astype(np.min_scalar_type(int(top)))


def compact_ints(values: np.ndarray) -> np.ndarray:
    """Integer ids in int16 or int32 when they fit (node ids, features)."""
    x = np.asarray(values, dtype=np.int64)
    if x.size == 0 or (x.min() >= -(2**15) and x.max() < 2**15):
        return x.astype(np.int16)
    if x.min() >= -(2**31) and x.max() < 2**31:
        return x.astype(np.int32)
    return x


# -- ragged bins --------------------------------------------------------------------
def first_bins(count: np.ndarray) -> IntArray:
    """First bin of every pair when pair p owns ``count[p] + 1`` bins (row-major).

    The ragged bin layout of an evaluation (``thr_count``) or of a folded
    reply's own candidates.
    """
    bins = np.asarray(count, dtype=np.int64).ravel() + 1
    out: IntArray = np.cumsum(bins) - bins
    return out


# -- a client's candidates, and its bins back -----------------------------------
@dataclass(frozen=True, eq=False)
class ClientRange:
    """A client's smallest and largest value per (node, feature), from its sketch.

    ``positions`` (sorted) are the level positions of the nodes it sketched;
    ``low`` and ``high`` are ``(n, F')`` (NaN where it sent no points).
    """

    positions: IntArray
    low: FloatArray
    high: FloatArray

    def at(self, rows: IntArray) -> tuple[FloatArray, FloatArray]:
        """Return the range at level positions ``rows``: ``(n, F', 1)``, NaN unknown."""
        positions = self.positions
        at = np.searchsorted(positions, rows)
        at = np.minimum(at, max(positions.shape[0] - 1, 0))
        found = (positions.shape[0] > 0) & (positions[at] == rows)
        lo = np.where(found[:, None], self.low[at], np.nan)[..., None]
        hi = np.where(found[:, None], self.high[at], np.nan)[..., None]
        return lo, hi


@dataclass(frozen=True, eq=False)
class BinLayout:
    """A client's evaluation bins: candidates sent per pair, and those left out below.

    ``count`` is ``(asked nodes, F')``: the client's bins of pair p are
    ``count[p] + 1`` (:func:`first_bins`); ``below`` counts the level's
    candidates under the client's range there, by which its bins are shifted
    back into the level's layout (:func:`pooled_bins`).
    """

    count: IntArray
    below: IntArray


def separating(
    thresholds: FloatArray, known: ClientRange | None, rows: IntArray
) -> tuple[np.ndarray, BinLayout]:
    """Candidates that separate one client's rows at each pair, and its layout.

    ``thresholds`` are the level's ``(n, F', candidates)`` (NaN-padded) and
    ``rows`` the positions the client is asked about. A candidate below the
    client's smallest value at a node, or at/above its largest, puts all its
    rows on one side: it is not sent, and the client's bins are shifted by the
    number below its range. Without a known range (AvgImp, the uniform grid, a
    resent full request) every candidate is sent. Returns the ``(len(rows), F',
    candidates)`` mask of the candidates sent and the client's layout.
    """
    thr = thresholds[rows]
    wanted = ~np.isnan(thr)
    if known is None:
        below = np.zeros(wanted.shape[:2], np.int64)
        return wanted, BinLayout(compact_ints(wanted.sum(axis=-1)), compact_ints(below))
    lo, hi = known.at(rows)
    unknown = np.isnan(lo)
    sent = wanted & (unknown | ((thr >= lo) & (thr < hi)))
    below = (wanted & ~unknown & (thr < lo)).sum(axis=-1).astype(np.int64)
    return sent, BinLayout(compact_ints(sent.sum(axis=-1)), compact_ints(below))


def pooled_bins(
    evaluated: Sequence[tuple[int, IntArray, Bins]],
    layouts: Mapping[int, BinLayout],
    present: np.ndarray,
    width: int,
) -> FloatArray:
    """Sum the clients' sparse bins; return them padded ``(n, F', cand + 1, S)``.

    A client's ``bin_index`` counts bins over the pairs it was asked about
    (``asked`` rows x F', row-major, its candidates + 1 bins each); it is mapped
    to the level's layout, shifted by the candidates left out below the
    client's range, before the sum.
    """
    n_open, fp, n_cand = present.shape
    in_layout = np.zeros((n_open, fp, n_cand + 1), dtype=bool)
    in_layout[..., 1:] = present
    in_layout[..., 0] = True
    bins_per_pair = in_layout.sum(axis=-1)
    first = np.cumsum(bins_per_pair.ravel()) - bins_per_pair.ravel()
    pooled = np.zeros((int(in_layout.sum()), width))
    for k, asked, e in evaluated:
        layout = layouts[k]
        index = e.bin_index.astype(np.int64)
        local_first = first_bins(layout.count)
        pair = np.searchsorted(local_first, index, side="right") - 1
        rows = asked[pair // fp] * fp + pair % fp
        shift = layout.below.astype(np.int64).ravel()[pair] - local_first[pair]
        pooled[first[rows] + index + shift] += e.bin_stats.astype(np.float64)
    out = np.zeros((n_open, fp, n_cand + 1, width))
    out[in_layout] = pooled
    return out


def rebase_bins(
    reply: Bins, own: IntArray, at: IntArray, count: IntArray
) -> tuple[IntArray, np.ndarray]:
    """Move folded bins from the client's own layout to the evaluation's.

    ``own`` counts the candidates of every (asked node, feature) pair, ``count``
    those of every (evaluated node, feature) pair, and evaluated node i is asked
    node ``at[i]`` (with ``own[at] == count``). Bins of nodes not evaluated are
    dropped; a bin keeps its offset inside its pair. When every asked node is
    evaluated (the usual case) the layouts are the same and nothing moves.
    """
    fp = own.shape[1]
    index = reply.bin_index.astype(np.int64)
    if at.shape[0] == own.shape[0]:  # sorted and distinct: at == arange
        return index, reply.bin_stats
    own_first = first_bins(own)
    pair = np.searchsorted(own_first, index, side="right") - 1
    row_of = np.full(own.shape[0], -1, dtype=np.int64)
    row_of[at] = np.arange(at.shape[0])
    row = row_of[pair // fp]
    keep = row >= 0
    target = row[keep] * fp + pair[keep] % fp
    moved = first_bins(count)[target] + index[keep] - own_first[pair[keep]]
    return moved.astype(np.int64), reply.bin_stats[keep]


# -- sketches -------------------------------------------------------------------------
def segments(sketches: Sketches, n_open: int, todo: IntArray) -> Segments:
    """Return the clients' sketches of the ``todo`` nodes as ragged segments.

    Returns, per segment (one client's points of one pair) sorted by pair and
    then client: the pair (row-major over ``todo`` x F'), the start and length in
    the concatenated ``points``, and the client's node weight; then ``points``
    (the input of :func:`fedtrees.stats._quantile.mixtures_ragged`).
    """
    position = np.full(n_open, -1)
    position[todo] = np.arange(todo.shape[0])
    pair, start, length, weight, parts = [], [], [], [], []
    offset = 0
    for _, asked, s in sketches:
        n_points = s.n_points.astype(np.int64)
        fp = n_points.shape[1]
        flat = n_points.ravel()
        starts = (np.cumsum(flat) - flat).reshape(n_points.shape)
        at = position[asked]
        rows, cols = np.nonzero((n_points > 0) & (at >= 0)[:, None])
        pair.append(at[rows] * fp + cols)
        start.append(starts[rows, cols] + offset)
        length.append(n_points[rows, cols])
        weight.append(s.counts.astype(np.float64)[rows])
        parts.append(s.points)
        offset += s.points.shape[0]
    order = np.argsort(np.concatenate(pair), kind="stable")
    points = np.concatenate(parts) if parts else np.zeros(0)
    return (
        np.concatenate(pair)[order],
        np.concatenate(start)[order],
        np.concatenate(length)[order],
        np.concatenate(weight)[order],
        points.astype(np.float64),
    )


def client_ranges(
    sketches: Sketches, n_open: int, todo: IntArray
) -> dict[int, ClientRange]:
    """Each client's smallest and largest value per (todo node, feature).

    A sketch's first point is the minimum and its last the maximum of the
    client's rows there (type-1 quantiles at levels 0 and 1). Returned per
    client index: its todo positions (sorted), then (n, F') minima and maxima
    (NaN where it sent no points).
    """
    position = np.full(n_open, -1)
    position[todo] = np.arange(todo.shape[0])
    out = {}
    for k, asked, s in sketches:
        n_points = s.n_points.astype(np.int64)
        at = position[asked]
        keep = at >= 0
        flat = n_points.ravel()
        first = np.minimum(np.cumsum(flat) - flat, max(s.points.shape[0] - 1, 0))
        last = np.maximum(np.cumsum(flat) - 1, 0)
        values = s.points if s.points.size else np.full(1, np.nan)
        low = np.where(flat > 0, values[first], np.nan).reshape(n_points.shape)
        high = np.where(flat > 0, values[last], np.nan).reshape(n_points.shape)
        out[k] = ClientRange(at[keep], low[keep], high[keep])
    return out
