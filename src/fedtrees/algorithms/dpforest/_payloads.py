"""One round of ε-DP client trees (docs/dpforest.md).

The server sends the public settings (ε, depth, accounting, declared feature
ranges, agreed labels); every client grows one DP tree on its own rows with
:func:`fedtrees.learners.fit_dp_tree`, spending through its own accountant, and
replies with the packed tree, the ε it spent and the queries it made (a site
that declared its own budget is charged the tree's ε first:
:mod:`fedtrees.federation._budget`). Before a
reply is kept the server checks it: the tree rebuilds, has only numeric splits
within the declared ranges, is no deeper than ``max_depth``, and the client
spent its ε (within rounding, never more). Its node counts are noisy (clipped
Laplace; right = parent − left, clipped at 0): they may legitimately exceed
the client's declared row bound, and children may hold more than their node,
so neither is checked (the noise that protects the rows also hides an inflated
count; only its non-negativity is). Client ``k`` draws its candidate thresholds
from ``[seed, 5, crc32(k)]`` (public: uniform in the declared ranges, whatever the
rows); its noise and sampler are its own (:class:`fedtrees.federation.SiteNoise`),
so no request names a sampler.
"""

from __future__ import annotations

import math

import numpy as np

from fedtrees.algorithms._packed import (
    PackedTrees,
    check_numeric_tree,
    class_codes,
    packed_fields,
    rebuild_packed,
)
from fedtrees.federation import (
    Field,
    InvalidField,
    Payload,
    ReplySpec,
    payload,
)
from fedtrees.tree import NodeKind, Tree

__all__ = ["DPTreeReply", "DPTreeRequest"]


@payload("dpforest.tree_reply")
class DPTreeReply(PackedTrees):
    """A client's DP tree (packed), the ε it spent and the queries it made."""

    epsilon_spent: float
    n_queries: int


@payload("dpforest.tree")
class DPTreeRequest(Payload):
    """Grow one ε-DP tree with these public settings."""

    epsilon: float
    max_depth: int
    budget: str
    score: str
    ranges: np.ndarray
    classes: np.ndarray
    seed: int

    def expected_reply(self) -> ReplySpec:
        """One packed tree within the settings; ε spent equal to the budget."""
        fields = packed_fields(1, int(self.classes.shape[0]))
        fields["epsilon_spent"] = Field.scalar(low=0.0, finite=False)
        fields["n_queries"] = Field.scalar(low=1)
        return ReplySpec(DPTreeReply, fields, check=self._check_tree)

    def tree(self, reply: DPTreeReply) -> Tree:
        """Rebuild the reply's tree (labels as codes)."""
        (tree,) = rebuild_packed(
            reply, n_features=self.ranges.shape[0], classes=class_codes(self.classes)
        )
        return tree

    def _check_tree(self, reply: DPTreeReply) -> None:
        tree = self.tree(reply)
        check_numeric_tree(tree, self.max_depth, "DP tree")
        split = tree.kind != NodeKind.LEAF
        f, t = tree.feature[split], tree.threshold[split]
        if np.any(t < self.ranges[f, 0]) or np.any(t > self.ranges[f, 1]):
            raise InvalidField("threshold", "outside the declared feature ranges")
        if not _same_epsilon(reply.epsilon_spent, self.epsilon):
            raise InvalidField(
                "epsilon_spent", f"{reply.epsilon_spent!r}; expected {self.epsilon!r}"
            )


def _same_epsilon(spent: float, epsilon: float) -> bool:
    """Return whether the whole plan was charged: ε within rounding, never above."""
    if math.isinf(epsilon):
        return math.isinf(spent)
    return spent <= epsilon and math.isclose(spent, epsilon, rel_tol=1e-9, abs_tol=0.0)
