"""FedGA-Tree's evaluation metrics (docs/fedga.md, Metrics; paper Sec. IV).

Per client ``i``, Eq. 3 compares the test score of its federated tree with
that of its local tree::

    Δ_i = (score_fed_i / score_local_i − 1) · 100

and ``Δ`` is the mean over all ``N`` clients. The paper keeps Eq. 3 as is for
both tasks: "For classification, the desired Δ in F1 score is greater than 0,
while for regression, negative values are preferred for MSE". So ``Δ`` is
never sign-flipped here; ``higher_is_better`` only says which side counts as an
improvement (F1: ``Δ_i > 0``; MSE: ``Δ_i < 0``). Fig. 3/8 also report the share
of clients whose federated tree is better and interquartile ranges; Fig. 4/9
the number of decision nodes and the normalized edit distance to the local
structure (computed by :func:`._encoding.decision_nodes` and
:func:`._encoding.edit_distance`).

**Decisions**: a client is *improved* when its federated score is strictly
better than its local one (a tie is not an improvement). ``Δ_i`` is undefined
when the local score is 0 (e.g. macro-F1 of 0, or MSE of 0 on the test rows):
that raises rather than returning ``inf``, which would swamp ``Δ``. Scores must
be finite and non-negative (F1 and MSE are). The IQR is the pair of the 25th
and 75th percentiles of the per-client ``Δ_i`` (numpy's linear interpolation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import invalid
from fedtrees.algorithms.fedga._encoding import decision_nodes, edit_distance
from fedtrees.exceptions import ValidationError

__all__ = [
    "ClientSummary",
    "StructureSummary",
    "relative_improvement",
    "share_improved",
    "structure_summary",
    "summarize_clients",
]


def _check_scores(
    score_fed: npt.ArrayLike, score_local: npt.ArrayLike, owner: str
) -> tuple[FloatArray, FloatArray]:
    fed = np.atleast_1d(np.asarray(score_fed, dtype=np.float64))
    local = np.atleast_1d(np.asarray(score_local, dtype=np.float64))
    if fed.ndim != 1 or fed.shape != local.shape or fed.size == 0:
        raise ValidationError(
            f"{owner} needs one federated and one local score per client, two "
            f"non-empty 1-D arrays of equal length. Got shapes {fed.shape} and "
            f"{local.shape}."
        )
    for name, array in (("score_fed", fed), ("score_local", local)):
        if not (np.isfinite(array).all() and (array >= 0).all()):
            raise invalid(name, owner, "finite scores >= 0", array.tolist())
    return fed, local


def relative_improvement(
    score_fed: npt.ArrayLike, score_local: npt.ArrayLike
) -> FloatArray:
    """Per-client ``Δ_i = (score_fed / score_local − 1) · 100`` (Eq. 3), in %.

    Parameters
    ----------
    score_fed, score_local : arrays of shape (N,) (or scalars)
        Test scores of each client's federated and local tree (F1 or MSE).

    Returns
    -------
    float64 array of shape (N,)
        Same sign convention for both tasks (see the module docstring): F1
        improves when ``Δ_i > 0``, MSE when ``Δ_i < 0``.

    Raises
    ------
    ValidationError
        On mismatched shapes, negative or non-finite scores, or a local score
        of 0 (``Δ_i`` undefined; the message lists those clients).

    Examples
    --------
    >>> relative_improvement([0.9, 0.6], [0.75, 0.8]).round(6).tolist()
    [20.0, -25.0]
    >>> relative_improvement([8.0], [10.0]).round(6).tolist()  # MSE: better
    [-20.0]
    """
    owner = "relative_improvement"
    fed, local = _check_scores(score_fed, score_local, owner)
    zero = np.flatnonzero(local == 0.0)
    if zero.size:
        raise ValidationError(
            f"{owner}: Δ_i = (fed / local - 1)·100 is undefined where the local "
            f"score is 0. Got 0 for the clients at positions {zero.tolist()}; "
            "leave them out or report them separately."
        )
    delta: FloatArray = (fed / local - 1.0) * 100.0
    return delta


def share_improved(
    score_fed: npt.ArrayLike,
    score_local: npt.ArrayLike,
    *,
    higher_is_better: bool = True,
) -> float:
    """Fraction of clients whose federated tree scores strictly better, in [0, 1].

    ``higher_is_better`` is true for F1 and false for MSE.

    Examples
    --------
    >>> share_improved([0.9, 0.6, 0.5], [0.75, 0.8, 0.5])
    0.3333333333333333
    >>> share_improved([8.0, 12.0], [10.0, 10.0], higher_is_better=False)
    0.5
    """
    fed, local = _check_scores(score_fed, score_local, "share_improved")
    better = fed > local if higher_is_better else fed < local
    return float(np.count_nonzero(better) / better.size)


@dataclass(frozen=True)
class ClientSummary:
    """Eq. 3 and Fig. 3/8 over the clients of one run.

    Attributes
    ----------
    delta : float64 array of shape (N,)
        Per-client ``Δ_i`` in %.
    delta_mean : float
        ``Δ``, the mean of ``Δ_i``.
    delta_median : float
    delta_iqr : (float, float)
        25th and 75th percentiles of ``Δ_i``.
    share_improved : float
        Fraction of clients strictly improved, in [0, 1].
    """

    delta: FloatArray
    delta_mean: float
    delta_median: float
    delta_iqr: tuple[float, float]
    share_improved: float


def summarize_clients(
    score_fed: npt.ArrayLike,
    score_local: npt.ArrayLike,
    *,
    higher_is_better: bool = True,
) -> ClientSummary:
    """Summarize federated vs local test scores over clients (Sec. IV).

    Examples
    --------
    >>> s = summarize_clients([0.9, 0.6, 0.5, 0.8], [0.75, 0.8, 0.5, 0.8])
    >>> round(s.delta_mean, 6), s.share_improved, [round(q, 6) for q in s.delta_iqr]
    (-1.25, 0.25, [-6.25, 5.0])
    """
    delta = relative_improvement(score_fed, score_local)
    q25, median, q75 = np.percentile(delta, [25.0, 50.0, 75.0])
    return ClientSummary(
        delta=delta,
        delta_mean=float(delta.mean()),
        delta_median=float(median),
        delta_iqr=(float(q25), float(q75)),
        share_improved=share_improved(
            score_fed, score_local, higher_is_better=higher_is_better
        ),
    )


@dataclass(frozen=True)
class StructureSummary:
    """Fig. 4/9: complexity of the final trees and distance to local structures.

    Attributes
    ----------
    n_decision : int64 array of shape (N,)
        Decision nodes of each client's final structure.
    edit_distance : float64 array of shape (N,)
        Normalized edit distance between each client's final and local
        structures, in [0, 1].
    """

    n_decision: IntArray
    edit_distance: FloatArray

    @property
    def mean_decision_nodes(self) -> float:
        """Mean number of decision nodes over clients."""
        return float(self.n_decision.mean())

    @property
    def mean_edit_distance(self) -> float:
        """Mean normalized edit distance over clients."""
        return float(self.edit_distance.mean())


def structure_summary(
    final: Sequence[npt.ArrayLike], local: Sequence[npt.ArrayLike]
) -> StructureSummary:
    """Decision nodes and edit distances of each client's final structure.

    Parameters
    ----------
    final, local : sequences of N structures
        Client ``i``'s final FedGA structure and its local structure (step 12),
        both of the global depth.

    Examples
    --------
    >>> s = structure_summary([[0, 1, 2], [0, -1, -1]], [[0, 1, -1], [0, -1, -1]])
    >>> s.n_decision.tolist(), s.edit_distance.round(4).tolist()
    ([3, 1], [0.3333, 0.0])
    """
    if len(final) != len(local) or not final:
        raise ValidationError(
            "structure_summary needs one final and one local structure per client. "
            f"Got {len(final)} final and {len(local)} local structures."
        )
    nodes = np.array([decision_nodes(s) for s in final], dtype=np.int64)
    distance = np.array(
        [edit_distance(a, b) for a, b in zip(final, local, strict=True)],
        dtype=np.float64,
    )
    return StructureSummary(nodes, distance)
