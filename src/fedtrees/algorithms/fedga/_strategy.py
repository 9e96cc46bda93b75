"""FedGA-Tree's server: Algorithm 1 on the round loop (docs/fedga.md).

Rounds (:class:`._state.FedGAPhase`, one step each): 1 init (depth votes,
noisy sizes), 2 local structures (and regression votes), 2 + g for generation
g = 1..G, G + 3 final choice (each client fits and keeps its personal tree),
G + 4 the personal trees of the clients that chose.
Every round tolerates dropouts (``on_dropout="continue"``): a client missing a
generation is simply not active in it; a client missing the last round, or
whose tree is refused, has no tree in the result.

**Decisions** (to be named in the estimators' docstrings):

- the global depth is the *lower* median of the proposed depths (an integer
  depth someone proposed);
- a noisy size below 1 weighs as 1;
- a generation's active set is ``max(1, round(c·|eligible|))`` clients drawn
  with ``[seed, 15, g]``; eligible are the clients of the start and those whose
  join generation has come;
- random structures of the initial population use ``[seed, 14]``; the
  crossover and mutations of generation g use ``[seed, 16, g]``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fedtrees._random import keyed_rng
from fedtrees._typing import IntArray
from fedtrees._validation import invalid
from fedtrees.algorithms._phased import PhasedStrategy, Step
from fedtrees.algorithms.fedga._encoding import random_structure, structure_length
from fedtrees.algorithms.fedga._evaluate import positive_code
from fedtrees.algorithms.fedga._operators import (
    crossover,
    mutate_population,
    mutation_count,
    update,
)
from fedtrees.algorithms.fedga._payloads import (
    ChoiceReply,
    EvaluateRequest,
    FinalRequest,
    FitnessReply,
    InitReply,
    InitRequest,
    JoinReply,
    JoinRequest,
    LocalReply,
    LocalRequest,
    TreeReply,
    TreeRequest,
)
from fedtrees.algorithms.fedga._state import (
    ACTIVE_STREAM,
    BREED_STREAM,
    POPULATION_STREAM,
    ROUNDS_BESIDE_GENERATIONS,
    FedGAPhase,
    FedGAResult,
    FedGASettings,
    FedGAState,
    no_structures,
)
from fedtrees.federation import FederationInfo, Payload, RoundPlan, as_reply

__all__ = [
    "ROUNDS_BESIDE_GENERATIONS",
    "FedGAPhase",
    "FedGAResult",
    "FedGASettings",
    "FedGAState",
    "FedGAStrategy",
]


class FedGAStrategy(PhasedStrategy[FedGAState, FedGAPhase]):
    """Server of Algorithm 1 (steps 3-49): the rounds of :class:`FedGAPhase`.

    Init, the local structures, G generations, the final choice, the
    personal trees (the module docstring).
    """

    first = FedGAPhase.INIT

    def __init__(self, settings: FedGASettings) -> None:
        super().__init__()
        self.s = settings
        self.maximize = settings.task == "classification"

    def begin(self, info: FederationInfo) -> FedGAState:
        """Remember the clients, the labels and the number of features."""
        schema = info.schema
        classes = np.asarray(schema.classes or (), dtype=str)
        starters = [c for c in info.clients if c not in self.s.join_at]
        self._check_folds(info)
        n_classes = int(classes.shape[0]) if self.s.task == "classification" else 0
        positive_code(self.s.f1_average, n_classes, "FedGAClassifier")
        return FedGAState(
            self.s,
            self.maximize,
            info.clients,
            classes,
            schema.n_features,
            starters,
            self.s.train_ratio,
        )

    def steps(self) -> Mapping[FedGAPhase, Step[FedGAState, FedGAPhase]]:
        """Return the table: init, local, the generations, final, trees."""
        return {
            FedGAPhase.INIT: Step(_ask_init, _absorb_init),
            FedGAPhase.LOCAL: Step(_ask_local, _absorb_local),
            FedGAPhase.GENERATION: Step(_ask_generation, _absorb_generation),
            FedGAPhase.FINAL: Step(_ask_final, _absorb_final),
            FedGAPhase.TREES: Step(_ask_trees, _absorb_trees),
        }

    def result(self, state: FedGAState) -> FedGAResult:
        """Return the final population and the clients' choices."""
        st = state
        return FedGAResult(
            st.depth,
            st.population,
            st.fitness,
            dict(st.choices),
            dict(st.client_fitness),
            list(st.history),
            st.train_ratio,
            st.elitism,
            dict(st.spent),
            dict(st.trees),
        )

    def expected_rounds(self) -> int:
        """Return init, local, G generations, the final round and the trees'."""
        return ROUNDS_BESIDE_GENERATIONS + self.s.n_generations

    def round_metrics(self, round: int) -> dict[str, float]:
        """Return the best and mean fitness after a generation."""
        history = self.state.history
        if self.last_phase is FedGAPhase.GENERATION and history:
            best, mean = history[-1]
            return {"best": best, "mean": mean}
        return {}

    def _check_folds(self, info: FederationInfo) -> None:
        """Refuse ``cv_folds`` above every client's declared row bound.

        K-fold CV needs ``cv_folds`` rows per client; the agreement bounds each
        client's rows from above, so no client could make that many folds.
        """
        bounds = [info.row_bounds[c] for c in info.clients if c in info.row_bounds]
        if bounds and self.s.cv_folds > max(bounds):
            raise invalid(
                "cv_folds",
                "FedGA",
                "at most the rows of a client (K-fold cross-validation makes "
                "cv_folds folds of every client's rows, and no client holds that "
                "many)",
                self.s.cv_folds,
            )


# -- initialization (steps 3-25) ---------------------------------------------------
def _ask_init(st: FedGAState) -> RoundPlan:
    low, high = st.settings.depth_range
    request = InitRequest(
        st.settings.task,
        st.classes,
        low,
        high,
        st.settings.cv_folds,
        st.settings.epsilon,
        st.settings.seed,
        st.settings.f1_average,
    )
    return RoundPlan.broadcast(request, st.starters, "continue")


def _absorb_init(st: FedGAState, replies: Mapping[str, Payload]) -> FedGAPhase:
    depths = []
    for client, reply in sorted(replies.items()):
        init = as_reply(reply, InitReply)
        depths.append(init.depth)
        st.sizes[client] = max(init.noisy_size, 1.0)
        st.spent[client] = init.epsilon_spent
    if not depths:
        raise RuntimeError("FedGA: no client answered the initialization.")
    ordered = sorted(depths)
    st.depth = int(ordered[(len(ordered) - 1) // 2])  # the lower median
    return FedGAPhase.LOCAL


def _ask_local(st: FedGAState) -> RoundPlan:
    low, high = st.settings.depth_range
    request = LocalRequest(
        st.settings.task,
        st.classes,
        st.depth,
        st.n_features,
        low,
        high,
        st.settings.cv_folds,
        st.settings.phi_star,
        st.settings.theta_star,
        st.settings.mu_star,
        st.settings.seed,
    )
    return RoundPlan.broadcast(request, list(st.sizes), "continue")


def _absorb_local(st: FedGAState, replies: Mapping[str, Payload]) -> FedGAPhase:
    votes = []
    for client, reply in sorted(replies.items()):
        local = as_reply(reply, LocalReply)
        st.locals[client] = local.structure
        votes.append((local.vote_ratio, local.vote_elitism))
    if st.settings.task == "regression" and votes:
        half = len(votes) / 2
        if sum(v[0] for v in votes) > half:
            st.train_ratio = 1.0
        st.elitism = sum(v[1] for v in votes) > half
    rng = keyed_rng(st.settings.seed, POPULATION_STREAM)
    n_random = max(st.settings.population_size - len(st.locals), 0)
    randoms = [
        random_structure(rng, st.depth, st.n_features, st.settings.nil_rate)
        for _ in range(n_random)
    ]
    st.candidates = np.vstack([*st.locals.values(), *randoms])
    st.population = no_structures(structure_length(st.depth))
    st.fitness = np.empty(0)
    return _after_generation(st)


# -- generations (steps 26-43) -----------------------------------------------
def _ask_generation(st: FedGAState) -> RoundPlan:
    g = st.generation + 1
    s = st.settings
    eligible = [c for c in st.clients if c in st.sizes or s.join_at.get(c, 0) <= g]
    rng = keyed_rng(s.seed, ACTIVE_STREAM, g)
    n_active = max(1, round(s.client_fraction * len(eligible)))
    active = sorted(rng.choice(eligible, size=n_active, replace=False).tolist())
    known = EvaluateRequest(
        s.task,
        st.classes,
        st.candidates,
        st.depth,
        st.train_ratio,
        s.seed,
        s.f1_average,
    )
    new = JoinRequest(
        s.task,
        st.classes,
        st.candidates,
        st.depth,
        st.n_features,
        st.train_ratio,
        s.epsilon,
        s.seed,
        s.f1_average,
    )
    requests: dict[str, Payload] = {
        client: known if client in st.sizes else new for client in active
    }
    return RoundPlan(requests, "continue")


def _absorb_generation(st: FedGAState, replies: Mapping[str, Payload]) -> FedGAPhase:
    st.generation += 1
    _fold_generation(st, st.generation, replies)
    return _after_generation(st)


def _after_generation(st: FedGAState) -> FedGAPhase:
    """Return the next generation while any is left, else the final round."""
    if st.generation < st.settings.n_generations:
        return FedGAPhase.GENERATION
    return FedGAPhase.FINAL


def _fold_generation(st: FedGAState, g: int, replies: Mapping[str, Payload]) -> None:
    fitness, weights, joined = [], [], []
    for client, reply in sorted(replies.items()):
        assert isinstance(reply, FitnessReply | JoinReply)
        if isinstance(reply, JoinReply):
            st.sizes[client] = max(reply.noisy_size, 1.0)
            st.spent[client] = reply.epsilon_spent
            st.locals[client] = reply.structure
            joined.append((reply.structure, reply.local_fitness))
        fitness.append(reply.fitness)
        weights.append(st.sizes[client])
    if not fitness:
        return  # nobody answered: the generation changes nothing
    scores = np.average(np.vstack(fitness), axis=0, weights=weights)  # step 37
    candidates = st.candidates
    if joined:  # step 38
        candidates = np.vstack([candidates, *[s[None, :] for s, _ in joined]])
        scores = np.concatenate([scores, [f for _, f in joined]])
    st.population, st.fitness = update(  # step 39
        st.population,
        st.fitness,
        candidates,
        scores,
        st.settings.population_size,
        maximize=st.maximize,
    )
    st.history.append((float(st.fitness[0]), float(np.mean(st.fitness))))
    st.candidates = _breed(st, g)


def _breed(st: FedGAState, g: int) -> IntArray:
    """Breed the next candidates: steps 41-42 (plus the locals under elitism)."""
    rng = keyed_rng(st.settings.seed, BREED_STREAM, g)
    width = st.population.shape[1]
    offspring = crossover(
        rng,
        st.population,
        st.fitness,
        st.settings.tournament_size,
        maximize=st.maximize,
    )
    mutated = mutate_population(
        rng,
        offspring,
        st.n_features,
        mutation_count(st.settings.flip_rate, width),
        mutation_count(st.settings.swap_rate, width),
    )
    if st.elitism:
        mutated = np.vstack([mutated, *[s[None, :] for s in st.locals.values()]])
    return mutated


# -- the final choice and the personal trees ------------------------------------
def _ask_final(st: FedGAState) -> RoundPlan:
    s = st.settings
    final = FinalRequest(
        s.task,
        st.classes,
        st.population,
        st.depth,
        st.train_ratio,
        s.seed,
        s.f1_average,
        st.maximize,
    )
    return RoundPlan.broadcast(final, sorted(st.sizes), "continue")


def _absorb_final(st: FedGAState, replies: Mapping[str, Payload]) -> FedGAPhase | None:
    for client, reply in replies.items():
        choice = as_reply(reply, ChoiceReply)
        st.choices[client] = choice.choice
        st.client_fitness[client] = choice.fitness
    return FedGAPhase.TREES if st.choices else None


def _ask_trees(st: FedGAState) -> RoundPlan:
    """Ask every client that chose for its tree, with all it needs to refit it."""
    st.asked = {
        client: TreeRequest(
            st.settings.task,
            st.classes,
            st.population[choice],
            st.depth,
            st.n_features,
            st.train_ratio,
            st.settings.seed,
        )
        for client, choice in sorted(st.choices.items())
    }
    return RoundPlan(dict(st.asked), "continue")


def _absorb_trees(st: FedGAState, replies: Mapping[str, Payload]) -> None:
    for client, reply in replies.items():
        st.trees[client] = st.asked[client].tree(as_reply(reply, TreeReply))
    return
