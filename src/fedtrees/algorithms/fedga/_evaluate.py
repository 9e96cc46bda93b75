"""A client's *Evaluate* of FedGA structures (docs/fedga.md; paper Sec. III-B).

Decode the structure; route the training rows top-down; at every decision node
choose the CART threshold on the node's fixed feature (Gini for
classification, MSE for regression; the midpoint between adjacent distinct
values, as scikit-learn); a node with no admissible split (fewer than 2 rows,
all values of its feature equal) becomes a leaf, and so does a pure node
(**Decision**: as CART, a node of zero impurity is not split — its children
would predict the same value); leaves take the majority class (first agreed
class on ties) or the mean. The fitted tree is then scored on the validation
part: macro-F1 over the agreed classes present in truth or predictions
(maximised) or MSE (minimised). Algorithm 1, steps 28, 31 and 47.

**Decision (F1 averaging):** the paper scores classification by "F1" without
saying how it is averaged. ``f1_average="macro"`` (ours, the default) averages
the F1 of the classes present; ``"binary"`` (scikit-learn's default of
``f1_score``) scores the positive class alone, and exists only for two classes:
the positive class is the second agreed class (code 1, the larger label in
sorted order), scikit-learn's ``pos_label=1`` for labels 0/1.

The heavy lifting is in :mod:`._kernels`: each column of the client's training
rows is sorted once per call and reused by every candidate structure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import check_choice, invalid
from fedtrees.algorithms.fedga import _kernels
from fedtrees.algorithms.fedga._encoding import (
    as_structure,
    child_positions,
    structure_depth,
)
from fedtrees.exceptions import ValidationError
from fedtrees.tree import NodeStats, Tree, TreeBuilder

__all__ = [
    "F1_AVERAGES",
    "Task",
    "TrainingRows",
    "evaluate_population",
    "evaluate_structure",
    "fit_structure",
    "positive_code",
    "score_structures",
]

Task = Literal["classification", "regression"]
F1_AVERAGES: Final = ("macro", "binary")
"""How classification fitness averages F1 (see the Decision above)."""
MACRO: Final = -1
"""The kernel's ``positive`` code for macro-F1 (and for regression)."""


def positive_code(f1_average: str, n_classes: int, owner: str) -> int:
    """Return the class code the F1 scores (``"binary"``), or -1 for macro-F1.

    ``n_classes`` is the number of agreed classes (0 for regression, where the
    setting is ignored). ``"binary"`` needs exactly two classes and scores the
    second (code 1); anything else is refused naming ``f1_average``.

    Examples
    --------
    >>> positive_code("macro", 3, "demo"), positive_code("binary", 2, "demo")
    (-1, 1)
    """
    check_choice(f1_average, "f1_average", owner, F1_AVERAGES)
    if f1_average == "macro" or n_classes == 0:
        return MACRO
    if n_classes != 2:
        raise invalid(
            "f1_average",
            owner,
            f"'macro' for a task of {n_classes} classes ('binary' scores the "
            "positive class of a two-class task)",
            f1_average,
        )
    return 1


@dataclass(frozen=True)
class TrainingRows:
    """A client's checked training rows, with every column presorted once.

    Build it once per client (:meth:`of`) and pass it to
    :func:`score_structures` every generation: the sort is then paid once per
    run instead of once per generation.

    Attributes
    ----------
    X : float64 array of shape (n, F)
    order : int64 array of shape (F, n)
        ``order[f]`` lists the rows by increasing ``X[:, f]`` (stable).
    sorted_x : float64 array of shape (F, n)
        ``X[order[f], f]``.
    y : float64 array of shape (n,)
        Class codes (classification) or targets.
    n_classes : int
        Number of agreed classes; 0 for regression.
    """

    X: FloatArray
    order: IntArray
    sorted_x: FloatArray
    y: FloatArray
    n_classes: int  # 0 for regression

    @classmethod
    def of(
        cls, X: npt.ArrayLike, y: npt.ArrayLike, task: Task, n_classes: int = 0
    ) -> TrainingRows:
        """Check and presort a client's training rows (``n >= 1``).

        Examples
        --------
        >>> rows = TrainingRows.of([[2.0], [0.0], [1.0]], [0, 1, 1],
        ...                        "classification", 2)
        >>> rows.order.tolist(), rows.sorted_x.tolist()
        ([[1, 2, 0]], [[0.0, 1.0, 2.0]])
        """
        X_arr, y_arr, code = _check_rows(X, y, task, n_classes, "train")
        if X_arr.shape[0] < 1:
            raise ValidationError(
                "FedGA evaluation needs at least one training row. Got 0 rows."
            )
        order = np.ascontiguousarray(np.argsort(X_arr, axis=0, kind="stable").T)
        sorted_x = np.take_along_axis(X_arr.T, order, axis=1)
        return cls(X_arr, order.astype(np.int64), sorted_x, y_arr, code)


def _check_rows(
    X: npt.ArrayLike, y: npt.ArrayLike, task: Task, n_classes: int, part: str
) -> tuple[FloatArray, FloatArray, int]:
    X_arr = np.ascontiguousarray(X, dtype=np.float64)
    y_arr = np.ascontiguousarray(y, dtype=np.float64)
    if X_arr.ndim != 2 or y_arr.shape != (X_arr.shape[0],):
        raise ValidationError(
            f"The {part} part must be X of shape (n, F) and y of shape (n,). Got "
            f"X {X_arr.shape} and y {y_arr.shape}."
        )
    if not (np.isfinite(X_arr).all() and np.isfinite(y_arr).all()):
        raise ValidationError(f"The {part} part of a FedGA evaluation must be finite.")
    if task == "regression":
        return X_arr, y_arr, 0
    if task != "classification":
        raise ValidationError(
            "The 'task' of a FedGA evaluation must be 'classification' or "
            f"'regression'. Got {task!r} instead."
        )
    bad = (y_arr < 0) | (y_arr >= n_classes) | (y_arr != np.round(y_arr))
    if n_classes < 1 or bad.any():
        raise ValidationError(
            f"Classification labels must be the agreed class codes 0..{n_classes - 1}"
            f" (n_classes={n_classes}). Got labels outside that range in the {part} "
            "part."
        )
    return X_arr, y_arr, n_classes


def _check_structures(
    structures: npt.ArrayLike, depth: int, n_features: int
) -> IntArray:
    array = np.atleast_2d(np.asarray(structures))
    checked = np.stack([as_structure(row) for row in array]) if array.size else array
    if array.size and (
        structure_depth(checked[0]) != depth or checked.max() >= n_features
    ):
        raise ValidationError(
            f"Structures must have length 2**depth - 1 = {(1 << depth) - 1} and "
            f"feature ids below n_features = {n_features}. Got shape {array.shape} "
            f"with largest id {int(checked.max())}."
        )
    return np.ascontiguousarray(checked, dtype=np.int64)


def evaluate_population(
    structures: npt.ArrayLike,
    depth: int,
    X_train: npt.ArrayLike,
    y_train: npt.ArrayLike,
    X_val: npt.ArrayLike,
    y_val: npt.ArrayLike,
    task: Task,
    n_classes: int = 0,
    *,
    f1_average: str = "macro",
) -> FloatArray:
    """Fitness of every structure on one client (Algorithm 1, steps 28 and 47).

    Parameters
    ----------
    structures : int array of shape (P, 2**depth - 1)
        Candidate structures (feature ids or -1).
    depth : int
        Depth of the strings.
    X_train, y_train : arrays of shape (n_train, F) and (n_train,)
        Rows the thresholds and leaves are fitted on (all local rows when the
        train ratio is 1).
    X_val, y_val : arrays of shape (n_val, F) and (n_val,)
        Rows the fitted trees are scored on (the training rows again when the
        train ratio is 1).
    task : {"classification", "regression"}
    n_classes : int
        Number of agreed classes; labels are their codes ``0..n_classes-1``.
        Ignored for regression.
    f1_average : {"macro", "binary"}
        Macro-F1, or the F1 of class code 1 of a two-class task (see the
        module's Decision). Ignored for regression.

    Returns
    -------
    fitness : float64 array of shape (P,)
        F1 (to maximise) or MSE (to minimise); NaN if ``n_val == 0``.

    Notes
    -----
    Each column of the training rows is argsorted once and reused by all P
    candidates; candidates run in parallel on numba's threads.

    Examples
    --------
    >>> X = np.array([[0.0, 5.0], [1.0, 4.0], [2.0, 3.0], [3.0, 2.0]])
    >>> y = np.array([0, 0, 1, 1])
    >>> evaluate_population([[0], [1], [-1]], 1, X, y, X, y, "classification", 2)
    array([1.        , 1.        , 0.33333333])
    >>> evaluate_population([[-1]], 1, X, y, X, y, "classification", 2,
    ...                     f1_average="binary")  # a leaf predicting class 0
    array([0.])
    """
    rows = TrainingRows.of(X_train, y_train, task, n_classes)
    return score_structures(rows, structures, depth, X_val, y_val, f1_average)


def score_structures(
    rows: TrainingRows,
    structures: npt.ArrayLike,
    depth: int,
    X_val: npt.ArrayLike,
    y_val: npt.ArrayLike,
    f1_average: str = "macro",
) -> FloatArray:
    """Fitness of every structure on presorted training rows.

    :func:`evaluate_population` for a client that keeps its
    :class:`TrainingRows` across generations (Algorithm 1, step 28).

    Examples
    --------
    >>> rows = TrainingRows.of([[0.0], [1.0], [2.0]], [1.0, 1.0, 4.0], "regression")
    >>> score_structures(rows, [[0], [-1]], 1, [[0.0], [2.0]], [1.0, 4.0]).tolist()
    [0.0, 2.5]
    """
    task: Task = "classification" if rows.n_classes else "regression"
    positive = positive_code(f1_average, rows.n_classes, "score_structures")
    X_v, y_v, _ = _check_rows(X_val, y_val, task, rows.n_classes, "validation")
    population = _check_structures(structures, depth, rows.X.shape[1])
    if X_v.shape[1] != rows.X.shape[1]:
        raise ValidationError(
            f"The validation rows have {X_v.shape[1]} features, the training rows "
            f"{rows.X.shape[1]}: both parts must have the same columns."
        )
    left_pos, right_pos, _ = child_positions(depth)
    scores: FloatArray = _kernels.score_population(
        population,
        left_pos,
        right_pos,
        rows.X,
        rows.order,
        rows.sorted_x,
        rows.y,
        X_v,
        y_v,
        rows.n_classes,
        positive,
    )
    return scores


def fit_structure(
    structure: npt.ArrayLike,
    depth: int,
    X_train: npt.ArrayLike,
    y_train: npt.ArrayLike,
    task: Task,
    n_classes: int = 0,
) -> Tree:
    """Fit one structure on a client's rows into a fedtrees :class:`Tree`.

    Same fit as :func:`evaluate_population`; the returned tree keeps its class
    distributions over the ``n_classes`` agreed codes (classification) or
    means (regression), with training counts and impurities per node.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> tree = fit_structure([0, 0, -1], 2, X, [0, 0, 1, 1], "classification", 2)
    >>> tree.n_nodes, float(tree.threshold[0]), tree.predict(X).tolist()
    (3, 1.5, [0, 0, 1, 1])
    """
    sample = TrainingRows.of(X_train, y_train, task, n_classes)
    array = _check_structures(structure, depth, sample.X.shape[1])[0]
    left_pos, right_pos, _ = child_positions(depth)
    n_nodes, feature, threshold, left, right, stats, count = _kernels.fit_nodes(
        array,
        left_pos,
        right_pos,
        sample.X,
        sample.order,
        sample.sorted_x,
        sample.y,
        sample.n_classes,
    )
    builder = TreeBuilder(
        n_features=sample.X.shape[1],
        classes=np.arange(n_classes) if sample.n_classes else None,
    )
    node_stats = [
        _node_stats(stats[i], count[i], sample.n_classes) for i in range(n_nodes)
    ]
    ids = {0: builder.add_root(node_stats[0])}
    for node in range(n_nodes):  # breadth-first, so a parent is built first
        if left[node] >= 0:
            a, b = int(left[node]), int(right[node])
            ids[a], ids[b] = builder.split_numeric(
                ids[node],
                int(feature[node]),
                float(threshold[node]),
                node_stats[a],
                node_stats[b],
            )
    return builder.build()


def evaluate_structure(
    structure: npt.ArrayLike,
    depth: int,
    X_train: npt.ArrayLike,
    y_train: npt.ArrayLike,
    X_val: npt.ArrayLike,
    y_val: npt.ArrayLike,
    task: Task,
    n_classes: int = 0,
    *,
    f1_average: str = "macro",
) -> tuple[Tree, float]:
    """Fit one structure and score it: the fitted tree and its fitness.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> tree, mse = evaluate_structure([0], 1, X, [1.0, 1.0, 3.0, 3.0], X,
    ...                                [1.0, 1.0, 3.0, 5.0], "regression")
    >>> tree.predict([[0.5], [2.5]]).tolist(), mse
    ([1.0, 3.0], 1.0)
    """
    tree = fit_structure(structure, depth, X_train, y_train, task, n_classes)
    score = evaluate_population(
        np.atleast_2d(np.asarray(structure)),
        depth,
        X_train,
        y_train,
        X_val,
        y_val,
        task,
        n_classes,
        f1_average=f1_average,
    )
    return tree, float(score[0])


def _node_stats(stats: FloatArray, count: float, n_classes: int) -> NodeStats:
    if n_classes:
        counts = stats[:n_classes]
        gini = 1.0 - float(np.sum((counts / count) ** 2))
        return NodeStats.from_class_counts(counts, impurity=gini)
    mean = stats[0] / count
    return NodeStats.from_mean(
        mean, count, impurity=max(stats[1] / count - mean**2, 0.0)
    )
