"""Algorithm 1 of paper 003: synthetic rows from client trees (docs/synthetic.md).

For every client tree, every root-to-leaf path of length L and every i = 1..L,
the *sub-path* of the path's last i conditions yields ``m`` rows:

1. every feature the sub-path does not test holds a fill value (:func:`fill_rows`);
2. a tested feature is drawn uniformly from the α-interval of its condition —
   ``x ≤ t``: ``[t − w, t]``, ``x > t``: ``(t, t + w]``, with ``w = α·|t|`` (``α``
   when ``t = 0``) — narrowed by the sub-path's other conditions on it
   (:func:`sub_path_boxes`), so every row satisfies every condition;
3. the rows are labelled by the majority vote of ALL client trees
   (:func:`majority_vote`), and a row of a sub-path with i < L has its label
   flipped to another class (uniformly) with probability
   ``p = p_max·(1 − i/L)`` (:func:`flip_probability`).

**Decision (narrowing):** Algorithm 1 draws each condition in turn and
overwrites the feature, so the value is the draw of the sub-path's LAST
condition on it. We draw from that condition's α-interval intersected with the
interval every condition of the sub-path on the feature allows; in a CART the
intersection is never empty (a deeper threshold lies inside its node's
interval). A sub-path whose conditions contradict each other (no CART grows
one) yields no rows.

Randomness is keyed per client tree (``[seed, 10, crc32(client)]``): the rows a
tree yields do not depend on the other trees or on the order of replies.

Size: one module past ~400 lines, by choice: Algorithm 1's steps in the paper's
order, read as one; 123 lines are docstrings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from fedtrees._random import client_key, keyed_rng, uniform
from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees._validation import LARGEST_FLOAT
from fedtrees.tree import Condition, Tree, vote_shares

__all__ = [
    "Boxes",
    "FillSpec",
    "Synthetic",
    "alpha_bounds",
    "alpha_width",
    "flip_probability",
    "generate",
    "majority_vote",
    "outside_value",
    "sub_path_boxes",
]

GENERATE_STREAM: Final = 10
FillMode = Literal["outside", "uniform", "values"]


@dataclass(frozen=True)
class FillSpec:
    """How features outside a sub-path are filled.

    ``"outside"``: ``low − (high − low)`` of the feature's range (below every
    value of the range); ``"uniform"``: uniform in the range; ``"values"``: one
    of ``values`` at random per cell (the authors' −100000 / 500000).
    """

    mode: FillMode
    values: tuple[float, ...] = ()


@dataclass(frozen=True, eq=False)
class Boxes:
    """A tree's sub-paths as boxes to sample from (S sub-paths, E bounded features).

    ``leaf``, ``length``, ``suffix``: the leaf, L and i of every sub-path (in
    the order of :meth:`Tree.rules`, i ascending); ``path``, ``feature``,
    ``low``, ``high``, ``low_open``: every (sub-path, tested feature) entry with
    its sampling interval ``[low, high]`` (``(low, high]`` where ``low_open``).
    """

    leaf: IntArray
    length: IntArray
    suffix: IntArray
    path: IntArray
    feature: IntArray
    low: FloatArray
    high: FloatArray
    low_open: BoolArray

    @property
    def n_paths(self) -> int:
        """Number of sub-paths."""
        return int(self.length.shape[0])


@dataclass(frozen=True, eq=False)
class Synthetic:
    """The server's synthetic set and where each row came from.

    ``X`` (n, F); ``y`` label codes after flipping; ``vote`` the majority vote
    before flipping; ``source`` the index of the client tree, ``leaf`` the leaf
    of its path, ``suffix`` and ``length`` the row's i and L.
    """

    X: FloatArray
    y: IntArray
    vote: IntArray
    source: IntArray
    leaf: IntArray
    suffix: IntArray
    length: IntArray

    @property
    def flipped(self) -> BoolArray:
        """Rows whose label was flipped."""
        out: BoolArray = self.y != self.vote
        return out


@dataclass(frozen=True)
class GenerationSpec:
    """The server's settings of Algorithm 1."""

    samples_per_path: int
    alpha: float
    fill: FillSpec
    p_max: float
    schedule: tuple[float, ...] | None
    seed: int


# -- sub-paths -------------------------------------------------------------------
def alpha_width(threshold: npt.ArrayLike, alpha: float) -> FloatArray:
    """Width of the sampling interval next to a threshold: α·|t|, or α at t = 0.

    Examples
    --------
    >>> alpha_width([10.0, -2.0, 0.0], 0.1).tolist()
    [1.0, 0.2, 0.1]
    """
    t = np.asarray(threshold, dtype=np.float64)
    with np.errstate(over="ignore"):  # inf beyond float64: alpha_bounds clips it
        out: FloatArray = np.where(t != 0, alpha * np.abs(t), alpha)
    return out


def alpha_bounds(threshold: FloatArray, alpha: float) -> tuple[FloatArray, FloatArray]:
    """``t − w`` and ``t + w`` (w: :func:`alpha_width`), clipped to finite floats.

    Near ±1.8e308 (or with a large ``alpha``) the interval would reach beyond
    float64; it stops at the largest float instead, so every drawn row is finite.

    Examples
    --------
    >>> below, above = alpha_bounds(np.array([10.0, 1.7e308]), 0.5)
    >>> below.tolist(), above.tolist()
    ([5.0, 8.5e+307], [15.0, 1.7976931348623157e+308])
    """
    width = alpha_width(threshold, alpha)
    with np.errstate(over="ignore"):
        below = np.maximum(threshold - width, -LARGEST_FLOAT)
        above = np.minimum(threshold + width, LARGEST_FLOAT)
    return below, above


def _alpha_interval(condition: Condition, alpha: float) -> tuple[float, float, bool]:
    """``[t − w, t]`` for ``≤ t``, ``(t, t + w]`` for ``> t``; w = α·|t| or α."""
    t = condition.threshold
    below, above = alpha_bounds(np.array([t]), alpha)
    if condition.op == "<=":
        return float(below[0]), t, False
    return t, float(above[0]), True


def _box(
    conditions: Sequence[Condition], alpha: float
) -> dict[int, tuple[float, float, bool]] | None:
    """Return each tested feature's sampling interval; None on contradiction."""
    bounds: dict[int, tuple[float, float]] = {}
    last: dict[int, Condition] = {}
    for c in conditions:
        low, high = bounds.get(c.feature, (-np.inf, np.inf))
        if c.op == "<=":
            bounds[c.feature] = (low, min(high, c.threshold))
        else:
            bounds[c.feature] = (max(low, c.threshold), high)
        last[c.feature] = c
    box = {}
    for feature, condition in last.items():
        low, high, low_open = _alpha_interval(condition, alpha)
        allowed_low, allowed_high = bounds[feature]  # (allowed_low, allowed_high]
        if allowed_low >= low:
            low, low_open = allowed_low, True
        high = min(high, allowed_high)
        if low > high or (low_open and low >= high):
            return None
        box[feature] = (low, high, low_open)
    return box


def sub_path_boxes(tree: Tree, alpha: float) -> Boxes:
    """Every sub-path of ``tree`` ending at a leaf, as a sampling box.

    Examples
    --------
    >>> from fedtrees.tree import NodeStats, TreeBuilder
    >>> b = TreeBuilder(n_features=1, classes=np.array([0, 1]))
    >>> root = b.add_root(NodeStats.from_class_counts([2, 2]))
    >>> _ = b.split_numeric(root, 0, 10.0, NodeStats.from_class_counts([2, 0]),
    ...                     NodeStats.from_class_counts([0, 2]))
    >>> boxes = sub_path_boxes(b.build(), alpha=0.1)
    >>> boxes.low.tolist(), boxes.high.tolist(), boxes.low_open.tolist()
    ([9.0, 10.0], [10.0, 11.0], [False, True])
    """
    leaf: list[int] = []
    length: list[int] = []
    suffix: list[int] = []
    path: list[int] = []
    feature: list[int] = []
    low: list[float] = []
    high: list[float] = []
    low_open: list[bool] = []
    for rule in tree.rules():
        n = len(rule.conditions)
        for i in range(1, n + 1):
            box = _box(rule.conditions[n - i :], alpha)
            if box is None:
                continue
            for f, (a, b, is_open) in box.items():
                path.append(len(length))
                feature.append(f)
                low.append(a)
                high.append(b)
                low_open.append(is_open)
            leaf.append(rule.leaf)
            length.append(n)
            suffix.append(i)
    return Boxes(
        leaf=np.asarray(leaf, dtype=np.int64),
        length=np.asarray(length, dtype=np.int64),
        suffix=np.asarray(suffix, dtype=np.int64),
        path=np.asarray(path, dtype=np.int64),
        feature=np.asarray(feature, dtype=np.int64),
        low=np.asarray(low, dtype=np.float64),
        high=np.asarray(high, dtype=np.float64),
        low_open=np.asarray(low_open, dtype=bool),
    )


# -- rows --------------------------------------------------------------------------
def outside_value(low: FloatArray, high: FloatArray) -> FloatArray:
    """``low − (high − low)`` per column: one range width below the range.

    Where that is beyond float64 (a range of width near 1e308), the lowest float
    instead: it is still at or below every value of the range, so it reaches the
    same side of every split.

    Examples
    --------
    >>> outside_value(np.array([0.0, -1e308]), np.array([2.0, 1e308])).tolist()
    [-2.0, -1.7976931348623157e+308]
    """
    with np.errstate(over="ignore"):
        out: FloatArray = np.maximum(low - (high - low), -LARGEST_FLOAT)
    return out


def fill_rows(
    n_rows: int,
    ranges: FloatArray,
    fill: FillSpec,
    rng: np.random.Generator,
    n_categories: IntArray | None = None,
) -> FloatArray:
    """``n_rows`` rows holding the fill value of every one-hot column.

    ``ranges`` (F', 2) per one-hot column; ``n_categories`` per original column
    (0: numeric) says which columns are a categorical feature's indicators.
    **Decision** (``"uniform"``): a categorical feature takes one of its
    categories uniformly (a valid one-hot group, as a real row), a numeric
    column a value uniform in its range.
    """
    low, high = ranges[:, 0], ranges[:, 1]
    if fill.mode == "outside":
        return np.tile(outside_value(low, high), (n_rows, 1))
    if fill.mode == "values":
        return rng.choice(np.asarray(fill.values), size=(n_rows, ranges.shape[0]))
    X = uniform(rng, low, high, (n_rows, ranges.shape[0]))
    counts = np.zeros(0, np.int64) if n_categories is None else n_categories
    start = 0
    for k in counts.tolist():
        if k:
            X[:, start : start + k] = 0.0
            X[np.arange(n_rows), start + rng.integers(k, size=n_rows)] = 1.0
        start += max(k, 1)
    return X


def _draw_boxes(X: FloatArray, boxes: Boxes, m: int, rng: np.random.Generator) -> None:
    """Overwrite each sub-path's tested features in its ``m`` rows by box draws."""
    low, high = boxes.low[:, None], boxes.high[:, None]
    values = uniform(rng, low, high, (boxes.feature.shape[0], m))
    above_low = np.where(boxes.low_open, np.nextafter(boxes.low, np.inf), boxes.low)
    values = np.minimum(np.maximum(values, above_low[:, None]), high)
    rows = boxes.path[:, None] * m + np.arange(m)[None, :]
    X[rows, boxes.feature[:, None]] = values


def _tree_rows(
    X: FloatArray,
    boxes: Boxes,
    ranges: FloatArray,
    spec: GenerationSpec,
    rng: np.random.Generator,
    n_categories: IntArray | None,
) -> tuple[FloatArray, FloatArray]:
    """Fill ``X`` (one tree's rows, lines 2–26 of Algorithm 1); its flip draws."""
    m = spec.samples_per_path
    X[:] = fill_rows(X.shape[0], ranges, spec.fill, rng, n_categories)
    _draw_boxes(X, boxes, m, rng)
    n = X.shape[0]
    return np.asarray(rng.random(n)), np.asarray(rng.random(n))


# -- labels ------------------------------------------------------------------------
def majority_vote(trees: Sequence[Tree], X: FloatArray) -> IntArray:
    """Class code with the most votes of ``trees`` (the first class on ties)."""
    codes: IntArray = np.argmax(vote_shares(trees, X), axis=1)
    return codes


def flip_probability(
    suffix: IntArray,
    length: IntArray,
    p_max: float,
    schedule: Sequence[float] | None = None,
) -> FloatArray:
    """Flip probability of rows from sub-paths of i = ``suffix`` of L = ``length``.

    ``p_max·(1 − i/L)``; with a ``schedule``, its entry for the number of
    conditions cut, ``L − i`` = 1, 2, ... (the last entry repeats), 0 for i = L.

    Examples
    --------
    >>> flip_probability(np.array([1, 2, 3]), np.array([3, 3, 3]), 0.5).round(3)
    array([0.333, 0.167, 0.   ])
    >>> flip_probability(np.array([1, 2, 3]), np.array([3, 3, 3]), 0.5, [0.55, 0.65])
    array([0.65, 0.55, 0.  ])
    """
    if schedule is None:
        out: FloatArray = p_max * (1.0 - suffix / length)
        return out
    table = np.asarray([0.0, *schedule])
    cut = np.minimum(length - suffix, len(schedule))
    flipped: FloatArray = table[cut]
    return flipped


def _flip(
    vote: IntArray,
    p: FloatArray,
    flip_draw: FloatArray,
    class_draw: FloatArray,
    n_classes: int,
) -> IntArray:
    """Flip where ``flip_draw < p``, to another class chosen uniformly."""
    if n_classes < 2:
        return vote.copy()
    shift = 1 + np.floor(class_draw * (n_classes - 1)).astype(np.int64)
    out: IntArray = np.where(flip_draw < p, (vote + shift) % n_classes, vote)
    return out


# -- the whole algorithm -------------------------------------------------------------
def generate(
    trees: Mapping[str, Tree],
    ranges: FloatArray,
    spec: GenerationSpec,
    n_categories: IntArray | None = None,
) -> Synthetic:
    """Algorithm 1 over every client tree, then the vote and the flips.

    ``trees`` by client id (label codes as classes); ``ranges`` (F', 2) give
    the fill values of the one-hot columns, ``n_categories`` (per original
    column, 0 for numeric ones; None: all numeric) their grouping. A tree that
    is a single leaf yields no rows (it has no path) but still votes.
    """
    boxes = [sub_path_boxes(tree, spec.alpha) for tree in trees.values()]
    sizes = [b.n_paths * spec.samples_per_path for b in boxes]
    ends = np.cumsum(sizes)
    X = np.empty((int(ends[-1]) if sizes else 0, ranges.shape[0]))
    flip_draw, class_draw = np.empty(X.shape[0]), np.empty(X.shape[0])
    for client, box, end, size in zip(trees, boxes, ends, sizes, strict=True):
        rows = slice(int(end) - size, int(end))
        rng = keyed_rng(spec.seed, GENERATE_STREAM, client_key(client))
        flip_draw[rows], class_draw[rows] = _tree_rows(
            X[rows], box, ranges, spec, rng, n_categories
        )

    def per_row(name: str) -> IntArray:
        parts = [np.repeat(getattr(b, name), spec.samples_per_path) for b in boxes]
        return np.concatenate(parts).astype(np.int64)

    suffix, length = per_row("suffix"), per_row("length")
    listed = list(trees.values())
    vote = majority_vote(listed, X)
    p = flip_probability(suffix, length, spec.p_max, spec.schedule)
    y = _flip(vote, p, flip_draw, class_draw, int(listed[0].value.shape[1]))
    source = np.repeat(np.arange(len(sizes)), sizes)
    return Synthetic(X, y, vote, source, per_row("leaf"), suffix, length)
