"""FedGA-Tree's federation-independent pieces (ALGORITHMS.md §4; paper 000).

Personalized trees evolved by a federated genetic algorithm (Algorithm 1 of
the paper): the structure encoding (:mod:`._encoding`, Sec. III-A), the genetic
operators the server runs (:mod:`._operators`, Sec. III-C/D) and the
evaluation a client runs on its rows (:mod:`._evaluate`, Sec. III-B). The
estimator and the protocol build on these.
"""

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
from fedtrees.algorithms.fedga._evaluate import (
    Task,
    TrainingRows,
    evaluate_population,
    evaluate_structure,
    fit_structure,
    score_structures,
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

__all__ = [
    "MUTATIONS",
    "NIL",
    "DecodedStructure",
    "Task",
    "TrainingRows",
    "child_positions",
    "crossover",
    "decision_nodes",
    "decode",
    "edit_distance",
    "encode",
    "evaluate_population",
    "evaluate_structure",
    "fit_structure",
    "mutate",
    "mutate_population",
    "mutation_count",
    "node_flip",
    "node_swap",
    "one_point_crossover",
    "random_structure",
    "reachable_mask",
    "score_structures",
    "structure_depth",
    "structure_length",
    "substring_swap",
    "tournament_select",
    "update",
]
