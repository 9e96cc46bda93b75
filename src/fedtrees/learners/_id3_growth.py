"""The server's step of ID3-style learners: pooled count tables in, splits out.

:class:`Id3Growth` holds a tree being grown level by level (docs/icdta.md): ID3 takes,
per open node, the feature of highest information gain and makes one child per value
with rows; ``binary`` (the "IBM tree" of docs/fedga.md: CART on discretized features)
takes the best Gini split — a threshold between consecutive codes, or a Fisher grouping
of a categorical feature — through :mod:`fedtrees.stats._splits`, the split search
FedForest uses. See :mod:`fedtrees.learners._id3` for the Decisions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from scipy.special import xlogy
from scipy.stats import chi2

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees._validation import check_float
from fedtrees.learners._id3_counts import Layout
from fedtrees.stats import Best, best_categorical, best_numeric, combine, entropy, gini
from fedtrees.tree import NodeStats, Tree, TreeBuilder

__all__ = ["TIE_TOLERANCE", "Id3Growth", "split_p_value"]

TIE_TOLERANCE: Final = 1e-10
"""Gains closer than this count as equal (the lower feature index wins)."""


@dataclass
class _Split:
    """How a node was split: feature, kind and children (in creation order)."""

    feature: int
    kind: str  # "multiway" | "numeric" | "set"
    children: list[int]
    codes: list[list[int]] = field(default_factory=list)
    threshold: float = math.nan

    def child_of_code(self, arity: int) -> IntArray:
        """Return the child every code goes to (-1: the row stops at the node)."""
        lookup = np.full(arity, -1, dtype=np.int64)
        if self.kind == "numeric":  # codes <= threshold (c + 0.5) go left
            lookup[:] = self.children[1]
            lookup[: math.floor(self.threshold) + 1] = self.children[0]
        elif self.kind == "set":  # the left set, then the default branch
            lookup[:] = self.children[1]
            lookup[self.codes[0]] = self.children[0]
        else:
            for codes, child in zip(self.codes, self.children, strict=True):
                lookup[codes] = child
        return lookup


class Id3Growth:
    """The tree being grown, one level at a time (the server's state).

    Parameters
    ----------
    arity : int array of shape (F,)
        Number of codes of every feature.
    n_classes : int
    max_depth : int >= 1
    binary : bool
        CART-style binary Gini splits (features reusable) instead of ID3.
    categorical : bool array of shape (F,), optional
        Binary mode: features split by Fisher grouping (others by code order).
    significance : float in (0, 1], optional
        ID3 mode: a node splits only if the chosen feature's (value, class)
        table rejects independence at this level (:func:`split_p_value`);
        None splits on any positive gain (the paper).
    """

    def __init__(
        self,
        *,
        arity: npt.ArrayLike,
        n_classes: int,
        max_depth: int,
        binary: bool = False,
        categorical: npt.ArrayLike | None = None,
        significance: float | None = None,
    ) -> None:
        self.arity = np.asarray(arity, dtype=np.int64)
        self.n_classes, self.max_depth, self.binary = n_classes, max_depth, binary
        self.significance = significance
        f = self.arity.shape[0]
        self.categorical = (
            np.zeros(f, bool) if categorical is None else np.asarray(categorical, bool)
        )
        self.depth: list[int] = [0]
        self.counts: list[FloatArray] = [np.full(n_classes, np.nan)]
        self.used: list[BoolArray] = [np.zeros(f, dtype=bool)]
        self.splits: list[_Split | None] = [None]
        self.open: IntArray = np.zeros(1, dtype=np.int64)
        self.level = 0
        self._last: list[int] = []  # the nodes split by the last absorb

    @property
    def done(self) -> bool:
        """Whether no node is left to expand."""
        return int(self.open.shape[0]) == 0

    @property
    def n_nodes(self) -> int:
        """Nodes grown so far."""
        return len(self.depth)

    def layout(self) -> Layout:
        """Return the open nodes of this level and the features each considers."""
        used = np.stack([self.used[n] for n in self.open.tolist()]).reshape(
            -1, self.arity.shape[0]
        )
        allowed = np.ones_like(used) if self.binary else ~used
        return Layout(self.open, allowed, self.arity, self.n_classes)

    def absorb(self, tables: npt.ArrayLike, min_count: float = 0.0) -> None:
        """Split or close every open node from its (pooled) count tables."""
        layout = self.layout()
        dense = layout.dense(tables)
        self._set_unknown_counts(layout, dense)
        best = self._choose(layout, dense, min_count)
        next_open: list[int] = []
        self._last = []
        for s, node in enumerate(self.open.tolist()):
            if self._splittable(node, min_count) and np.isfinite(best.gain[s]):
                next_open += self._split(node, s, best, dense, min_count)
                self._last.append(node)
        self.open = np.asarray(next_open, dtype=np.int64)
        self.level += 1

    def advance(self, codes: IntArray, nodes: IntArray) -> IntArray:
        """Move rows at the nodes the last :meth:`absorb` split to their children.

        The same routing as :meth:`structure` then :meth:`Tree.apply`, without
        building a tree: a row whose code has no branch stays at its node.
        """
        if not self._last:
            return nodes
        width = int(self.arity.max())
        table = np.full((len(self._last), width), -1, dtype=np.int64)
        where = np.full(self.n_nodes, -1, dtype=np.int64)
        features = np.empty(len(self._last), dtype=np.int64)
        for i, node in enumerate(self._last):
            split = self.splits[node]
            assert split is not None
            a = int(self.arity[split.feature])
            table[i, :a] = split.child_of_code(a)
            where[node], features[i] = i, split.feature
        rows = np.flatnonzero(where[nodes] >= 0)
        slot = where[nodes[rows]]
        child = table[slot, codes[rows, features[slot]]]
        moved = nodes.copy()
        moved[rows] = np.where(child >= 0, child, nodes[rows])
        return moved

    def structure(self) -> Tree:
        """Return the splits so far as a Tree (no statistics), for routing rows."""
        uniform = np.full(self.n_classes, 1.0)
        return self._build(lambda node: NodeStats(uniform / uniform.sum(), 0.0), {})

    def tree(self, **meta: Any) -> Tree:
        """Return the grown tree with every node's class distribution and count."""
        return self._build(self._stats, meta)

    # -- choosing -----------------------------------------------------------------
    def _set_unknown_counts(self, layout: Layout, dense: FloatArray) -> None:
        first = np.argmax(layout.allowed, axis=1)  # a node's counts from any table
        for s, node in enumerate(self.open.tolist()):
            if np.isnan(self.counts[node]).any() and layout.allowed[s].any():
                self.counts[node] = dense[s, first[s]].sum(axis=0)

    def _splittable(self, node: int, min_count: float) -> bool:
        counts = self.counts[node]
        total = float(counts.sum())
        present = int(np.count_nonzero(counts > 0))
        return total > 0 and total >= min_count and present >= 2

    def _choose(self, layout: Layout, dense: FloatArray, min_count: float) -> Best:
        if self.binary:
            return self._choose_binary(layout, dense)
        best = _choose_multiway(layout, dense, min_count)
        if self.significance is not None:
            for s in np.flatnonzero(np.isfinite(best.gain)).tolist():
                table = dense[s, best.feature[s], : self.arity[best.feature[s]]]
                kept = table[_present(table.sum(axis=1), min_count)]
                if split_p_value(kept) >= self.significance:
                    best.gain[s] = -np.inf
        return best

    def _choose_binary(self, layout: Layout, dense: FloatArray) -> Best:
        n_open = dense.shape[0]
        one = np.ones(n_open)
        per_feature = []
        for f in range(self.arity.shape[0]):
            a = int(self.arity[f])
            parent = dense[:, f].sum(axis=1)
            bins = dense[:, f : f + 1, :a]
            pairs = np.where(layout.allowed[:, f], f, -1)[:, None]
            if self.categorical[f]:
                found = best_categorical(
                    parent, bins, pairs, self.categorical, "gini", one
                )
            else:
                cuts = np.broadcast_to(np.arange(a - 1) + 0.5, (n_open, 1, a - 1))
                found = best_numeric(parent, bins, cuts, pairs, "gini", one)
            per_feature.append(found)
        best = combine(*per_feature)  # a schema has at least one feature
        best.gain = np.where(best.gain > 0, best.gain, -np.inf)
        return best

    # -- growing --------------------------------------------------------------------
    def _split(
        self, node: int, s: int, best: Best, dense: FloatArray, min_count: float
    ) -> list[int]:
        f = int(best.feature[s])
        if not self.binary:
            table = dense[s, f, : int(self.arity[f])]
            values = np.flatnonzero(_present(table.sum(axis=1), min_count))
            kids = [self._child(node, f, table[v]) for v in values.tolist()]
            self.splits[node] = _Split(
                f, "multiway", kids, [[v] for v in values.tolist()]
            )
        else:
            left = np.maximum(best.left[s], 0.0)
            right = np.maximum(dense[s, f].sum(axis=0) - left, 0.0)
            kids = [self._child(node, f, left), self._child(node, f, right)]
            if np.isnan(best.threshold[s]):
                self.splits[node] = _Split(f, "set", kids, [best.codes[s].tolist()])
            else:
                self.splits[node] = _Split(
                    f, "numeric", kids, [], float(best.threshold[s])
                )
        return [k for k in kids if self._opens(k, min_count)]

    def _child(self, parent: int, feature: int, counts: FloatArray) -> int:
        used = self.used[parent].copy()
        used[feature] = True
        self.depth.append(self.depth[parent] + 1)
        self.counts.append(np.asarray(counts, dtype=np.float64).copy())
        self.used.append(used)
        self.splits.append(None)
        return len(self.depth) - 1

    def _opens(self, node: int, min_count: float) -> bool:
        features_left = self.binary or not bool(self.used[node].all())
        return (
            self.depth[node] < self.max_depth
            and features_left
            and self._splittable(node, min_count)
        )

    # -- building -------------------------------------------------------------------
    def _stats(self, node: int) -> NodeStats:
        counts = np.nan_to_num(self.counts[node], nan=0.0)
        purity = gini(counts) if self.binary else entropy(counts)
        return NodeStats.from_class_counts(counts, float(purity))

    def _build(self, stats: Any, meta: dict[str, Any]) -> Tree:
        builder = TreeBuilder(
            n_features=int(self.arity.shape[0]),
            classes=meta.get("classes", np.arange(self.n_classes)),
            feature_names=meta.get("feature_names"),
            categories=meta.get("categories"),
        )
        builder.add_root(stats(0))
        for node, split in enumerate(self.splits):
            if split is None:
                continue
            kids = split.children
            if split.kind == "multiway":
                branches = [
                    (c, stats(k)) for c, k in zip(split.codes, kids, strict=True)
                ]
                builder.split_categorical(node, split.feature, branches, None)
            elif split.kind == "set":
                branch = [(split.codes[0], stats(kids[0]))]
                builder.split_categorical(node, split.feature, branch, stats(kids[1]))
            else:
                builder.split_numeric(
                    node, split.feature, split.threshold, stats(kids[0]), stats(kids[1])
                )
        return builder.build()


def check_significance(value: object, owner: str) -> float | None:
    """Return ``significance`` checked: None, or a level in (0, 1].

    Examples
    --------
    >>> check_significance(0.01, "fit_id3"), check_significance(None, "fit_id3")
    (0.01, None)
    """
    if value is None:
        return None
    return check_float(
        value, "significance", owner, min_value=0.0, min_inclusive=False, max_value=1.0
    )


def split_p_value(table: npt.ArrayLike) -> float:
    """P-value of a split's G-test of independence of value and class.

    ``table`` (values × classes) holds the counts of a node's rows per value of
    the split feature and class. The G statistic ``2·Σ t·ln(t/e)`` (``e``: the
    counts expected if value and class were independent) is compared with a
    chi-square law of ``(values − 1)·(classes − 1)`` degrees of freedom,
    counting the values and classes with rows. **Decision** (beyond the
    paper; Quinlan's ID3 proposed a chi-square test for noisy data): a split
    that does not reject independence fits label noise, not the class. 1.0
    when the table has fewer than two values or two classes.

    Examples
    --------
    >>> f"{split_p_value([[30, 10], [10, 30]]):.1e}"
    '4.8e-06'
    >>> round(split_p_value([[20, 20], [21, 19]]), 3), split_p_value([[5, 0]])
    (0.823, 1.0)
    """
    t = np.asarray(table, dtype=np.float64)
    t = t[t.sum(axis=1) > 0][:, t.sum(axis=0) > 0]
    df = (t.shape[0] - 1) * (t.shape[1] - 1)
    if df <= 0:
        return 1.0
    expected = np.outer(t.sum(axis=1), t.sum(axis=0)) / t.sum()
    g = 2.0 * float(np.sum(xlogy(t, t) - xlogy(t, expected)))
    return float(chi2.sf(g, df))


def _present(counts: FloatArray, min_count: float) -> BoolArray:
    """Values (or nodes) that count as seen: positive and at least ``min_count``."""
    result: BoolArray = (counts > 0) & (counts >= min_count)
    return result


def _choose_multiway(layout: Layout, dense: FloatArray, min_count: float) -> Best:
    """ID3's choice: the feature of highest information gain (first on ties)."""
    n_value = dense.sum(axis=-1)  # (S, F, A)
    seen = np.where(_present(n_value, min_count)[..., None], dense, 0.0)
    n_value = seen.sum(axis=-1)
    n = n_value.sum(axis=-1)
    children = (n_value * entropy(seen)).sum(axis=-1) / np.where(n > 0, n, 1.0)
    gain = entropy(seen.sum(axis=-2)) - children
    candidate = layout.allowed & ((n_value > 0).sum(axis=-1) >= 2)
    gain = np.where(candidate, gain, -np.inf)
    top = gain.max(axis=1, initial=-np.inf)
    first = np.argmax(gain >= (top - TIE_TOLERANCE)[:, None], axis=1)
    s, c = dense.shape[0], dense.shape[-1]
    found = Best.none(s, c)
    found.gain = top
    found.feature = np.where(np.isfinite(top), first, -1)
    return found
