"""Routing a client's rows down the kept forest, compiled with numba.

A node's ``feature`` is ``SPLIT_NONE`` (not split), ``SPLIT_CLIENT`` or a feature
index; categorical and client splits send the codes listed in
``set_codes[set_ptr[g]:set_ptr[g+1]]`` left, numeric ones ``x <= threshold``.
``node[b, i]`` is the global id of the node that row i reaches in tree b;
``weight[b, i]`` its bootstrap (x sample) weight, 0 = absent.

The client answers requests from rows kept partitioned by node (:mod:`._rows`,
whose kernels share :func:`_member`); :func:`route` scores held-out rows. The
node-scan kernels that answered before (routing every row at every level) are
the bit-identity reference of ``tests/algorithms/fedforest_reference.py``.

numba does not check bounds: callers validate every array first
(:func:`fedtrees.algorithms.fedforest._forest.apply_batch` and
:func:`fedtrees.algorithms.fedforest._client.check_open`).
"""

from __future__ import annotations

from typing import Any, Final

import numba as nb

from fedtrees._compiling import boolean, f64, i64, kernel, ro, rw

SPLIT_NONE: Final = -1
SPLIT_CLIENT: Final = -2

__all__ = ["SPLIT_CLIENT", "SPLIT_NONE", "route"]


@kernel()
def _member(code: int, start: int, stop: int, set_codes: Any) -> bool:
    # An explicit loop: numba's nopython mode cannot compile any(<generator>).
    found = False
    for k in range(start, stop):
        found = found or set_codes[k] == code
    return found


@kernel(
    (rw(i64, 2), ro(f64, 2), ro(f64, 2), i64, ro(i64), ro(f64), ro(i64), ro(i64),
     ro(i64), ro(i64), ro(boolean)),
    parallel=True,
)  # fmt: skip
def route(
    node: Any,
    weight: Any,
    X: Any,
    client_code: int,
    feature: Any,
    threshold: Any,
    left: Any,
    right: Any,
    set_ptr: Any,
    set_codes: Any,
    is_cat: Any,
) -> None:  # pragma: no cover - compiled
    """Move every present row down the splits decided so far (in place)."""
    n_trees, n = node.shape
    for b in nb.prange(n_trees):
        for i in range(n):
            if weight[b, i] == 0.0:
                continue
            g = node[b, i]
            while feature[g] != SPLIT_NONE:
                f = feature[g]
                if f == SPLIT_CLIENT:
                    go_left = _member(
                        client_code, set_ptr[g], set_ptr[g + 1], set_codes
                    )
                elif is_cat[f]:
                    go_left = _member(
                        int(X[i, f]), set_ptr[g], set_ptr[g + 1], set_codes
                    )
                else:
                    go_left = X[i, f] <= threshold[g]
                g = left[g] if go_left else right[g]
            node[b, i] = g
