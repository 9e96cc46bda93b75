"""FedForest client: the fit a client keeps across rounds, and a request's checks.

Protocol v2 (per-run client state, :mod:`fedtrees.federation._state`): a client keeps in
its per-run state the forest it has been told (:class:`ForestState`, kept: it survives
between Flower messages) and, in its memo, what it derived from it and its data
(:class:`ClientFit`: presorted features, bootstrap weights, its rows partitioned by
node). A request carries only the splits since the version the server believes the
client holds; a client whose kept version differs answers :class:`Resync`. Results never
depend on the state: a client that lost it is resent the whole forest and computes the
same replies (tests drop it at random rounds). Every size a request names is checked
before anything is allocated. The handlers (:mod:`._handlers`) answer from the prepared
fit (:func:`forest_handler`) with the statistics of :mod:`._answers`.

Randomness is keyed (STYLE habit 8): tree b's bootstrap on a client uses
``default_rng([seed, 0, b, crc32(client id)])`` — independent of order and
transport; held-out rows (diagnostics) use ``[seed, 3, crc32(client id)]``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from fedtrees._random import client_key, keyed_rng
from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees.algorithms._params import MAX_GRID, MAX_N_ESTIMATORS
from fedtrees.algorithms._requests import (
    check_reply_cells,
    check_request_size,
    field_error,
    local_category_counts,
    request_error,
)
from fedtrees.algorithms.fedforest._forest import (
    SplitBatch,
    apply_batch,
    next_version,
    start_state,
)
from fedtrees.algorithms.fedforest._kernels import SPLIT_NONE
from fedtrees.algorithms.fedforest._payloads import ForestState, LevelFields
from fedtrees.algorithms.fedforest._rows import ClientRows
from fedtrees.federation import ClientData, ClientState, Payload, Resync, handler

__all__ = [
    "STATE_KEY",
    "ClientFit",
    "bootstrap_counts",
    "bootstrap_weights",
    "check_open",
    "check_sizes",
    "forest_handler",
    "keep_forest",
    "kept_forest",
    "prepare",
]

STATE_KEY: Final = "fedforest"
BOOTSTRAP, HOLDOUT = 0, 3


@dataclass
class ClientFit:
    """What one client derives for one fit: presorted data, weights, routing."""

    fit_id: int
    X: FloatArray
    is_cat: BoolArray
    pos: IntArray
    sval: FloatArray
    codes: IntArray
    targets: FloatArray
    weight: FloatArray
    rows: ClientRows
    client_code: int
    held_out: BoolArray


def check_open(request: LevelFields, forest: ForestState, n_features: int) -> None:
    """Refuse open nodes or feature lists that do not fit the kept forest."""
    n = forest.node_feature.shape[0]
    open_nodes = np.asarray(request.open_nodes, dtype=np.int64)
    if open_nodes.size and (
        np.any(open_nodes < 0)
        or np.any(open_nodes >= n)
        or np.any(forest.node_feature[open_nodes] != SPLIT_NONE)
        or np.any(np.diff(forest.node_tree[open_nodes]) < 0)
    ):
        raise field_error(
            request.kind, "open_nodes", "unsplit nodes, sorted by tree", "others"
        )
    pairs = request.pair_feature
    if pairs.ndim != 2 or pairs.shape[0] != open_nodes.shape[0]:
        raise field_error(
            request.kind, "pair_feature", "one feature list per open node", pairs.shape
        )
    if np.any(pairs < -1) or np.any(pairs >= n_features):
        raise field_error(
            request.kind,
            "pair_feature",
            f"feature indices in [0, {n_features}) (-1: none)",
            "an unknown feature",
        )


def kept_forest(
    request: LevelFields, state: ClientState, n_features: int
) -> ForestState | None:
    """Move the kept forest to the request's version; None if it cannot be."""
    kept = state.get(STATE_KEY, ForestState)
    batch = SplitBatch.of(request)
    if request.full:
        forest = apply_batch(start_state(request), batch, request.digest, n_features)
    elif (
        kept is None
        or kept.fit_id != request.fit_id
        or kept.digest != request.base
        or next_version(request.base, batch) != request.digest
    ):
        return None
    else:
        forest = apply_batch(kept, batch, request.digest, n_features)
    state.put(STATE_KEY, forest)
    return forest


def keep_forest(request: LevelFields, data: ClientData, state: ClientState) -> None:
    """Keep the request's forest for later rounds (a first request needs no rows)."""
    check_sizes(request, data)
    kept_forest(request, state, len(data.feature_kinds))


def check_sizes(request: Any, data: ClientData) -> None:
    """Refuse a request whose size fields do not fit this client, before allocating.

    At most :data:`MAX_N_ESTIMATORS` trees; each feature at most once per open
    node (``pair_feature``); ``q``, ``k`` within the grid limit (the server
    validates both);
    ``max_categories`` 0 or this client's largest number of categories; the
    statistics asked (nodes and categorical pairs x categories x classes) fit
    one reply.

    Raises
    ------
    ValidationError
        Naming the request kind and the field (:mod:`fedtrees.algorithms._requests`).
    """
    kind = request.kind
    trees = int(request.participation.size)
    check_request_size(
        kind, "participation", trees, MAX_N_ESTIMATORS, "one flag per tree"
    )
    grid = {"q": getattr(request, "q", None), "k": getattr(request, "k", None)}
    for name, value in grid.items():
        if value is not None:
            check_request_size(kind, name, value, MAX_GRID, "the grid limit", low=1)
    _check_pairs(request, len(data.feature_kinds))
    width = request.width
    check_reply_cells(kind, "classes", (request.n_open, width), "node_stats")
    if hasattr(request, "max_categories"):
        _check_categories(request, data, width)


def _check_pairs(request: Any, n_features: int) -> None:
    """Refuse a node that considers a feature twice or more than F (-1: padding)."""
    pairs = np.asarray(request.pair_feature)
    if pairs.ndim != 2 or pairs.shape[1] > n_features:
        raise request_error(
            request.kind,
            "pair_feature",
            f"a matrix of at most {n_features} features per open node",
            f"shape {pairs.shape}",
        )
    if _repeats_a_feature(pairs.astype(np.int64, copy=False), n_features):
        raise request_error(
            request.kind,
            "pair_feature",
            "each feature at most once per open node",
            "a repeated feature",
        )


def _repeats_a_feature(pairs: IntArray, n_features: int) -> bool:
    """Whether a row of ``pairs`` names a feature twice (-1 padding aside)."""
    if pairs.size == 0:
        return False
    after, before = pairs[:, 1:], pairs[:, :-1]
    # the server sends rows rising, then -1 padding: no repeat possible there
    if np.all(((after > before) & (before >= 0)) | (after < 0)):
        return False
    rows = np.broadcast_to(np.arange(pairs.shape[0])[:, None], pairs.shape)
    used = pairs >= 0
    keys = rows[used] * n_features + pairs[used]
    return bool(np.bincount(keys).max(initial=0) > 1)


def _check_categories(request: Any, data: ClientData, width: int) -> None:
    """``max_categories``: 0 or this client's most categories; a reply that fits."""
    kind, counts = request.kind, local_category_counts(data)
    most = int(counts.max(initial=0))
    if request.max_categories not in (0, most):
        raise request_error(
            kind,
            "max_categories",
            f"0 or {most} (this client's largest number of categories)",
            request.max_categories,
        )
    pairs = np.asarray(request.pair_feature)
    if counts.size and pairs.size:
        asked = pairs[pairs >= 0]
        n_pairs = int((counts[np.clip(asked, 0, counts.size - 1)] > 0).sum())
        shape = (n_pairs, most, width)
        check_reply_cells(kind, "max_categories", shape, "cat_stats")


def prepare(
    request: LevelFields, data: ClientData, state: ClientState
) -> tuple[ClientFit, ForestState] | Resync:
    """Return the client's fit state routed to the request's forest, or a resync."""
    check_sizes(request, data)
    n_features = len(data.feature_kinds)
    forest = kept_forest(request, state, n_features)
    if forest is None:
        return Resync("the kept forest is not the request's base version")
    check_open(request, forest, n_features)
    fit = state.memo_of(
        STATE_KEY, ClientFit, request.fit_id, lambda: _build(forest, data)
    )
    _split_rows(fit, forest)
    return fit, forest


Body = Callable[[Any, ClientFit, ForestState, ClientState], Payload]


def forest_handler(kind: str) -> Callable[[Body], Callable[..., Payload]]:
    """Register a FedForest handler that answers from the prepared fit and forest.

    The registered handler moves the kept forest to the request's version and
    partitions the rows (:func:`prepare`), or answers :class:`Resync` when it
    cannot; the body then sees ``(request, fit, forest, state)``.
    """

    def register(body: Body) -> Callable[..., Payload]:
        @handler(kind, stateful=True)
        @functools.wraps(body)
        def answer(request: Any, data: ClientData, state: ClientState) -> Payload:
            prepared = prepare(request, data, state)
            if isinstance(prepared, Resync):
                return prepared
            return body(request, *prepared, state)

        return answer

    return register


def _split_rows(fit: ClientFit, forest: ForestState) -> None:
    """Partition the rows of the nodes split since the last request (no routing)."""
    rows = fit.rows
    rows.split(
        fit.X,
        fit.is_cat,
        fit.client_code,
        rows.pending(
            forest.node_feature != SPLIT_NONE, forest.node_left, forest.node_right
        ),
        forest.node_feature,
        forest.node_threshold,
        forest.node_left,
        forest.node_right,
        forest.set_ptr,
        forest.set_codes,
    )


def _build(forest: ForestState, data: ClientData) -> ClientFit:
    X = np.ascontiguousarray(data.finite_matrix())
    n = X.shape[0]
    is_cat = np.array([k == "categorical" for k in data.feature_kinds], dtype=bool)
    order = np.ascontiguousarray(
        np.argsort(X, axis=0, kind="stable").T.astype(np.int64)
    )
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.arange(n, dtype=np.int64)[None, :], axis=1)
    sval = np.ascontiguousarray(np.take_along_axis(X.T, order, axis=1))
    code = forest.client_code
    codes, targets = _targets(forest, data, code)
    rng = keyed_rng(forest.seed, HOLDOUT, client_key(data.client_id))
    held_out: BoolArray = np.asarray(rng.random(size=(n,)) < forest.holdout)
    weight = bootstrap_weights(forest, data, n, held_out)
    return ClientFit(
        forest.fit_id,
        X,
        is_cat,
        pos,
        sval,
        codes,
        targets,
        weight,
        ClientRows.build(weight),
        code,
        held_out,
    )


def _targets(
    forest: ForestState, data: ClientData, code: int
) -> tuple[IntArray, FloatArray]:
    n = data.n_rows
    if forest.task == "regression":
        return np.zeros(n, dtype=np.int64), data.targets()
    if forest.target == "client":
        return np.full(n, code, dtype=np.int64), np.zeros(n)
    return data.label_codes(forest.classes), np.zeros(n)


def bootstrap_weights(
    forest: ForestState, data: ClientData, n: int, held_out: BoolArray
) -> FloatArray:
    """Client-stratified bootstrap counts x sample weights x class weights per tree.

    docs/fedforest.md: row i of tree b weighs its bootstrap count (1 without
    the bootstrap; 0 held out or where the client sits the tree out) times its
    sample weight times its class's weight in tree b (``class_weight``), as
    scikit-learn's forests weigh rows.
    """
    base = np.where(held_out, 0.0, 1.0)
    if data.weights is not None:
        base = base * data.weights
    weight = bootstrap_counts(forest, data.client_id, n) * base
    classes = forest.class_weights
    if classes.size:
        weight *= classes[:, data.label_codes(forest.classes)]
    return weight


def bootstrap_counts(forest: ForestState, client_id: str, n: int) -> FloatArray:
    """How often tree b drew row i: ``(trees, n)``, keyed by (seed, b, client).

    All ones without the bootstrap; zeros for the trees the client sits out.
    """
    trees = forest.participation.shape[0]
    counts = np.ones((trees, n))
    key = client_key(client_id)
    for b in range(trees):
        if forest.bootstrap:
            draws = keyed_rng(forest.seed, BOOTSTRAP, b, key).integers(0, n, n)
            counts[b] = np.bincount(draws, minlength=n)
        if not forest.participation[b]:
            counts[b] = 0.0
    return counts
