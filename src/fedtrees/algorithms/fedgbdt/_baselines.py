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

from fedtrees.algorithms._phased import Step
from fedtrees.algorithms.fedgbdt._bounds import leaf_reach
from fedtrees.algorithms.fedgbdt._decisions import KIND_LEAF, Decisions
from fedtrees.algorithms.fedgbdt._grow import Iteration
from fedtrees.algorithms.fedgbdt._payloads import LocalReply, LocalRequest
from fedtrees.algorithms.fedgbdt._run import BoostRun, agree_start, ask_start
from fedtrees.algorithms.fedgbdt._strategy import FedGBDTStrategy, Phase
from fedtrees.federation import Payload, RoundPlan, as_reply

__all__ = ["BaselineStrategy"]


class BaselineStrategy(FedGBDTStrategy):
    """Bagging or cyclic boosting (``config.protocol``); see the module docstring.

    The table: FedGBDT's start, then :attr:`Phase.LOCAL` rounds.
    """

    def expected_rounds(self) -> int:
        """Return the start and one round per ``trees_per_round`` trees."""
        return 1 + self._rounds

    @property
    def _rounds(self) -> int:
        return math.ceil(self.config.n_estimators / self.config.trees_per_round)

    def steps(self) -> Mapping[Phase, Step[BoostRun, Phase]]:
        """Return the table: the start, then the clients' own trees."""
        return {
            Phase.START: Step(ask_start, _started),
            Phase.LOCAL: Step(self._ask_local, _absorb_local),
        }

    def _ask_local(self, run: BoostRun) -> RoundPlan | None:
        """Ask the clients (all, or one in turn) for their trees; None when done."""
        done = run.tree_rounds  # rounds of trees so far
        if done >= self._rounds or not run.active:
            return None
        who = (
            run.active
            if run.config.protocol == "bagging"
            else [run.active[done % len(run.active)]]
        )
        requests = {c: _local(run, c, full=False) for c in who}
        return RoundPlan(
            requests,
            run.config.on_dropout,
            resync=lambda c: _local(run, c, True),
            check=run.known.local_check(run.config),
        )


def _started(run: BoostRun, replies: Mapping[str, Payload]) -> Phase:
    agree_start(run, replies)
    return Phase.LOCAL


def _local(run: BoostRun, client: str, full: bool) -> LocalRequest:
    c = run.config
    k = min(c.trees_per_round, c.n_estimators)
    first = len(run.iterations)
    return LocalRequest(
        first=first,
        features=np.stack([run.features(first + j) for j in range(k)]),
        max_depth=c.max_depth,
        learning_rate=c.learning_rate,
        reg_lambda=c.reg_lambda,
        gamma=c.gamma,
        min_child_weight=c.min_child_weight,
        **run.model_fields(client, full),
    )


def _absorb_local(run: BoostRun, replies: Mapping[str, Payload]) -> Phase:
    """Append every client's trees as iterations of the global model."""
    got = {c: as_reply(r, LocalReply) for c, r in replies.items()}
    for client in got:
        run.held[client] = len(run.decisions)
    _record(run, got)
    for client in sorted(got):  # deterministic: by client id
        _append(run, got[client])
    run.tree_rounds += 1
    return Phase.LOCAL


def _record(run: BoostRun, got: Mapping[str, LocalReply]) -> None:
    """Record the global model's pooled losses before this round."""
    if not run.iterations:
        return
    loss = run.loss
    total = np.sum([r.loss for r in got.values()], axis=0)
    run.progress.train.append(loss.summary(total[0], total[1]))
    run.progress.valid.append(loss.summary(total[2], total[3]))


def _append(run: BoostRun, reply: LocalReply) -> None:
    """Renumber a client's trees after the global ones and keep them."""
    grown = Decisions.from_fields(reply)
    cover = np.asarray(reply.cover, np.float64)  # checked: one per decision
    for local in np.unique(grown.iteration):
        rows = np.flatnonzero(grown.iteration == local)
        one = grown.after(int(rows[0])).first(rows.shape[0])
        number = len(run.iterations)
        one = Decisions(
            np.full(len(one), number, np.int64), one.node, one.kind, one.feature,
            one.bin, one.missing_left, one.left, one.right, one.value,
            one.set_ptr, one.set_codes,
        )  # fmt: skip
        run.iterations.append(
            Iteration.from_decisions(
                one, cover[rows], run.config.n_trees_per_iteration,
                run.config.max_depth,
            )
        )  # fmt: skip
        run.decisions = run.decisions.then(one)
        run.known.moved(leaf_reach(one.value[one.kind == KIND_LEAF]))
