"""Differential-privacy mechanisms and the per-party budget accountant.

Examples
--------
>>> import numpy as np
>>> from fedtrees.privacy import ClippedLaplace, PrivacyAccountant
>>> accountant = PrivacyAccountant(epsilon=1.0, owner="client 'A'")
>>> noisy = accountant.release(ClippedLaplace(epsilon=0.5), [3.0, 0.0],
...                            np.random.default_rng(0), label="root counts")
>>> accountant.epsilon_spent
0.5
"""

from fedtrees.privacy._accountant import PrivacyAccountant, Spend, even_share
from fedtrees.privacy._mechanisms import (
    MIN_EPSILON,
    SAMPLERS,
    ClippedLaplace,
    Laplace,
    Sampler,
)

__all__ = [
    "MIN_EPSILON",
    "SAMPLERS",
    "ClippedLaplace",
    "Laplace",
    "PrivacyAccountant",
    "Sampler",
    "Spend",
    "even_share",
]
