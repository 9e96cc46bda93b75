"""Type aliases shared across fedtrees (arrays, random states, noise samplers)."""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

__all__ = [
    "SAMPLERS",
    "BoolArray",
    "FloatArray",
    "IntArray",
    "RandomState",
    "Sampler",
]

FloatArray: TypeAlias = npt.NDArray[np.float64]
IntArray: TypeAlias = npt.NDArray[np.int64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]
RandomState: TypeAlias = int | np.random.Generator | None

Sampler: TypeAlias = Literal["numpy", "opendp"]
"""A Laplace noise source (:mod:`fedtrees.privacy`); a site's setting
(:class:`fedtrees.federation.SiteNoise`), so it is named here, below both."""
SAMPLERS: Final = ("numpy", "opendp")
