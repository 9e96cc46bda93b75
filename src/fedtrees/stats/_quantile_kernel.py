"""The type-1 quantile rule, compiled: the one home of the clients' sketch points.

docs/fedforest.md: a client's sketch of a node's feature is the weighted type-1
empirical quantiles ``Q(l/m)``, ``l = 0..m``, of its rows there. The rule, for
values sorted within a group and weights > 0 (bootstrap counts x sample weights):
``Q(l/m)`` is the first value whose cumulative weight ``c`` satisfies
``c * m >= l * total`` (``Q(0)`` the smallest value; the largest when rounding
leaves no such value). Products, not divisions, so whole weights compare exactly.

Every caller uses :func:`type1_walk`, so all sketches follow one rule bit for bit:

- :func:`sketch_quantiles` — FedForest's client kernels (``m = min(q, rows)``,
  **Decision**: a client with fewer than q rows sends ``rows + 1`` points), one
  (node, feature) pair at a time, values reached through their ranks;
- :func:`type1_points` — every group of a sorted array at once, at resolution
  ``m`` (uncapped: points repeat where a group has fewer rows) or capped per
  group (:func:`fedtrees.stats.quantile_sketches`).

Why compiled: the clients' kernels call the rule once per (open node, feature)
pair of a level from inside their own compiled loops (:mod:`fedtrees.algorithms.
fedforest._rows_kernels`). numba does not check bounds: callers pass groups
inside the arrays, each with at least one value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedtrees._compiling import boolean, f64, i64, kernel, ro

__all__ = ["sketch_quantiles", "type1_points", "type1_walk"]


@kernel()
def type1_walk(
    weights: Any, lo: int, hi: int, m: int, picks: Any
) -> None:  # pragma: no cover - compiled
    """Pick, for ``l = 0..m``, the index in ``[lo, hi)`` of ``Q(l/m)``.

    ``picks[l]`` is the first index whose cumulative weight ``c`` (from ``lo``)
    satisfies ``c * m >= l * total``, or ``hi - 1`` if none does; ``picks[0]``
    is ``lo``. The group must hold at least one value (``hi > lo``).
    """
    total = 0.0
    for i in range(lo, hi):
        total += weights[i]
    idx = lo
    cum = weights[lo]
    picks[0] = lo
    for level in range(1, m + 1):
        # first element with cum >= level/m * total  <=>  cum * m >= level * total
        while cum * m < level * total and idx < hi - 1:
            idx += 1
            cum += weights[idx]
        picks[level] = idx


@kernel()
def sketch_quantiles(
    sorted_pos: Any,
    sorted_w: Any,
    count: int,
    q: int,
    sval_j: Any,
    out: Any,
    start: int,
) -> None:  # pragma: no cover - compiled
    """Type-1 quantiles at ``l/m``, ``m = min(q, count)``, into ``out[start:]``.

    A client's rows of one pair, in feature order: ``sorted_pos`` are their
    ranks in the feature's presorted values ``sval_j``, ``sorted_w`` their
    weights (``count >= 1`` rows).
    """
    m = min(q, count)
    picks = np.empty(m + 1, dtype=np.int64)
    type1_walk(sorted_w, 0, count, m, picks)
    for level in range(m + 1):
        out[start + level] = sval_j[sorted_pos[picks[level]]]


@kernel((ro(f64), ro(f64), ro(i64), i64, boolean))
def type1_points(
    values: Any, weights: Any, group_start: Any, m: int, capped: bool
) -> Any:  # pragma: no cover - compiled
    """Weighted type-1 quantiles at ``l/m``, ``l = 0..m``, of every group.

    ``values`` are sorted within each group ``group_start[g]:group_start[g+1]``
    (weights > 0). Returns ``(n_groups, m + 1)``: uncapped, points repeat where
    a group has fewer rows than ``m``; ``capped``, a group of r rows gets
    ``min(m, r) + 1`` points at levels ``l/min(m, r)``, NaN after. An empty
    group gives NaN.
    """
    n_groups = group_start.shape[0] - 1
    out = np.full((n_groups, m + 1), np.nan)
    picks = np.empty(m + 1, dtype=np.int64)
    for g in range(n_groups):
        lo, hi = group_start[g], group_start[g + 1]
        if lo == hi:
            continue
        levels = min(m, hi - lo) if capped else m
        type1_walk(weights, lo, hi, levels, picks)
        for level in range(levels + 1):
            out[g, level] = values[picks[level]]
    return out
