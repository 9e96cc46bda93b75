"""FedGA-Tree's server: Algorithm 1 on the round loop (docs/fedga.md).

Rounds: 1 init (depth votes, noisy sizes), 2 local structures (and regression
votes), 2 + g for generation g = 1..G, G + 3 final choice (each client fits and
keeps its personal tree), G + 4 the personal trees of the clients that chose.
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
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from fedtrees._random import keyed_rng
from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import invalid
from fedtrees.algorithms.fedga._encoding import random_structure, structure_length
from fedtrees.algorithms.fedga._evaluate import Task, positive_code
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
from fedtrees.federation import FederationInfo, Payload, RoundPlan, ServerStrategy
from fedtrees.tree import Tree

__all__ = ["ROUNDS_BESIDE_GENERATIONS", "FedGAResult", "FedGASettings", "FedGAStrategy"]

ROUNDS_BESIDE_GENERATIONS: Final = 4
"""Init, local structures, the final choice and the personal trees."""
POPULATION_STREAM: Final = 14
ACTIVE_STREAM: Final = 15
BREED_STREAM: Final = 16


@dataclass(frozen=True)
class FedGASettings:
    """Validated settings (Table II)."""

    task: Task
    population_size: int
    n_generations: int
    epsilon: float
    train_ratio: float
    nil_rate: float
    tournament_size: int
    flip_rate: float
    swap_rate: float
    phi_star: float
    theta_star: float
    mu_star: float
    client_fraction: float
    cv_folds: int
    depth_range: tuple[int, int]
    seed: int
    join_at: Mapping[str, int] = field(default_factory=dict)
    f1_average: str = "macro"
    """How classification fitness and the depth CV average F1 (``._evaluate``)."""


@dataclass(frozen=True, eq=False)
class FedGAResult:
    """The final population, every client's choice and tree, the depth, the history.

    ``trees`` holds the personal trees the clients sent (class codes as labels).
    """

    depth: int
    population: IntArray
    fitness: FloatArray
    choices: dict[str, int]
    client_fitness: dict[str, float]
    history: list[tuple[float, float]]
    train_ratio: float
    elitism: bool
    epsilon_spent: dict[str, float]
    trees: dict[str, Tree]


class FedGAStrategy(ServerStrategy):
    """Server of Algorithm 1 (steps 3–49)."""

    def __init__(self, settings: FedGASettings) -> None:
        self.s = settings
        self.maximize = settings.task == "classification"
        self.sizes: dict[str, float] = {}
        self.spent: dict[str, float] = {}
        self.locals: dict[str, IntArray] = {}
        self.history: list[tuple[float, float]] = []
        self.choices: dict[str, int] = {}
        self.client_fitness: dict[str, float] = {}
        self.asked: dict[str, TreeRequest] = {}
        self.trees: dict[str, Tree] = {}
        self.train_ratio = settings.train_ratio
        self.elitism = False

    # -- the loop's interface -------------------------------------------------------
    def start(self, info: FederationInfo) -> None:
        """Remember the clients, the labels and the number of features."""
        self.clients = info.clients
        schema = info.schema
        self.classes = np.asarray(schema.classes or (), dtype=str)
        self.n_features = schema.n_features
        self.starters = [c for c in self.clients if c not in self.s.join_at]
        self._check_folds(info)
        positive_code(self.s.f1_average, self._n_classes(), "FedGAClassifier")

    def _n_classes(self) -> int:
        """Return the number of agreed classes (0 for regression)."""
        return int(self.classes.shape[0]) if self.s.task == "classification" else 0

    def _check_folds(self, info: FederationInfo) -> None:
        """Refuse ``cv_folds`` above every client's declared row bound.

        K-fold CV needs ``cv_folds`` rows per client; the agreement bounds each
        client's rows from above, so no client could make that many folds.
        """
        bounds = [info.row_bounds[c] for c in self.clients if c in info.row_bounds]
        if bounds and self.s.cv_folds > max(bounds):
            raise invalid(
                "cv_folds",
                "FedGA",
                "at most the rows of a client (K-fold cross-validation makes "
                "cv_folds folds of every client's rows, and no client holds that "
                "many)",
                self.s.cv_folds,
            )

    def expected_rounds(self) -> int:
        """Return init, local, G generations, the final round and the trees'."""
        return ROUNDS_BESIDE_GENERATIONS + self.s.n_generations

    def plan_round(self, round: int) -> RoundPlan | None:
        """Dispatch the round to its phase of Algorithm 1."""
        g = round - 2
        if round == 1:
            return RoundPlan.broadcast(self._init(), self.starters, "continue")
        if round == 2:
            return RoundPlan.broadcast(self._local(), list(self.sizes), "continue")
        if g <= self.s.n_generations:
            return self._generation(g)
        if g == self.s.n_generations + 1:
            s = self.s
            final = FinalRequest(
                s.task,
                self.classes,
                self.population,
                self.depth,
                self.train_ratio,
                s.seed,
                s.f1_average,
                self.maximize,
            )
            return RoundPlan.broadcast(final, sorted(self.sizes), "continue")
        if g == self.s.n_generations + 2 and self.choices:
            return self._ask_trees()
        return None

    def aggregate(self, round: int, replies: Mapping[str, Payload]) -> None:
        """Fold the replies of the round's phase."""
        if round == 1:
            self._fold_init(replies)
        elif round == 2:
            self._fold_local(replies)
        elif round - 2 <= self.s.n_generations:
            self._fold_generation(round - 2, replies)
        elif round - 2 == self.s.n_generations + 1:
            for client, reply in replies.items():
                assert isinstance(reply, ChoiceReply)
                self.choices[client] = reply.choice
                self.client_fitness[client] = reply.fitness
        else:
            for client, reply in replies.items():
                assert isinstance(reply, TreeReply)
                self.trees[client] = self.asked[client].tree(reply)

    def round_metrics(self, round: int) -> dict[str, float]:
        """Return the best and mean fitness after a generation."""
        if 2 < round <= 2 + self.s.n_generations and self.history:
            best, mean = self.history[-1]
            return {"best": best, "mean": mean}
        return {}

    def finish(self) -> FedGAResult:
        """Return the final population and the clients' choices."""
        return FedGAResult(
            self.depth,
            self.population,
            self.fitness,
            dict(self.choices),
            dict(self.client_fitness),
            list(self.history),
            self.train_ratio,
            self.elitism,
            dict(self.spent),
            dict(self.trees),
        )

    # -- the personal trees ----------------------------------------------------------
    def _ask_trees(self) -> RoundPlan:
        """Ask every client that chose for its tree, with all it needs to refit it."""
        self.asked = {
            client: TreeRequest(
                self.s.task,
                self.classes,
                self.population[choice],
                self.depth,
                self.n_features,
                self.train_ratio,
                self.s.seed,
            )
            for client, choice in sorted(self.choices.items())
        }
        return RoundPlan(dict(self.asked), "continue")

    # -- initialization (steps 3–25) --------------------------------------------------
    def _init(self) -> InitRequest:
        low, high = self.s.depth_range
        return InitRequest(
            self.s.task,
            self.classes,
            low,
            high,
            self.s.cv_folds,
            self.s.epsilon,
            self.s.seed,
            self.s.f1_average,
        )

    def _fold_init(self, replies: Mapping[str, Payload]) -> None:
        depths = []
        for client, reply in sorted(replies.items()):
            assert isinstance(reply, InitReply)
            depths.append(reply.depth)
            self.sizes[client] = max(reply.noisy_size, 1.0)
            self.spent[client] = reply.epsilon_spent
        if not depths:
            raise RuntimeError("FedGA: no client answered the initialization.")
        ordered = sorted(depths)
        self.depth = int(ordered[(len(ordered) - 1) // 2])  # the lower median

    def _local(self) -> LocalRequest:
        low, high = self.s.depth_range
        return LocalRequest(
            self.s.task,
            self.classes,
            self.depth,
            self.n_features,
            low,
            high,
            self.s.cv_folds,
            self.s.phi_star,
            self.s.theta_star,
            self.s.mu_star,
            self.s.seed,
        )

    def _fold_local(self, replies: Mapping[str, Payload]) -> None:
        votes = []
        for client, reply in sorted(replies.items()):
            assert isinstance(reply, LocalReply)
            self.locals[client] = reply.structure
            votes.append((reply.vote_ratio, reply.vote_elitism))
        if self.s.task == "regression" and votes:
            half = len(votes) / 2
            if sum(v[0] for v in votes) > half:
                self.train_ratio = 1.0
            self.elitism = sum(v[1] for v in votes) > half
        rng = keyed_rng(self.s.seed, POPULATION_STREAM)
        n_random = max(self.s.population_size - len(self.locals), 0)
        randoms = [
            random_structure(rng, self.depth, self.n_features, self.s.nil_rate)
            for _ in range(n_random)
        ]
        self.candidates = np.vstack([*self.locals.values(), *randoms])
        width = structure_length(self.depth)
        self.population = np.empty((0, width), dtype=np.int64)
        self.fitness = np.empty(0)

    # -- generations (steps 26–43) ----------------------------------------------
    def _generation(self, g: int) -> RoundPlan:
        eligible = [
            c for c in self.clients if c in self.sizes or self.s.join_at.get(c, 0) <= g
        ]
        rng = keyed_rng(self.s.seed, ACTIVE_STREAM, g)
        n_active = max(1, round(self.s.client_fraction * len(eligible)))
        active = sorted(rng.choice(eligible, size=n_active, replace=False).tolist())
        s, known = (
            self.s,
            EvaluateRequest(
                self.s.task,
                self.classes,
                self.candidates,
                self.depth,
                self.train_ratio,
                self.s.seed,
                self.s.f1_average,
            ),
        )
        new = JoinRequest(
            s.task,
            self.classes,
            self.candidates,
            self.depth,
            self.n_features,
            self.train_ratio,
            s.epsilon,
            s.seed,
            s.f1_average,
        )
        requests: dict[str, Payload] = {
            client: known if client in self.sizes else new for client in active
        }
        return RoundPlan(requests, "continue")

    def _fold_generation(self, g: int, replies: Mapping[str, Payload]) -> None:
        fitness, weights, joined = [], [], []
        for client, reply in sorted(replies.items()):
            assert isinstance(reply, FitnessReply | JoinReply)
            if isinstance(reply, JoinReply):
                self.sizes[client] = max(reply.noisy_size, 1.0)
                self.spent[client] = reply.epsilon_spent
                self.locals[client] = reply.structure
                joined.append((reply.structure, reply.local_fitness))
            fitness.append(reply.fitness)
            weights.append(self.sizes[client])
        if not fitness:
            return  # nobody answered: the generation changes nothing
        scores = np.average(np.vstack(fitness), axis=0, weights=weights)  # step 37
        candidates = self.candidates
        if joined:  # step 38
            candidates = np.vstack([candidates, *[s[None, :] for s, _ in joined]])
            scores = np.concatenate([scores, [f for _, f in joined]])
        self.population, self.fitness = update(  # step 39
            self.population,
            self.fitness,
            candidates,
            scores,
            self.s.population_size,
            maximize=self.maximize,
        )
        self.history.append((float(self.fitness[0]), float(np.mean(self.fitness))))
        self.candidates = self._breed(g)

    def _breed(self, g: int) -> IntArray:
        """Breed the next candidates: steps 41–42 (plus the locals under elitism)."""
        rng = keyed_rng(self.s.seed, BREED_STREAM, g)
        width = self.population.shape[1]
        offspring = crossover(
            rng,
            self.population,
            self.fitness,
            self.s.tournament_size,
            maximize=self.maximize,
        )
        mutated = mutate_population(
            rng,
            offspring,
            self.n_features,
            mutation_count(self.s.flip_rate, width),
            mutation_count(self.s.swap_rate, width),
        )
        if self.elitism:
            mutated = np.vstack([mutated, *[s[None, :] for s in self.locals.values()]])
        return mutated
