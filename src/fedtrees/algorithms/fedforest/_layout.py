"""How a level's arrays lie on the wire: each layout's encoding beside its decoding.

Pure functions of arrays (no strategy state), shared by the server steps, the payload
checks and the client (docs/fedforest.md; docs/runtime.md, "Per-run client state"):

- **dtypes** — :func:`compact` (counts in the smallest exact dtype) and
  :func:`compact_ints` (node ids, features);
- **ragged bins** — pair p (row-major) owns ``count[p] + 1`` consecutive bins
  (:func:`first_bins`); :func:`pair_totals` sums each pair's bins, which a
  reply's check compares with the node's totals (:func:`check_pair_sums`,
  :func:`check_bin_index`);
- **a client's candidates** — the server sends each client only the candidates
  inside its own range at each pair, :func:`separating` (encode); the client's
  bins come back in that client's layout, :class:`BinLayout`, and
  :func:`pooled_bins` maps them back to the level's and sums them (decode);
- **folded bins** — a client alone at its nodes sends the bins of its own
  candidates: :func:`rebase_bins` moves them to the evaluation's layout;
- **sketches** — ragged quantile points: :func:`segments` lays them out for the
  mixture inversion, :func:`client_ranges` reads each client's range (its first
  and last point) back for :func:`separating`; :func:`check_ragged_points`
  checks a reply's points fit its counts and rise within each pair.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.histogram import whole_max
from fedtrees.federation import InvalidField, check_moments, check_same_stats

if TYPE_CHECKING:
    from fedtrees.algorithms.fedforest._payloads import (
        EvaluateReply,
        SketchEvaluateReply,
        SketchReply,
    )

__all__ = [
    "BinLayout",
    "ClientRange",
    "Segments",
    "check_bin_index",
    "check_pair_sums",
    "check_ragged_points",
    "client_ranges",
    "compact",
    "compact_ints",
    "first_bins",
    "pair_totals",
    "pooled_bins",
    "rebase_bins",
    "rises_within",
    "segments",
    "separating",
]

Sketches = Sequence[tuple[int, IntArray, "SketchReply"]]
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


def pair_totals(thr_count: np.ndarray, reply: Any, width: int) -> FloatArray:
    """Sum of every pair's bins, shape ``(*thr_count.shape, S)``.

    Pair p (row-major) owns ``thr_count[p] + 1`` consecutive bins of the
    layout that ``reply.bin_index`` indexes (checked to be inside it).
    """
    count = np.asarray(thr_count, dtype=np.int64)
    starts = first_bins(count)
    pair = np.searchsorted(starts, reply.bin_index.astype(np.int64), "right") - 1
    totals = np.zeros((count.size, width))
    np.add.at(totals, pair, np.asarray(reply.bin_stats, dtype=np.float64))
    out: FloatArray = totals.reshape(*count.shape, width)
    return out


def check_pair_sums(
    totals: FloatArray, node_stats: np.ndarray | None, regression: bool
) -> None:
    """Every used pair's bins sum to its node's statistics (or to each other).

    Categorical and unused pairs have one empty bin: pairs whose bins are all
    zero are not compared. Without ``node_stats`` a node's pairs are compared
    with its first used pair.
    """
    if regression:
        check_moments("bin_stats", totals)
    used = np.any(totals != 0, axis=2)  # (n_open, F')
    first = np.argmax(used, axis=1)
    if node_stats is None:
        want = totals[np.arange(totals.shape[0]), first]
    else:
        want = np.asarray(node_stats, dtype=np.float64)
    want = np.broadcast_to(want[:, None, :], totals.shape)
    check_same_stats(
        "bin_stats",
        np.where(used[..., None], totals, want),
        want,
        "a pair's bins sum (vs the node's other pairs)"
        if node_stats is None
        else "a pair's bins sum (vs the node's statistics)",
        regression,
    )


def check_bin_index(reply: Any, n_bins: int | None = None) -> None:
    """Bins strictly increasing, one statistic each, inside ``n_bins`` if given."""
    index = reply.bin_index
    if reply.bin_stats.shape[0] != index.shape[0]:
        raise InvalidField("bin_stats", "needs one row per bin_index entry")
    if np.any(np.diff(index.astype(np.int64)) <= 0):
        raise InvalidField("bin_index", "must be strictly increasing")
    if n_bins is not None and index.size and int(index[-1]) >= n_bins:
        raise InvalidField(
            "bin_index", f"holds bin {int(index[-1])}; the layout has {n_bins} bins"
        )


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
    evaluated: Sequence[tuple[int, IntArray, EvaluateReply]],
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
    reply: SketchEvaluateReply, own: IntArray, at: IntArray, count: IntArray
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


def rises_within(values: np.ndarray, starts: np.ndarray) -> bool:
    """Whether a ragged array never falls inside a block (blocks at ``starts``)."""
    falls = np.diff(values) < 0
    cuts = np.asarray(starts, dtype=np.int64)
    falls[cuts[(cuts > 0) & (cuts < values.shape[0])] - 1] = False
    return not bool(np.any(falls))


def check_ragged_points(reply: Any) -> None:
    """Points must match ``n_points`` in number and rise within each pair."""
    n_points = np.asarray(reply.n_points, dtype=np.int64).ravel()
    points = reply.points
    if int(n_points.sum()) != points.shape[0]:
        raise InvalidField(
            "points",
            f"holds {points.shape[0]} values; n_points sums to {int(n_points.sum())}",
        )
    if not rises_within(points, np.cumsum(n_points) - n_points):
        raise InvalidField("points", "must be non-decreasing within each pair")
