"""Sufficient statistics, impurities, gains, candidate thresholds, Fisher ordering.

Everything a federated tree learner computes from *statistics* rather than rows:
statistics add across clients, criteria are pure functions of them, and each
candidate generator is split into the part a client runs and the part the server
runs (docs/runtime.md).

Examples
--------
>>> import numpy as np
>>> from fedtrees.stats import ClassCounts, split_gains, sum_stats
>>> a = ClassCounts.from_labels([0, 0, 1], n_classes=2)
>>> b = ClassCounts.from_labels([1, 1], n_classes=2)
>>> clients = [a, b]
>>> pooled = sum_stats(clients)
>>> pooled.data.tolist()
[2.0, 3.0]
>>> split_gains(pooled.data, [[2.0, 0.0]], "gini").round(3).tolist()
[0.48]
"""

from fedtrees.stats._bins import (
    bin_labels,
    bin_sketches,
    check_edges,
    check_increasing,
    digitize,
    quantile_bin_edges,
)
from fedtrees.stats._candidates import (
    distinct_values,
    exact_candidates,
    feature_ranges,
    midpoint_candidates,
    spaced_points,
    uniform_candidates,
)
from fedtrees.stats._fisher import fisher_order, fisher_sort, fisher_splits
from fedtrees.stats._gain import best_split, left_cumulative, proxy_gains, split_gains
from fedtrees.stats._impurity import (
    CRITERIA,
    Criterion,
    entropy,
    gini,
    impurity,
    max_impurity,
    node_count,
    variance,
)
from fedtrees.stats._quantile import (
    QuantileSketch,
    mixture_cdf,
    mixture_quantiles,
    mixtures_by_client,
    mixtures_ragged,
    quantile_candidates,
    quantile_sketch,
    quantile_sketches,
)
from fedtrees.stats._quantile_kernel import sketch_quantiles
from fedtrees.stats._splits import (
    CATEGORICAL,
    CLIENT,
    NUMERIC,
    Best,
    best_avgimp,
    best_categorical,
    best_client,
    best_numeric,
    combine,
)
from fedtrees.stats._statistics import (
    ClassCounts,
    Moments,
    class_counts_by_group,
    moments_by_group,
    sum_stats,
)

__all__ = [
    "CATEGORICAL",
    "CLIENT",
    "CRITERIA",
    "NUMERIC",
    "Best",
    "ClassCounts",
    "Criterion",
    "Moments",
    "QuantileSketch",
    "best_avgimp",
    "best_categorical",
    "best_client",
    "best_numeric",
    "best_split",
    "bin_labels",
    "bin_sketches",
    "check_edges",
    "check_increasing",
    "class_counts_by_group",
    "combine",
    "digitize",
    "distinct_values",
    "entropy",
    "exact_candidates",
    "feature_ranges",
    "fisher_order",
    "fisher_sort",
    "fisher_splits",
    "gini",
    "impurity",
    "left_cumulative",
    "max_impurity",
    "midpoint_candidates",
    "mixture_cdf",
    "mixture_quantiles",
    "mixtures_by_client",
    "mixtures_ragged",
    "moments_by_group",
    "node_count",
    "proxy_gains",
    "quantile_bin_edges",
    "quantile_candidates",
    "quantile_sketch",
    "quantile_sketches",
    "sketch_quantiles",
    "spaced_points",
    "split_gains",
    "sum_stats",
    "uniform_candidates",
    "variance",
]
