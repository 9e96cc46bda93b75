"""FedGA-Tree's messages and client handlers (docs/fedga.md).

Algorithm 1 on the round loop. Every handler recomputes what it needs from its
rows and keyed generators; only the personal tree is kept between rounds, in
the client's per-run state (docs/runtime.md, "Per-run client state"), and that state is
a
cache:

1. **init** (steps 5–8): K-fold CV depth ``d^i`` and the noisy size
   ``n^i + Lap(1/ε)``, charged to the client's accountant (and first to the
   site's own budget, if it declared one: :mod:`fedtrees.federation._budget`).
2. **local** (steps 11–19): the local structure ``T_d^i`` at the server's
   median depth; regression votes (Eq. 1–2).
3. **evaluate** (step 28), or **join** for a client not seen before (steps
   29–33: evaluate, plus its local structure, that structure's fitness and its
   noisy size).
4. **final** (steps 45–48): the client scores the final population, chooses
   the best, fits its personal tree (the chosen structure on its training
   part) and keeps it; it replies with the index and its fitness only.
5. **tree**: the client sends the tree it kept. A client whose state is gone
   (a restarted site) fits it again from the request, which carries all the
   fit needs: the same rows, structure and seed give the same tree.

Until the last round the server sees structures, fitness scores, depths,
votes and noisy sizes — never a threshold or a row. The last round sends each
site's personal tree: its thresholds, leaf values and the training rows per
node (so the exact size of its training part, which the Laplace noise on its
size does not cover). A noisy size must lie within the site's declared row
bound give or take the reach of its noise (``50/ε``,
:mod:`fedtrees.algorithms._plausible`); beyond it, the site is left out of that
round as a dropout (a size of 10¹² would weigh its fitness above everyone's).
A tree must have the agreed outputs and features, numeric splits at finite
thresholds, at most the global depth and node counts within the site's rows;
else that site is left without a tree, with a warning naming it.
Client k splits its rows into training and validation parts with
``[seed, 12, crc32(k)]`` (train ratio r; r = 1 uses all rows for both).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from fedtrees._random import client_key, keyed_rng
from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import check_epsilon
from fedtrees.algorithms._packed import (
    PackedTrees,
    check_numeric_tree,
    check_tree_counts,
    class_codes,
    packed_fields,
    rebuild_packed,
)
from fedtrees.algorithms._params import MAX_POPULATION
from fedtrees.algorithms._plausible import noisy_count_field
from fedtrees.algorithms._requests import (
    MAX_REPLY_CELLS,
    check_request_size,
    request_error,
)
from fedtrees.algorithms.fedga._evaluate import (
    Task,
    TrainingRows,
    fit_structure,
    score_structures,
)
from fedtrees.algorithms.fedga._initialize import (
    cross_validate_depths,
    local_structure,
    noisy_size,
)
from fedtrees.algorithms.fedga._votes import regression_votes
from fedtrees.federation import (
    ClientData,
    ClientState,
    Field,
    Payload,
    ReplySpec,
    handler,
    payload,
)
from fedtrees.privacy import PrivacyAccountant
from fedtrees.tree import PACKED_FIELDS, Tree, pack_trees

__all__ = [
    "EvaluateRequest",
    "FinalRequest",
    "InitRequest",
    "JoinRequest",
    "LocalRequest",
    "TreeReply",
    "TreeRequest",
    "personal_tree",
]

SPLIT_STREAM: Final = 12
SIZE_STREAM: Final = 13
TREE_KEY: Final = "fedga.tree"
"""The per-run client state's entry holding the personal tree (a KeptTree)."""


# -- shared ------------------------------------------------------------------------
def _task(request: Any) -> Task:
    return "classification" if request.task == "classification" else "regression"


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
    X, y = data.finite_matrix(), _labels(request, data)
    train, val = _split(data, request.seed, request.train_ratio)
    n_classes = (
        int(request.classes.shape[0]) if _task(request) == "classification" else 0
    )
    rows = TrainingRows.of(X[train], y[train], _task(request), n_classes)
    return score_structures(rows, structures, request.depth, X[val], y[val])


def _size(request: Any, data: ClientData) -> tuple[float, float]:
    """Release the noisy size, charged to the site's budget first (if declared)."""
    check_epsilon(request.epsilon, f"request {request.kind!r}")
    data.charge_privacy(request.epsilon, f"{request.kind}: noisy size")
    accountant = PrivacyAccountant(request.epsilon, owner=f"client {data.client_id!r}")
    rng = keyed_rng(request.seed, SIZE_STREAM, client_key(data.client_id))
    return noisy_size(data.n_rows, request.epsilon, rng, accountant=accountant)


def _fitness_field(task: str, shape: tuple[int, ...] | None) -> Field:
    """Return the check of fitness values: macro-F1 in [0, 1], or an MSE >= 0."""
    high = 1.0 if task == "classification" else None
    if shape is None:
        return Field.scalar(low=0.0, high=high)
    return Field.array("f", shape, nonnegative=True, high=high)


def _size_field(epsilon: float) -> Field:
    """Return the check of a noisy size ``n + Lap(1/ε)``.

    Within the client's declared row bound, give or take the reach of the
    noise (:func:`fedtrees.algorithms._plausible.noisy_count_field`): a size far
    beyond the client's rows would weigh its fitness above everyone's.
    """
    return noisy_count_field(1.0 / epsilon)


def _structure_field(depth: int, n_features: int) -> Field:
    """Return the check of a structure string: feature ids or -1 (nil)."""
    return Field.array("i", (2**depth - 1,), low=-1, high=n_features - 1)


# -- 1. init -----------------------------------------------------------------------
@payload("fedga.init_reply")
class InitReply(Payload):
    """The client's CV depth and its noisy size (and the ε it spent)."""

    depth: int
    noisy_size: float
    epsilon_spent: float


@payload("fedga.init")
class InitRequest(Payload):
    """Propose a depth by K-fold CV; release the noisy size (steps 6–7)."""

    task: str
    classes: np.ndarray
    depth_low: int
    depth_high: int
    folds: int
    epsilon: float
    seed: int

    def expected_reply(self) -> ReplySpec:
        """Expect a depth in range, a plausible noisy size, and ε spent equal to ε."""
        return ReplySpec(
            InitReply,
            {
                "depth": Field.scalar(low=self.depth_low, high=self.depth_high),
                "noisy_size": _size_field(self.epsilon),
                "epsilon_spent": Field.scalar(low=self.epsilon, high=self.epsilon),
            },
        )


@handler("fedga.init")
def propose_depth(request: InitRequest, data: ClientData) -> InitReply:
    """Client: CV depth over the range; the noisy size."""
    search = cross_validate_depths(
        data.finite_matrix(),
        _labels(request, data),
        _task(request),
        seed=request.seed,
        depth_range=(request.depth_low, request.depth_high),
        folds=request.folds,
    )
    size, spent = _size(request, data)
    return InitReply(int(search.best_depth), size, spent)


# -- 2. local ----------------------------------------------------------------------
@payload("fedga.local_reply")
class LocalReply(Payload):
    """The local structure T_d^i and, for regression, the two votes."""

    structure: np.ndarray
    vote_ratio: bool
    vote_elitism: bool


@payload("fedga.local")
class LocalRequest(Payload):
    """Fit the local CART at the global depth; send its structure (step 12)."""

    task: str
    classes: np.ndarray
    depth: int
    n_features: int
    depth_low: int
    depth_high: int
    folds: int
    phi_star: float
    theta_star: float
    mu_star: float
    seed: int

    def expected_reply(self) -> ReplySpec:
        """Expect a structure string of the depth with feature ids in range."""
        return ReplySpec(
            LocalReply,
            {
                "structure": _structure_field(self.depth, self.n_features),
                "vote_ratio": Field.scalar(),
                "vote_elitism": Field.scalar(),
            },
        )


@handler("fedga.local")
def send_local_structure(request: LocalRequest, data: ClientData) -> LocalReply:
    """Client: the local structure; regression votes from the CV scores at d."""
    _check_depth(request)
    X, y, task = data.finite_matrix(), _labels(request, data), _task(request)
    n_classes = int(request.classes.shape[0]) if task == "classification" else 0
    structure = local_structure(
        X, y, task, request.depth, seed=request.seed, n_classes=n_classes
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
@payload("fedga.fitness")
class FitnessReply(Payload):
    """One fitness per candidate structure (macro-F1 or MSE)."""

    fitness: np.ndarray


@payload("fedga.evaluate")
class EvaluateRequest(Payload):
    """Score every candidate structure on your validation part (step 28)."""

    task: str
    classes: np.ndarray
    structures: np.ndarray
    depth: int
    train_ratio: float
    seed: int

    def expected_reply(self) -> ReplySpec:
        """One finite, non-negative fitness per candidate (F1 <= 1)."""
        n = int(self.structures.shape[0])
        return ReplySpec(FitnessReply, {"fitness": _fitness_field(self.task, (n,))})


@handler("fedga.evaluate")
def evaluate(request: EvaluateRequest, data: ClientData) -> FitnessReply:
    """Client: fit every structure's thresholds and leaves; score them."""
    return FitnessReply(_fitness(request, data, request.structures))


@payload("fedga.join_reply")
class JoinReply(Payload):
    """A late joiner's fitness of the candidates, its local structure and size."""

    fitness: np.ndarray
    structure: np.ndarray
    local_fitness: float
    noisy_size: float
    epsilon_spent: float


@payload("fedga.join")
class JoinRequest(Payload):
    """Steps 29–33: evaluate, and send your local structure and noisy size."""

    task: str
    classes: np.ndarray
    structures: np.ndarray
    depth: int
    n_features: int
    train_ratio: float
    epsilon: float
    seed: int

    def expected_reply(self) -> ReplySpec:
        """Fitness per candidate; a structure of the depth; ε spent equal to ε."""
        n = int(self.structures.shape[0])
        return ReplySpec(
            JoinReply,
            {
                "fitness": _fitness_field(self.task, (n,)),
                "structure": _structure_field(self.depth, self.n_features),
                "local_fitness": _fitness_field(self.task, None),
                "noisy_size": _size_field(self.epsilon),
                "epsilon_spent": Field.scalar(low=self.epsilon, high=self.epsilon),
            },
        )


@handler("fedga.join")
def join(request: JoinRequest, data: ClientData) -> JoinReply:
    """Client: as evaluate, plus the local structure, its fitness, the size."""
    _check_structures(request, request.structures)
    X, y, task = data.finite_matrix(), _labels(request, data), _task(request)
    n_classes = int(request.classes.shape[0]) if task == "classification" else 0
    structure = local_structure(
        X, y, task, request.depth, seed=request.seed, n_classes=n_classes
    )
    both = np.vstack([request.structures, structure[None, :]])
    fitness = _fitness(request, data, both)
    size, spent = _size(request, data)
    return JoinReply(fitness[:-1], structure, float(fitness[-1]), size, spent)


# -- 4. final ----------------------------------------------------------------------
@payload("fedga.choice")
class ChoiceReply(Payload):
    """The index of the client's best structure and its fitness (no thresholds)."""

    choice: int
    fitness: float


@payload("fedga.final")
class FinalRequest(EvaluateRequest):
    """Score the final population; keep the best (steps 45–48)."""

    maximize: bool

    def expected_reply(self) -> ReplySpec:
        """Expect an index into the population and its fitness."""
        n = int(self.structures.shape[0])
        return ReplySpec(
            ChoiceReply,
            {
                "choice": Field.scalar(low=0, high=n - 1),
                "fitness": _fitness_field(self.task, None),
            },
        )


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
@payload("fedga.tree_reply")
class TreeReply(PackedTrees):
    """The client's personal tree (:func:`fedtrees.tree.pack_trees` arrays)."""


@payload("fedga.kept_tree")
class KeptTree(PackedTrees):
    """The personal tree as a client keeps it, with what it was fitted from."""

    task: str
    classes: np.ndarray
    structure: np.ndarray
    depth: int
    train_ratio: float
    seed: int

    def fits(self, request: TreeRequest) -> bool:
        """Return whether this is the tree ``request`` asks for (same fit)."""
        return (
            self.task == request.task
            and self.depth == request.depth
            and self.train_ratio == request.train_ratio
            and self.seed == request.seed
            and np.array_equal(self.classes, request.classes)
            and np.array_equal(self.structure, request.structure)
        )


@payload("fedga.tree")
class TreeRequest(Payload):
    """Send the personal tree you kept; fit it again from these fields if it is gone.

    The fit is the final round's: ``structure`` (the one the client chose) on
    its training part under ``train_ratio`` and ``seed``. ``n_features`` is the
    agreed column count the tree is checked against.
    """

    task: str
    classes: np.ndarray
    structure: np.ndarray
    depth: int
    n_features: int
    train_ratio: float
    seed: int

    def expected_reply(self) -> ReplySpec:
        """One packed tree of the task's outputs, its counts within the rows.

        Finite values (class shares in [0, 1] for classification), non-negative
        impurities; then the whole tree (:meth:`_check_tree`).
        """
        classification = self.task == "classification"
        n_outputs = int(self.classes.shape[0]) if classification else 1
        fields = packed_fields(1, n_outputs, rows=True)
        fields["impurity"] = Field.array("f", (None,), nonnegative=True)
        if classification:
            fields["value"] = Field.array("f", (None, n_outputs), low=0.0, high=1.0)
        return ReplySpec(TreeReply, fields, check=self._check_tree)

    def tree(self, reply: TreeReply) -> Tree:
        """Rebuild the reply's tree (labels as codes); InvalidField if malformed."""
        (tree,) = rebuild_packed(
            reply, n_features=self.n_features, classes=class_codes(self.classes)
        )
        return tree

    def _check_tree(self, reply: TreeReply) -> None:
        """Refuse a malformed tree, a non-numeric split, too deep a tree, bad counts."""
        tree = self.tree(reply)
        check_numeric_tree(tree, self.depth, "FedGA personal tree")
        check_tree_counts(tree)


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
        task, classes, structure[None, :], depth, train_ratio, seed
    )
    X, y = data.finite_matrix(), _labels(request, data)
    train, _ = _split(data, seed, train_ratio)
    n_classes = int(classes.shape[0]) if task == "classification" else 0
    return fit_structure(structure, depth, X[train], y[train], task, n_classes)
