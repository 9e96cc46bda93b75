"""ID3, grown level by level: locally (:func:`fit_id3`) or from pooled tables.

Quinlan's ID3 (docs/icdta.md): multiway splits on categorical (or
discretized) features, chosen by information gain (entropy in bits), each feature
used at most once on a path, leaves holding class distributions, ``max_depth``
|F|/2 by default as the ICDTA4FL paper. The level loop is shared with
Federated-ID3 (:mod:`fedtrees.algorithms.fedid3`), whose server runs step 3 on
the tables summed over clients — so the federated tree equals the local one on
the pooled rows whenever the pooled tables are exact:

1. :meth:`Id3Growth.layout` — the open nodes of the level and the features each
   considers (ID3: those not used on its path; ``binary``: all of them).
2. :func:`value_class_counts` — for every (open node, feature) pair, the count of
   rows per (value, class), all pairs in one ``bincount``. A Federated-ID3 client
   routes its rows with :meth:`fedtrees.tree.Tree.apply` on the partial tree
   (:meth:`Id3Growth.structure`: the splits only, no statistics); the local
   learner with :meth:`Id3Growth.advance`, the same routing without a tree.
3. :meth:`Id3Growth.absorb` — per open node, ID3 takes the feature of highest
   gain and makes one child per value with rows; ``binary`` (the "IBM tree" of
   docs/fedga.md: CART on discretized features) takes the best Gini split —
   a threshold between consecutive codes, or a Fisher grouping of a categorical
   feature — through :mod:`fedtrees.stats._splits`, the split search FedForest uses.

**Decisions** (named where they apply): a feature with a single value at a node
is no candidate (it cannot separate rows); gains within ``1e-10`` are ties, won by
the lower feature index; a node is a leaf when pure, empty, at ``max_depth`` or
without a candidate feature; a value no training row of a node had gets no
branch, so such a row stops at that node and takes its class distribution (the
Tree's multiway default); ``max_depth=None`` means ``max(1, F // 2)``.
``min_count`` (noisy tables, Federated-ID3 with ε) treats values and nodes with a
smaller count as absent.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import check_int, invalid
from fedtrees.learners._id3_counts import value_class_counts
from fedtrees.learners._id3_growth import Id3Growth, check_significance
from fedtrees.tree import Tree

__all__ = ["default_max_depth", "fit_id3"]


def default_max_depth(n_features: int) -> int:
    """Return the paper's depth limit |F|/2 (at least 1).

    Examples
    --------
    >>> default_max_depth(8), default_max_depth(1)
    (4, 1)
    """
    return max(1, n_features // 2)


def fit_id3(
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    n_classes: int | None = None,
    *,
    arity: npt.ArrayLike | None = None,
    max_depth: int | None = None,
    significance: float | None = None,
    sample_weight: npt.ArrayLike | None = None,
    classes: npt.ArrayLike | None = None,
    feature_names: Sequence[str] | None = None,
    categories: Sequence[Sequence[str] | None] | None = None,
) -> Tree:
    """Fit a multiway ID3 tree on category codes (docs/icdta.md).

    Parameters
    ----------
    X : array of shape (n_rows, F)
        Category (or bin) codes: integers ``0 <= X[:, f] < arity[f]``.
    y : int array of shape (n_rows,)
        Class codes in ``[0, n_classes)``.
    n_classes : int, optional
        Defaults to ``max(y) + 1``.
    arity : int array of shape (F,), optional
        Codes of every feature; defaults to ``max(X[:, f]) + 1``.
    max_depth : int, optional
        Defaults to |F|/2 (:func:`default_max_depth`), the paper's setting.
    significance : float in (0, 1], optional
        Split a node only if its split's G-test rejects independence of value
        and class at this level (:func:`split_p_value`, on the weighted
        counts); None (default) splits on any positive gain, as the paper.
    sample_weight : array of shape (n_rows,), optional
        Non-negative row weights (counts become weighted).
    classes, feature_names, categories
        Metadata of the returned tree (class labels default to the codes).

    Examples
    --------
    >>> X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    >>> tree = fit_id3(X, [0, 0, 1, 1], max_depth=2)
    >>> tree.predict(X).tolist(), int(tree.feature[0])
    ([0, 0, 1, 1], 0)
    """
    codes, labels, size, weights, c = _inputs(X, y, n_classes, arity, sample_weight)
    depth = default_max_depth(codes.shape[1]) if max_depth is None else max_depth
    depth = check_int(depth, "max_depth", "fit_id3", min_value=1)
    growth = Id3Growth(
        arity=size,
        n_classes=c,
        max_depth=depth,
        significance=check_significance(significance, "fit_id3"),
    )
    nodes = np.zeros(codes.shape[0], dtype=np.int64)  # every row's node so far
    while not growth.done:
        layout = growth.layout()
        slot = layout.slots(nodes, growth.n_nodes)
        growth.absorb(value_class_counts(codes, labels, slot, layout, weights))
        nodes = growth.advance(codes, nodes)
    return growth.tree(
        classes=np.arange(c) if classes is None else classes,
        feature_names=feature_names,
        categories=categories,
    )


def _inputs(
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    n_classes: int | None,
    arity: npt.ArrayLike | None,
    sample_weight: npt.ArrayLike | None,
) -> tuple[IntArray, IntArray, IntArray, FloatArray | None, int]:
    owner = "fit_id3"
    raw = np.asarray(X, dtype=np.float64)
    if raw.ndim != 2 or raw.shape[1] == 0 or raw.shape[0] == 0:
        raise invalid("X", owner, "a 2-D array with rows and columns", raw.shape)
    if not np.all(np.isfinite(raw)) or np.any(raw < 0) or np.any(raw != np.floor(raw)):
        raise invalid("X", owner, "category codes (integers >= 0)", "other values")
    codes = raw.astype(np.int64)
    size = codes.max(axis=0) + 1 if arity is None else np.asarray(arity, np.int64)
    if size.shape != (codes.shape[1],) or np.any(codes >= size[None, :]):
        raise invalid("arity", owner, "one value per feature above every code", size)
    labels = np.asarray(y)
    limit = int(labels.max(initial=0)) + 1 if n_classes is None else n_classes
    limit = check_int(limit, "n_classes", owner, min_value=1)
    if (
        labels.shape != (codes.shape[0],)
        or labels.dtype.kind not in "iu"
        or (labels.size and (labels.min() < 0 or labels.max() >= limit))
    ):
        raise invalid(  # it runs at a client: no labels, no row count in it
            "y",
            owner,
            f"one class code in [0, {limit}) per row of X",
            f"an array of dtype {labels.dtype} with other codes or another length",
        )
    weights = None
    if sample_weight is not None:
        weights = np.asarray(sample_weight, dtype=np.float64)
        if (
            weights.shape != labels.shape
            or not np.all(np.isfinite(weights))
            or np.any(weights < 0)
        ):
            raise invalid(
                "sample_weight", owner, "finite weights >= 0, one per row", "other"
            )
    return codes, labels.astype(np.int64), size, weights, limit
