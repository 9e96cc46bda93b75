"""A forest packed for prediction: its trees' arrays joined once, routed in one pass.

:class:`FlatForest` joins the arrays of many :class:`~fedtrees.tree.Tree` s
(node ids made global, branch codes sorted per node, the missing directions
resolved, client codes mapped to one list of clients) and predicts with one
compiled pass over all rows and all trees (:mod:`fedtrees.tree._kernels`).
Joining costs a pass over the nodes, so an estimator builds it once per fitted
forest and keeps it (:meth:`FlatForest.packs` tells whether a kept one still
holds a given list of trees); then one row costs a validation and one kernel
call.

Its predictions are those of the trees routed one by one
(:meth:`Tree.predict_value`), which the tests check for every node kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numba import get_num_threads

from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import check_matrix
from fedtrees.exceptions import ValidationError
from fedtrees.tree._kernels import NODE_DTYPE, forest_values, forest_values_serial
from fedtrees.tree._kinds import LEAF, NodeKind
from fedtrees.tree._model import Tree
from fedtrees.tree._predict import client_codes, missing_category_codes
from fedtrees.tree._structure import branch_owner, children_csr, missing_goes_left

__all__ = ["FlatForest"]

_PARALLEL_ROWS = 1024  # fewer rows are routed on the calling thread
_BLOCKS_PER_THREAD = 2  # blocks of rows per thread in the parallel pass


@dataclass(frozen=True, eq=False)
class FlatForest:
    """The joined arrays of a forest's trees (node ids global over the trees)."""

    trees: tuple[Tree, ...]
    roots: IntArray
    nodes: npt.NDArray[np.void]
    """One :data:`~fedtrees.tree._kernels.NODE_DTYPE` record per node."""
    nan_code: IntArray
    branch_ptr: IntArray
    branch_code: IntArray
    branch_child: IntArray
    child_ptr: IntArray
    children: IntArray
    count: FloatArray
    value: FloatArray
    clients: tuple[str, ...]
    has_client_splits: bool
    max_nodes: int
    """The largest tree's node count: it bounds the kernel's stack of branches."""

    @classmethod
    def of(cls, trees: Sequence[Tree], *, votes: bool = False) -> FlatForest:
        """Join ``trees`` (one feature count, one output width).

        ``votes``: every leaf holds a one-hot vote for its largest class (the
        first on ties) instead of its distribution, for a forest that votes.

        Examples
        --------
        >>> from fedtrees.tree import NodeStats, TreeBuilder
        >>> def stump(threshold):
        ...     b = TreeBuilder(n_features=1)
        ...     root = b.add_root(NodeStats.from_mean(1.0, 4))
        ...     b.split_numeric(root, 0, threshold, NodeStats.from_mean(0.0, 2),
        ...                     NodeStats.from_mean(2.0, 2))
        ...     return b.build()
        >>> forest = FlatForest.of([stump(0.0), stump(1.0)])
        >>> forest.mean_value([[-1.0], [0.5], [2.0]], owner="example").ravel().tolist()
        [0.0, 1.0, 2.0]
        """
        if not trees:
            raise ValidationError("A forest needs at least one tree.")
        first = trees[0]
        for tree in trees:
            if tree.n_features != first.n_features:
                raise ValidationError(
                    f"The trees of a forest must route one feature count; got "
                    f"{first.n_features} and {tree.n_features}."
                )
            if tree.value.shape[1] != first.value.shape[1]:
                raise ValidationError(
                    f"The trees of a forest must have one output width; got "
                    f"{first.value.shape[1]} and {tree.value.shape[1]}."
                )
        if votes and any(_has_client_split(t) for t in trees):
            raise ValidationError(
                "A voting forest cannot hold client splits (a row of an unknown "
                "client has no single leaf to vote with)."
            )
        clients = _client_list(trees)
        sizes = np.asarray([tree.n_nodes for tree in trees], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        parts = [
            _tree_part(tree, int(o), clients, votes)
            for tree, o in zip(trees, offsets, strict=True)
        ]

        def joined(name: str) -> npt.NDArray[np.generic]:
            return np.ascontiguousarray(np.concatenate([p[name] for p in parts]))

        return cls(
            trees=tuple(trees),
            roots=offsets,
            nodes=_records(parts),
            nan_code=joined("nan_code").astype(np.int64),
            branch_ptr=_joined_ptr([p["branch_ptr"] for p in parts]),
            branch_code=joined("branch_code").astype(np.int64),
            branch_child=joined("branch_child").astype(np.int64),
            child_ptr=_joined_ptr([p["child_ptr"] for p in parts]),
            children=joined("children").astype(np.int64),
            count=joined("count").astype(np.float64),
            value=np.ascontiguousarray(np.concatenate([p["value"] for p in parts])),
            clients=clients,
            has_client_splits=any(_has_client_split(t) for t in trees),
            max_nodes=int(sizes.max()),
        )

    @property
    def n_features(self) -> int:
        """Number of columns the trees route."""
        return self.trees[0].n_features

    def packs(self, trees: Sequence[Tree]) -> bool:
        """Whether this forest was joined from exactly ``trees`` (the same objects)."""
        return len(trees) == len(self.trees) and all(
            a is b for a, b in zip(trees, self.trees, strict=True)
        )

    def mean_value(
        self,
        X: npt.ArrayLike,
        *,
        owner: str,
        weights: npt.ArrayLike | None = None,
        client: object = None,
    ) -> FloatArray:
        """Return the (weighted) mean of the trees' leaf values, (n_samples, n_outputs).

        ``weights`` (one per tree, >= 0, not all zero) default to equal weights;
        ``client`` (one id, one per row, or None) routes client splits, as in
        :meth:`Tree.predict_value`. ``owner`` names the caller in errors.
        """
        w = self._weights(weights, owner)
        matrix = check_matrix(
            X,
            "X",
            owner,
            n_features=self.n_features,
            column_names=self.trees[0].feature_names,
            allow_nan=True,
        )
        codes = (
            client_codes(self.clients, client, matrix.shape[0], owner)
            if self.has_client_splits
            else np.full(matrix.shape[0], -1, dtype=np.int64)
        )
        arrays = (
            np.ascontiguousarray(matrix),
            codes,
            self.roots,
            w,
            self.nodes,
            self.nan_code,
            self.branch_ptr,
            self.branch_code,
            self.branch_child,
            self.child_ptr,
            self.children,
            self.count,
            self.value,
        )
        n = matrix.shape[0]
        total: FloatArray = (
            forest_values_serial(*arrays, self.max_nodes)
            if n < _PARALLEL_ROWS
            else forest_values(
                *arrays, self.max_nodes, _BLOCKS_PER_THREAD * get_num_threads()
            )
        )
        out: FloatArray = total / w.sum()
        return out

    def _weights(self, weights: npt.ArrayLike | None, owner: str) -> FloatArray:
        n = len(self.trees)
        if weights is None:
            return np.ones(n)
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValidationError(f"{owner}: weights must be {n} finite values >= 0.")
        if w.sum() <= 0:
            raise ValidationError(f"{owner}: the tree weights sum to zero.")
        return np.ascontiguousarray(w)


def _has_client_split(tree: Tree) -> bool:
    return bool(np.any(tree.kind == NodeKind.CLIENT))


def _client_list(trees: Sequence[Tree]) -> tuple[str, ...]:
    """Every tree's clients, in order of first appearance (one code space)."""
    seen: dict[str, None] = {}
    for tree in trees:
        for name in tree.clients or ():
            seen.setdefault(name, None)
    return tuple(seen)


def _tree_part(
    tree: Tree, offset: int, clients: tuple[str, ...], votes: bool
) -> dict[str, npt.NDArray[np.generic]]:
    """One tree's arrays with global node ids and sorted, global branch codes."""

    def shifted(nodes: IntArray) -> IntArray:
        return np.where(nodes == LEAF, LEAF, nodes + offset)

    owner = branch_owner(tree)
    codes = _global_client_codes(tree, owner, clients)
    order = np.lexsort((codes, owner))  # codes ascending within each node
    child_ptr, children = children_csr(tree)
    categorical = tree.kind == NodeKind.CATEGORICAL
    nan_code = np.where(
        categorical, missing_category_codes(tree)[np.maximum(tree.feature, 0)], -1
    )
    return {
        "kind": tree.kind,
        "feature": np.maximum(tree.feature, 0),
        "threshold": tree.threshold,
        "left": shifted(tree.left),
        "right": shifted(tree.right),
        "missing_left": missing_goes_left(tree),
        "nan_code": nan_code,
        "branch_ptr": tree.branch_ptr,
        "branch_code": codes[order],
        "branch_child": shifted(tree.branch_child[order]),
        "child_ptr": child_ptr,
        "children": children + offset,
        "count": tree.count,
        "value": _leaf_votes(tree.value) if votes else tree.value,
    }


def _global_client_codes(
    tree: Tree, owner: IntArray, clients: tuple[str, ...]
) -> IntArray:
    """Branch codes with each client split's codes mapped into ``clients``."""
    at_client = tree.kind[owner] == NodeKind.CLIENT
    if not at_client.any():
        return tree.branch_code
    index = np.asarray([clients.index(name) for name in tree.clients or ()])
    local = np.where(at_client, tree.branch_code, 0)
    mapped: IntArray = np.where(at_client, index[local], tree.branch_code)
    return mapped


def _leaf_votes(value: FloatArray) -> FloatArray:
    """One-hot rows: a vote for each node's largest class (first on ties)."""
    votes = np.zeros_like(value)
    votes[np.arange(value.shape[0]), np.argmax(value, axis=1)] = 1.0
    return votes


def _records(
    parts: Sequence[dict[str, npt.NDArray[np.generic]]],
) -> npt.NDArray[np.void]:
    """Return the routing record of every node of the joined trees."""

    def joined(name: str) -> npt.NDArray[np.generic]:
        return np.concatenate([p[name] for p in parts])

    n_nodes = sum(p["kind"].shape[0] for p in parts)
    if n_nodes >= 2**31:
        raise ValidationError(
            f"A forest of {n_nodes} nodes is too large to predict with "
            "(at most 2**31 - 1 nodes)."
        )
    nodes = np.zeros(n_nodes, dtype=NODE_DTYPE)
    for name in ("threshold", "feature", "left", "right", "kind"):
        nodes[name] = joined(name)
    nodes["nan_left"] = joined("missing_left")
    return nodes


def _joined_ptr(ptrs: Sequence[npt.NDArray[np.generic]]) -> IntArray:
    """Join CSR pointer arrays: each part's entries follow the previous parts'."""
    out: list[npt.NDArray[np.generic]] = [np.zeros(1, dtype=np.int64)]
    base = 0
    for ptr in ptrs:
        out.append(ptr[1:] + base)
        base += int(ptr[-1])
    return np.concatenate(out).astype(np.int64)
