"""Plausibility of a masked round's pooled sums: what holds on the whole engine.

Under secure aggregation the server reads only the sum of a round's vectors
over the sites (:mod:`._dense`), so the checks that a plain reply gets per site
(:mod:`fedtrees.federation._checks`) move to the sum: a sum that no honest
sites' statistics can add up to is refused, naming the round and the sites
that took part (:meth:`fedtrees.federation.MaskedRounds.values`; a sum cannot
name the site that sent a wrong vector). Here what holds for every method on
the engine:

- every asked (node, feature) pair's bins, the missing bin included, add up
  to its node's statistics (each site's do, so their sum does);
- weighted counts (class counts, Σw of moments or of gradient triples, fine
  histograms) are non-negative, and a node's (a column's) total is at most
  the weight the sites declared at the agreement;
- regression moments ``(Σw, Σw·y, Σw·y²)`` have a non-negative variance.

Each check allows the fixed-point rounding of the sum
(:func:`fedtrees.federation.rounding_bound`: ``2^-33`` per site and entry) and
the float rounding of a site's own sums (relative :data:`~fedtrees.federation.RTOL`).
A random vector, or a survivor's wrong round key, breaks them with
overwhelming probability; a lie that keeps them all is not detected (this is
not a Byzantine defence, docs/security.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedtrees._typing import FloatArray
from fedtrees.algorithms.histogram._dense import DenseLayout
from fedtrees.federation import RTOL, InvalidField, rounding_bound

__all__ = ["check_pooled_fine", "check_pooled_level", "check_pooled_moments"]


def check_pooled_level(
    layout: DenseLayout,
    vector: FloatArray,
    *,
    sites: int,
    counts: Sequence[int],
    bound: float,
) -> tuple[FloatArray, FloatArray]:
    """Require a level's pooled vector to be a sum of honest sites' vectors.

    ``counts``: the statistic columns that are weighted counts (non-negative;
    their sum at a node at most ``bound``, the weight the ``sites`` declared).

    Returns
    -------
    node_stats : ndarray of shape (n_open, width)
    bins : ndarray of shape (n_bins, width)
        Every slot of the level, in layout order.

    Raises
    ------
    InvalidField
        Field ``node_stats`` or ``bin_stats``, saying what is impossible.

    Examples
    --------
    >>> layout = DenseLayout(np.array([[0]]), np.array([2]), 1)
    >>> check_pooled_level(layout, np.array([4.0, 1.0, 2.0, 1.0]), sites=3,
    ...                    counts=[0], bound=8.0)[0].tolist()
    [[4.0]]
    >>> check_pooled_level(layout, np.array([4.0, 1.0, 2.0, 0.0]), sites=3,
    ...                    counts=[0], bound=8.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.federation._checks.InvalidField: bin_stats: of open node 0, ...
    """
    width = layout.width
    head = layout.n_open * width
    stats = np.asarray(vector[:head], np.float64).reshape(layout.n_open, width)
    bins = np.asarray(vector[head : head + layout.n_bins * width], np.float64)
    bins = bins.reshape(-1, width)
    one = rounding_bound(sites)
    columns = list(counts)
    for name, values in (("node_stats", stats), ("bin_stats", bins)):
        low = values[:, columns]
        if low.size and np.min(low) < -one:
            at = tuple(int(i) for i in np.argwhere(low < -one)[0])
            raise InvalidField(
                name,
                f"holds a negative weighted count at {at}: {float(low[at])!r}",
            )
    total = stats[:, columns].sum(axis=1)
    limit = bound * (1.0 + RTOL) + one * max(len(columns), 1)
    if total.size and np.max(total) > limit:
        node = int(np.argmax(total))
        raise InvalidField(
            "node_stats",
            f"holds a weight of {float(total[node])!r} at open node {node}, more "
            f"than the {bound!r} the sites declared at the agreement",
        )
    _check_pairs_add_up(layout, stats, bins, sites)
    return stats, bins


def _check_pairs_add_up(
    layout: DenseLayout, stats: FloatArray, bins: FloatArray, sites: int
) -> None:
    """Require every asked pair's bins to add up to its node's statistics."""
    slots = layout.slots
    asked = np.flatnonzero(slots > 0)
    if asked.size == 0:
        return
    pair = np.repeat(np.arange(slots.shape[0]), slots)
    width = stats.shape[1]
    got = np.stack(
        [np.bincount(pair, bins[:, k], slots.shape[0]) for k in range(width)], 1
    )[asked]
    spread = np.stack(
        [np.bincount(pair, np.abs(bins[:, k]), slots.shape[0]) for k in range(width)],
        1,
    )[asked]
    fp = max(int(layout.pair_feature.shape[1]), 1)
    want = stats[asked // fp]
    allowed = rounding_bound(sites, 1) * (slots[asked, None] + 1.0) + RTOL * np.maximum(
        spread, np.abs(want)
    )
    bad = np.abs(got - want) > allowed
    if np.any(bad):
        p, k = (int(i) for i in np.argwhere(bad)[0])
        node, slot = divmod(int(asked[p]), fp)
        feature = int(layout.pair_feature.reshape(-1)[asked[p]])
        raise InvalidField(
            "bin_stats",
            f"of open node {node}, feature {feature} (its slot {slot}) add up to "
            f"{float(got[p, k])!r} in statistic {k}, but the node's is "
            f"{float(want[p, k])!r}: the bins of every site add up to its node's",
        )


def check_pooled_fine(fine: FloatArray, *, sites: int, bound: float) -> None:
    """Require pooled fine histograms of non-negative weights within ``bound``.

    ``fine``: shape ``(n_columns, FINE_BINS)``; each column's total weight is
    at most ``bound`` (missing values are left out, so it may be less).

    Raises
    ------
    InvalidField
        Field ``fine_histograms``.
    """
    one = rounding_bound(sites)
    if fine.size and np.min(fine) < -one:
        column, slot = (int(i) for i in np.argwhere(fine < -one)[0])
        raise InvalidField(
            "fine_histograms",
            f"holds a negative weight in column {column}, fine bin {slot}: "
            f"{float(fine[column, slot])!r}",
        )
    totals = fine.sum(axis=1)
    limit = bound * (1.0 + RTOL) + rounding_bound(sites, fine.shape[1])
    if totals.size and np.max(totals) > limit:
        column = int(np.argmax(totals))
        raise InvalidField(
            "fine_histograms",
            f"holds a weight of {float(totals[column])!r} in column {column}, more "
            f"than the {bound!r} the sites declared at the agreement",
        )


def check_pooled_moments(name: str, moments: FloatArray, *, sites: int) -> None:
    """Require pooled ``(Σw, Σw·y, Σw·y²)`` triples with a non-negative variance.

    ``Σw >= 0``, ``Σw·y² >= 0`` and ``Σw·y² · Σw >= (Σw·y)²`` (Cauchy-Schwarz),
    up to the sum's rounding.

    Raises
    ------
    InvalidField
        Field ``name``, naming the first inconsistent triple.
    """
    m = np.asarray(moments, np.float64).reshape(-1, 3)
    one = rounding_bound(sites)
    w, s1, s2 = m[:, 0], m[:, 1], m[:, 2]
    with np.errstate(over="ignore", invalid="ignore"):
        lhs, rhs = s2 * w, s1 * s1
        slack = 1e-6 * np.maximum(lhs, rhs) + one * (
            np.abs(s2) + np.abs(w) + 2.0 * np.abs(s1) + one
        )
        bad = (w < -one) | (s2 < -one) | ~(lhs >= rhs - slack)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise InvalidField(
            name,
            f"holds impossible moments at {i}: Σw={float(w[i])!r}, "
            f"Σw·y={float(s1[i])!r}, Σw·y²={float(s2[i])!r} (a negative weight or "
            "variance)",
        )
