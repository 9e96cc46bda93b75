"""Bounds the mathematics puts on reply values: one home.

A reply that passes its shape, type and declared-bound checks can still carry a
value no honest client can compute, and such a *plausible-looking lie* bends the
model without an error (one site's noisy size of 10¹² chose every FedGA
structure). Where a value's formula bounds it, the reply is checked against
that bound before the strategy sees it (docs/security.md):

- **a noisy count** ``n + Lap(b)`` (FedGA's sizes, Federated-ID3's ε-DP
  tables) lies in ``[-T·b, bound + T·b]``, where ``bound`` is the row bound the
  client declared and :data:`NOISE_TAILS` ``T = 50``: Laplace noise passes
  ``T·b`` with probability ``e^-50 ≈ 2·10⁻²²`` per value, so an honest client
  is never refused while a count far beyond its rows is;
- **an impurity decrease** lies in ``[0, I(node)]`` and so in
  ``[0, max_impurity]`` (``1 − 1/C`` for Gini, ``log2 C`` for entropy;
  :func:`fedtrees.stats.max_impurity`);
- **a CART threshold** a client's tree learned is the midpoint of two of its
  finite values (a column beyond float32 is scaled for scikit-learn and its
  thresholds scaled back, :mod:`fedtrees.learners`), so it is finite (every
  rebuilt :class:`~fedtrees.tree.Tree` checks that); only a declared range
  bounds it further (synthetic data's ``feature_ranges``; without them, a
  limit that keeps room for the rows generated around it).

They bound what a buggy or lying client can do; a lie *within* them (a size
of 2n, a gain of half the true one) still passes — this is not a Byzantine
defence.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from fedtrees.federation import Field
from fedtrees.stats import max_impurity

__all__ = [
    "GAIN_TOLERANCE",
    "NOISE_TAILS",
    "gain_field",
    "noise_reach",
    "noisy_count_field",
]

NOISE_TAILS: Final = 50.0
"""Laplace scales beyond which no honest noise reaches (probability e^-50)."""
GAIN_TOLERANCE: Final = 1e-9
"""Rounding allowed around an impurity decrease's bounds (relative to them)."""


def noise_reach(scale: float) -> float:
    """Return how far honest Laplace noise of ``scale`` reaches: ``T · scale``.

    Examples
    --------
    >>> noise_reach(0.5)
    25.0
    """
    return NOISE_TAILS * float(scale)


def noisy_count_field(
    scale: float, shape: tuple[int | None, ...] | None = None
) -> Field:
    """Return the check of a count released with Laplace noise of ``scale``.

    Within ``[-T·scale, row bound + T·scale]`` (the client's declared row
    bound, see the module docstring); a scalar when ``shape`` is None.
    """
    reach = noise_reach(scale)
    if shape is None:
        return Field.scalar(low=-reach, rows=True, bound_slack=reach)
    return Field.array("f", shape, low=-reach, rows=True, bound_slack=reach)


def gain_field(criterion: str, n_classes: int, shape: tuple[int | None, ...]) -> Field:
    """Return the check of impurity decreases: in ``[0, max_impurity]``.

    With a rounding allowance of :data:`GAIN_TOLERANCE`; squared error has no
    upper bound here (its node's variance bounds it: checked across rounds).
    """
    top = max_impurity(criterion, n_classes)
    slack = GAIN_TOLERANCE * (top if np.isfinite(top) and top > 1.0 else 1.0)
    low = None if criterion == "squared_error" else -slack
    high = None if not np.isfinite(top) else top + slack
    return Field.array("f", shape, low=low, high=high)
