"""FedGA-Tree's federation-independent pieces (docs/fedga.md; paper 000).

Personalized trees evolved by a federated genetic algorithm (Algorithm 1 of
the paper): the structure encoding (:mod:`._encoding`, Sec. III-A), the genetic
operators the server runs (:mod:`._operators`, Sec. III-C/D) and the
evaluation a client runs on its rows (:mod:`._evaluate`, Sec. III-B). The
estimator and the protocol build on these.

Importing the package registers its client handlers; every other name loads
on first use (PEP 562). The handlers load scikit-learn only in the rounds that
cross-validate or fit a local CART tree, so the generations' rounds do not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from fedtrees._lazy import lazy_names
from fedtrees.algorithms.fedga import _handlers  # registers the client handlers

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

_HOMES: Final[dict[str, str]] = {
    "ClientSummary": "fedtrees.algorithms.fedga._metrics",
    "DecodedStructure": "fedtrees.algorithms.fedga._encoding",
    "DepthSearch": "fedtrees.algorithms.fedga._initialize",
    "FedGAClassifier": "fedtrees.algorithms.fedga._estimator",
    "FedGARegressor": "fedtrees.algorithms.fedga._estimator",
    "MUTATIONS": "fedtrees.algorithms.fedga._operators",
    "NIL": "fedtrees.algorithms.fedga._encoding",
    "ROUNDS_BESIDE_GENERATIONS": "fedtrees.algorithms.fedga._strategy",
    "StructureSummary": "fedtrees.algorithms.fedga._metrics",
    "Task": "fedtrees.algorithms.fedga._evaluate",
    "TrainingRows": "fedtrees.algorithms.fedga._evaluate",
    "VoteStatistics": "fedtrees.algorithms.fedga._votes",
    "child_positions": "fedtrees.algorithms.fedga._encoding",
    "coefficient_of_variation": "fedtrees.algorithms.fedga._votes",
    "cross_validate_depths": "fedtrees.algorithms.fedga._initialize",
    "crossover": "fedtrees.algorithms.fedga._operators",
    "decision_nodes": "fedtrees.algorithms.fedga._encoding",
    "decode": "fedtrees.algorithms.fedga._encoding",
    "edit_distance": "fedtrees.algorithms.fedga._encoding",
    "encode": "fedtrees.algorithms.fedga._encoding",
    "evaluate_population": "fedtrees.algorithms.fedga._evaluate",
    "evaluate_structure": "fedtrees.algorithms.fedga._evaluate",
    "fit_structure": "fedtrees.algorithms.fedga._evaluate",
    "local_structure": "fedtrees.algorithms.fedga._initialize",
    "mutate": "fedtrees.algorithms.fedga._operators",
    "mutate_population": "fedtrees.algorithms.fedga._operators",
    "mutation_count": "fedtrees.algorithms.fedga._operators",
    "node_flip": "fedtrees.algorithms.fedga._operators",
    "node_swap": "fedtrees.algorithms.fedga._operators",
    "noisy_size": "fedtrees.algorithms.fedga._initialize",
    "one_point_crossover": "fedtrees.algorithms.fedga._operators",
    "random_structure": "fedtrees.algorithms.fedga._encoding",
    "reachable_mask": "fedtrees.algorithms.fedga._encoding",
    "regression_votes": "fedtrees.algorithms.fedga._votes",
    "relative_improvement": "fedtrees.algorithms.fedga._metrics",
    "score_structures": "fedtrees.algorithms.fedga._evaluate",
    "share_improved": "fedtrees.algorithms.fedga._metrics",
    "structure_depth": "fedtrees.algorithms.fedga._encoding",
    "structure_length": "fedtrees.algorithms.fedga._encoding",
    "structure_summary": "fedtrees.algorithms.fedga._metrics",
    "substring_swap": "fedtrees.algorithms.fedga._operators",
    "summarize_clients": "fedtrees.algorithms.fedga._metrics",
    "tournament_select": "fedtrees.algorithms.fedga._operators",
    "update": "fedtrees.algorithms.fedga._operators",
    "vote_statistics": "fedtrees.algorithms.fedga._votes",
}
"""Every public name and the module that defines it."""

if TYPE_CHECKING:
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

del _handlers

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
