"""Flower's federated boosting baselines, on FedGBDT's grid and learner.

So that only the protocol differs from FedGBDT (the comparison nobody
publishes), the baselines agree the same grid and prior (the start round) and
grow trees with the same learner (:func:`._learner.boost_locally`), each
client on its own rows only, from the global model:

- **bagging** (Flower's ``FedXgbBagging``): every round, every client boosts
  ``trees_per_round`` trees from the global model; the server appends all of
  them (the model grows by ``clients × trees_per_round`` trees per round);
- **cyclic** (Flower's ``FedXgbCyclic``): every round, one client (in turn)
  boosts ``trees_per_round`` trees from the global model; the server appends
  them.

Rounds after the agreement: the start, then ``ceil(n_estimators /
trees_per_round)`` rounds. Each reply also carries the global model's pooled
losses before the round (``evals_result_``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from fedtrees._typing import FloatArray
from fedtrees.algorithms.fedgbdt._decisions import KIND_LEAF, Decisions
from fedtrees.algorithms.fedgbdt._grow import LEAF, SPLIT, Iteration
from fedtrees.algorithms.fedgbdt._loss import LOSSES
from fedtrees.algorithms.fedgbdt._payloads import LocalReply, LocalRequest, StartReply
from fedtrees.algorithms.fedgbdt._strategy import FedGBDTStrategy
from fedtrees.federation import Payload, RoundPlan, as_reply

__all__ = ["BaselineStrategy"]


class BaselineStrategy(FedGBDTStrategy):
    """Bagging or cyclic boosting (``config.protocol``); see the module docstring."""

    def expected_rounds(self) -> int:
        """Return the start and one round per ``trees_per_round`` trees."""
        return 1 + self._rounds

    @property
    def _rounds(self) -> int:
        return math.ceil(self.config.n_estimators / self.config.trees_per_round)

    def plan_round(self, round: int) -> RoundPlan | None:
        """Ask the start, then the clients (all, or one in turn) for their trees."""
        if not self.started:
            return super().plan_round(round)
        done = round - 2  # rounds of trees so far (round 1: the start)
        if done >= self._rounds or not self.active:
            return None
        who = (
            self.active
            if self.config.protocol == "bagging"
            else [self.active[done % len(self.active)]]
        )
        requests = {c: self._local(c, full=False) for c in who}
        return RoundPlan(
            requests, self.config.on_dropout, resync=lambda c: self._local(c, True)
        )

    def aggregate(self, round: int, replies: Mapping[str, Payload]) -> None:
        """Append every client's trees as iterations of the global model."""
        if not self.started:
            self.active = [c for c in self.active if c in replies]
            self._agree([as_reply(r, StartReply) for r in replies.values()])
            self.current = None
            self.started = True
            return
        got = {c: as_reply(r, LocalReply) for c, r in replies.items()}
        for client in got:
            self.held[client] = len(self.decisions)
        self._record(got)
        for client in sorted(got):  # deterministic: by client id
            self._append(got[client])

    def _local(self, client: str, full: bool) -> LocalRequest:
        assert self.info is not None
        assert self.grid is not None
        c = self.config
        base = 0 if full else self.held.get(client, 0)
        send_grid = full or base == 0
        k = min(c.trees_per_round, c.n_estimators)
        first = len(self.iterations)
        features = np.stack([self._features(first + j) for j in range(k)])
        return LocalRequest(
            fit_id=self.fit_id, seed=c.seed, objective=c.objective,
            classes=np.asarray(self.info.schema.classes, dtype=str),
            holdout=c.holdout, n_trees=c.n_trees_per_iteration, first=first,
            base=base, full=full, margin=self.margin,
            **self.decisions.after(base).as_fields(), features=features,
            max_depth=c.max_depth, learning_rate=c.learning_rate,
            reg_lambda=c.reg_lambda, gamma=c.gamma,
            min_child_weight=c.min_child_weight, feature_bins=self.grid.n_bins,
            grid_edges=self.grid.edges if send_grid else np.zeros(0),
            grid_edge_ptr=self.grid.edge_ptr if send_grid else np.zeros(0, np.int64),
        )  # fmt: skip

    def _record(self, got: Mapping[str, LocalReply]) -> None:
        """Record the global model's pooled losses before this round."""
        if not self.iterations:
            return
        loss = LOSSES[self.config.objective]
        total = np.sum([r.loss for r in got.values()], axis=0)
        self.progress.train.append(loss.summary(total[0], total[1]))
        self.progress.valid.append(loss.summary(total[2], total[3]))

    def _append(self, reply: LocalReply) -> None:
        """Renumber a client's trees after the global ones and keep them."""
        grown = Decisions.from_fields(reply)
        cover = np.asarray(reply.cover, np.float64)
        if cover.shape[0] != len(grown):
            return  # nothing consistent to add (the reply check keeps shapes)
        for local in np.unique(grown.iteration):
            rows = np.flatnonzero(grown.iteration == local)
            one = grown.after(int(rows[0])).first(rows.shape[0])
            number = len(self.iterations)
            one = Decisions(
                np.full(len(one), number, np.int64), one.node, one.kind, one.feature,
                one.bin, one.missing_left, one.left, one.right, one.value,
                one.set_ptr, one.set_codes,
            )  # fmt: skip
            self.iterations.append(_iteration(number, one, cover[rows], self))
            self.decisions = self.decisions.then(one)


def _iteration(
    number: int, table: Decisions, cover: FloatArray, strategy: FedGBDTStrategy
) -> Iteration:
    """Rebuild a grown iteration from its decisions (for the fitted trees)."""
    n_trees = strategy.config.n_trees_per_iteration
    size = 1 + int(max(table.node.max(initial=0), table.left.max(initial=0),
                       table.right.max(initial=0), n_trees - 1))  # fmt: skip
    it = Iteration.start(number, n_trees, strategy.config.max_depth)
    extra = size - n_trees
    if extra > 0:
        it._append(
            np.zeros(extra, np.int64), np.zeros(extra, np.int64),
            np.full(extra, -1, np.int64), np.zeros((extra, 3)),
        )  # fmt: skip
    it.status[:] = LEAF
    it.value = np.zeros(size)
    it.stats[table.node, 2] = cover
    for i in range(len(table)):
        g = int(table.node[i])
        if table.kind[i] == KIND_LEAF:
            it.status[g] = LEAF
            it.value[g] = table.value[i]
            continue
        it.status[g] = SPLIT
        it.kind[g] = table.kind[i]
        it.feature[g], it.bin[g] = table.feature[i], table.bin[i]
        it.missing_left[g] = table.missing_left[i]
        it.left[g], it.right[g] = table.left[i], table.right[i]
        lo, hi = table.set_ptr[i], table.set_ptr[i + 1]
        if hi > lo:
            it.sets[g] = table.set_codes[lo:hi]
    return it
