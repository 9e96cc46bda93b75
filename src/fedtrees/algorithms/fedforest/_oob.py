"""``oob_score``: the forest scored on the rows each tree's bootstrap left out.

scikit-learn's out-of-bag estimate (``RandomForest*.oob_score_``): every
training row is predicted by the trees whose bootstrap did not draw it (their
mean class distribution, or mean value), and those predictions are scored
against the row's target: accuracy for a classifier, R² for a regressor. A row
no tree left out is predicted as zeros (class 0; the value 0), as
scikit-learn does, which then warns.

Federated, each site does it for its own rows: the bootstrap is drawn at the
site (keyed by (seed, tree, site), :mod:`._client`), so the site knows which of
its rows each tree left out; after the last level the server sends the leaves'
values (one more round), the site routes its rows down every tree
(:func:`leaves_of`, the tree's own routing: missing values by the learned
direction, categories by their set) and replies with sums only: its rows, the
rows predicted right (classifier) or the squared errors, Σy and Σy² (regressor),
and how many rows no tree left out. **Decision:** a tree the site sits out
(``client_fraction < 1``) never saw its rows: they are out of that tree's bag.
Sample weights do not weigh the score, as in scikit-learn.
``oob_decision_function_`` / ``oob_prediction_`` are per row: they cannot
leave the sites, and the estimator does not have them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees.algorithms.fedforest._client import (
    bootstrap_counts,
    check_sizes,
    kept_forest,
)
from fedtrees.algorithms.fedforest._kernels import SPLIT_CLIENT, SPLIT_NONE
from fedtrees.algorithms.fedforest._payloads import COUNTS, ForestState, LevelFields
from fedtrees.algorithms.fedforest._phase import Got, Phase, score_phase
from fedtrees.algorithms.fedforest._steps import Ask, fixed
from fedtrees.algorithms.histogram import matrix_with_missing
from fedtrees.exceptions import ValidationError
from fedtrees.federation import (
    ClientData,
    ClientState,
    Field,
    InvalidField,
    Payload,
    ReplySpec,
    Resync,
    as_reply,
    handler,
    payload,
)

if TYPE_CHECKING:
    from fedtrees.algorithms.fedforest._state import LevelState

__all__ = [
    "OobReply",
    "OobRequest",
    "OobStep",
    "leaves_of",
    "oob",
    "oob_score",
]

NO_OOB_WARNING = (
    "Some inputs do not have OOB scores. This probably means too few trees were "
    "used to compute any reliable OOB estimates."
)
"""scikit-learn's warning, word for word."""


@payload("fedforest.oob_reply")
class OobReply(Payload):
    """A site's out-of-bag sums.

    ``counts``: (rows, rows predicted right, rows no tree left out);
    ``moments``: (Σ squared errors, Σy, Σy²), zeros for a classifier.
    """

    counts: np.ndarray
    moments: np.ndarray


@payload("fedforest.oob")
class OobRequest(LevelFields):
    """Score this site's out-of-bag rows with the finished forest.

    ``leaf_values``: the value of every leaf of the kept forest, in node order
    (class distributions, or means in one column); ``n_categories``: the
    agreed categories per feature (0: numeric), the code ``K`` of a missing
    category.
    """

    leaf_values: np.ndarray
    n_categories: np.ndarray

    def expected_reply(self) -> ReplySpec:
        """Expect whole counts within the declared rows, and finite sums."""
        return ReplySpec(
            OobReply,
            {
                "counts": Field.array(COUNTS, (3,), nonnegative=True, rows=True),
                "moments": Field.array("f", (3,)),
            },
            check=_check_sums,
        )


def _check_sums(reply: Any) -> None:
    """Right and uncovered rows within the rows; squares non-negative."""
    rows, right, uncovered = np.asarray(reply.counts, dtype=np.float64)
    if right > rows or uncovered > rows:
        raise InvalidField(
            "counts", "must hold no more right or uncovered rows than rows"
        )
    sse, _, squares = np.asarray(reply.moments, dtype=np.float64)
    if sse < 0 or squares < 0:
        raise InvalidField("moments", "must hold non-negative sums of squares")


@handler("fedforest.oob", stateful=True)
def oob(request: OobRequest, data: ClientData, state: ClientState) -> Payload:
    """Route this site's rows, predict each from the trees that left it out, sum."""
    check_sizes(request, data)
    n_features = len(data.feature_kinds)
    forest = kept_forest(request, state, n_features)
    if forest is None:
        return Resync("the kept forest is not the request's base version")
    values, n_categories = _checked(request, forest, n_features)
    X = matrix_with_missing(data)
    is_cat = np.array([k == "categorical" for k in data.feature_kinds], dtype=bool)
    leaves = leaves_of(forest, X, is_cat, n_categories)
    slot = np.full(forest.node_feature.shape[0], -1, dtype=np.int64)
    slot[forest.node_feature == SPLIT_NONE] = np.arange(values.shape[0])
    out = bootstrap_counts(forest, data.client_id, data.n_rows) == 0
    pred, covered = _oob_predictions(values, slot[leaves], out)
    if request.task == "regression":
        y = data.targets()
        errors = float(((y - pred[:, 0]) ** 2).sum())
        moments = np.array([errors, float(y.sum()), float((y * y).sum())])
        right = 0
    else:
        truth = data.label_codes(forest.classes)
        right = int((pred.argmax(axis=1) == truth).sum())  # zeros: class 0
        moments = np.zeros(3)
    n = data.n_rows
    counts = np.array([n, right, int((~covered).sum())], dtype=np.int64)
    return OobReply(counts, moments)


def _checked(
    request: OobRequest, forest: ForestState, n_features: int
) -> tuple[FloatArray, IntArray]:
    """Return the leaf values (a finite row per leaf) and categories per feature."""
    values = np.asarray(request.leaf_values, dtype=np.float64)
    n_leaves = int((forest.node_feature == SPLIT_NONE).sum())
    width = 1 if request.task == "regression" else request.width
    if values.shape != (n_leaves, width) or not np.all(np.isfinite(values)):
        raise ValidationError(
            f"Request {request.kind!r}: field 'leaf_values' must hold one finite row "
            f"of {width} value(s) per leaf of the kept forest ({n_leaves}); got "
            f"shape {values.shape}."
        )
    categories = np.asarray(request.n_categories)
    if categories.shape != (n_features,) or np.any(categories < 0):
        raise ValidationError(
            f"Request {request.kind!r}: field 'n_categories' must hold one count "
            f">= 0 per feature ({n_features}); got shape {categories.shape}."
        )
    return values, categories.astype(np.int64)


def _oob_predictions(
    values: FloatArray, slot: IntArray, out: BoolArray
) -> tuple[FloatArray, BoolArray]:
    """Mean value of the trees that left each row out (zeros where none did).

    ``slot`` ``(trees, n)``: each row's leaf (row of ``values``) per tree;
    ``out``: whether the tree left the row out. Returns the predictions
    ``(n, width)`` and whether any tree left the row out.
    """
    trees, n = slot.shape
    total = np.zeros((n, values.shape[1]))
    seen = np.zeros(n)
    for b in range(trees):  # one tree at a time: (n, width) at most in memory
        rows = np.flatnonzero(out[b])
        total[rows] += values[slot[b, rows]]
        seen[rows] += 1
    covered: BoolArray = seen > 0
    pred: FloatArray = total / np.where(covered, seen, 1.0)[:, None]
    return pred, covered


def leaves_of(
    forest: ForestState, X: FloatArray, is_cat: BoolArray, n_categories: IntArray
) -> IntArray:
    """Return the leaf (global node id) of each row in each tree, ``(trees, n)``.

    The trees' own routing: ``x <= threshold`` left, NaN by the split's learned
    direction (``node_missing``); a category left when its code is in the
    split's set, a missing one as code ``K`` (``n_categories``); a client split
    by this client's code. Vectorised over every (tree, row), one level a step.
    """
    trees, n = forest.participation.shape[0], X.shape[0]
    node = np.repeat(np.arange(trees, dtype=np.int64)[:, None], n, axis=1)
    rows = np.broadcast_to(np.arange(n, dtype=np.int64), (trees, n))
    feature = forest.node_feature
    keys = _set_keys(forest)
    going = feature[node] != SPLIT_NONE
    while going.any():
        g, i = node[going], rows[going]
        f = feature[g]
        fs = np.maximum(f, 0)
        client = f == SPLIT_CLIENT
        x = X[i, fs]
        categorical = ~client & is_cat[fs]
        missing = np.isnan(x)
        code = np.zeros(g.shape[0], dtype=np.int64)
        at = np.flatnonzero(categorical)
        code[at] = np.where(missing[at], n_categories[fs[at]], x[at]).astype(np.int64)
        code[client] = forest.client_code
        member = _member(keys, g, code)
        left = np.where(
            client | categorical,
            member,
            np.where(missing, forest.node_missing[g], x <= forest.node_threshold[g]),
        )
        node[going] = np.where(left, forest.node_left[g], forest.node_right[g])
        going = feature[node] != SPLIT_NONE
    return node


_SPAN = np.int64(1 << 32)
"""Codes of one node's set in ``_set_keys``: node * SPAN + code (codes < 2^32)."""


def _set_keys(forest: ForestState) -> IntArray:
    """Sorted keys ``node * SPAN + code`` of every category or client set."""
    ptr: IntArray = np.asarray(forest.set_ptr, dtype=np.int64)
    sizes = ptr[1:] - ptr[:-1]
    owner = np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)
    codes = np.asarray(forest.set_codes, dtype=np.int64)
    keys: IntArray = np.sort(owner * _SPAN + codes)
    return keys


def _member(keys: IntArray, node: IntArray, code: IntArray) -> BoolArray:
    """Whether ``code`` is in the set of ``node`` (pairwise)."""
    if keys.size == 0:
        return np.zeros(node.shape[0], dtype=bool)
    query = node * _SPAN + np.clip(code, 0, _SPAN - 1)
    at = np.minimum(np.searchsorted(keys, query), keys.shape[0] - 1)
    found: BoolArray = keys[at] == query
    return found


class OobStep:
    """Send the leaves' values; sum the sites' out-of-bag counts and moments."""

    def ask(self, state: LevelState) -> Ask:
        """Every client, no node: the leaves' values and the categories."""
        g = state.growth
        leaves = np.flatnonzero(g.table.feature == SPLIT_NONE)
        empty = np.full((0, 1), -1, dtype=np.int64)
        values = g.node_values()[leaves]
        return Ask(
            OobRequest,
            empty,
            np.zeros(0, np.int64),
            fixed(leaf_values=values, n_categories=g.n_categories.copy()),
        )

    def absorb(self, state: LevelState, got: Sequence[Got]) -> Phase:
        """Keep the summed counts and moments; the fit ends (or scores)."""
        sums = np.zeros(6)
        for _, _, reply in got:
            r = as_reply(reply, OobReply)
            sums[:3] += np.asarray(r.counts, dtype=np.float64)
            sums[3:] += np.asarray(r.moments, dtype=np.float64)
        state.oob = sums
        return score_phase(state.config)


def oob_score(sums: FloatArray, task: str) -> float:
    """scikit-learn's ``oob_score_`` from the pooled sums.

    ``sums``: (rows, right, uncovered, Σ squared errors, Σy, Σy²). Accuracy for
    a classifier; R² for a regressor (1.0 for a constant target fitted exactly,
    else 0.0 when the target does not vary, as ``r2_score`` does).

    Examples
    --------
    >>> oob_score(np.array([10.0, 8.0, 0.0, 0.0, 0.0, 0.0]), "classification")
    0.8
    >>> oob_score(np.array([4.0, 0.0, 0.0, 1.0, 2.0, 3.0]), "regression")
    0.5
    """
    rows, right, _, errors, total, squares = (float(v) for v in sums)
    if task != "regression":
        return right / rows
    spread = squares - total * total / rows
    if spread <= 0:
        return 1.0 if errors == 0 else 0.0
    return 1.0 - errors / spread
