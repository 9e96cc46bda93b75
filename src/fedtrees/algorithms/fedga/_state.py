"""FedGA-Tree's server: its settings, its rounds, its state and its result.

The pieces :mod:`._strategy` plays Algorithm 1 with (docs/fedga.md): the
validated settings (Table II), the phases (:class:`FedGAPhase`, the rounds in
order), the state between rounds, complete from the agreement, and what the
server holds at the end.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedga._evaluate import Task
from fedtrees.algorithms.fedga._payloads import TreeRequest
from fedtrees.tree import Tree

__all__ = [
    "ACTIVE_STREAM",
    "BREED_STREAM",
    "POPULATION_STREAM",
    "ROUNDS_BESIDE_GENERATIONS",
    "FedGAPhase",
    "FedGAResult",
    "FedGASettings",
    "FedGAState",
    "no_structures",
]

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


class FedGAPhase(enum.Enum):
    """The rounds of Algorithm 1 after the agreement, in order."""

    INIT = "init"
    """Steps 3-25: each starter's depth vote (K-fold CV) and noisy size."""
    LOCAL = "local"
    """Each client's local structure (and, for regression, its votes)."""
    GENERATION = "generation"
    """Steps 26-43, once per generation: the candidates' fitness at the
    active clients (joiners send their structure); update and breed."""
    FINAL = "final"
    """Each client chooses a structure of the final population."""
    TREES = "trees"
    """The personal trees of the clients that chose."""


@dataclass(eq=False)
class FedGAState:
    """The server's state, complete from the agreement.

    ``depth`` is 0 until the init round's votes, and the population,
    candidates and fitness are empty until the local round builds them.
    """

    settings: FedGASettings
    maximize: bool
    """Whether fitness is maximized (classification: F1) or minimized."""
    clients: tuple[str, ...]
    classes: np.ndarray
    n_features: int
    starters: list[str]
    """The clients of the start (the others join at a generation)."""
    train_ratio: float
    depth: int = 0
    population: IntArray = field(default_factory=lambda: no_structures(0))
    fitness: FloatArray = field(default_factory=lambda: np.empty(0))
    candidates: IntArray = field(default_factory=lambda: no_structures(0))
    generation: int = 0
    """Generations run so far."""
    elitism: bool = False
    sizes: dict[str, float] = field(default_factory=dict)
    spent: dict[str, float] = field(default_factory=dict)
    locals: dict[str, IntArray] = field(default_factory=dict)
    history: list[tuple[float, float]] = field(default_factory=list)
    choices: dict[str, int] = field(default_factory=dict)
    client_fitness: dict[str, float] = field(default_factory=dict)
    asked: dict[str, TreeRequest] = field(default_factory=dict)
    trees: dict[str, Tree] = field(default_factory=dict)


def no_structures(width: int) -> IntArray:
    """Return an empty population of structures of ``width`` genes."""
    return np.empty((0, width), dtype=np.int64)
