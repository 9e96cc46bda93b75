"""One-shot synthetic data from client trees (docs/synthetic.md, paper 003).

One round of client trees; the server generates rows from their sub-paths,
labels them by the trees' majority vote, flips some, and trains the global tree
(:class:`SyntheticDataClassifier`; Algorithm 1 in :mod:`._generate`).
"""

from fedtrees.algorithms.synthetic import _handlers  # registers the client handler
from fedtrees.algorithms.synthetic._estimator import SyntheticDataClassifier
from fedtrees.algorithms.synthetic._generate import (
    FillSpec,
    GenerationSpec,
    Synthetic,
    flip_probability,
    generate,
    majority_vote,
    sub_path_boxes,
)
from fedtrees.algorithms.synthetic._strategy import SyntheticStrategy, threshold_ranges

__all__ = [
    "FillSpec",
    "GenerationSpec",
    "Synthetic",
    "SyntheticDataClassifier",
    "SyntheticStrategy",
    "flip_probability",
    "generate",
    "majority_vote",
    "sub_path_boxes",
    "threshold_ranges",
]

del _handlers
