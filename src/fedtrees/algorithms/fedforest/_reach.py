"""Where a node's rows may be: which clients reach it, what its path allows.

Which open nodes each client is asked about (protocol v2, lean requests).

A client with no rows at a node has nothing to say about it, so its requests
list only the nodes it may reach: after a sketch round the server knows each
client's node weights exactly (weight > 0 iff rows are there), and a child can
only hold rows its parent held. Asking about a superset of the true nodes is
always safe (the client answers zeros); a node with no known parent is asked of
everyone. Requests and replies then grow with the client's own rows, not with
the pooled forest, and the server keeps per-client index arrays, not
clients x nodes tables. The growth's structure says the rest: every client
reaches the roots of the trees it takes part in (:func:`root_reach`), a child
of a split on the client indicator only the clients sent there
(:func:`client_sides`), and a node's path bounds each feature of its rows
(:func:`boxes`, the interval a reply's points must lie in).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedforest._growth import ForestGrowth
from fedtrees.algorithms.fedforest._kernels import SPLIT_CLIENT

__all__ = [
    "Reach",
    "boxes",
    "client_sides",
    "gather_ranges",
    "positions",
    "root_reach",
]


@dataclass(frozen=True, eq=False)
class Reach:
    """Per client, the positions in ``nodes`` where it may have rows."""

    nodes: IntArray
    rows: tuple[IntArray, ...]

    def rows_for(self, nodes: IntArray, parent: IntArray) -> tuple[IntArray, ...]:
        """Return, per client, the positions in ``nodes`` it may reach.

        A node known here keeps its own answer; otherwise its parent's
        (``parent[i]``, -1 if none); a node with neither is asked of everyone.
        """
        key = positions(self.nodes, nodes)
        via_parent = key < 0
        key[via_parent] = positions(self.nodes, parent[via_parent])
        unknown = np.flatnonzero(key < 0)
        order = np.argsort(key, kind="stable")
        ptr = np.searchsorted(key[order], np.arange(self.nodes.shape[0] + 1))
        out = []
        for known in self.rows:
            found = order[gather_ranges(ptr[known], ptr[known + 1])]
            # disjoint (unknown nodes have no key), each without repeats
            out.append(np.sort(np.concatenate([found, unknown])).astype(np.int64))
        return tuple(out)


def positions(sorted_ids: IntArray, ids: IntArray) -> IntArray:
    """Position of each id in ``sorted_ids``, or -1."""
    if sorted_ids.shape[0] == 0:
        return np.full(ids.shape, -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(sorted_ids, ids), sorted_ids.shape[0] - 1)
    hit = (ids >= 0) & (sorted_ids[pos] == ids)
    return np.where(hit, pos, -1).astype(np.int64)


def gather_ranges(starts: IntArray, stops: IntArray) -> IntArray:
    """Concatenate ``arange(start, stop)`` for every pair, vectorised."""
    lengths = np.maximum(stops - starts, 0)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    out: IntArray = (offsets + np.arange(total)).astype(np.int64)
    return out


# -- what the growth's structure says ------------------------------------------
def root_reach(growth: ForestGrowth) -> Reach:
    """Clients reach the roots of the trees they take part in."""
    roots = np.arange(growth.config.n_estimators, dtype=np.int64)
    rows = tuple(
        np.flatnonzero(growth.participation[:, k]).astype(np.int64)
        for k in range(growth.clients.shape[0])
    )
    return Reach(roots, rows)


def boxes(
    growth: ForestGrowth, nodes: IntArray, features: IntArray
) -> tuple[FloatArray, FloatArray]:
    """Return ``(low, high)``: the interval each node's path allows a feature.

    ``features`` is ``(n, F')`` (-1 padding, categorical features: no
    bound); a row of node ``nodes[s]`` holds ``low < x_f <= high`` on every
    feature its numeric splits test (``x <= t`` goes left).
    """
    t = growth.table
    low = np.full(features.shape, -np.inf)
    high = np.full(features.shape, np.inf)
    parent = growth.parents(np.arange(t.tree.shape[0]))
    node = np.asarray(nodes, dtype=np.int64).copy()
    for _ in range(growth.config.max_depth):
        up = parent[node]
        if not np.any(up >= 0):
            break
        split = np.maximum(up, 0)
        f = t.feature[split]
        numeric = (up >= 0) & (f >= 0) & ~growth.is_categorical[np.maximum(f, 0)]
        tested = numeric[:, None] & (features == f[:, None])
        left = (t.left[split] == node)[:, None]
        at = t.threshold[split][:, None]
        high = np.where(tested & left, np.minimum(high, at), high)
        low = np.where(tested & ~left, np.maximum(low, at), low)
        node = np.where(up >= 0, up, node)
    return low, high


def client_sides(
    growth: ForestGrowth, nodes: IntArray, parents: IntArray
) -> tuple[IntArray, np.ndarray]:
    """Children of client-indicator splits among ``nodes``, and who reaches them.

    Returns the positions of those children in ``nodes`` and, for each,
    which clients (by code) the split sends there: the clients in the
    split's set to the left child, the others to the right.
    """
    t = growth.table
    split = (parents >= 0) & (t.feature[np.maximum(parents, 0)] == SPLIT_CLIENT)
    at = np.flatnonzero(split)
    reaches = np.zeros((at.shape[0], growth.clients.shape[0]), dtype=bool)
    for i, pos in enumerate(at):
        parent = int(parents[pos])
        reaches[i, growth.sets[parent]] = True
        if t.right[parent] == nodes[pos]:
            reaches[i] = ~reaches[i]
    return at, reaches
