"""ICDTA4FL's messages (docs/icdta.md; client: ``_handlers``, server: ``_strategy``).

Algorithm 1 of the paper (002) on the round loop, after the agreement:

0. (``base="id3"`` with undeclared numeric columns) **sketch**: the federated
   discretization round of :mod:`fedtrees.algorithms._discretize`.
1. **fit** — every client trains its local tree (ID3: multiway, information
   gain, on category and bin codes; CART: scikit-learn, Gini, on raw values and
   category codes) and sends it: *client trees up*.
2. **evaluate** — the server sends ALL trees to every client (*all trees down*);
   client k scores every OTHER client's tree on its own training rows (accuracy
   or macro-F1) and returns the scores, NaN in its own slot (*scores up*). A
   reply that scores its own tree is refused.
3. server — tree scores, the filter, the rules of the kept trees, their
   Cartesian product (:mod:`._rules`) and the global tree (:mod:`._global`).
4. **global** — the server sends the global tree and the aggregated rules
   (*global tree and rules down*); each client scores the global tree on its rows
   and returns that score.

Communication (K clients, F features, C classes; every message also carries the
codec's header). Rounds: ``1 + [1] + 3``; messages ``K`` per round. A packed tree
of n nodes and b branch entries takes ``P(n, b) = n·(49 + 8C) + 8(n + 1) + 16b
+ 16`` array bytes. Up: ``P(tree_k)`` (fit), ``8K`` (scores), ``8`` (global score)
per client. Down per client: the binning (``F + 16F + 8 + 8E`` bytes for E
edges) in each of the three requests, ``Σ_k P(tree_k) + 8`` (evaluate), and
``P(global) + R·(8C + wF)`` (ID3 rules: codes in the smallest signed integer
type holding them, w = 1 byte below 128 codes) or ``R·(8C + 16F)`` (CART: two
bounds) for R rules (global). Nothing in any message has a row dimension.

Client ``k``'s CART is seeded by ``[seed, 7, crc32(k)]``; ID3 is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedtrees._typing import IntArray
from fedtrees.algorithms._discretize import BinnedFields
from fedtrees.algorithms._packed import (
    PackedTrees,
    check_tree_counts,
    class_codes,
    packed_fields,
    rebuild_packed,
)
from fedtrees.federation import (
    ClientData,
    Field,
    InvalidField,
    Payload,
    ReplySpec,
    payload,
)
from fedtrees.tree import NodeKind, Tree

__all__ = [
    "EvaluateRequest",
    "FitRequest",
    "GlobalReply",
    "GlobalRequest",
    "ScoresReply",
    "TreeReply",
]


@dataclass(frozen=True, eq=False)
class _Common(BinnedFields):
    """Fields of every ICDTA4FL request: binning, agreed labels, base and metric."""

    classes: np.ndarray
    base: str
    metric: str

    def labels(self, data: ClientData) -> IntArray:
        """Return the client's labels as codes of the agreed classes."""
        return data.label_codes(self.classes)

    def trees(self, arrays: object) -> list[Tree]:
        """Rebuild packed trees (labels as codes); InvalidField if malformed."""
        n_features = int(self.binned.shape[0])
        return rebuild_packed(
            arrays, n_features=n_features, classes=class_codes(self.classes)
        )


@payload("icdta.tree")
class TreeReply(PackedTrees):
    """A client's local tree (packed)."""


@payload("icdta.fit")
class FitRequest(_Common):
    """Train the local tree (step 1)."""

    max_depth: int
    seed: int

    def expected_reply(self) -> ReplySpec:
        """One packed tree of the base's kind, within max_depth and the codes.

        The local tree is fit without sample weights: its node counts are row
        counts, at most the client's declared row bound, and a node's children
        never hold more than the node; a CART's thresholds are float32 midpoints
        of the client's values (not a Byzantine defence).
        """
        fields = packed_fields(1, int(self.classes.shape[0]), rows=True)
        return ReplySpec(TreeReply, fields, check=self._check_tree)

    def _check_tree(self, reply: TreeReply) -> None:
        (tree,) = self.trees(reply)
        check_tree_counts(tree)
        if tree.max_depth > self.max_depth:
            raise InvalidField("trees", f"deeper than max_depth={self.max_depth}")
        split = tree.kind != NodeKind.LEAF
        wanted = NodeKind.CATEGORICAL if self.base == "id3" else NodeKind.NUMERIC
        if np.any(split & (tree.kind != wanted)):
            raise InvalidField("trees", f"a {self.base} tree has {wanted.name} splits")
        if self.base == "id3":
            _check_id3(tree, self.arity)


def _check_id3(tree: Tree, arity: IntArray) -> None:
    """Multiway: one code per branch, codes within the arity, no default branch."""
    split = tree.kind == NodeKind.CATEGORICAL
    owner = np.repeat(np.arange(tree.n_nodes), np.diff(tree.branch_ptr))
    _, codes_per_child = np.unique(tree.branch_child, return_counts=True)
    if np.any(codes_per_child > 1) or np.any(tree.right[split] != -1):
        raise InvalidField("trees", "ID3 branches hold one code each, no default")
    if np.any(tree.branch_code >= arity[tree.feature[owner]]):
        raise InvalidField("branch_code", "a code beyond its column's categories")
    for rule in tree.rules():
        features = [c.feature for c in rule.conditions]
        if len(set(features)) != len(features):
            raise InvalidField("trees", "ID3 uses a feature at most once per path")


@payload("icdta.scores")
class ScoresReply(Payload):
    """A client's score of every tree, NaN for its own."""

    scores: np.ndarray


@payload("icdta.evaluate")
class EvaluateRequest(PackedTrees, _Common):
    """Score every other client's tree on your rows (step 2)."""

    owners: np.ndarray
    recipient: int

    def expected_reply(self) -> ReplySpec:
        """One score per tree in [0, 1]; NaN exactly in the recipient's slot."""
        n = int(self.owners.shape[0])
        fields = {"scores": Field.array("f", (n,), finite=False, low=0.0, high=1.0)}
        return ReplySpec(ScoresReply, fields, check=self._own_slot)

    def _own_slot(self, reply: ScoresReply) -> None:
        missing = np.isnan(reply.scores)
        if not missing[self.recipient] or missing.sum() != 1:
            raise InvalidField(
                "scores", "must score every tree but the client's own (NaN there)"
            )


@payload("icdta.global_score")
class GlobalReply(Payload):
    """A client's score of the global tree on its rows."""

    score: float


@payload("icdta.global")
class GlobalRequest(PackedTrees, _Common):
    """The global tree and the aggregated rules (step 6); score the tree."""

    rule_values: np.ndarray
    rule_low: np.ndarray
    rule_high: np.ndarray
    rule_proba: np.ndarray

    def expected_reply(self) -> ReplySpec:
        """Expect a score in [0, 1]."""
        return ReplySpec(GlobalReply, {"score": Field.scalar(low=0.0, high=1.0)})
