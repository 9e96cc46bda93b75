"""Turning a step's :class:`._steps.Ask` into a round's requests (protocol v2).

per-run client state, :mod:`fedtrees.federation._state`. Each client is asked only about
the nodes it may reach (:meth:`._state.LevelState.rows_for`); clients asked about the
same nodes share one payload, encoded once, unless the step's fields differ per client.
Every request carries the same forest delta (the splits since the last request); a
client that lost its state answers a resync and is sent the full form in the same round.
The first request of a fit goes out in full form, since no client holds a forest yet.
Where every asked node has one client the round may fold (:class:`._fold.FoldPolicy`).
Under secure aggregation every client is asked about every node and the
round is masked (docs/security.md): the builder starts the masked round and
adds its fields to every request. Each reply is checked against the client's
earlier totals (:mod:`._consistency`) and its sketch's pairs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fedtrees._typing import IntArray
from fedtrees.algorithms.fedforest._fold import FoldPolicy
from fedtrees.algorithms.fedforest._growth import ForestGrowth
from fedtrees.algorithms.fedforest._layout import compact_ints
from fedtrees.algorithms.fedforest._payloads import LevelFields
from fedtrees.algorithms.fedforest._phase import Phase
from fedtrees.algorithms.fedforest._reach import boxes
from fedtrees.algorithms.fedforest._sketch_payloads import SketchReply
from fedtrees.algorithms.fedforest._state import LevelState
from fedtrees.algorithms.fedforest._steps import Ask
from fedtrees.federation import InvalidField, Payload, RoundPlan

__all__ = ["Planned", "RequestBuilder"]

Check = Callable[[str, Payload, Payload], None]


@dataclass(frozen=True, eq=False)
class Planned:
    """A round's plan, and the phase of the step that absorbs it.

    ``phase`` is the ask's fold phase where the round folded, else None (the
    planning step absorbs it).
    """

    plan: RoundPlan
    folded: Phase | None


class RequestBuilder:
    """Build each round's requests from a step's ask (see the module docstring)."""

    def __init__(self, fold: FoldPolicy) -> None:
        self.fold = fold
        self.started = False

    def build(self, ask: Ask, state: LevelState) -> Planned:
        """Return the round's requests; record what each client is asked.

        Records in ``state`` the positions each client is asked about and,
        whenever a request is built (a resync rebuilds it), what its fields
        returned for the step to read back with the reply.
        """
        g = state.growth
        nodes = g.open if ask.nodes is None else ask.nodes
        shared = state.deltas.delta_fields()  # the next version: once a round
        rows = state.rows_for(nodes)
        active = [rows[state.index[c]] for c in state.active]
        folded = ask.fold if ask.fold and self.fold.folds(ask, active) else None
        request = folded.request if folded else ask.request
        state.asked = dict(zip(state.clients, rows, strict=True))
        masked = None
        if ask.masked is None:
            state.masks.plain()
        else:
            masked = state.masks.start(state.active, ask.masked, wide=ask.masked_wide)
        mask_fields = {} if masked is None else masked.fields()
        made: dict[bytes, Payload] = {}
        shareable = not ask.per_client

        def build(client: str, full: bool = False) -> Payload:
            r, k = state.asked[client], state.index[client]
            key = r.tobytes()
            if shareable and not full and key in made:
                return made[key]
            fields, kept = ask.fields(k, r, full)
            payload: Payload = request(
                **(state.deltas.full_fields(client) if full else shared),
                open_nodes=compact_ints(nodes[r]),
                pair_feature=compact_ints(ask.pairs[r]),
                **fields,
                **mask_fields,
            )
            if kept is not None:
                state.layouts[k] = kept
            if shareable and not full:
                made[key] = payload
            return payload

        def full(client: str) -> Payload:
            return build(client, full=True)

        first = not self.started
        self.started = not ask.preamble  # after a preamble, full again
        requests = {c: build(c, full=first) for c in state.active}
        plan = RoundPlan(
            requests, state.config.on_dropout, full, reply_check(state), masked
        )
        return Planned(plan, folded.phase if folded else None)


def reply_check(state: LevelState) -> Check:
    """Return the round's reply check: node totals, sketched pairs.

    A sketch holds points of numeric pairs only; one with points of a
    categorical or unused pair is refused (field ``n_points``) before the
    server derives candidates from it — a folded reply's own candidates
    would otherwise not match the server's. Its points are values of the
    node's rows, so they lie where the node's path sends rows: ``low < x <=
    high`` for every split above it on that feature (field ``points``).
    """
    g = state.growth
    totals = state.totals.checker(g.parents)

    def check(client: str, request: Payload, reply: Payload) -> None:
        totals(client, request, reply)
        if isinstance(reply, SketchReply) and isinstance(request, LevelFields):
            pairs = np.asarray(request.pair_feature, dtype=np.int64)
            numeric = (pairs >= 0) & ~g.is_categorical[np.maximum(pairs, 0)]
            if np.any(np.asarray(reply.n_points)[~numeric] > 0):
                raise InvalidField(
                    "n_points", "holds points of a categorical or unused pair"
                )
            if request.level:
                _check_in_boxes(g, request, reply, pairs)

    return check


def _check_in_boxes(
    g: ForestGrowth, request: LevelFields, reply: SketchReply, pairs: IntArray
) -> None:
    """Refuse a sketch point outside the interval its node's path allows."""
    low, high = boxes(g, np.asarray(request.open_nodes, np.int64), pairs)
    counts = np.asarray(reply.n_points, np.int64).ravel()
    points = np.asarray(reply.points, np.float64)
    if counts.sum() != points.shape[0]:
        return  # the spec's ragged check refused it already
    lo, hi = np.repeat(low.ravel(), counts), np.repeat(high.ravel(), counts)
    outside = np.flatnonzero((points <= lo) | (points > hi))
    if outside.size:
        i = int(outside[0])
        raise InvalidField(
            "points",
            f"holds {float(points[i])!r} at a node whose path allows only "
            f"({float(lo[i])!r}, {float(hi[i])!r}] on that feature",
        )
