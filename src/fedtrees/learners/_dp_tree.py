"""The ε-DP random-threshold decision tree of a client (docs/dpforest.md).

Algorithms 1–3 of the paper (001), grown level by level over all open nodes:

1. **Budget** (Alg. 1, line 1): every counting query costs ``ε'`` —
   ``budget="paper"``: ``ε' = ε / (2^d · F)``, the paper's bound on the number of
   queries (Theorem 1); ``budget="parallel"`` (beyond the paper):
   ``ε' = ε / (1 + d · F)``. The parallel argument: the nodes of one depth hold
   disjoint rows, so the F left-count histograms of *all* nodes of a level, taken
   per feature, are F queries over disjoint parts of the data; adding or removing
   one row changes one cell of one node's histogram per feature, so by parallel
   composition a level costs ``F · ε'`` whatever its number of nodes, and the
   root's histogram one ``ε'``: ``(1 + d·F) · ε' = ε``.
2. **Root** (Alg. 1): noisy class counts ``ñ_c = max(n_c + Lap(1/ε'), 0)``.
3. **Expand** (Alg. 2): a node at depth < d whose *noisy* Gini is not 0 is split;
   otherwise it is a leaf predicting the argmax of its noisy counts (first class
   on ties). Nothing else about the data is looked at: the true labels' purity
   (which the authors' public code stops on) is never consulted.
4. **Best split** (Alg. 3): per feature, one threshold uniform in the declared
   public range; the node's left counts per class get clipped Laplace noise; the
   right counts are ``parent − left`` (**Decision**: clipped at 0); the score is
   the *plain* average of the two children's Gini (``score="average"``, the
   paper's rule), or weighted by the children's noisy totals
   (``score="weighted"``, what the authors' public code does; an option beyond
   the paper); the lowest score wins (first feature on ties).

**Decision (charging the plan):** the plan's queries are fixed before training
(Theorem 1 composes them all). Every query actually made is released through the
client's accountant; when growth stops early (noisy-pure nodes), the unused share
of the plan is recorded as one last spend, so ``epsilon_spent`` equals ε and
``n_queries`` still counts the queries made. The per-query ``ε'`` is the largest
float whose plan, summed exactly, is at most ε (:func:`query_epsilon`), so the
tree never spends more than ε: ``epsilon_spent`` is ε or, when no equal float
share adds up to ε, one ulp below it.

Thresholds and noise come from two generators. The thresholds of a level are
one block of ``2^depth × F`` uniforms of the thresholds stream, row ``p`` for heap
position ``p`` (:func:`random_thresholds`), so a node's thresholds do not depend
on the noise or on which other nodes split. Only the rows of the nodes actually
open are drawn: the bit generator jumps to a row (``advance``), so the cost is
proportional to the open nodes, not to ``2^depth``, and the numbers are those of
drawing the whole block.

**Decision (resource bounds):** ``max_depth <= 62`` (:data:`MAX_DEPTH`: heap
positions are int64 and jumps must stay exact); the per-query budget must be at
least :data:`MIN_QUERY_EPSILON` (a Laplace scale of at most ``1e100``, so every
noisy count stays finite); and a level may hold at most :data:`MAX_LEVEL_CELLS`
noisy counts (open nodes × features × classes) and a tree at most
:data:`MAX_TREE_NODES` nodes. Noise can keep nodes open
whatever the data (an empty node splits unless its noisy counts are pure), so the
open nodes of a level may double at every depth; a tree that outgrows the bound
is refused by name (``max_depth``) instead of exhausting memory.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from fedtrees._random import uniform
from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import (
    MIN_EPSILON,
    check_choice,
    check_epsilon,
    check_int,
    invalid,
)
from fedtrees.exceptions import ValidationError
from fedtrees.privacy import ClippedLaplace, PrivacyAccountant, Sampler, even_share
from fedtrees.tree import NodeStats, Tree, TreeBuilder

__all__ = [
    "BUDGETS",
    "MAX_DEPTH",
    "MAX_LEVEL_CELLS",
    "MAX_TREE_NODES",
    "MIN_QUERY_EPSILON",
    "SCORES",
    "DPTree",
    "fit_dp_tree",
    "gini_of_counts",
    "planned_queries",
    "query_epsilon",
    "random_thresholds",
    "split_scores",
    "validate_plan",
]

Budget = Literal["paper", "parallel"]
BUDGETS: Final = ("paper", "parallel")
Score = Literal["average", "weighted"]
SCORES: Final = ("average", "weighted")
UNUSED: Final = "unused share of the plan"
MAX_DEPTH: Final = 62
"""Deepest plan: heap positions (< 2^depth) must fit int64."""
MIN_QUERY_EPSILON: Final = MIN_EPSILON
"""Smallest per-query ε': the Laplace scale 1/ε' stays <= 1e100, counts finite."""
MAX_LEVEL_CELLS: Final = 2**24
"""Most noisy counts (open nodes * features * classes) one level may hold."""
MAX_TREE_NODES: Final = 2**18
"""Most nodes of one DP tree (it travels in one message)."""
_JUMPING_BIT_GENERATORS: Final = (np.random.PCG64, np.random.PCG64DXSM)
"""Bit generators whose ``advance(n)`` skips exactly n doubles."""
_WHOLE_BLOCK_LIMIT: Final = 2**22
"""Largest level block drawn whole for other bit generators (no exact jump)."""


@dataclass(frozen=True)
class DPTree:
    """A client's DP tree, the ε it charged and the queries it made.

    ``epsilon_spent`` is this tree's own cost (the whole plan), whatever the
    accountant had spent before.
    """

    tree: Tree
    epsilon_spent: float
    n_queries: int


def planned_queries(max_depth: int, n_features: int, budget: Budget) -> int:
    """Return the queries the plan allows: ``2^d·F`` (paper) or ``1 + d·F``."""
    if budget == "paper":
        return int(2**max_depth * n_features)
    return 1 + max_depth * n_features


def query_epsilon(
    epsilon: float, max_depth: int, n_features: int, budget: Budget
) -> float:
    """Per-query budget ``ε'`` (inf when ε is inf: noise switched off).

    The largest float ``ε'`` whose plan, ``N × ε'`` summed exactly, is at most ε
    (:func:`fedtrees.privacy._accountant.even_share`): the tree never spends more
    than ε, and less only by a rounding error (the float total is ε or one ulp
    below it).
    """
    if math.isinf(epsilon):
        return math.inf
    return even_share(epsilon, planned_queries(max_depth, n_features, budget))


def validate_plan(
    epsilon: float, max_depth: int, n_features: int, budget: Budget, owner: str
) -> float:
    """Check the plan's bounds (module docstring); return the per-query ``ε'``.

    Raises
    ------
    ValidationError
        Naming ``max_depth`` (above :data:`MAX_DEPTH`) or ``epsilon`` (a per-query
        ``ε'`` below :data:`MIN_QUERY_EPSILON`: the noise would not be finite).
    """
    check_int(max_depth, "max_depth", owner, min_value=1, max_value=MAX_DEPTH)
    eps_q = query_epsilon(epsilon, max_depth, n_features, budget)
    if eps_q < MIN_QUERY_EPSILON:
        queries = planned_queries(max_depth, n_features, budget)
        raise ValidationError(
            f"The 'epsilon' parameter of {owner} is too small for the plan: "
            f"epsilon={epsilon!r} over {queries} queries (budget={budget!r}, "
            f"max_depth={max_depth}, {n_features} features) gives a per-query "
            f"epsilon of {eps_q:g}; it must be >= {MIN_QUERY_EPSILON:g} so the "
            "Laplace noise scale (1/epsilon per query) stays finite. Raise epsilon "
            "or lower max_depth."
        )
    return eps_q


def random_thresholds(
    rng: np.random.Generator,
    ranges: FloatArray,
    depth: int,
    positions: IntArray | None = None,
) -> FloatArray:
    """Thresholds of a level's heap positions: row i for ``positions[i]``.

    The level is one block of ``2^depth × F`` uniforms (each feature's public
    range) from ``rng``'s current state, row ``p`` for heap position ``p``
    (children of ``p`` are ``2p`` and ``2p+1``), so a node's thresholds do not
    depend on which other nodes of its level split. ``positions=None`` draws
    the whole block; otherwise only the given rows are drawn, by jumping the bit
    generator (PCG64 or PCG64DXSM: cost proportional to ``len(positions)``).
    Either way ``rng`` ends past the whole block.
    """
    F = ranges.shape[0]
    if positions is None:
        return uniform(rng, ranges[:, 0], ranges[:, 1], (2**depth, F))
    wanted = np.asarray(positions, dtype=np.int64)
    if not isinstance(rng.bit_generator, _JUMPING_BIT_GENERATORS):
        if 2**depth * F > _WHOLE_BLOCK_LIMIT:
            raise invalid(
                "thresholds_rng",
                "random_thresholds",
                "a Generator on PCG64 (numpy.random.default_rng) for a level of "
                f"more than {_WHOLE_BLOCK_LIMIT} thresholds",
                rng.bit_generator,
            )
        block = uniform(rng, ranges[:, 0], ranges[:, 1], (2**depth, F))
        return block[wanted]
    out = np.empty((wanted.shape[0], F))
    start_state = rng.bit_generator.state
    for first, stop in _runs(wanted):
        jumper = type(rng.bit_generator)()
        jumper.state = start_state
        jumper.advance(int(wanted[first]) * F)
        out[first:stop] = uniform(
            np.random.Generator(jumper), ranges[:, 0], ranges[:, 1], (stop - first, F)
        )
    rng.bit_generator.advance(2**depth * F)
    return out


def _runs(positions: IntArray) -> list[tuple[int, int]]:
    """Index ranges ``[first, stop)`` of consecutive positions (drawn together)."""
    breaks = np.flatnonzero(np.diff(positions) != 1) + 1
    edges = [0, *breaks.tolist(), int(positions.shape[0])]
    return [(a, b) for a, b in itertools.pairwise(edges) if b > a]


def gini_of_counts(counts: FloatArray) -> FloatArray:
    """Gini impurity along the last axis.

    **Decision:** all-zero counts (an empty node) have the impurity of the uniform
    distribution, ``1 - 1/C`` — the distribution such a node predicts. With 0
    instead, the plain-average score would reward thresholds outside the data
    (one empty, "pure" child): noise-free trees on HuGaDB then only peel off
    empty regions and stay at the majority class.
    """
    total = counts.sum(axis=-1)
    safe = np.where(total > 0, total, 1.0)
    p = counts / safe[..., None]
    empty = 1.0 - 1.0 / counts.shape[-1]
    result: FloatArray = np.where(total > 0, 1.0 - (p * p).sum(axis=-1), empty)
    return result


def fit_dp_tree(
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    n_classes: int,
    *,
    epsilon: float,
    max_depth: int,
    ranges: npt.ArrayLike,
    accountant: PrivacyAccountant,
    thresholds_rng: np.random.Generator,
    noise_rng: np.random.Generator,
    budget: Budget = "paper",
    score: Score = "average",
    sampler: Sampler = "numpy",
) -> DPTree:
    """Grow one ε-DP tree on a client's rows (see the module docstring).

    Parameters
    ----------
    X : array of shape (n, F)
    y : int array of shape (n,)
        Class codes in ``[0, n_classes)``.
    epsilon : float > 0 (inf: no noise, for tests)
    max_depth : int >= 1
    ranges : array of shape (F, 2)
        Declared public (min, max) of every feature; min < max.
    accountant : PrivacyAccountant
        The client's; every query is released through it.
    thresholds_rng, noise_rng : numpy Generators
        Keyed by the caller (seed, client). ``thresholds_rng`` should run on
        PCG64 (``numpy.random.default_rng``) so deep levels jump to their open
        nodes (:func:`random_thresholds`).

    Raises
    ------
    ValidationError
        For a bad argument, a plan out of bounds (:func:`validate_plan`) or a
        tree that outgrows :data:`MAX_LEVEL_CELLS` / :data:`MAX_TREE_NODES`.
    """
    owner = "fit_dp_tree"
    Xa, codes, bounds = _inputs(X, y, n_classes, ranges, owner)
    eps = check_epsilon(epsilon, owner, allow_inf=True)
    depth_limit = check_int(max_depth, "max_depth", owner, min_value=1)
    check_choice(budget, "budget", owner, BUDGETS)
    check_choice(score, "score", owner, SCORES)
    F = Xa.shape[1]
    eps_q = validate_plan(eps, depth_limit, F, budget, owner)
    mechanism = ClippedLaplace(epsilon=eps_q, sampler=sampler)
    builder = TreeBuilder(n_features=F, classes=np.arange(n_classes))
    root_counts = accountant.release(
        mechanism, np.bincount(codes, minlength=n_classes), noise_rng, "root counts"
    )
    made = 1
    open_ids = [builder.add_root(_stats(root_counts))]
    position = np.zeros(1, dtype=np.int64)  # heap position of every open node
    open_counts = root_counts[None, :]
    slot = np.zeros(Xa.shape[0], dtype=np.int64)  # each row's open node (-1: none)
    n_nodes = 1
    for depth in range(depth_limit):
        split = gini_of_counts(open_counts) > 0
        if not split.any():
            break
        k = int(split.sum())
        n_nodes = _check_level_size(
            k, F, n_classes, n_nodes, (depth, depth_limit), owner
        )
        slot = _keep_split_rows(slot, split)
        thresholds = random_thresholds(thresholds_rng, bounds, depth, position[split])
        left_true = _left_counts(Xa, codes, slot, thresholds, n_classes)
        queries = k * F if budget == "paper" else F
        left = accountant.release(
            mechanism, left_true, noise_rng, f"depth {depth} left counts", queries
        )
        made += queries
        right = np.maximum(open_counts[split][:, None, :] - left, 0.0)
        best = np.argmin(split_scores(left, right, score), axis=1)  # first on ties
        rows = np.arange(k)
        chosen = thresholds[rows, best]
        parents = [open_ids[i] for i in np.flatnonzero(split)]
        open_ids = []
        for s, node in enumerate(parents):
            kids = builder.split_numeric(
                node,
                int(best[s]),
                float(chosen[s]),
                _stats(left[s, best[s]]),
                _stats(right[s, best[s]]),
            )
            open_ids.extend(kids)
        open_counts = np.stack([left[rows, best], right[rows, best]], axis=1).reshape(
            2 * k, n_classes
        )
        position = np.stack([2 * position[split], 2 * position[split] + 1], 1).ravel()
        slot = _route(Xa, slot, best, chosen)
    plan = planned_queries(depth_limit, F, budget)
    if plan > made and math.isfinite(eps_q):  # the Decision in the module docstring
        accountant.spend(eps_q, label=UNUSED, queries=plan - made)
    return DPTree(builder.build(), _plan_cost(eps_q, plan), made)


def split_scores(left: FloatArray, right: FloatArray, score: Score) -> FloatArray:
    """Score of every candidate from its children's noisy counts (lower is better)."""
    g_left, g_right = gini_of_counts(left), gini_of_counts(right)
    average: FloatArray = (g_left + g_right) / 2.0
    if score == "average":  # the paper's rule
        return average
    n_left, n_right = left.sum(axis=-1), right.sum(axis=-1)
    total = n_left + n_right
    weighted = (n_left * g_left + n_right * g_right) / np.where(total > 0, total, 1.0)
    out: FloatArray = np.where(total > 0, weighted, average)
    return out


def _check_level_size(
    k: int,
    F: int,
    n_classes: int,
    n_nodes: int,
    depths: tuple[int, int],
    owner: str,
) -> int:
    """Refuse a level over the bounds (module docstring); return the nodes after it.

    ``depths`` is (this level's depth, max_depth); ``k`` nodes split into 2k.
    """
    cells, after = k * F * n_classes, n_nodes + 2 * k
    if cells <= MAX_LEVEL_CELLS and after <= MAX_TREE_NODES:
        return after
    depth, max_depth = depths
    raise ValidationError(
        f"The 'max_depth' parameter of {owner} ({max_depth}) grows too large a "
        f"tree: depth {depth} splits {k} open nodes ({F} features, {n_classes} "
        f"classes: {cells} noisy counts; bound {MAX_LEVEL_CELLS}) into a tree of "
        f"{after} nodes (bound {MAX_TREE_NODES}). Empty nodes stay open unless "
        "their noisy counts are pure, so open nodes may double at every level; "
        "lower max_depth."
    )


def _plan_cost(eps_q: float, plan: int) -> float:
    """ε this tree charged: ``plan × ε'`` summed exactly, as the accountant does."""
    return math.inf if math.isinf(eps_q) else float(plan * Fraction(eps_q))


def _inputs(
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    n_classes: int,
    ranges: npt.ArrayLike,
    owner: str,
) -> tuple[FloatArray, IntArray, FloatArray]:
    Xa = np.asarray(X, dtype=np.float64)
    codes = np.asarray(y)
    if Xa.ndim != 2 or Xa.shape[1] < 1:
        raise invalid("X", owner, "a 2-D array with at least one column", Xa.shape)
    if Xa.shape[0] == 0:
        raise invalid("X", owner, "at least one row", "no rows")
    if not np.all(np.isfinite(Xa)):
        raise invalid("X", owner, "finite values", "NaN or inf")
    n_classes = check_int(n_classes, "n_classes", owner, min_value=1)
    if (
        codes.shape != (Xa.shape[0],)
        or codes.dtype.kind not in "iu"
        or codes.min() < 0
        or codes.max() >= n_classes
    ):
        raise invalid(  # it runs at a client: no labels, no row count in it
            "y",
            owner,
            f"one class code in [0, {n_classes}) per row of X",
            f"an array of dtype {codes.dtype} with other codes or another length",
        )
    bounds = np.asarray(ranges, dtype=np.float64)
    if bounds.shape != (Xa.shape[1], 2) or not np.all(np.isfinite(bounds)):
        raise invalid(
            "ranges",
            owner,
            f"finite (min, max) of shape ({Xa.shape[1]}, 2)",
            bounds.shape,
        )
    if np.any(bounds[:, 0] >= bounds[:, 1]):
        raise invalid("ranges", owner, "min < max for every feature", "min >= max")
    return Xa, codes.astype(np.int64), bounds


def _stats(counts: FloatArray) -> NodeStats:
    return NodeStats.from_class_counts(
        counts, float(gini_of_counts(np.asarray(counts)))
    )


def _keep_split_rows(slot: IntArray, split: npt.NDArray[np.bool_]) -> IntArray:
    """Renumber rows' open slots to split-node indices; -1 for leaves."""
    index = np.where(split, np.cumsum(split) - 1, -1)
    return np.where(slot >= 0, index[np.maximum(slot, 0)], -1)


def _left_counts(
    X: FloatArray,
    codes: IntArray,
    slot: IntArray,
    thresholds: FloatArray,
    n_classes: int,
) -> FloatArray:
    """Count the true classes left of every (split node, feature) threshold."""
    k, F = thresholds.shape
    rows = np.flatnonzero(slot >= 0)
    s = slot[rows]
    left = X[rows] <= thresholds[s]  # (rows, F)
    cell = (s[:, None] * F + np.arange(F)[None, :]) * n_classes + codes[rows, None]
    counts = np.bincount(cell[left], minlength=k * F * n_classes)
    return counts.reshape(k, F, n_classes).astype(np.float64)


def _route(
    X: FloatArray, slot: IntArray, best: IntArray, chosen: FloatArray
) -> IntArray:
    """Children slots (2s, 2s+1) of every row of a split node."""
    rows = np.flatnonzero(slot >= 0)
    s = slot[rows]
    go_right = X[rows, best[s]] > chosen[s]
    out = np.full(slot.shape, -1, dtype=np.int64)
    out[rows] = 2 * s + go_right
    return out
