"""FedGA-Tree's genetic operators on structures (paper Sec. III-C/D).

Every operator takes the generator it draws from (style habit 8), keeps the
string length, and only writes feature ids in ``-1..n_features-1``, so a
mutated or crossed string is again a valid structure of the same depth. The
server runs them on a population array of shape ``(P, 2**d - 1)``; fitness is
maximised for classification (macro-F1) and minimised for regression (MSE),
which every fitness-based operator takes as ``maximize``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedga._encoding import NIL
from fedtrees.exceptions import ValidationError

__all__ = [
    "MUTATIONS",
    "crossover",
    "mutate",
    "mutate_population",
    "mutation_count",
    "node_flip",
    "node_swap",
    "one_point_crossover",
    "substring_swap",
    "tournament_select",
    "update",
]


def _order_key(fitness: FloatArray, maximize: bool) -> FloatArray:
    """Smaller is better; NaN (not evaluated) ranks last."""
    key = -fitness if maximize else fitness.copy()
    key[np.isnan(key)] = np.inf
    return key


def tournament_select(
    rng: np.random.Generator,
    fitness: npt.ArrayLike,
    n_select: int,
    size: int,
    *,
    maximize: bool,
) -> IntArray:
    """Return the indices of ``n_select`` tournament winners (paper Sec. II, III-D).

    Each tournament draws ``min(size, P)`` distinct candidates uniformly and
    keeps the fittest; ties go to the smaller index, NaN fitness loses.

    Examples
    --------
    >>> tournament_select(np.random.default_rng(0), [0.1, 0.9, 0.5], 4, 3,
    ...                   maximize=True).tolist()
    [1, 1, 1, 1]
    """
    values = np.asarray(fitness, dtype=np.float64)
    if values.ndim != 1 or values.shape[0] < 1:
        raise ValidationError(
            "tournament_select needs a non-empty 1-D fitness array. Got shape "
            f"{values.shape} instead."
        )
    if size < 1:
        raise ValidationError(f"The tournament size must be >= 1. Got {size!r}.")
    key = _order_key(values, maximize)
    k = min(size, values.shape[0])
    entrants = np.stack(
        [rng.choice(values.shape[0], size=k, replace=False) for _ in range(n_select)]
    ).reshape(n_select, k)
    # lexicographic (key, index): the first of equally fit entrants is the smallest
    order = np.lexsort((entrants, key[entrants]), axis=1)[:, 0]
    winners: IntArray = entrants[np.arange(n_select), order].astype(np.int64)
    return winners


def one_point_crossover(
    rng: np.random.Generator, a: npt.ArrayLike, b: npt.ArrayLike
) -> tuple[IntArray, IntArray]:
    """Two children of a one-point crossover at a cut drawn in ``1..L-1``.

    ``a[:c] + b[c:]`` and ``b[:c] + a[c:]``; strings of length 1 are copied.

    Examples
    --------
    >>> c1, c2 = one_point_crossover(np.random.default_rng(1), [0, 0, 0], [1, 1, 1])
    >>> c1.tolist(), c2.tolist()
    ([0, 1, 1], [1, 0, 0])
    """
    left, right = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if left.shape != right.shape or left.ndim != 1:
        raise ValidationError(
            "one_point_crossover needs two 1-D strings of the same length. Got "
            f"shapes {left.shape} and {right.shape}."
        )
    if left.shape[0] < 2:
        return left.copy(), right.copy()
    cut = int(rng.integers(1, left.shape[0]))
    return (
        np.concatenate([left[:cut], right[cut:]]),
        np.concatenate([right[:cut], left[cut:]]),
    )


def crossover(
    rng: np.random.Generator,
    population: npt.ArrayLike,
    fitness: npt.ArrayLike,
    tournament_size: int,
    *,
    maximize: bool,
    n_offspring: int | None = None,
) -> IntArray:
    """Breed offspring: the *Crossover* of Algorithm 1, step 41 (Sec. III-D).

    Parents are paired in the order the tournaments select them; each pair
    gives two children (the last child of an odd count is dropped).

    Parameters
    ----------
    population : int array of shape (P, 2**d - 1)
    fitness : float array of shape (P,)
    n_offspring : int, optional
        Number of children (default: P).

    Returns
    -------
    offspring : int64 array of shape (n_offspring, 2**d - 1)

    Examples
    --------
    >>> pop = np.array([[0, 0, 0], [1, 1, 1], [2, 2, 2]])
    >>> crossover(np.random.default_rng(0), pop, [0.1, 0.9, 0.5], 2,
    ...           maximize=True).shape
    (3, 3)
    """
    parents = np.asarray(population, dtype=np.int64)
    count = parents.shape[0] if n_offspring is None else n_offspring
    pairs = (count + 1) // 2
    chosen = tournament_select(
        rng, fitness, 2 * pairs, tournament_size, maximize=maximize
    )
    children: list[IntArray] = []
    for i in range(pairs):
        children.extend(
            one_point_crossover(rng, parents[chosen[2 * i]], parents[chosen[2 * i + 1]])
        )
    if not children:
        return np.empty((0, parents.shape[1]), dtype=np.int64)
    return np.stack(children[:count])


def mutation_count(rate: float, length: int) -> int:
    """``m1``/``m2`` from a rate of the string length (Table II: 5 %).

    **Decision**: ``max(1, round(rate * length))``, so every mutation changes
    something even on short strings.

    Examples
    --------
    >>> mutation_count(0.05, 63), mutation_count(0.05, 7)
    (3, 1)
    """
    if not 0.0 <= rate <= 1.0:
        raise ValidationError(f"A mutation rate must be in [0, 1]. Got {rate!r}.")
    return max(1, round(rate * length))


def node_flip(
    rng: np.random.Generator, structure: npt.ArrayLike, n_features: int, m1: int
) -> IntArray:
    """Node flip: ``m1`` distinct positions get another feature or nil.

    The new value is drawn uniformly from ``{-1, 0, .., F-1}`` minus the current
    value (paper Sec. III-D: "a different feature or -1").

    Examples
    --------
    >>> node_flip(np.random.default_rng(0), [0, 0, 0], 1, 3).tolist()
    [-1, -1, -1]
    """
    out = np.array(structure, dtype=np.int64)
    count = min(m1, out.shape[0])
    positions = rng.choice(out.shape[0], size=count, replace=False)
    # draw among the F other values (F + 1 with nil), skipping the current one
    draw = rng.integers(0, n_features, size=count) - 1
    current = out[positions]
    out[positions] = np.where(draw >= current, draw + 1, draw)
    return out


def node_swap(rng: np.random.Generator, structure: npt.ArrayLike, m2: int) -> IntArray:
    """Node swap: ``m2`` times, exchange the values of two distinct positions.

    Examples
    --------
    >>> node_swap(np.random.default_rng(0), [0, 1, 2], 1).tolist()
    [0, 2, 1]
    """
    out = np.array(structure, dtype=np.int64)
    if out.shape[0] < 2:
        return out
    for _ in range(m2):
        i, j = rng.choice(out.shape[0], size=2, replace=False)
        out[[i, j]] = out[[j, i]]
    return out


_ORDERS = np.array([[0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]])


def substring_swap(rng: np.random.Generator, structure: npt.ArrayLike) -> IntArray:
    """Substring swap: cut into three non-empty pieces and reorder them.

    **Decision**: the two cuts are distinct and drawn uniformly in ``1..L-1``;
    the order is drawn uniformly among the five orders other than the identity.
    Strings shorter than 3 are returned unchanged.

    Examples
    --------
    >>> substring_swap(np.random.default_rng(0), [0, 1, 2, 3, 4]).tolist()
    [3, 0, 1, 2, 4]
    """
    out = np.array(structure, dtype=np.int64)
    if out.shape[0] < 3:
        return out
    i, j = np.sort(rng.choice(np.arange(1, out.shape[0]), size=2, replace=False))
    pieces = (out[:i], out[i:j], out[j:])
    order = _ORDERS[rng.integers(0, _ORDERS.shape[0])]
    return np.concatenate([pieces[k] for k in order])


def _flip(
    rng: np.random.Generator, s: IntArray, n_features: int, m1: int, m2: int
) -> IntArray:
    return node_flip(rng, s, n_features, m1)


def _swap(
    rng: np.random.Generator, s: IntArray, n_features: int, m1: int, m2: int
) -> IntArray:
    return node_swap(rng, s, m2)


def _substring(
    rng: np.random.Generator, s: IntArray, n_features: int, m1: int, m2: int
) -> IntArray:
    return substring_swap(rng, s)


MUTATIONS: dict[
    str, Callable[[np.random.Generator, IntArray, int, int, int], IntArray]
] = {"node_flip": _flip, "node_swap": _swap, "substring_swap": _substring}
"""The three mutations, by name, in the order :func:`mutate` draws them."""


def mutate(
    rng: np.random.Generator,
    structure: npt.ArrayLike,
    n_features: int,
    m1: int,
    m2: int,
) -> IntArray:
    """Apply one of the three mutations, drawn uniformly (paper Sec. III-D).

    Examples
    --------
    >>> s = mutate(np.random.default_rng(3), [0, 1, 2, 0, 1, 2, 0], 3, 1, 1)
    >>> s.shape, bool(s.min() >= -1 and s.max() < 3)
    ((7,), True)
    """
    array = np.asarray(structure, dtype=np.int64)
    if n_features < 1:
        raise ValidationError(f"mutate needs n_features >= 1. Got {n_features!r}.")
    if array.size and (array.min() < NIL or array.max() >= n_features):
        raise ValidationError(
            f"mutate needs entries in [-1, {n_features - 1}]. Got entries in "
            f"[{int(array.min())}, {int(array.max())}]."
        )
    operator = list(MUTATIONS.values())[int(rng.integers(0, len(MUTATIONS)))]
    return operator(rng, array, n_features, m1, m2)


def mutate_population(
    rng: np.random.Generator,
    offspring: npt.ArrayLike,
    n_features: int,
    m1: int,
    m2: int,
) -> IntArray:
    """Mutate all offspring: the *Mutation* of Algorithm 1, step 42 (Sec. III-D).

    **Decision**: every offspring is mutated, each by its own uniformly drawn
    mutation (the paper applies "one [of the three] in each generation"; drawing
    per offspring keeps the three kinds of moves in every generation).

    Examples
    --------
    >>> mutate_population(np.random.default_rng(0), np.zeros((2, 3), int), 2, 1,
    ...                   1).shape
    (2, 3)
    """
    children = np.asarray(offspring, dtype=np.int64)
    if children.shape[0] == 0:
        return children.copy()
    return np.stack([mutate(rng, child, n_features, m1, m2) for child in children])


def update(
    parents: npt.ArrayLike,
    parent_fitness: npt.ArrayLike,
    offspring: npt.ArrayLike,
    offspring_fitness: npt.ArrayLike,
    size: int,
    *,
    maximize: bool,
) -> tuple[IntArray, FloatArray]:
    """Keep the best: the *Update* of Algorithm 1, step 39 (Sec. III-C).

    Keep the best ``size`` of parents ∪ offspring. Ties are broken
    deterministically by position in the concatenation (parents first, then
    offspring, each in its given order); NaN fitness ranks last. Because the
    parents compete, the best fitness never gets worse from one generation to
    the next.

    Returns
    -------
    population : int64 array of shape (min(size, n_parents + n_offspring), 2**d - 1)
    fitness : float64 array of the same length, best first

    Examples
    --------
    >>> pop, fit = update([[0], [1]], [0.5, 0.2], [[2], [3]], [0.9, 0.5], 2,
    ...                   maximize=True)
    >>> pop.ravel().tolist(), fit.tolist()
    ([2, 0], [0.9, 0.5])
    """
    pool = np.concatenate(
        [np.asarray(parents, dtype=np.int64), np.asarray(offspring, dtype=np.int64)]
    )
    scores = np.concatenate(
        [
            np.asarray(parent_fitness, dtype=np.float64),
            np.asarray(offspring_fitness, dtype=np.float64),
        ]
    )
    if pool.shape[0] != scores.shape[0]:
        raise ValidationError(
            f"update got {pool.shape[0]} structures but {scores.shape[0]} fitness "
            "values: give one fitness per structure."
        )
    if size < 1:
        raise ValidationError(f"The population size must be >= 1. Got {size!r}.")
    keep = np.argsort(_order_key(scores, maximize), kind="stable")[:size]
    return pool[keep], scores[keep]
