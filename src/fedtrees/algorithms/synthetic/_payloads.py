"""One-shot synthetic data: the one message, its reply and their checks.

After the agreement, one round: the server sends the public settings (depth,
class weights, leaf sizes, the one-hot layout, the declared ranges) and every
client fits a CART with the entropy criterion on its one-hot encoded rows and
replies with the packed tree and the seconds the fit took (the paper's client
compute time). That is all a client ever sends: *trees only*.

Before a reply is kept the server checks it: the tree rebuilds, splits numeric
columns of the one-hot matrix only, is no deeper than ``max_depth``, and every
threshold lies within its column's range (``[0, 1]`` for an indicator column,
the declared range of a numeric one). A threshold outside a declared range is
refused naming the client, the column and the range: either the declaration is
wrong or the reply is. Without declared ranges a numeric threshold has no agreed
range to lie in; it must still be one a CART can learn and the generation can
use: within ``±``:data:`UNDECLARED_LIMIT` (a finite midpoint, with room for the
α-intervals and the outside fills around it to stay finite). Declare
``feature_ranges`` to bound it by the data's range.

Communication: one round; down per client the request (the F' one-hot column names
as one JSON string, ``16F'`` range bytes when ranges are declared, the classes), up
``P(tree) + 8`` bytes, the packed tree of :mod:`fedtrees.algorithms._packed`
and its fit time. Client k's CART is seeded by ``[seed, 9, crc32(k)]``.
"""

from __future__ import annotations

import json
from typing import Any, Final

import numpy as np

from fedtrees._validation import LARGEST_FLOAT
from fedtrees.algorithms._packed import (
    PackedTrees,
    check_numeric_tree,
    check_tree_counts,
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

__all__ = ["TreeReply", "TreeRequest", "cart_params"]

UNDECLARED_LIMIT: Final = LARGEST_FLOAT / 64
"""Largest |threshold| of a numeric column without a declared range.

Synthetic rows reach one range width beyond the hull of the thresholds'
alpha-intervals: within 3 * (1 + alpha) * limit, finite for every alpha <= 20.
"""


@payload("synthetic.tree_reply")
class TreeReply(PackedTrees):
    """A client's CART (packed) and the seconds its fit took."""

    fit_seconds: float


@payload("synthetic.tree")
class TreeRequest(Payload):
    """Fit one entropy CART on your one-hot encoded rows with these settings.

    ``names`` are the one-hot columns' names as a JSON list (the errors name
    the column; one string costs an eighth of a string array's fixed-width
    cells). ``ranges`` has one (min, max) row per one-hot column, or no rows when the
    user declared none (thresholds are then checked against ``[0, 1]`` on
    indicator columns and ``±UNDECLARED_LIMIT`` on numeric ones).
    ``class_weights`` holds one weight per agreed class when
    ``class_weight == "given"``.
    """

    classes: np.ndarray
    n_categories: np.ndarray
    names: str
    ranges: np.ndarray
    max_depth: int
    min_samples_split: int
    min_samples_leaf: int
    class_weight: str
    class_weights: np.ndarray
    seed: int

    def expected_reply(self) -> ReplySpec:
        """One packed numeric tree within the depth and the ranges; a fit time.

        Node counts are class-weighted row counts: at most the declared row
        bound times the largest given class weight ("balanced" weights keep the
        total at the row count), and a node's children never hold more than the
        node. Not a Byzantine defence.
        """
        given = self.class_weight == "given" and self.class_weights.size
        scale = max(float(self.class_weights.max()), 1.0) if given else 1.0
        fields = packed_fields(
            1, int(self.classes.shape[0]), rows=True, bound_scale=scale
        )
        fields["fit_seconds"] = Field.scalar(low=0.0)
        return ReplySpec(TreeReply, fields, check=self._check_tree)

    def column_names(self) -> list[str]:
        """Return the names of the one-hot columns."""
        names: list[str] = json.loads(self.names)
        return names

    def tree(self, reply: TreeReply) -> Tree:
        """Rebuild the reply's tree (labels as codes); InvalidField if malformed."""
        (tree,) = rebuild_packed(
            reply,
            n_features=int(np.maximum(self.n_categories, 1).sum()),
            classes=class_codes(self.classes),
        )
        return tree

    def _check_tree(self, reply: TreeReply) -> None:
        tree = self.tree(reply)
        check_numeric_tree(tree, self.max_depth, "CART of the one-hot matrix")
        check_tree_counts(tree)
        split = tree.kind != NodeKind.LEAF
        self._check_thresholds(tree.feature[split], tree.threshold[split])

    def _check_thresholds(self, features: np.ndarray, thresholds: np.ndarray) -> None:
        low, high = self._limits()
        outside = (thresholds < low[features]) | (thresholds > high[features])
        if outside.any():
            j = int(np.flatnonzero(outside)[0])
            f = int(features[j])
            raise InvalidField(
                "threshold",
                f"splits column {self.column_names()[f]!r} at "
                f"{thresholds[j]:g}, "
                f"outside its range [{low[f]:g}, {high[f]:g}]; declare "
                "feature_ranges that hold every value of every client",
            )

    def _limits(self) -> tuple[np.ndarray, np.ndarray]:
        """Per one-hot column, the interval a threshold must lie in."""
        if self.ranges.shape[0]:
            return self.ranges[:, 0], self.ranges[:, 1]
        indicator = np.repeat(self.n_categories > 0, np.maximum(self.n_categories, 1))
        return (
            np.where(indicator, 0.0, -UNDECLARED_LIMIT),
            np.where(indicator, 1.0, UNDECLARED_LIMIT),
        )


def cart_params(request: TreeRequest, present: np.ndarray) -> dict[str, Any]:
    """Return the scikit-learn settings for rows holding the ``present`` codes.

    Entropy, the leaf sizes, and the class weights of the classes present (a
    weight dict may not name a class the rows lack).
    """
    weights: object = None
    if request.class_weight == "balanced":
        weights = "balanced"
    elif request.class_weight == "given":
        weights = {int(c): float(request.class_weights[c]) for c in present}
    return {
        "criterion": "entropy",
        "min_samples_split": request.min_samples_split,
        "min_samples_leaf": request.min_samples_leaf,
        "class_weight": weights,
    }
