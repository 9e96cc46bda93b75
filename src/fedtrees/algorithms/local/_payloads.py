"""One round of local forests: each client fits its own forest and sends the trees.

The protocol behind both local baselines (docs/fedforest.md): the server sends
the forest parameters; every client fits a scikit-learn random forest on its own
rows (:func:`fedtrees.learners.fit_local_forest`) and replies with the packed trees
and its total sample weight. The server checks every packed tree before keeping
it. Client ``k``'s forest is seeded by ``[seed, 4, crc32(k)]`` (STYLE habit 8).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from fedtrees.algorithms._packed import (
    PackedTrees,
    check_tree_counts,
    class_codes,
    packed_fields,
    rebuild_packed,
)
from fedtrees.algorithms._requests import field_error
from fedtrees.federation import (
    Field,
    Payload,
    ReplySpec,
    payload,
)
from fedtrees.tree import Tree, pack_trees

__all__ = ["ForestReply", "ForestRequest"]


@payload("local.forest_reply")
class ForestReply(PackedTrees):
    """A client's forest (:func:`fedtrees.tree.pack_trees` arrays) and weight."""

    weight: float

    @classmethod
    def of(cls, trees: list[Tree], weight: float) -> ForestReply:
        """Pack ``trees`` with the client's total sample weight."""
        return cls(**pack_trees(trees), weight=weight)

    def trees(self, **meta: Any) -> list[Tree]:
        """Rebuild the trees (``meta``: ``n_features``, ``classes``, names...)."""
        return rebuild_packed(self, **meta)


@payload("local.forest")
class ForestRequest(Payload):
    """Fit a local forest with ``params`` (JSON of scikit-learn forest parameters).

    ``classes`` are the agreed labels (empty for regression).
    """

    params: str
    classes: np.ndarray
    n_features: int
    seed: int

    @property
    def n_estimators(self) -> int:
        """Trees each client returns."""
        return int(self.parsed_params().get("n_estimators", 100))

    def parsed_params(self) -> dict[str, Any]:
        """Return ``params`` as a dict, or raise naming the field.

        Raises
        ------
        ValidationError
            ``params`` is not the JSON text of an object.
        """
        try:
            params = json.loads(self.params)
        except (json.JSONDecodeError, TypeError):
            params = None
        if not isinstance(params, dict):
            raise field_error(
                self.kind, "params", "the JSON text of an object", "something else"
            )
        return params

    def expected_reply(self) -> ReplySpec:
        """Packed trees that rebuild into valid trees; a weight within the bound.

        Node counts are scikit-learn's weighted counts: sample weights times
        bootstrap counts, or, where scikit-learn's bootstrap draws rows in
        proportion to their weights, the rows drawn. So they are at most the
        larger of the client's declared row and weight bounds, unless
        ``params`` sets a ``class_weight`` (which scales them by an amount the
        server cannot bound); a node's children never hold more than the node;
        thresholds are finite. The weight is the total sample weight, within
        the weight bound. Not a Byzantine defence.
        """
        n_outputs = max(int(self.classes.shape[0]), 1)
        weighted = self.parsed_params().get("class_weight") is None
        fields = packed_fields(
            self.n_estimators,
            n_outputs,
            rows=True,
            weights=True,
            bound_scale=1.0 if weighted else math.inf,
        )
        fields["weight"] = Field.scalar(low=0.0, weights=True)
        return ReplySpec(ForestReply, fields, check=self._rebuilds)

    def _rebuilds(self, reply: ForestReply) -> None:
        for tree in rebuild_packed(
            reply, n_features=self.n_features, classes=class_codes(self.classes)
        ):
            check_tree_counts(tree)
