"""One-shot synthetic data from client trees (docs/synthetic.md, paper 003).

One round of client trees; the server generates rows from their sub-paths,
labels them by the trees' majority vote, flips some, and trains the global tree
(:class:`SyntheticDataClassifier`; Algorithm 1 in :mod:`._generate`).

Importing the package registers its client handlers; every other name loads
on first use (PEP 562). Its one round fits a scikit-learn CART tree, so the
handlers load scikit-learn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from fedtrees._lazy import lazy_names
from fedtrees.algorithms.synthetic import _handlers  # registers the client handlers

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

_HOMES: Final[dict[str, str]] = {
    "FillSpec": "fedtrees.algorithms.synthetic._generate",
    "GenerationSpec": "fedtrees.algorithms.synthetic._generate",
    "Synthetic": "fedtrees.algorithms.synthetic._generate",
    "SyntheticDataClassifier": "fedtrees.algorithms.synthetic._estimator",
    "SyntheticStrategy": "fedtrees.algorithms.synthetic._strategy",
    "flip_probability": "fedtrees.algorithms.synthetic._generate",
    "generate": "fedtrees.algorithms.synthetic._generate",
    "majority_vote": "fedtrees.algorithms.synthetic._generate",
    "sub_path_boxes": "fedtrees.algorithms.synthetic._generate",
    "threshold_ranges": "fedtrees.algorithms.synthetic._strategy",
}
"""Every public name and the module that defines it."""

if TYPE_CHECKING:
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
    from fedtrees.algorithms.synthetic._strategy import (
        SyntheticStrategy,
        threshold_ranges,
    )

del _handlers

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
