"""Compiled routing of every row through one finished iteration, in code space.

Why compiled: routing is a walk per row and tree; numpy needs a pass over all
still-moving rows per level with a dozen temporary arrays, which measured
several times the cost of the histograms themselves at every iteration.

The walk stops after ``max_steps`` steps: a table whose children point back up
(a cycle no honest server sends) is reported, never followed forever.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fedtrees._compiling import boolean, i64, kernel, ro, rw, u8
from fedtrees._typing import BoolArray, IntArray

__all__ = ["route_rows"]


@kernel(
    (ro(boolean), ro(boolean), ro(i64), ro(i64), ro(boolean), ro(i64), ro(i64),
     ro(i64), ro(boolean, 2), ro(u8, 2), i64, i64, rw(i64, 2)),
)  # fmt: skip
def route_rows(
    numeric: BoolArray,
    leaf: BoolArray,
    feature: IntArray,
    limit: IntArray,
    missing_left: BoolArray,
    left: IntArray,
    right: IntArray,
    set_row: IntArray,
    sets: BoolArray,
    columns: npt.NDArray[np.uint8],
    missing: int,
    max_steps: int,
    out: IntArray,
) -> bool:
    """Write each row's leaf per tree into ``out`` (n_trees, n); False on a cycle.

    Tree ``t``'s root is node ``t``; a numeric node sends codes ``<= limit``
    left and the ``missing`` code where ``missing_left`` says; a categorical
    node sends the codes of its row of ``sets`` left.
    """
    n = columns.shape[1]
    for t in range(out.shape[0]):
        for i in range(n):
            g = t
            steps = 0
            while not leaf[g]:
                steps += 1
                if steps > max_steps:
                    return False
                code = columns[feature[g], i]
                if numeric[g]:
                    go_left = missing_left[g] if code == missing else code <= limit[g]
                else:
                    go_left = sets[set_row[g], code]
                g = left[g] if go_left else right[g]
            out[t, i] = g
    return True
