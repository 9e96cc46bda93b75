"""FedGBDT under secure aggregation: what the pooled sums of a round must hold.

The server reads only the sum of a masked round over its sites
(docs/security.md), so the checks a plain reply gets per site move to the
sum (:mod:`fedtrees.algorithms.histogram._pooled` for the engine's part,
:mod:`._bounds` for boosting's): a sum no honest sites can give fails the fit
with a :class:`~fedtrees.exceptions.MaskedSumError` naming the round and its
sites (:meth:`fedtrees.federation.MaskedRounds.values`).

- **The start**: the fine histograms are non-negative and each column adds
  up to at most the training weight (missing values are left out); the two
  priors are class counts (non-negative) or moments (a non-negative
  variance), their weight within what the sites declared.
- **A level**: the engine's checks (bins adding up to their node, weights
  non-negative and declared), hessians non-negative, the objective's
  ``|Σg| <= Σw`` and ``Σh <= Σw/4`` (``Σh = Σw`` for squared error), weights
  within the training rows', squared-error gradients within ``W·R +
  sqrt(W·L)``, and the reported losses as a site's (:func:`._bounds.check_report`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedgbdt._bounds import Prior, check_gradients, check_report
from fedtrees.algorithms.fedgbdt._known import Known
from fedtrees.algorithms.fedgbdt._payloads import (
    check_gradient_sums,
    check_losses,
    level_layout,
)
from fedtrees.algorithms.histogram import (
    FINE_BINS,
    check_pooled_fine,
    check_pooled_level,
    check_pooled_moments,
)
from fedtrees.federation import (
    InvalidField,
    SumCheck,
    declared_weight,
    rounding_bound,
)

__all__ = [
    "PooledStart",
    "check_pooled_level_sums",
    "check_pooled_start",
    "level_sum_check",
    "start_sum_check",
]


class PooledStart:
    """The start round's pooled vector, read: fine histograms and the two priors."""

    def __init__(self, total: FloatArray, n_sketched: int, width: int) -> None:
        fine = n_sketched * FINE_BINS
        self.fine = total[:fine].reshape(n_sketched, FINE_BINS)
        self.prior = total[fine : fine + width]
        self.held_prior = total[fine + width : fine + 2 * width]


def check_pooled_start(
    start: PooledStart,
    objective: str,
    sites: tuple[str, ...],
    weight_bounds: Mapping[str, float],
) -> None:
    """Require a start round's sum that the ``sites``' rows can give.

    Raises
    ------
    InvalidField
        Field ``prior``, ``held_prior`` or ``fine_histograms``.
    """
    k = len(sites)
    bound = declared_weight(weight_bounds, sites)
    one = rounding_bound(k)
    weights = []
    for name, prior in (("prior", start.prior), ("held_prior", start.held_prior)):
        if objective == "squared_error":
            check_pooled_moments(name, prior, sites=k)
            weights.append(float(prior[0]))
        else:
            if prior.size and np.min(prior) < -one:
                raise InvalidField(name, "holds a negative class count")
            weights.append(float(np.sum(prior)))
    if sum(weights) > bound * (1.0 + 1e-9) + 2 * one * max(start.prior.size, 1):
        raise InvalidField(
            "prior",
            f"holds a weight of {sum(weights)!r} over the training and validation "
            f"rows, more than the {bound!r} the sites declared at the agreement",
        )
    train = max(weights[0], 0.0) + one * max(start.prior.size, 1)
    check_pooled_fine(start.fine, sites=k, bound=min(bound, train))


def check_pooled_level_sums(
    total: FloatArray,
    pairs: IntArray,
    feature_bins: IntArray,
    *,
    report: bool,
    objective: str,
    sites: tuple[str, ...],
    weight_bounds: Mapping[str, float],
    prior: Prior,
    reach: float,
    whole_cohort: bool,
    scale_pos_weight: float = 1.0,
) -> None:
    """Require a level round's sum that the ``sites``' rows can give.

    ``prior``: the pooled prior of the start round; ``reach``: the model's
    (:mod:`._bounds`); ``whole_cohort``: the start's sites all answered (the
    loss weights must then equal the prior's, else be at most them).

    Raises
    ------
    InvalidField
        Field ``node_stats``, ``bin_stats`` or ``loss``.
    """
    k = len(sites)
    one = rounding_bound(k)
    bound = declared_weight(weight_bounds, sites)
    layout = level_layout(pairs, feature_bins)
    stats, bins = check_pooled_level(layout, total, sites=k, counts=[2], bound=bound)
    for name, values in (("node_stats", stats), ("bin_stats", bins)):
        if values.size and np.min(values[:, 1]) < -one:
            raise InvalidField(name, "holds a negative hessian sum")
        check_gradient_sums(name, values, objective, atol=one, scale=scale_pos_weight)
        check_gradients(name, values, prior, reach, objective, atol=one)
    if report:
        loss = layout.tail(total)
        check_losses(loss, objective, atol=one)
        check_report(loss, prior, objective, reach, exact=whole_cohort, atol=one)


def start_sum_check(
    n_sketched: int, width: int, objective: str, weight_bounds: Mapping[str, float]
) -> SumCheck:
    """Return the check of a start round's masked sum (:func:`check_pooled_start`).

    ``n_sketched``: the columns of fine histograms; ``width``: one prior's.
    """

    def check(total: FloatArray, sites: tuple[str, ...]) -> None:
        start = PooledStart(total, n_sketched, width)
        check_pooled_start(start, objective, sites, weight_bounds)

    return check


def level_sum_check(
    pairs: IntArray,
    feature_bins: IntArray,
    report: bool,
    weight_bounds: Mapping[str, float],
    known: Known,
) -> SumCheck:
    """Return the check of a level round's masked sum (:func:`check_pooled_level_sums`).

    ``known``: the start's pooled prior and the model's reach as they are now.
    """
    prior, reach, starters = known.pooled, known.reach, known.starters

    def check(total: FloatArray, sites: tuple[str, ...]) -> None:
        check_pooled_level_sums(
            total, pairs, feature_bins, report=report, objective=known.objective,
            sites=sites, weight_bounds=weight_bounds, prior=prior, reach=reach,
            whole_cohort=sites == starters, scale_pos_weight=known.scale_pos_weight,
        )  # fmt: skip

    return check
