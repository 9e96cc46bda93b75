"""FedForest's checks across rounds: a client's node totals must hold together.

A client's statistics of a node come from the same rows whenever it reports them
(the bootstrap and the hold-out are keyed), so:

- a node's totals never change: what a client reported for a node in a sketch
  (or leaf-statistics, uniform evaluate) round it reports again in
  the next round that gives them, and every numeric pair's bins of the evaluate
  round add up to them;
- a node's children never hold more than it: each child's totals, and the sum
  of the children a request asks about, stay within the parent's (class
  counts; for regression the non-negative moments Σw and Σw·y²);
- a client's own impurity decrease at a node (AvgImp's gains, the top-k
  shortlist's) never exceeds the impurity of its own totals there: a split
  removes at most all of it.

:class:`NodeTotals` keeps, per client, the totals of the nodes of its last
statistics reply only (its open nodes: small). Its :meth:`NodeTotals.checker`
is the round's ``RoundPlan.check``: called by the round loop on each reply that
passed its :class:`~fedtrees.federation.ReplySpec`, it raises
:class:`~fedtrees.federation.InvalidField`, which becomes that client's
:class:`~fedtrees.exceptions.RemoteProtocolError` (``on_dropout`` decides).

Like the per-reply checks, this bounds what a buggy client can do; it is not a
Byzantine defence (a client that lies consistently from the root on passes).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms._plausible import GAIN_TOLERANCE
from fedtrees.algorithms.fedforest._hist_payloads import HistogramReply
from fedtrees.algorithms.fedforest._payloads import LeafStatsReply, LevelFields
from fedtrees.algorithms.fedforest._sketch_payloads import (
    AvgImpReply,
    EvaluateReply,
    EvaluateRequest,
    SketchReply,
    TopKReply,
    TopKRequest,
)
from fedtrees.federation import Payload, check_at_most, check_same_stats
from fedtrees.stats import impurity

__all__ = ["NodeTotals"]

Parents = Callable[[IntArray], IntArray]


class NodeTotals:
    """Per client, the totals of the nodes it last reported (see the module)."""

    def __init__(self) -> None:
        self.nodes: dict[str, IntArray] = {}  # sorted node ids
        self.totals: dict[str, FloatArray] = {}  # (nodes, S), in that order

    def checker(self, parents: Parents) -> Callable[[str, Payload, Payload], None]:
        """Return a round's ``RoundPlan.check`` of ``(client, request, reply)``."""

        def check(client: str, request: Payload, reply: Payload) -> None:
            if isinstance(request, LevelFields):
                self.check(client, request, reply, parents)

        return check

    def check(
        self, client: str, request: LevelFields, reply: Payload, parents: Parents
    ) -> None:
        """Compare ``reply`` with what ``client`` reported before; remember it."""
        nodes = np.asarray(request.open_nodes, dtype=np.int64)
        regression = request.task == "regression"
        if isinstance(reply, EvaluateReply) and isinstance(request, EvaluateRequest):
            self._compare_pairs(client, nodes, request.pair_totals(reply), regression)
        gains = _gains(request, reply)
        if gains is not None:
            self._compare_gains(client, nodes, *gains)
        stats = _node_stats(reply)
        if stats is None or stats.shape[0] != nodes.shape[0]:
            return
        self._compare_nodes(client, nodes, stats, regression)
        self._compare_parents(client, nodes, stats, parents(nodes), regression)
        order = np.argsort(nodes, kind="stable")
        self.nodes[client], self.totals[client] = nodes[order], stats[order]

    def _known(self, client: str, nodes: IntArray) -> tuple[IntArray, IntArray]:
        """Positions in ``nodes`` this client reported before, and where they are."""
        known = self.nodes.get(client, np.zeros(0, np.int64))
        at = np.minimum(np.searchsorted(known, nodes), max(known.shape[0] - 1, 0))
        hit = np.flatnonzero(known[at] == nodes) if known.size else np.zeros(0, int)
        return hit, at[hit]

    def _compare_nodes(
        self, client: str, nodes: IntArray, stats: FloatArray, regression: bool
    ) -> None:
        hit, at = self._known(client, nodes)
        if hit.size:
            check_same_stats(
                "node_stats",
                stats[hit],
                self.totals[client][at],
                "a node's totals vs the earlier round's",
                regression,
            )

    def _compare_pairs(
        self, client: str, nodes: IntArray, pairs: FloatArray, regression: bool
    ) -> None:
        """Every numeric pair's bins must add up to its node's known totals."""
        hit, at = self._known(client, nodes)
        if not hit.size:
            return
        got = pairs[hit]  # (known nodes, F', S)
        want = np.broadcast_to(self.totals[client][at][:, None, :], got.shape)
        used = np.any(got != 0, axis=2, keepdims=True)
        check_same_stats(
            "bin_stats",
            np.where(used, got, want),
            want,
            "a pair's bins sum vs the node's totals of the sketch round",
            regression,
        )

    def _compare_gains(
        self, client: str, nodes: IntArray, at_node: IntArray, gains: FloatArray,
        criterion: str,
    ) -> None:  # fmt: skip
        """Each gain within the impurity of the client's own totals of its node."""
        hit, at = self._known(client, nodes)
        if not hit.size:
            return
        totals = self.totals[client][at]
        most = np.full(nodes.shape[0], np.inf)
        most[hit] = impurity(totals, criterion)  # type: ignore[arg-type]
        # rounding: relative to the impurity's scale (Σw·y²/Σw for a variance)
        scale = np.ones(nodes.shape[0])
        if criterion == "squared_error":
            scale[hit] = totals[:, 2] / np.maximum(totals[:, 0], 1e-300)
        slack = GAIN_TOLERANCE * np.maximum(np.where(np.isinf(most), 1.0, most), scale)
        check_at_most(
            "gains",
            gains,
            (most + slack)[at_node],
            "an impurity decrease vs the impurity of the client's own node totals",
        )
        check_at_most(
            "gains",
            -gains,
            slack[at_node],
            "a negative impurity decrease (its magnitude)",
        )

    def _compare_parents(
        self,
        client: str,
        nodes: IntArray,
        stats: FloatArray,
        parent: IntArray,
        regression: bool,
    ) -> None:
        """Each child, and the children together, within the parent's totals."""
        hit, at = self._known(client, parent)
        if not hit.size:
            return
        cols = [0, 2] if regression else slice(None)
        child = stats[hit][:, cols]
        above = self.totals[client][at][:, cols]
        check_at_most("node_stats", child, above, "a child node's totals")
        known = self.totals[client][:, cols]
        together = np.stack(
            [
                np.bincount(at, child[:, c], known.shape[0])
                for c in range(child.shape[1])
            ],
            axis=1,
        )
        parents = np.flatnonzero(np.bincount(at, minlength=known.shape[0]))
        check_at_most(
            "node_stats",
            together[parents],
            known[parents],
            "the children's totals together",
        )


def _gains(
    request: LevelFields, reply: Payload
) -> tuple[IntArray, FloatArray, str] | None:
    """Return a reply's impurity decreases, the open node of each, the criterion."""
    if isinstance(reply, AvgImpReply) and isinstance(request, EvaluateRequest):
        per_node = np.asarray(request.thr_count, dtype=np.int64).sum(axis=1)
        at_node = np.repeat(np.arange(per_node.shape[0]), per_node)
        return at_node, np.asarray(reply.gains, np.float64), request.criterion
    if isinstance(reply, TopKReply) and isinstance(request, TopKRequest):
        gains = np.asarray(reply.gains, np.float64)
        at_node = np.repeat(np.arange(gains.shape[0]), gains.shape[1])
        return at_node, gains.ravel(), request.criterion
    return None


def _node_stats(reply: Payload) -> FloatArray | None:
    """Return the open nodes' statistics a reply carries (None if it has none)."""
    if isinstance(reply, SketchReply | LeafStatsReply | HistogramReply):
        out: FloatArray = np.asarray(reply.node_stats, dtype=np.float64)
        return out
    if isinstance(reply, EvaluateReply) and reply.node_stats.shape[0]:
        return np.asarray(reply.node_stats, dtype=np.float64)
    return None
