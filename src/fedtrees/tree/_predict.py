"""Vectorised routing of rows through a :class:`fedtrees.tree.Tree`.

Rows descend one level per iteration, all rows at once (the loop runs ``max_depth``
times, never once per row). Categorical and client branch tables are resolved with
one ``searchsorted`` over sorted ``(node, code)`` keys. A row that reaches a client
split without a known client is expanded into one weighted entry per branch.

X may hold NaN (a missing value), never infinity. At a numeric node a NaN row goes
the way the node's ``missing`` direction says, resolved once per tree (``LARGER``:
the child with the larger training count, right on a tie). At a categorical node
NaN is the feature's *missing category*, code ``K`` (its number of categories,
when the tree knows them): a branch that lists ``K`` receives it (FedForest's
``"hist"`` learns such splits); otherwise the row takes the default branch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pandas as pd

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees._validation import check_client_id, check_matrix, shown
from fedtrees.exceptions import ValidationError
from fedtrees.tree._frame import frame_matrix
from fedtrees.tree._kinds import LEAF, NodeKind
from fedtrees.tree._structure import branch_owner, children_csr, missing_goes_left

if TYPE_CHECKING:
    from fedtrees.tree._arrays import TreeArrays

_MAX_CODE = 2**40  # codes beyond this cannot be in any branch table


@dataclass(frozen=True)
class Routing:
    """Lookup tables derived once per tree for fast routing."""

    tree: TreeArrays
    keys: IntArray
    key_child: IntArray
    stride: int
    child_ptr: IntArray
    children: IntArray
    missing_left: BoolArray
    """Per node: whether a NaN row goes left (``missing`` resolved)."""
    missing_code: IntArray
    """Per feature: the code of a categorical NaN (K categories: K), else -1."""

    @classmethod
    def of(cls, tree: TreeArrays) -> Routing:
        """Build the lookup tables of ``tree``."""
        stride = int(tree.branch_code.max()) + 1 if tree.branch_code.size else 1
        keys = branch_owner(tree) * stride + tree.branch_code
        order = np.argsort(keys, kind="stable")
        child_ptr, children = children_csr(tree)
        return cls(
            tree,
            keys[order],
            tree.branch_child[order],
            stride,
            child_ptr,
            children,
            missing_goes_left(tree),
            missing_category_codes(tree),
        )

    def apply(self, X: npt.ArrayLike, client: object) -> IntArray:
        """Node where each row ends; see :meth:`fedtrees.tree.Tree.apply`."""
        matrix, codes = self._inputs(X, client, "Tree.apply")
        rows, nodes, _ = self.route(matrix, codes)
        if rows.shape[0] != matrix.shape[0]:
            raise ValidationError(
                "Tree.apply: a row reached a split on the client indicator but its "
                "client is unknown; pass client=<client id> (or use predict, which "
                "mixes both branches)."
            )
        result = np.empty(matrix.shape[0], dtype=np.int64)
        result[rows] = nodes
        return result

    def predict_value(self, X: npt.ArrayLike, client: object) -> FloatArray:
        """Leaf values per row, mixed over branches where the client is unknown."""
        matrix, codes = self._inputs(X, client, "Tree.predict")
        rows, nodes, weights = self.route(matrix, codes)
        value = self.tree.value
        n = matrix.shape[0]
        if rows.shape[0] == n:
            out = np.empty((n, value.shape[1]), dtype=np.float64)
            out[rows] = value[nodes]
            return out
        columns = [
            np.bincount(rows, weights * value[nodes, j], minlength=n)
            for j in range(value.shape[1])
        ]
        return np.stack(columns, axis=1)

    def _inputs(
        self, X: npt.ArrayLike, client: object, owner: str
    ) -> tuple[FloatArray, IntArray]:
        tree = self.tree
        if isinstance(X, pd.DataFrame):
            X = frame_matrix(
                X, tree.n_features, tree.feature_names, tree.categories, owner
            )
        matrix = check_matrix(
            X,
            "X",
            owner,
            n_features=tree.n_features,
            column_names=tree.feature_names,
            allow_nan=True,
        )
        n = matrix.shape[0]
        if not self.has_client_splits:
            # The client cannot change the route: do not parse (or reject) it.
            return matrix, np.full(n, -1, dtype=np.int64)
        return matrix, client_codes(tree.clients, client, n, owner)

    @property
    def has_client_splits(self) -> bool:
        """Whether any node routes on the client indicator."""
        return bool(np.any(self.tree.kind == NodeKind.CLIENT))

    def route(
        self, X: FloatArray, codes: IntArray
    ) -> tuple[IntArray, IntArray, FloatArray]:
        """Return (row, node, weight) for every place a row ends (weights sum to 1)."""
        n = X.shape[0]
        rows = np.arange(n, dtype=np.int64)
        nodes = np.zeros(n, dtype=np.int64)
        weights = np.ones(n, dtype=np.float64)
        done: list[tuple[IntArray, IntArray, FloatArray]] = []
        while rows.size:
            nxt, expand = self._step(X, codes, rows, nodes)
            finished = (nxt == LEAF) & ~expand
            done.append((rows[finished], nodes[finished], weights[finished]))
            moving = nxt != LEAF
            extra = self._expand(rows[expand], nodes[expand], weights[expand])
            rows = np.concatenate([rows[moving], extra[0]])
            nodes = np.concatenate([nxt[moving], extra[1]])
            weights = np.concatenate([weights[moving], extra[2]])
        return (
            np.concatenate([d[0] for d in done]),
            np.concatenate([d[1] for d in done]),
            np.concatenate([d[2] for d in done]),
        )

    def _step(
        self, X: FloatArray, codes: IntArray, rows: IntArray, nodes: IntArray
    ) -> tuple[IntArray, npt.NDArray[np.bool_]]:
        """Next node of every entry (LEAF: ends here) and which entries must expand."""
        tree = self.tree
        kind = tree.kind[nodes]
        nxt = np.full(rows.shape[0], LEAF, dtype=np.int64)
        expand = np.zeros(rows.shape[0], dtype=bool)
        num = kind == NodeKind.NUMERIC
        if num.any():
            at = nodes[num]
            x = X[rows[num], tree.feature[at]]
            goes_left = np.where(
                np.isnan(x), self.missing_left[at], x <= tree.threshold[at]
            )
            nxt[num] = np.where(goes_left, tree.left[at], tree.right[at])
        cat = kind == NodeKind.CATEGORICAL
        if cat.any():
            feature = tree.feature[nodes[cat]]
            values = X[rows[cat], feature]
            codes_at = np.where(
                np.isnan(values), self.missing_code[feature], _as_codes(values)
            )
            nxt[cat] = self._lookup(nodes[cat], codes_at)
        cli = kind == NodeKind.CLIENT
        if cli.any():
            row_codes = codes[rows[cli]]
            known = row_codes >= 0
            sub = np.full(row_codes.shape[0], LEAF, dtype=np.int64)
            sub[known] = self._lookup(nodes[cli][known], row_codes[known])
            nxt[cli] = sub
            expand[np.flatnonzero(cli)[~known]] = True
        return nxt, expand

    def _lookup(self, nodes: IntArray, codes: IntArray) -> IntArray:
        """Child for each (node, code); the node's default branch if not listed."""
        result = self.tree.right[nodes].copy()
        valid = (codes >= 0) & (codes < self.stride)
        if not valid.any() or self.keys.size == 0:
            return result
        query = nodes[valid] * self.stride + codes[valid]
        pos = np.minimum(np.searchsorted(self.keys, query), self.keys.size - 1)
        hit = self.keys[pos] == query
        sub = result[valid]
        sub[hit] = self.key_child[pos[hit]]
        result[valid] = sub
        return result

    def _expand(
        self, rows: IntArray, nodes: IntArray, weights: FloatArray
    ) -> tuple[IntArray, IntArray, FloatArray]:
        """Send entries down every child, weighted by the children's training counts."""
        start = self.child_ptr[nodes]
        n_kids = self.child_ptr[nodes + 1] - start
        entry = np.repeat(np.arange(rows.shape[0]), n_kids)
        offset = np.arange(entry.shape[0]) - np.repeat(
            np.cumsum(n_kids) - n_kids, n_kids
        )
        kids = self.children[start[entry] + offset]
        kid_count = self.tree.count[kids]
        total = np.bincount(entry, kid_count, minlength=rows.shape[0])[entry]
        safe_total = np.where(total > 0, total, 1.0)
        share = np.where(total > 0, kid_count / safe_total, 1.0 / n_kids[entry])
        return rows[entry], kids, weights[entry] * share


def missing_category_codes(tree: TreeArrays) -> IntArray:
    """Per feature, the code a categorical NaN takes: K categories, code K; else -1.

    Examples
    --------
    >>> from fedtrees.tree import NodeStats, TreeBuilder
    >>> b = TreeBuilder(n_features=2, categories=[None, ["a", "b"]])
    >>> _ = b.add_root(NodeStats.from_mean(0.0, 1))
    >>> missing_category_codes(b.build()).tolist()
    [-1, 2]
    """
    out = np.full(tree.n_features, -1, dtype=np.int64)
    for j, labels in enumerate(tree.categories or ()):
        if labels is not None:
            out[j] = len(labels)
    return out


def _as_codes(values: FloatArray) -> IntArray:
    """Integer category codes; -1 for anything that cannot be a code (NaN too)."""
    ok = (values >= 0) & (values < _MAX_CODE) & (values == np.floor(values))
    return np.where(ok, values, -1).astype(np.int64)


def client_codes(
    clients: tuple[str, ...] | None,
    client: object,
    n: int,
    owner: str,
    hint: str = "pass None to mix branches",
) -> IntArray:
    """Map ``client`` (None, one id, or one id per row) to codes; -1 means unknown.

    ``hint`` ends the message of an unknown id (what the caller may do instead).

    Raises
    ------
    ValidationError
        If an id is not one of ``clients`` or the number of ids is not ``n``.
    """
    if client is None:
        return np.full(n, -1, dtype=np.int64)
    known = list(clients or ())
    if isinstance(client, str) or np.ndim(np.asarray(client, dtype=object)) == 0:
        ids = pd.Series([client] * n, dtype=object)
    else:
        ids = pd.Series(np.asarray(client, dtype=object).ravel(), dtype=object)
    if ids.shape[0] != n:
        raise ValidationError(
            f"The 'client' parameter of {owner} must be one id or {n} ids (one per "
            f"row). Got {ids.shape[0]} ids instead."
        )
    present = ids.notna().to_numpy()
    codes = np.full(n, -1, dtype=np.int64)
    names = ids[present].map(_id_text)
    codes[present] = pd.Index(known, dtype=object).get_indexer(pd.Index(names))
    unknown = present & (codes < 0)
    if unknown.any():
        bad = ids.iloc[int(np.flatnonzero(unknown)[0])]
        listed = ", ".join(repr(c) for c in known[:20]) or "none"
        if len(known) > 20:
            listed += f", ... ({len(known)} clients)"
        raise ValidationError(
            f"The 'client' parameter of {owner} names {shown(bad)}, which is not a "
            f"known client (known: {listed}); {hint}."
        )
    return codes


def _id_text(value: object) -> str | None:
    """Return ``str(value)``; None for a value no client id can be (too long)."""
    try:
        return check_client_id(value, "client", "predict")
    except ValidationError:
        return None
