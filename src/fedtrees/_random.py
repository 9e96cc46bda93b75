"""Seeded, keyed random generators (STYLE habit 8).

Public functions take ``random_state: int | np.random.Generator | None``; internal
ones take an ``np.random.Generator``. Generators for a tree, a client or a mechanism
are *keyed* by identifiers, never drawn in sequence, so a result does not depend on
the order in which clients answer.
"""

from __future__ import annotations

import zlib

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, RandomState
from fedtrees._validation import invalid, is_integral

__all__ = [
    "check_random_state",
    "client_key",
    "keyed_rng",
    "resolve_seed",
    "sklearn_seed",
    "uniform",
]

_SEED_BOUND = 2**63 - 1


def sklearn_seed(seed: int) -> int:
    """Fold a seed of up to 63 bits into scikit-learn's ``random_state`` range.

    scikit-learn (numpy's legacy ``RandomState``) takes seeds below 2**32;
    :func:`resolve_seed` gives up to 63 bits. Seeds below 2**32 are kept as
    they are, so fixed small seeds give the same trees as before.

    Examples
    --------
    >>> sklearn_seed(7), sklearn_seed(2**32 + 7)
    (7, 7)
    """
    return int(seed) % 2**32


def check_random_state(random_state: RandomState, owner: str) -> np.random.Generator:
    """Turn ``random_state`` into a generator (a Generator is used as is).

    Examples
    --------
    >>> a = check_random_state(0, "f").integers(10)
    >>> bool(a == check_random_state(0, "f").integers(10))
    True
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(resolve_seed(random_state, owner))


def resolve_seed(random_state: RandomState, owner: str) -> int:
    """Return a non-negative integer seed from which keyed generators are derived.

    ``None`` draws a fresh seed from the operating system; a Generator gives one draw.

    Examples
    --------
    >>> resolve_seed(7, "f")
    7
    """
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> 1)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, _SEED_BOUND))
    if not is_integral(random_state):
        raise invalid(
            "random_state",
            owner,
            "an int >= 0, a numpy Generator or None",
            random_state,
        )
    if not 0 <= random_state <= _SEED_BOUND:  # seeds travel as signed 64-bit ints
        raise invalid(
            "random_state",
            owner,
            f"an int in [0, {_SEED_BOUND}], a numpy Generator or None",
            random_state,
        )
    return int(random_state)


def keyed_rng(seed: int, *keys: int) -> np.random.Generator:
    """Return the generator keyed by ``(seed, *keys)``, e.g. (seed, tree, client).

    The same key always gives the same stream, whatever else was drawn before.

    Examples
    --------
    >>> a = keyed_rng(0, 3, 1).random()
    >>> b = keyed_rng(0, 3, 1).random()
    >>> a == b
    True
    """
    return np.random.default_rng([seed, *keys])


def client_key(client_id: str) -> int:
    """Return a stable integer for a client id (keys the client's random streams).

    Examples
    --------
    >>> client_key("site-a") == client_key("site-a")
    True
    """
    return zlib.crc32(client_id.encode())


def uniform(
    rng: np.random.Generator,
    low: npt.ArrayLike,
    high: npt.ArrayLike,
    size: int | tuple[int, ...],
) -> FloatArray:
    """Draw ``rng.uniform(low, high, size)``, also where ``high - low`` overflows.

    numpy refuses a range whose width is beyond float64 (``OverflowError: Range
    exceeds valid bounds``), e.g. ``(-1.7e308, 1.7e308)``, though every value
    in it is a float. Where every width is finite this *is*
    ``rng.uniform`` (the same values and the same stream); otherwise each draw
    consumes the same one double, and the overflowing ranges are drawn on their
    halves, ``2 * (low/2 + (high/2 - low/2) * u)``, clipped into ``[low, high]``.

    Examples
    --------
    >>> draws = uniform(np.random.default_rng(0), -1.7e308, 1.7e308, 1000)
    >>> bool(np.isfinite(draws).all()), bool(draws.min() < 0 < draws.max())
    (True, True)
    >>> a = uniform(np.random.default_rng(1), [0.0, 5.0], [1.0, 6.0], (2, 2))
    >>> bool((a == np.random.default_rng(1).uniform([0, 5], [1, 6], (2, 2))).all())
    True
    """
    lo = np.asarray(low, dtype=np.float64)
    hi = np.asarray(high, dtype=np.float64)
    with np.errstate(over="ignore"):
        width = hi - lo
    if np.all(np.isfinite(width)):
        return rng.uniform(lo, hi, size)
    u = rng.random(size)
    with np.errstate(over="ignore", invalid="ignore"):
        direct = lo + width * u
        halves = np.clip(2.0 * (lo / 2 + (hi / 2 - lo / 2) * u), lo, hi)
    out: FloatArray = np.where(np.isfinite(width), direct, halves)
    return out
