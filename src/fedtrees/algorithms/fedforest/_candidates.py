"""Candidate thresholds from sketches: the server's pooled ones, a lone client's own.

The server turns a level's sketches into candidates (docs/fedforest.md): the
pooled quantile mixture inverted at levels l/q (``"quantile"``), or
scikit-learn's midpoints of the pooled distinct values
(``"exact"``). Where a node's rows all lie on one client, the pooled sketch *is*
that client's sketch, so the client can compute the candidates the server would
send it: :func:`own_candidates`, used by the client of a folded level, by the
check of its reply and by the server that maps its bins back
(:mod:`fedtrees.algorithms.fedforest._fold`, **Decision**: one round per
level where every node has one client).

Both sides run the same per-problem code on the same numbers, so the result is
the server's bit for bit: :func:`fedtrees.stats._quantile.mixtures_ragged`
computes each problem from its own segments only, and :func:`exact_thresholds`
each pair from its own values.

**Decision (``"exact"`` beyond float32):** scikit-learn reads X as float32 and
refuses values beyond its range (``|x| > 3.4e38``). Here a gap between two
values beyond it is never small (:func:`fedtrees.stats.exact_candidates`), so
such a column is split at the midpoints as any other; float32-representable
data gets scikit-learn's candidates unchanged. Values closer than 1e-7 (data
scaled that small, subnormals) stay unsplit, as in scikit-learn (docs/fedforest.md);
``candidates="hist"`` splits any finite scale.
"""

from __future__ import annotations

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.stats import exact_candidates, mixtures_ragged

__all__ = ["exact_thresholds", "own_candidates"]


def exact_thresholds(
    pair: IntArray,
    start: IntArray,
    length: IntArray,
    weight: FloatArray,
    points: FloatArray,
    n_todo: int,
    fp: int,
) -> FloatArray:
    """scikit-learn's midpoints of the pooled distinct values of every pair.

    Segments as :func:`fedtrees.stats._quantile.mixtures_ragged` takes them
    (``weight`` is unused: every distinct value counts). Returns
    ``(n_todo, fp, width)``, NaN-padded to the widest pair.
    """
    values: list[list[FloatArray]] = [[] for _ in range(n_todo * fp)]
    for p, a, m in zip(pair, start, length, strict=True):
        values[int(p)].append(points[a : a + m])
    per_pair = [exact_candidates(v) if v else np.zeros(0) for v in values]
    width = max((c.shape[0] for c in per_pair), default=0)
    out = np.full((n_todo * fp, width), np.nan)
    for i, cands in enumerate(per_pair):
        out[i, : cands.shape[0]] = cands
    return out.reshape(n_todo, fp, width)


def own_candidates(
    n_points: np.ndarray,
    points: FloatArray,
    counts: np.ndarray,
    candidates: str,
    q: int,
) -> tuple[IntArray, FloatArray]:
    """Return the candidates the server would send a client alone at its nodes.

    From the client's own sketch reply (``n_points`` per (node, feature) pair,
    the ragged ``points``, the node weights ``counts``): the mixture of its one
    sketch inverted (or its midpoints), then only those inside its own range
    [min, max) at the pair — a candidate outside puts all its rows on one side,
    so the server does not send it (:func:`._layout.separating`).

    Returns
    -------
    thr_count : ndarray of shape (n_nodes, F')
        Candidates per pair, in row-major order.
    thresholds : ndarray
        The candidates, sorted within each pair, pairs in row-major order.

    Raises
    ------
    fedtrees.exceptions.ValidationError
        From the mixture inversion, for points that are not a sketch.
    """
    shape = np.asarray(n_points).shape
    flat = np.asarray(n_points, dtype=np.int64).ravel()
    fp = shape[1] if len(shape) == 2 else 0
    pair = np.flatnonzero(flat > 0)
    start = (np.cumsum(flat) - flat)[pair]
    length = flat[pair]
    weight = np.asarray(counts, dtype=np.float64)[pair // max(fp, 1)]
    values = np.asarray(points, dtype=np.float64)
    if candidates == "exact":
        table = exact_thresholds(pair, start, length, weight, values, shape[0], fp)
        table = table.reshape(flat.shape[0], table.shape[-1])
    else:
        table = mixtures_ragged(pair, start, length, weight, values, flat.shape[0], q)
    low = np.full(flat.shape[0], np.nan)
    high = np.full(flat.shape[0], np.nan)
    low[pair], high[pair] = values[start], values[start + length - 1]
    inside = (table >= low[:, None]) & (table < high[:, None])  # False for NaN
    count: IntArray = inside.sum(axis=1).reshape(shape).astype(np.int64)
    return count, np.ascontiguousarray(table[inside])
