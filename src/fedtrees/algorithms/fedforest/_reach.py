"""Which open nodes each client is asked about (protocol v2, lean requests).

A client with no rows at a node has nothing to say about it, so its requests
list only the nodes it may reach: after a sketch round the server knows each
client's node weights exactly (weight > 0 iff rows are there), and a child can
only hold rows its parent held. Asking about a superset of the true nodes is
always safe (the client answers zeros); a node with no known parent is asked of
everyone. Requests and replies then grow with the client's own rows, not with
the pooled forest, and the server keeps per-client index arrays, not
clients x nodes tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedtrees._typing import IntArray

__all__ = ["Reach", "gather_ranges", "positions"]


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
