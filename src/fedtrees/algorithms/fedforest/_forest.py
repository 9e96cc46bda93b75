"""The forest a FedForest client has been told: versions, deltas, and checks.

Protocol v2 (per-run client state, :mod:`fedtrees.federation._state`): the server sends
each level's new splits only (:class:`ForestDeltas`, the server's end of the chain; the
client's end is :func:`apply_batch`). A split batch lists split nodes in increasing id
order; split i of a forest with n nodes gets children n + 2i (left) and n + 2i + 1
(right), in its parent's tree — the order in which the server appends them, so ids agree
without being sent. Versions chain: ``digest = H(base, batch)`` (BLAKE2b, 128 bits), so
a client that missed a batch, or kept another fit's forest, sees that its version
differs from the request's ``base`` and asks for a resync.
"""

from __future__ import annotations

import dataclasses
import hashlib
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees.algorithms.fedforest._kernels import SPLIT_CLIENT, SPLIT_NONE
from fedtrees.algorithms.fedforest._layout import compact_ints
from fedtrees.algorithms.fedforest._payloads import ForestState, LevelFields
from fedtrees.exceptions import ValidationError

if TYPE_CHECKING:
    from fedtrees.algorithms.fedforest._growth import ForestGrowth

__all__ = [
    "ForestDeltas",
    "SplitBatch",
    "apply_batch",
    "chain",
    "next_version",
    "start_state",
]


@dataclass(frozen=True, eq=False)
class SplitBatch:
    """Splits made since a version: nodes (increasing), features, thresholds, sets."""

    node: IntArray
    feature: IntArray
    threshold: FloatArray
    set_ptr: IntArray
    set_codes: IntArray
    missing_left: BoolArray
    """Whether each split routes missing values (NaN) left."""

    @classmethod
    def of(cls, request: LevelFields) -> SplitBatch:
        """Return the batch a request carries (as int64 / float64 / bool)."""
        return cls(
            np.asarray(request.split_node, dtype=np.int64),
            np.asarray(request.split_feature, dtype=np.int64),
            np.asarray(request.split_threshold, dtype=np.float64),
            np.asarray(request.split_set_ptr, dtype=np.int64),
            np.asarray(request.split_set_codes, dtype=np.int64),
            np.asarray(request.split_missing, dtype=bool),
        )

    @property
    def size(self) -> int:
        """Number of splits in the batch."""
        return int(self.node.shape[0])


def next_version(base: str, batch: SplitBatch) -> str:
    """Return the version after ``batch`` (``base`` itself if it is empty)."""
    return chain(base, batch) if batch.size else base


def chain(base: str, batch: SplitBatch) -> str:
    """Return the version after ``batch``: BLAKE2b over the base and the batch."""
    h = hashlib.blake2b(base.encode(), digest_size=16)
    for array in (
        batch.node,
        batch.feature,
        batch.threshold,
        batch.set_ptr,
        batch.set_codes,
        batch.missing_left,
    ):
        h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()


class ForestDeltas:
    """What the clients have been told of the growing forest: the server's end.

    Every request carries the splits made since the previous request (a batch
    from version ``base`` to ``digest``) and neutral settings
    (:meth:`delta_fields`); a first request, or one resent after a resync, is
    the full form: the fit's settings for that client and every split so far
    (:meth:`full_fields`).
    """

    def __init__(self, growth: ForestGrowth) -> None:
        self.growth = growth
        # A random id in [2^61, 2^62): always 19 digits, so the encoded size (and
        # the ledger's byte counts) never depends on the draw.
        self.fit_id = (1 << 61) | secrets.randbits(61)
        self._sent_splits, self._sent_digest = 0, ""
        self.class_weights: FloatArray = np.zeros((0, 0))
        """Each class's weight (one row, or one per tree); (0, 0): none. Set
        by the strategy before the first level (a preamble may learn it)."""

    @property
    def weight_scale(self) -> float:
        """The largest class weight, at least 1 (the replies' bound scale)."""
        return float(np.max(self.class_weights, initial=1.0))

    def delta_fields(self) -> dict[str, Any]:
        """Fields every client's next request shares: the splits since the last one.

        Advances the version the clients are assumed to hold; the open nodes
        and features each client is asked about are added per client.
        """
        nodes = self._split_nodes()
        batch = self._batch(nodes[self._sent_splits :])
        base = self._sent_digest
        self._sent_digest = next_version(base, batch)
        self._sent_splits = nodes.shape[0]
        return {
            "fit_id": self.fit_id,
            "level": self.growth.level,
            "base": base,
            "digest": self._sent_digest,
            "full": False,
            **self._batch_fields(batch),
            **self._neutral_setup(),
            "weight_scale": self.weight_scale,
        }

    def full_fields(self, client: str) -> dict[str, Any]:
        """Return the same fields in full form for one client (first, resync)."""
        g, c = self.growth, self.growth.config
        nodes = self._split_nodes()[: self._sent_splits]
        code = int(np.flatnonzero(g.clients == client)[0])
        return {
            "fit_id": self.fit_id,
            "level": g.level,
            "base": "",
            "digest": self._sent_digest,
            "full": True,
            **self._batch_fields(self._batch(nodes)),
            "seed": c.seed,
            "bootstrap": c.bootstrap,
            "task": c.task,
            "target": c.target,
            "classes": self._classes_field(),
            "holdout": c.holdout,
            "client_code": code,
            "participation": g.participation[:, code].copy(),
            "class_weights": self.class_weights,
            "weight_scale": self.weight_scale,
        }

    def _neutral_setup(self) -> dict[str, Any]:
        """Return neutral settings: a delta request does not carry them."""
        c = self.growth.config
        return {
            "seed": 0,
            "bootstrap": False,
            "task": c.task,
            "target": c.target,
            "classes": self._classes_field(),
            "holdout": 0.0,
            "client_code": -1,
            "participation": np.zeros(0, bool),
            "class_weights": np.zeros((0, 0)),
        }

    def _classes_field(self) -> np.ndarray:
        # The class count sets the width of every statistic the reply is checked
        # against, so deltas carry the labels too (a few bytes).
        g = self.growth
        return g.classes if g.config.task != "regression" else np.zeros(0, str)

    def _split_nodes(self) -> IntArray:
        """Split nodes in increasing id order: the order their children were added."""
        t = self.growth.table
        nodes = np.flatnonzero(t.feature != SPLIT_NONE)
        trees = self.growth.config.n_estimators
        assert np.array_equal(t.left[nodes], trees + 2 * np.arange(nodes.shape[0])), (
            "children must follow the split order"
        )
        return nodes

    def _batch(self, nodes: IntArray) -> SplitBatch:
        t, sets = self.growth.table, self.growth.sets
        codes = [sets.get(int(g), np.zeros(0, np.int64)) for g in nodes]
        ptr = np.concatenate([[0], np.cumsum([s.shape[0] for s in codes])])
        return SplitBatch(
            nodes.astype(np.int64),
            t.feature[nodes].astype(np.int64),
            t.threshold[nodes].astype(np.float64),
            ptr.astype(np.int64),
            np.concatenate(codes).astype(np.int64) if codes else np.zeros(0, np.int64),
            t.missing_left[nodes].copy(),
        )

    @staticmethod
    def _batch_fields(batch: SplitBatch) -> dict[str, Any]:
        return {
            "split_node": compact_ints(batch.node),
            "split_feature": compact_ints(batch.feature),
            "split_threshold": batch.threshold,
            "split_set_ptr": compact_ints(batch.set_ptr),
            "split_set_codes": compact_ints(batch.set_codes),
            "split_missing": batch.missing_left,
        }


def start_state(request: LevelFields) -> ForestState:
    """Return a client's state from a full request: its settings and B roots."""
    trees = int(request.participation.shape[0])
    if trees < 1:
        raise ValidationError("FedForest request: a full request names no trees.")
    empty = np.zeros(0, np.int64)
    return ForestState(
        fit_id=request.fit_id,
        digest="",
        seed=request.seed,
        bootstrap=request.bootstrap,
        task=request.task,
        target=request.target,
        classes=np.asarray(request.classes),
        holdout=request.holdout,
        client_code=request.client_code,
        participation=np.asarray(request.participation, dtype=bool),
        node_tree=np.arange(trees, dtype=np.int64),
        node_feature=np.full(trees, SPLIT_NONE, np.int64),
        node_threshold=np.full(trees, np.nan),
        node_left=np.full(trees, -1, np.int64),
        node_right=np.full(trees, -1, np.int64),
        set_ptr=np.zeros(trees + 1, np.int64),
        set_codes=empty,
        node_missing=np.zeros(trees, bool),
        class_weights=_checked_class_weights(request, trees),
    )


def _checked_class_weights(request: LevelFields, trees: int) -> FloatArray:
    """Return the request's class weights: (0, 0), or (1 or trees, classes) >= 0."""
    weights = np.asarray(request.class_weights, dtype=np.float64)
    classes = int(np.asarray(request.classes).shape[0])
    if weights.size == 0:
        return np.zeros((0, 0))
    if (
        weights.ndim != 2
        or weights.shape[0] not in (1, trees)
        or weights.shape[1] != classes
        or request.task == "regression"
        or not np.all(np.isfinite(weights))
        or np.any(weights < 0)
    ):
        raise ValidationError(
            "FedForest request: class_weights must be finite weights >= 0 of shape "
            f"(1 or {trees} trees, {classes} classes); got shape {weights.shape}."
        )
    return weights


def apply_batch(
    state: ForestState, batch: SplitBatch, digest: str, n_features: int
) -> ForestState:
    """Return ``state`` with ``batch`` applied and version ``digest``.

    A level's batch splits existing nodes; a full (resync) batch also splits
    nodes that earlier splits of the same batch create — split i may name any
    node below ``n + 2i``.

    Raises
    ------
    ValidationError
        If the batch does not describe splits of unsplit nodes of this forest
        (checked before any compiled kernel routes rows through it).
    """
    if batch.size == 0:
        return dataclasses.replace(state, digest=digest)
    n, m = state.node_tree.shape[0], batch.size
    _check_batch(state, batch, n, n_features)
    kids = n + 2 * np.arange(m, dtype=np.int64)
    extra = 2 * m
    feature = np.concatenate([state.node_feature, np.full(extra, SPLIT_NONE)])
    threshold = np.concatenate([state.node_threshold, np.full(extra, np.nan)])
    left = np.concatenate([state.node_left, np.full(extra, -1)])
    right = np.concatenate([state.node_right, np.full(extra, -1)])
    feature[batch.node] = batch.feature
    threshold[batch.node] = batch.threshold
    left[batch.node], right[batch.node] = kids, kids + 1
    missing = np.concatenate([state.node_missing, np.zeros(extra, bool)])
    missing[batch.node] = batch.missing_left
    if batch.set_codes.size:
        sizes = np.concatenate([np.diff(state.set_ptr), np.zeros(extra, np.int64)])
        sizes[batch.node] = np.diff(batch.set_ptr)
        set_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        set_codes = _merge_sets(state, batch, sizes)
    else:  # no category or client set in the batch: the sets only grow empty
        set_ptr = np.concatenate([state.set_ptr, np.full(extra, state.set_ptr[-1])])
        set_codes = state.set_codes
    return dataclasses.replace(
        state,
        digest=digest,
        node_tree=_trees(state.node_tree, batch.node, kids),
        node_feature=feature,
        node_threshold=threshold,
        node_left=left,
        node_right=right,
        set_ptr=set_ptr,
        set_codes=set_codes,
        node_missing=missing,
    )


def _trees(tree: IntArray, parents: IntArray, kids: IntArray) -> IntArray:
    """Extend the node-to-tree map: children are in their parent's tree."""
    out = np.concatenate([tree, np.full(2 * kids.shape[0], -1, np.int64)])
    todo = np.ones(kids.shape[0], dtype=bool)
    while todo.any():  # parents made by this batch resolve one depth at a time
        known = todo & (out[parents] >= 0)
        if not known.any():
            raise ValidationError("FedForest request: a split names an unknown node.")
        out[kids[known]] = out[kids[known] + 1] = out[parents[known]]
        todo &= ~known
    return out


def _merge_sets(state: ForestState, batch: SplitBatch, sizes: IntArray) -> IntArray:
    """Category sets of every node, in node order, with the batch's new ones.

    The batch's nodes are unsplit, so their sets are empty: each new set is
    inserted where its node's (empty) block sits.
    """
    ptr = np.concatenate(
        [
            state.set_ptr,
            np.full(sizes.shape[0] - len(state.set_ptr) + 1, state.set_ptr[-1]),
        ]
    )
    where = np.repeat(ptr[batch.node], np.diff(batch.set_ptr))
    out = np.insert(state.set_codes, where, batch.set_codes).astype(np.int64)
    assert out.shape[0] == int(sizes.sum())
    return out


def _check_batch(
    state: ForestState, batch: SplitBatch, n: int, n_features: int
) -> None:
    m = batch.size
    if (
        batch.feature.shape != (m,)
        or batch.threshold.shape != (m,)
        or batch.set_ptr.shape != (m + 1,)
        or batch.missing_left.shape != (m,)
    ):
        raise ValidationError("FedForest request: split arrays differ in length.")
    existing = batch.node[batch.node < n]
    if np.any(batch.node < 0) or np.any(batch.node >= n + 2 * np.arange(m)):
        raise ValidationError("FedForest request: a split names an unknown node.")
    if np.any(np.diff(batch.node) <= 0) or np.any(
        state.node_feature[existing] != SPLIT_NONE
    ):
        raise ValidationError(
            "FedForest request: splits must name unsplit nodes in increasing order."
        )
    f = batch.feature
    if np.any((f < 0) & (f != SPLIT_CLIENT)) or np.any(f >= n_features):
        raise ValidationError("FedForest request: a split names an unknown feature.")
    ptr, codes = batch.set_ptr, batch.set_codes
    if (
        ptr[0] != 0
        or ptr[-1] != codes.shape[0]
        or np.any(np.diff(ptr) < 0)
        or np.any(codes < 0)
    ):
        raise ValidationError("FedForest request: malformed category sets.")
