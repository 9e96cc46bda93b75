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
losses before the round (``evals_result_``). Both are held to the site's
start prior (:mod:`._bounds`): its loss weights and losses, and for squared
error its leaves; a model that moves predictions too far for the sums to hold
(bagging overshoots the residual when many sites each fit all of it) stops
the fit with an error naming the protocol.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from fedtrees.algorithms.fedgbdt._bounds import leaf_reach
from fedtrees.algorithms.fedgbdt._decisions import KIND_LEAF, Decisions
from fedtrees.algorithms.fedgbdt._grow import Iteration
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
            requests,
            self.config.on_dropout,
            resync=lambda c: self._local(c, True),
            check=self.known.local_check(self.config),
        )

    def aggregate(self, round: int, replies: Mapping[str, Payload]) -> None:
        """Append every client's trees as iterations of the global model."""
        if not self.started:
            self.active = [c for c in self.active if c in replies]
            self._agree({c: as_reply(r, StartReply) for c, r in replies.items()})
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
        c = self.config
        k = min(c.trees_per_round, c.n_estimators)
        first = len(self.iterations)
        return LocalRequest(
            first=first,
            features=np.stack([self._features(first + j) for j in range(k)]),
            max_depth=c.max_depth,
            learning_rate=c.learning_rate,
            reg_lambda=c.reg_lambda,
            gamma=c.gamma,
            min_child_weight=c.min_child_weight,
            **self._model_fields(client, full),
        )

    def _record(self, got: Mapping[str, LocalReply]) -> None:
        """Record the global model's pooled losses before this round."""
        if not self.iterations:
            return
        loss = self._loss
        total = np.sum([r.loss for r in got.values()], axis=0)
        self.progress.train.append(loss.summary(total[0], total[1]))
        self.progress.valid.append(loss.summary(total[2], total[3]))

    def _append(self, reply: LocalReply) -> None:
        """Renumber a client's trees after the global ones and keep them."""
        grown = Decisions.from_fields(reply)
        cover = np.asarray(reply.cover, np.float64)  # checked: one per decision
        for local in np.unique(grown.iteration):
            rows = np.flatnonzero(grown.iteration == local)
            one = grown.after(int(rows[0])).first(rows.shape[0])
            number = len(self.iterations)
            one = Decisions(
                np.full(len(one), number, np.int64), one.node, one.kind, one.feature,
                one.bin, one.missing_left, one.left, one.right, one.value,
                one.set_ptr, one.set_codes,
            )  # fmt: skip
            self.iterations.append(
                Iteration.from_decisions(
                    one, cover[rows], self.config.n_trees_per_iteration,
                    self.config.max_depth,
                )
            )  # fmt: skip
            self.decisions = self.decisions.then(one)
            self.known.moved(leaf_reach(one.value[one.kind == KIND_LEAF]))
