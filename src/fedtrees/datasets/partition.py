"""Seeded splits of a dataset's rows into clients.

Every partitioner returns a :class:`Partition`: one index array per client that
together cover every row exactly once. Randomness comes from ``random_state`` only.

Examples
--------
>>> import numpy as np
>>> from fedtrees.datasets import partition
>>> y = np.repeat([0, 1], 50)
>>> p = partition.dirichlet_label_skew(y, 4, alpha=0.5, random_state=0)
>>> len(p), sum(p.sizes)
(4, 100)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from fedtrees._random import check_random_state
from fedtrees._typing import IntArray, RandomState
from fedtrees._validation import check_float, check_int, invalid
from fedtrees.exceptions import ValidationError

__all__ = ["Partition", "by_column", "dirichlet_label_skew", "iid", "quantity_skew"]

_MAX_TRIES = 1000


@dataclass(frozen=True, eq=False)
class Partition:
    """Row indices of every client; ``names[k]`` is client k's id."""

    indices: tuple[IntArray, ...]
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        """Check that every client has a name."""
        if len(self.indices) != len(self.names):
            raise ValidationError("Partition: one name per index array is needed.")

    def __len__(self) -> int:
        """Return the number of clients."""
        return len(self.indices)

    def __iter__(self) -> Iterator[IntArray]:
        """Iterate over the clients' index arrays."""
        return iter(self.indices)

    def __getitem__(self, k: int) -> IntArray:
        """Return client k's row indices."""
        return self.indices[k]

    @property
    def sizes(self) -> list[int]:
        """Rows per client."""
        return [int(i.shape[0]) for i in self.indices]

    def groups(self, n_samples: int) -> npt.NDArray[np.object_]:
        """Client id of every row, for ``fit(X, y, groups=...)``."""
        out = np.empty(n_samples, dtype=object)
        for name, index in zip(self.names, self.indices, strict=True):
            out[index] = name
        return out


def _named(parts: list[IntArray]) -> Partition:
    return Partition(
        tuple(np.sort(p) for p in parts),
        tuple(f"client_{k}" for k in range(len(parts))),
    )


def iid(n_samples: int, n_clients: int, random_state: RandomState = None) -> Partition:
    """Shuffle the rows and deal them into ``n_clients`` parts of (nearly) equal size.

    Examples
    --------
    >>> iid(10, 3, random_state=0).sizes
    [4, 3, 3]
    """
    n, k = _sizes(n_samples, n_clients, "iid")
    rng = check_random_state(random_state, "iid")
    return _named(np.array_split(rng.permutation(n), k))


def quantity_skew(
    n_samples: int,
    n_clients: int,
    alpha: float = 1.0,
    random_state: RandomState = None,
    min_samples: int = 1,
) -> Partition:
    """Random client sizes with proportions ~ Dirichlet(alpha), rows shuffled.

    Each client gets at least ``min_samples`` rows; the remaining rows are shared
    out by the Dirichlet proportions.
    """
    n, k = _sizes(n_samples, n_clients, "quantity_skew")
    a = check_float(alpha, "alpha", "quantity_skew", min_value=0.0, min_inclusive=False)
    floor = check_int(min_samples, "min_samples", "quantity_skew", min_value=0)
    if floor * k > n:
        raise invalid(
            "min_samples",
            "quantity_skew",
            f"at most n_samples / n_clients = {n // k}",
            floor,
        )
    rng = check_random_state(random_state, "quantity_skew")
    extra = rng.multinomial(n - floor * k, rng.dirichlet(np.full(k, a)))
    cuts = np.cumsum(floor + extra)[:-1]
    return _named(np.split(rng.permutation(n), cuts))


def dirichlet_label_skew(
    y: npt.ArrayLike,
    n_clients: int,
    alpha: float = 0.5,
    random_state: RandomState = None,
    min_samples: int = 1,
) -> Partition:
    """Label skew: each class is shared out by proportions ~ Dirichlet(alpha).

    Draws are repeated (up to 1000 times, seeded) until every client holds at
    least ``min_samples`` rows; smaller ``alpha`` means more skew.
    """
    labels = np.asarray(y)
    n, k = _sizes(labels.shape[0], n_clients, "dirichlet_label_skew")
    a = check_float(
        alpha, "alpha", "dirichlet_label_skew", min_value=0.0, min_inclusive=False
    )
    floor = check_int(min_samples, "min_samples", "dirichlet_label_skew", min_value=0)
    rng = check_random_state(random_state, "dirichlet_label_skew")
    codes = pd.factorize(labels, sort=True)[0]
    for _ in range(_MAX_TRIES):
        owner = _deal_classes(codes, k, a, rng)
        if np.bincount(owner, minlength=k).min() >= floor:
            return _named([np.flatnonzero(owner == c) for c in range(k)])
    raise ValidationError(
        f"dirichlet_label_skew could not give every one of {k} clients at least "
        f"{floor} rows of {n} in {_MAX_TRIES} draws; raise 'alpha' or lower "
        "'min_samples'."
    )


def _deal_classes(
    codes: IntArray, k: int, alpha: float, rng: np.random.Generator
) -> IntArray:
    owner = np.empty(codes.shape[0], dtype=np.int64)
    for c in range(int(codes.max()) + 1):
        rows = rng.permutation(np.flatnonzero(codes == c))
        counts = rng.multinomial(rows.shape[0], rng.dirichlet(np.full(k, alpha)))
        owner[rows] = np.repeat(np.arange(k), counts)
    return owner


def by_column(values: npt.ArrayLike) -> Partition:
    """One client per distinct value (e.g. a site or sex column), sorted by value.

    Examples
    --------
    >>> p = by_column(["b", "a", "b"])
    >>> p.names, [i.tolist() for i in p]
    (('a', 'b'), [[1], [0, 2]])
    """
    series = pd.Series(np.asarray(values, dtype=object))
    if series.isna().any():
        raise invalid("values", "by_column", "no missing values", "missing values")
    codes, uniques = pd.factorize(series, sort=True)
    parts = tuple(np.flatnonzero(codes == c) for c in range(len(uniques)))
    return Partition(parts, tuple(str(u) for u in uniques))


def _sizes(n_samples: int, n_clients: int, owner: str) -> tuple[int, int]:
    n = check_int(n_samples, "n_samples", owner, min_value=1)
    k = check_int(n_clients, "n_clients", owner, min_value=1)
    if k > n:
        raise invalid("n_clients", owner, f"at most n_samples ({n})", k)
    return n, k
