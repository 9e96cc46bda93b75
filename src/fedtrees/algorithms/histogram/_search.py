"""Split search on pooled histograms: every open node of every tree at once.

Step 5 of the engine. For each node, the best numeric threshold (with the
direction of missing values) and the best categorical grouping, each ranked by
scikit-learn's proxy improvement within its source; the caller compares
sources by their impurity decrease. Missing values (see
the engine's docstring): for every threshold both directions are scored and the
better kept (ties: right); a node without missing rows at a feature sends them
to the larger child.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from typing import Final

import numba
import numpy as np
import numpy.typing as npt

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees.algorithms.histogram._histograms import Bins
from fedtrees.algorithms.histogram._server_kernels import CODES, LARGER, scan_nodes

__all__ = ["CRITERION_CODES", "Found", "search"]

PARALLEL_PAIRS: Final = 1024
"""Levels with fewer (node, feature) pairs are searched on one thread; larger ones
in chunks of nodes on one thread per kernel thread of the caller (numba's count: every
core unless ``n_jobs`` set fewer; the kernel releases the GIL).

**Decision (threads, not a parallel kernel):** a numba ``parallel=True`` kernel
cost 8 s more to compile on the first run, and starting its parallel region
cost 1 to 30 ms a call on 2 cores (more when other threads were busy) against
about 0.1 ms per node of 20 features scanned serially (measured)."""
CRITERION_CODES: Final = {
    "gini": 0,
    "entropy": 1,
    "squared_error": 2,
    "second_order": 3,
}
"""Scores by criterion: scikit-learn's impurities on class counts or moments,
and XGBoost's second-order gain on ``(G, H, W)`` sums (boosting)."""


@dataclass(frozen=True, eq=False)
class Found:
    """Each node's best numeric and best categorical candidate (score -inf: none).

    Numeric: the pair slot, the bin (codes ``<=`` it go left), the missing
    direction (1 left, 0 right, -1 the larger child) and the left statistics.
    Categorical: the slot, the left statistics and the left set as a mask over
    the 256 codes.
    """

    num_score: FloatArray
    num_slot: IntArray
    num_bin: IntArray
    num_missing: npt.NDArray[np.int8]
    num_left: FloatArray
    cat_score: FloatArray
    cat_slot: IntArray
    cat_left: FloatArray
    cat_set: npt.NDArray[np.bool_]

    @classmethod
    def none_yet(cls, n_nodes: int, width: int, any_categorical: bool) -> Found:
        """Return no candidate for any node: what the scan starts from."""
        return cls(
            np.full(n_nodes, -np.inf),
            np.full(n_nodes, -1, np.int64),
            np.full(n_nodes, -1, np.int64),
            np.full(n_nodes, LARGER, np.int8),
            np.zeros((n_nodes, width)),
            np.full(n_nodes, -np.inf),
            np.full(n_nodes, -1, np.int64),
            np.zeros((n_nodes, width)),
            np.zeros((n_nodes if any_categorical else 0, CODES), np.bool_),
        )

    def arrays(self) -> tuple[np.ndarray, ...]:
        """Return the result arrays in field order (not copies: the scan fills them)."""
        return tuple(getattr(self, f.name) for f in fields(self))


def search(
    bins: Bins,
    pair_feature: IntArray,
    is_categorical: BoolArray,
    parent: FloatArray,
    min_leaf: FloatArray,
    criterion: str,
    reg_lambda: float = 0.0,
) -> Found:
    """Return the best candidates of every node; pair ``s * F' + k``'s bins.

    ``min_leaf``: per node, the least weight of a child (the least hessian sum
    for ``"second_order"``, whose gain uses ``reg_lambda``).

    Examples
    --------
    >>> bins = Bins(np.array([0, 1, 2], np.uint8),
    ...             np.array([[3.0, 0.0], [0.0, 2.0], [0.0, 1.0]]),
    ...             np.array([0]), np.array([3]))
    >>> found = search(bins, np.array([[0]]), np.array([False]),
    ...                np.array([[3.0, 3.0]]), np.array([1.0]), "gini")
    >>> found.num_bin.tolist(), found.num_left.tolist()
    ([0], [[3.0, 0.0]])
    """
    args = (
        np.ascontiguousarray(bins.lo, np.int64),
        np.ascontiguousarray(bins.hi, np.int64),
        np.ascontiguousarray(bins.codes), np.ascontiguousarray(bins.stats, np.float64),
        np.ascontiguousarray(pair_feature, np.int64), is_categorical,
        np.ascontiguousarray(parent, np.float64),
        np.ascontiguousarray(min_leaf, np.float64),
        CRITERION_CODES[criterion], float(reg_lambda),
    )  # fmt: skip
    n_nodes, cores = pair_feature.shape[0], numba.get_num_threads()
    found = Found.none_yet(n_nodes, parent.shape[1], bool(np.any(is_categorical)))
    out = found.arrays()
    if pair_feature.size < PARALLEL_PAIRS or cores == 1:
        scan_nodes(0, n_nodes, *args, *out)
        return found
    # Four chunks per core, as numba's parallel loops schedule, so that a chunk of
    # costly nodes (many categories, many bins) does not leave a core idle. The
    # chunks write disjoint rows of the results.
    cuts = np.linspace(0, n_nodes, min(4 * cores, n_nodes) + 1).astype(int)
    with ThreadPoolExecutor(max_workers=min(cores, cuts.shape[0] - 1)) as pool:
        done = pool.map(
            lambda a, b: scan_nodes(int(a), int(b), *args, *out), cuts[:-1], cuts[1:]
        )
        list(done)  # raise here what a chunk raised
    return found
