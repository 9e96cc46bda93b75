"""The engine's checks of a masked round's pooled sums, on honest and wrong sums.

Honest sites' dense vectors, rounded to fixed point and summed as the masks
leave them, always pass (brute force: many random sites, rows, nodes, weights);
a sum that breaks what every site's vector holds — bins adding up to their
node, non-negative weights within the declared ones, moments with a
non-negative variance — is refused naming the field.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedtrees.algorithms.histogram import (
    FINE_BINS,
    MISSING,
    DenseLayout,
    check_pooled_fine,
    check_pooled_level,
    check_pooled_moments,
)
from fedtrees.federation import InvalidField, from_fixed, to_fixed

FEATURE_BINS = np.array([3, 5, 2, 4])


def _site_vector(
    layout: DenseLayout, rng: np.random.Generator, width: int, moments: bool
) -> np.ndarray:
    """One site's dense vector, from random rows (as its handler builds it)."""
    n = int(rng.integers(0, 40))
    node = rng.integers(0, layout.n_open, n)
    w = rng.uniform(0.0, 3.0, n)
    if moments:
        y = rng.normal(0.0, 50.0, n)
        stats = np.column_stack([w, w * y, w * y * y])
    else:
        stats = w[:, None] * np.eye(width)[rng.integers(0, width, n)]
    vector = np.zeros(layout.length)
    head = layout.n_open * width
    np.add.at(vector[:head].reshape(-1, width), node, stats)
    bins = vector[head : head + layout.n_bins * width].reshape(-1, width)
    slots = layout.slots
    first = np.cumsum(slots) - slots
    fp = layout.pair_feature.shape[1]
    for slot in range(fp):
        pair = node * fp + slot
        feature = layout.pair_feature.reshape(-1)[pair]
        codes = rng.integers(0, FEATURE_BINS[np.maximum(feature, 0)] + 1)
        index = first[pair] + codes  # the last slot is the missing bin
        np.add.at(bins, index[feature >= 0], stats[feature >= 0])
    return vector


def _honest_sum(seed: int, width: int, moments: bool) -> tuple[DenseLayout, np.ndarray]:
    rng = np.random.default_rng(seed)
    n_open = int(rng.integers(1, 5))
    pairs = np.stack(
        [rng.permutation(len(FEATURE_BINS))[:3] for _ in range(n_open)]
    ).astype(np.int64)
    pairs[rng.random(pairs.shape) < 0.2] = -1  # some slots consider no feature
    layout = DenseLayout(pairs, FEATURE_BINS, width)
    sites = int(rng.integers(3, 8))
    vectors = [_site_vector(layout, rng, width, moments) for _ in range(sites)]
    words = sum(
        (to_fixed(v, sites, "x", wide=moments) for v in vectors),
        np.zeros(2 * layout.length if moments else layout.length, np.uint64),
    )
    return layout, from_fixed(words, wide=moments)


@pytest.mark.parametrize("seed", range(60))
def test_honest_sums_pass(seed: int) -> None:
    moments = seed % 2 == 1
    width = 3 if moments else 1 + seed % 4
    layout, total = _honest_sum(seed, width, moments)
    counts = [0] if moments else list(range(width))
    stats, bins = check_pooled_level(
        layout, total, sites=7, counts=counts, bound=8 * 40 * 3.0
    )
    if moments:
        check_pooled_moments("node_stats", stats, sites=7)
        check_pooled_moments("bin_stats", bins, sites=7)


def _first_bin(layout: DenseLayout) -> int:
    head = layout.n_open * layout.width
    slots = layout.slots
    return head + int(np.cumsum(slots)[np.flatnonzero(slots)[0]] - slots[slots > 0][0])


def test_a_bin_that_breaks_its_pairs_sum_is_refused() -> None:
    layout, total = _honest_sum(3, 2, False)
    total = total.copy()
    total[_first_bin(layout)] += 1.0
    with pytest.raises(InvalidField, match=r"bin_stats: of open node \d+, feature"):
        check_pooled_level(layout, total, sites=7, counts=[0, 1], bound=1e9)


def test_a_negative_count_and_a_weight_beyond_the_declared_are_refused() -> None:
    layout = DenseLayout(np.array([[1]]), FEATURE_BINS, 1)
    # node 5 = bins 5 + 0 + 0 + 0 + 0 + missing 0: consistent, but too heavy
    heavy = np.array([5.0, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    with pytest.raises(InvalidField, match=r"more than the 4\.0 the sites declared"):
        check_pooled_level(layout, heavy, sites=3, counts=[0], bound=4.0)
    negative = np.array([-5.0, -5.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    with pytest.raises(InvalidField, match="node_stats: holds a negative weighted"):
        check_pooled_level(layout, negative, sites=3, counts=[0], bound=4.0)
    shifted = np.array([0.0, 5.0, -5.0, 0.0, 0.0, 0.0, 0.0])  # adds up, bin < 0
    with pytest.raises(InvalidField, match="bin_stats: holds a negative weighted"):
        check_pooled_level(layout, shifted, sites=3, counts=[0], bound=4.0)
    assert MISSING == 255  # the missing bin is each pair's last slot


def test_moments_with_a_negative_variance_are_refused() -> None:
    check_pooled_moments("node_stats", np.array([[2.0, 2.0, 2.0]]), sites=3)
    with pytest.raises(InvalidField, match="node_stats: holds impossible moments"):
        check_pooled_moments("node_stats", np.array([[2.0, 4.0, 2.0]]), sites=3)


def test_fine_histograms_of_honest_sites_pass_and_a_heavy_one_does_not() -> None:
    rng = np.random.default_rng(0)
    fine = rng.uniform(0, 1, (3, FINE_BINS)) * (rng.random((3, FINE_BINS)) < 0.1)
    check_pooled_fine(fine, sites=4, bound=float(fine.sum(axis=1).max()))
    with pytest.raises(InvalidField, match="fine_histograms: holds a weight of"):
        check_pooled_fine(fine, sites=4, bound=float(fine.sum(axis=1).max()) - 1)
    fine[1, 7] = -1.0
    with pytest.raises(InvalidField, match="negative weight in column 1, fine bin 7"):
        check_pooled_fine(fine, sites=4, bound=1e9)
