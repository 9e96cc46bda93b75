"""FedGA-Tree's federation-independent pieces (docs/fedga.md; paper 000).

Personalized trees evolved by a federated genetic algorithm (Algorithm 1 of
the paper): the structure encoding (:mod:`._encoding`, Sec. III-A), the genetic
operators the server runs (:mod:`._operators`, Sec. III-C/D) and the
evaluation a client runs on its rows (:mod:`._evaluate`, Sec. III-B). The
estimator and the protocol build on these.
"""

from fedtrees.algorithms.fedga import _handlers  # registers the client handlers
from fedtrees.algorithms.fedga._encoding import (
    NIL,
    DecodedStructure,
    child_positions,
    decision_nodes,
    decode,
    edit_distance,
    encode,
    random_structure,
    reachable_mask,
    structure_depth,
    structure_length,
)
from fedtrees.algorithms.fedga._estimator import FedGAClassifier, FedGARegressor
from fedtrees.algorithms.fedga._evaluate import (
    Task,
    TrainingRows,
    evaluate_population,
    evaluate_structure,
    fit_structure,
    score_structures,
)
from fedtrees.algorithms.fedga._initialize import (
    DepthSearch,
    cross_validate_depths,
    local_structure,
    noisy_size,
)
from fedtrees.algorithms.fedga._metrics import (
    ClientSummary,
    StructureSummary,
    relative_improvement,
    share_improved,
    structure_summary,
    summarize_clients,
)
from fedtrees.algorithms.fedga._operators import (
    MUTATIONS,
    crossover,
    mutate,
    mutate_population,
    mutation_count,
    node_flip,
    node_swap,
    one_point_crossover,
    substring_swap,
    tournament_select,
    update,
)
from fedtrees.algorithms.fedga._strategy import ROUNDS_BESIDE_GENERATIONS
from fedtrees.algorithms.fedga._votes import (
    VoteStatistics,
    coefficient_of_variation,
    regression_votes,
    vote_statistics,
)

__all__ = [
    "MUTATIONS",
    "NIL",
    "ROUNDS_BESIDE_GENERATIONS",
    "ClientSummary",
    "DecodedStructure",
    "DepthSearch",
    "FedGAClassifier",
    "FedGARegressor",
    "StructureSummary",
    "Task",
    "TrainingRows",
    "VoteStatistics",
    "child_positions",
    "coefficient_of_variation",
    "cross_validate_depths",
    "crossover",
    "decision_nodes",
    "decode",
    "edit_distance",
    "encode",
    "evaluate_population",
    "evaluate_structure",
    "fit_structure",
    "local_structure",
    "mutate",
    "mutate_population",
    "mutation_count",
    "node_flip",
    "node_swap",
    "noisy_size",
    "one_point_crossover",
    "random_structure",
    "reachable_mask",
    "regression_votes",
    "relative_improvement",
    "score_structures",
    "share_improved",
    "structure_depth",
    "structure_length",
    "structure_summary",
    "substring_swap",
    "summarize_clients",
    "tournament_select",
    "update",
    "vote_statistics",
]

del _handlers
