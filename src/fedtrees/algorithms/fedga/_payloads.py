"""FedGA-Tree's messages (docs/fedga.md; client: ``_handlers``, server: ``_strategy``).

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

import numpy as np

from fedtrees.algorithms._packed import (
    PackedTrees,
    check_numeric_tree,
    check_tree_counts,
    class_codes,
    packed_fields,
    rebuild_packed,
)
from fedtrees.algorithms._plausible import noisy_count_field
from fedtrees.federation import (
    Field,
    Payload,
    ReplySpec,
    payload,
)
from fedtrees.tree import Tree

__all__ = [
    "EvaluateRequest",
    "FinalRequest",
    "InitRequest",
    "JoinRequest",
    "LocalRequest",
    "TreeReply",
    "TreeRequest",
]


# -- shared ------------------------------------------------------------------------
def _fitness_field(task: str, shape: tuple[int, ...] | None) -> Field:
    """Return the check of fitness values: an F1 in [0, 1], or an MSE >= 0."""
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
    f1_average: str

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


# -- 3. evaluate / join ----------------------------------------------------------------
@payload("fedga.fitness")
class FitnessReply(Payload):
    """One fitness per candidate structure (F1 or MSE)."""

    fitness: np.ndarray


@payload("fedga.evaluate")
class EvaluateRequest(Payload):
    """Score every candidate structure on your validation part (step 28).

    ``f1_average`` ("macro" or "binary") says how classification fitness
    averages F1 (:mod:`._evaluate`); regression ignores it.
    """

    task: str
    classes: np.ndarray
    structures: np.ndarray
    depth: int
    train_ratio: float
    seed: int
    f1_average: str

    def expected_reply(self) -> ReplySpec:
        """One finite, non-negative fitness per candidate (F1 <= 1)."""
        n = int(self.structures.shape[0])
        return ReplySpec(FitnessReply, {"fitness": _fitness_field(self.task, (n,))})


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
    f1_average: str

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
