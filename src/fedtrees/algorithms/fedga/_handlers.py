"""FedGA-Tree's client handlers, one per request kind (docs/fedga.md).

Each recomputes what it needs from the client's rows and keyed generators; the
messages and the protocol are in :mod:`._payloads`.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from fedtrees._random import client_key, keyed_rng
from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import check_epsilon
from fedtrees.algorithms._params import MAX_POPULATION
from fedtrees.algorithms._requests import (
    MAX_REPLY_CELLS,
    check_request_size,
    request_error,
)
from fedtrees.algorithms.fedga._evaluate import (
    Task,
    TrainingRows,
    fit_structure,
    positive_code,
    score_structures,
)
from fedtrees.algorithms.fedga._payloads import (
    ChoiceReply,
    EvaluateRequest,
    FinalRequest,
    FitnessReply,
    InitReply,
    InitRequest,
    JoinReply,
    JoinRequest,
    KeptTree,
    LocalReply,
    LocalRequest,
    TreeReply,
    TreeRequest,
)
from fedtrees.algorithms.fedga._votes import regression_votes
from fedtrees.federation import ClientData, ClientState, handler
from fedtrees.privacy import PrivacyAccountant
from fedtrees.tree import PACKED_FIELDS, Tree, pack_trees

__all__ = [
    "choose",
    "evaluate",
    "join",
    "personal_tree",
    "propose_depth",
    "send_local_structure",
    "send_tree",
]

SPLIT_STREAM: Final = 12
TREE_KEY: Final = "fedga.tree"
"""The per-run client state's entry holding the personal tree (a KeptTree)."""


# -- shared ------------------------------------------------------------------------
def _task(request: Any) -> Task:
    return "classification" if request.task == "classification" else "regression"


def _n_classes(request: Any) -> int:
    """Return the number of agreed classes (0 for regression)."""
    if _task(request) == "classification":
        return int(request.classes.shape[0])
    return 0


def _f1_average(request: Any) -> str:
    """Return the request's ``f1_average``, checked at the site by name.

    "macro" or "binary", and "binary" only for two agreed classes
    (:func:`._evaluate.positive_code`).
    """
    positive_code(request.f1_average, _n_classes(request), f"request {request.kind!r}")
    return str(request.f1_average)


def _labels(request: Any, data: ClientData) -> np.ndarray:
    """Return class codes (classification) or float targets (regression)."""
    if _task(request) == "classification":
        return data.label_codes(request.classes)
    return data.y.to_numpy(np.float64)


def _split(
    data: ClientData, seed: int, train_ratio: float
) -> tuple[IntArray, IntArray]:
    """Return the client's fixed training and validation rows (r = 1: all, all)."""
    rows = np.arange(data.n_rows)
    if train_ratio >= 1.0 or data.n_rows < 2:
        return rows, rows
    order = keyed_rng(seed, SPLIT_STREAM, client_key(data.client_id)).permutation(rows)
    cut = min(max(round(train_ratio * data.n_rows), 1), data.n_rows - 1)
    return np.sort(order[:cut]), np.sort(order[cut:])


def _check_depth(request: Any) -> int:
    """Return the request's depth if its structures (2**depth - 1 ids) fit a reply."""
    return check_request_size(
        request.kind,
        "depth",
        request.depth,
        MAX_REPLY_CELLS.bit_length() - 1,
        "a depth whose structure of 2**depth - 1 node ids fits one message",
        low=1,
    )


def _check_structures(request: Any, structures: np.ndarray) -> None:
    """Candidate structures: a matrix of 2**depth - 1 node ids per row."""
    width = 2 ** _check_depth(request) - 1
    check_request_size(
        request.kind,
        "structures",
        structures.shape[0] if structures.ndim else -1,
        MAX_POPULATION + 1,
        "candidates: the population limit, and a joining client's own",
        low=1,
    )
    if structures.ndim != 2 or structures.shape[1] != width:
        raise request_error(
            request.kind,
            "structures",
            f"one row of {width} node ids (depth {request.depth}) per candidate",
            f"shape {structures.shape}",
        )


def _fitness(request: Any, data: ClientData, structures: np.ndarray) -> FloatArray:
    """Score ``structures`` on the client's validation part (step 28)."""
    _check_structures(request, structures)
    f1_average = _f1_average(request)
    X, y = data.finite_matrix(), _labels(request, data)
    train, val = _split(data, request.seed, request.train_ratio)
    rows = TrainingRows.of(X[train], y[train], _task(request), _n_classes(request))
    return score_structures(rows, structures, request.depth, X[val], y[val], f1_average)


def _size(request: Any, data: ClientData) -> tuple[float, float]:
    """Release the noisy size, charged to the site's budget first (if declared).

    The noise is the site's own (:meth:`ClientData.noise_rng`), never keyed by
    the request's seed: the server knows that.
    """
    from fedtrees.algorithms.fedga._initialize import noisy_size  # sklearn

    check_epsilon(request.epsilon, f"request {request.kind!r}")
    data.charge_privacy(request.epsilon, f"{request.kind}: noisy size")
    accountant = PrivacyAccountant(request.epsilon, owner=f"client {data.client_id!r}")
    return noisy_size(
        data.n_rows,
        request.epsilon,
        data.noise_rng(request),
        accountant=accountant,
        sampler=data.noise.sampler,
    )


# -- 1. init -----------------------------------------------------------------------
@handler("fedga.init")
def propose_depth(request: InitRequest, data: ClientData) -> InitReply:
    """Client: CV depth over the range (F1 as the request says); the noisy size."""
    from fedtrees.algorithms.fedga._initialize import cross_validate_depths  # sklearn

    f1_average = _f1_average(request)
    search = cross_validate_depths(
        data.finite_matrix(),
        _labels(request, data),
        _task(request),
        seed=request.seed,
        depth_range=(request.depth_low, request.depth_high),
        folds=request.folds,
        f1_average=f1_average,
    )
    size, spent = _size(request, data)
    return InitReply(int(search.best_depth), size, spent)


# -- 2. local ----------------------------------------------------------------------
@handler("fedga.local")
def send_local_structure(request: LocalRequest, data: ClientData) -> LocalReply:
    """Client: the local structure; regression votes from the CV scores at d."""
    from fedtrees.algorithms.fedga._initialize import (  # sklearn
        cross_validate_depths,
        local_structure,
    )

    _check_depth(request)
    X, y, task = data.finite_matrix(), _labels(request, data), _task(request)
    structure = local_structure(
        X, y, task, request.depth, seed=request.seed, n_classes=_n_classes(request)
    )
    if task == "classification":
        return LocalReply(structure, False, False)
    search = cross_validate_depths(
        X,
        y,
        task,
        seed=request.seed,
        depth_range=(request.depth_low, request.depth_high),
        folds=request.folds,
    )
    ratio, elitism = regression_votes(
        search.scores,
        search.index_of(request.depth),
        y,
        phi_star=request.phi_star,
        theta_star=request.theta_star,
        mu_star=request.mu_star,
    )
    return LocalReply(structure, bool(ratio), bool(elitism))


# -- 3. evaluate / join ----------------------------------------------------------------
@handler("fedga.evaluate")
def evaluate(request: EvaluateRequest, data: ClientData) -> FitnessReply:
    """Client: fit every structure's thresholds and leaves; score them."""
    return FitnessReply(_fitness(request, data, request.structures))


@handler("fedga.join")
def join(request: JoinRequest, data: ClientData) -> JoinReply:
    """Client: as evaluate, plus the local structure, its fitness, the size."""
    from fedtrees.algorithms.fedga._initialize import local_structure  # sklearn

    _check_structures(request, request.structures)
    X, y, task = data.finite_matrix(), _labels(request, data), _task(request)
    structure = local_structure(
        X, y, task, request.depth, seed=request.seed, n_classes=_n_classes(request)
    )
    both = np.vstack([request.structures, structure[None, :]])
    fitness = _fitness(request, data, both)
    size, spent = _size(request, data)
    return JoinReply(fitness[:-1], structure, float(fitness[-1]), size, spent)


# -- 4. final ----------------------------------------------------------------------
@handler("fedga.final", stateful=True)
def choose(request: FinalRequest, data: ClientData, state: ClientState) -> ChoiceReply:
    """Client: the best structure on its data (first on ties); fit and keep its tree.

    The personal tree (step 48) is the chosen structure fitted on the client's
    training part, as it was scored; the client keeps it in its per-run state
    until the server asks for it in the next round.
    """
    fitness = _fitness(request, data, request.structures)
    best = int(np.argmax(fitness) if request.maximize else np.argmin(fitness))
    chosen = TreeRequest(
        request.task,
        request.classes,
        request.structures[best],
        request.depth,
        len(data.feature_kinds),
        request.train_ratio,
        request.seed,
    )
    state.put(TREE_KEY, _fit_tree(chosen, data))
    return ChoiceReply(best, float(fitness[best]))


# -- 5. the personal tree ------------------------------------------------------------
@handler("fedga.tree", stateful=True)
def send_tree(request: TreeRequest, data: ClientData, state: ClientState) -> TreeReply:
    """Client: the personal tree it kept, or the same tree fitted again."""
    kept = state.get(TREE_KEY, KeptTree)
    if kept is None or not kept.fits(request):
        kept = _fit_tree(request, data)
        state.put(TREE_KEY, kept)
    return TreeReply(**{name: getattr(kept, name) for name in PACKED_FIELDS})


def _fit_tree(request: TreeRequest, data: ClientData) -> KeptTree:
    """Fit the personal tree ``request`` describes; return it as it is kept."""
    width = 2 ** _check_depth(request) - 1
    if request.structure.shape != (width,):
        raise request_error(
            request.kind,
            "structure",
            f"{width} node ids (depth {request.depth})",
            f"shape {request.structure.shape}",
        )
    tree = personal_tree(
        data,
        request.structure,
        request.depth,
        task=_task(request),
        classes=request.classes,
        train_ratio=request.train_ratio,
        seed=request.seed,
    )
    return KeptTree(
        **pack_trees([tree]),
        task=request.task,
        classes=request.classes,
        structure=request.structure,
        depth=request.depth,
        train_ratio=request.train_ratio,
        seed=request.seed,
    )


# -- the client's own model ------------------------------------------------------------
def personal_tree(
    data: ClientData,
    structure: np.ndarray,
    depth: int,
    *,
    task: Task,
    classes: np.ndarray,
    train_ratio: float,
    seed: int,
) -> Tree:
    """Fit the tree client k keeps (step 48): its chosen structure on its rows.

    The same fit the client scored in the final round (its training part under
    the train ratio), deterministic from the seed. The client keeps it in its
    per-run state and sends it in the last round.
    """
    request = EvaluateRequest(
        task, classes, structure[None, :], depth, train_ratio, seed, "macro"
    )  # only to read the labels: no score is computed
    X, y = data.finite_matrix(), _labels(request, data)
    train, _ = _split(data, seed, train_ratio)
    return fit_structure(
        structure, depth, X[train], y[train], task, _n_classes(request)
    )
