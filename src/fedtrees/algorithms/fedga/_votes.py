"""FedGA-Tree's regression votes (docs/fedga.md; paper 000, Eq. 1–2, steps 16–17).

From a client's cross-validation scores ``v[k, j]`` (fold k, depth j; see
:func:`._initialize.cross_validate_depths`): ``vote_1`` asks for train ratio
``r = 1`` when the scores are stable across folds at the global depth and vary
across depths (Eq. 1); ``vote_2`` asks for elitism when most target values are
unique (Eq. 2).

**Decision:**

- *Coefficient of variation.* ``std / |mean|`` with the population standard
  deviation (``ddof=0``, as ``scipy.stats.variation``). A constant sample has CV
  0 (even when it is all zeros); a zero mean with a non-zero spread has CV
  ``inf`` (the limit of ``std / |mean|``), so ``φ_d = inf`` votes "noisy" and
  ``θ_k = inf`` counts as "complex".
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray
from fedtrees._validation import check_float, check_int, invalid

__all__ = [
    "VoteStatistics",
    "coefficient_of_variation",
    "regression_votes",
    "vote_statistics",
]


def coefficient_of_variation(values: npt.ArrayLike, axis: int = 0) -> FloatArray:
    """``std / |mean|`` along ``axis`` (``ddof=0``; see the module's Decisions).

    Examples
    --------
    >>> coefficient_of_variation([[1.0, 0.0, -1.0], [3.0, 0.0, 1.0]]).tolist()
    [0.5, 0.0, inf]
    """
    array = np.asarray(values, dtype=np.float64)
    std, mean = array.std(axis=axis), np.abs(array.mean(axis=axis))
    with np.errstate(divide="ignore", invalid="ignore"):
        cv = np.where(std == 0.0, 0.0, std / mean)  # x/0 -> inf for std > 0
    out: FloatArray = np.asarray(cv, dtype=np.float64)
    return out


class VoteStatistics(NamedTuple):
    """The three statistics behind a client's regression votes (Sec. III-B/C).

    ``phi``: CV over folds at the global depth (``φ_d``); ``theta``: mean over
    folds of the CV over depths (``θ``); ``mu``: unique target values in % (``μ``).
    """

    phi: float
    theta: float
    mu: float


def vote_statistics(
    scores: npt.ArrayLike, depth_index: int, y: npt.ArrayLike
) -> VoteStatistics:
    """Compute ``φ_d``, ``θ`` and ``μ`` from the CV scores and the local targets.

    Parameters
    ----------
    scores : array of shape (K, J)
        ``v[k, j]``, e.g. :attr:`DepthSearch.scores` (R² for regression).
    depth_index : int
        Column ``j`` of the global depth ``d`` (:meth:`DepthSearch.index_of`).
    y : array of shape (n,)
        The client's targets, ``n >= 1``.

    Examples
    --------
    Fold CVs over depths are 0.05/0.55 and 0.05/0.65; at depth column 0 the
    scores 0.5, 0.7 have CV 0.1/0.6.

    >>> stats = vote_statistics([[0.5, 0.6], [0.7, 0.6]], 0, [1.0, 1.0, 2.0, 3.0])
    >>> [round(value, 4) for value in stats]
    [0.1667, 0.0839, 75.0]
    """
    owner = "regression_votes"
    v = np.asarray(scores, dtype=np.float64)
    if v.ndim != 2 or v.size == 0 or not np.isfinite(v).all():
        raise invalid("scores", owner, "a finite non-empty (K, J) array", v.shape)
    index = check_int(depth_index, "depth_index", owner, min_value=0)
    if index >= v.shape[1]:
        raise invalid("depth_index", owner, f"below J = {v.shape[1]}", depth_index)
    targets = np.asarray(y).ravel()
    if targets.size == 0:
        raise invalid("y", owner, "a non-empty array of targets", "0 values")
    phi = float(coefficient_of_variation(v[:, index]))
    theta = float(coefficient_of_variation(v, axis=1).mean())
    mu = 100.0 * np.unique(targets).size / targets.size
    return VoteStatistics(phi, theta, mu)


def regression_votes(
    scores: npt.ArrayLike,
    depth_index: int,
    y: npt.ArrayLike,
    *,
    phi_star: float = 0.25,
    theta_star: float = 0.02,
    mu_star: float = 80.0,
) -> tuple[bool, bool]:
    """Return a regression client's votes (Algorithm 1, steps 16–17; Eq. 1–2).

    ``vote_1 = (φ_d < φ*) and (θ > θ*)``: score on all local data (``r = 1``).
    ``vote_2 = μ > μ*``: keep the local structures every generation (elitism).
    Inputs as :func:`vote_statistics`; thresholds default to Table II.

    Examples
    --------
    >>> regression_votes([[0.5, 0.6], [0.7, 0.6]], 0, [1.0, 1.0, 2.0, 3.0])
    (True, False)
    """
    owner = "regression_votes"
    phi_star = check_float(phi_star, "phi_star", owner, min_value=0.0)
    theta_star = check_float(theta_star, "theta_star", owner, min_value=0.0)
    mu_star = check_float(mu_star, "mu_star", owner, min_value=0.0, max_value=100.0)
    stats = vote_statistics(scores, depth_index, y)
    return (stats.phi < phi_star and stats.theta > theta_star, stats.mu > mu_star)
