"""A client's side of FedGA-Tree's initialization (docs/fedga.md; paper 000).

Algorithm 1, steps 6–7, 12 and 15–17, with no federation in sight:

- :func:`cross_validate_depths` — the K-fold cross-validation of CART over the
  depths ``[d_min, d_max]`` that proposes the client's depth ``d^i`` (step 6,
  repeated at step 15 for late regression clients) and yields the score matrix
  ``v[k, j]`` the regression votes need (Sec. III-B);
- the regression votes of steps 16–17 are in :mod:`._votes`;
- :func:`noisy_size` — the released sample size ``n^i + Lap(1/ε)`` (steps 7, 13,
  32), charged to the client's accountant;
- :func:`local_structure` — the client's CART of the global depth ``d`` with
  its thresholds removed (step 12).

**Decisions** applied here (the paper leaves them open):

- *Folds.* Classification uses ``StratifiedKFold(shuffle=True)`` when every
  class present on the client has at least ``folds`` rows, and
  ``KFold(shuffle=True)`` otherwise; regression always uses ``KFold``. The
  splitter and every tree take ``random_state=seed``.
- *Best depth.* The depth of highest mean score over folds; exact ties go to
  the smaller depth (the simpler tree).
- *Noisy size.* The Laplace release is not clipped or rounded (the paper's
  ``|D^i| + Laplace(1/ε)``, sensitivity 1); any clipping is post-processing
  left to the server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
from sklearn.metrics import f1_score, r2_score
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from fedtrees._random import sklearn_seed
from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import check_choice, check_int, check_matrix, invalid
from fedtrees.algorithms.fedga._encoding import MAX_DEPTH, encode
from fedtrees.algorithms.fedga._evaluate import F1_AVERAGES, Task
from fedtrees.exceptions import ValidationError
from fedtrees.learners import fit_cart, float32_scaled
from fedtrees.privacy import Laplace, PrivacyAccountant, Sampler
from fedtrees.tree import Tree

__all__ = [
    "DepthSearch",
    "cross_validate_depths",
    "local_structure",
    "noisy_size",
]

SIZE_LABEL: Final = "FedGA sample size"
"""Label of the accountant's spend for the noisy sample size."""


@dataclass(frozen=True)
class DepthSearch:
    """The cross-validation of CART over a range of depths (Algorithm 1, step 6).

    Attributes
    ----------
    depths : int64 array of shape (J,)
        The depths tried, ``d_min, d_min + 1, ..., d_max``.
    scores : float64 array of shape (K, J)
        ``scores[k, j]``: validation score of fold ``k`` at depth ``depths[j]``
        (F1 as ``f1_average`` says, or R² for regression) — the paper's
        ``v_kj``.
    best_depth : int
        The depth of highest mean score; ties go to the smaller depth.
    """

    depths: IntArray
    scores: FloatArray
    best_depth: int

    @property
    def mean_scores(self) -> FloatArray:
        """Mean score over folds of every depth, shape (J,)."""
        means: FloatArray = self.scores.mean(axis=0)
        return means

    def index_of(self, depth: int) -> int:
        """Column of ``scores`` that holds ``depth`` (e.g. the server's median).

        Examples
        --------
        >>> DepthSearch(np.arange(2, 6), np.zeros((2, 4)), 2).index_of(4)
        2
        """
        hits = np.flatnonzero(self.depths == depth)
        if hits.size != 1:
            raise invalid(
                "depth",
                "DepthSearch.index_of",
                f"one of the cross-validated depths {self.depths.tolist()}",
                depth,
            )
        return int(hits[0])


def cross_validate_depths(
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    task: Task,
    *,
    seed: int,
    depth_range: tuple[int, int] = (2, 15),
    folds: int = 5,
    f1_average: str = "macro",
) -> DepthSearch:
    """K-fold CV of a CART per depth; propose the best depth (step 6, Sec. III-B).

    Parameters
    ----------
    X : array of shape (n, F)
        Finite features of one client.
    y : array of shape (n,)
        Class labels (classification) or targets (regression).
    task : {"classification", "regression"}
        Classification scores each fold by the F1 of a
        ``DecisionTreeClassifier(max_depth=j)``; regression by R² of a
        ``DecisionTreeRegressor`` ("We use the R² score as the
        cross-validation metric").
    seed : int
        ``random_state`` of the fold splitter and of every tree.
    depth_range : (d_min, d_max)
        Inclusive range of depths, ``1 <= d_min <= d_max``; the paper's [2, 15].
    folds : int >= 2
        ``K``; the paper's 5.
    f1_average : {"macro", "binary"}
        Classification: macro-F1 (ours), or the F1 of label 1 alone for labels
        in {0, 1} (class codes of a two-class task; scikit-learn's
        ``average="binary"``, ``pos_label=1``). Ignored for regression.

    Raises
    ------
    ValidationError
        On bad parameters, or when the client has fewer than ``folds`` rows.

    Examples
    --------
    >>> X = np.arange(40.0)[:, None]
    >>> cv = cross_validate_depths(X, (X[:, 0] > 19).astype(int), "classification",
    ...                            seed=0, depth_range=(1, 3), folds=4)
    >>> cv.scores.shape, cv.best_depth
    ((4, 3), 1)
    """
    owner = "cross_validate_depths"
    X_arr, y_arr = _check_xy(X, y, owner)
    _check_task(task, owner)
    seed = check_int(seed, "seed", owner, min_value=0)
    depths = _check_depth_range(depth_range, owner)
    folds = check_int(folds, "folds", owner, min_value=2)
    check_choice(f1_average, "f1_average", owner, F1_AVERAGES)
    binary = task == "classification" and f1_average == "binary"
    if binary and not np.isin(y_arr, (0, 1)).all():
        raise invalid(
            "y", owner, "class codes 0 and 1 with f1_average='binary'", "other labels"
        )
    if X_arr.shape[0] < folds:
        raise ValidationError(  # travels to the server: no row count in it
            f"{owner} needs at least folds={folds} rows to make {folds} folds, and "
            "this client has fewer: lower 'folds' (cv_folds) or give this client "
            "more data."
        )
    splits = list(_splitter(y_arr, task, folds, seed).split(X_arr, y_arr))
    scores = np.empty((folds, depths.shape[0]), dtype=np.float64)
    for k, (train, valid) in enumerate(splits):
        for j, depth in enumerate(depths):
            scores[k, j] = _fold_score(
                X_arr, y_arr, train, valid, task, int(depth), seed, binary
            )
    # argmax returns the first maximum: depths ascend, so ties go to the smaller.
    best = int(depths[int(np.argmax(scores.mean(axis=0)))])
    return DepthSearch(depths, scores, best)


def _splitter(
    y: npt.NDArray[np.generic], task: Task, folds: int, seed: int
) -> KFold | StratifiedKFold:
    if task == "classification":
        _, counts = np.unique(y, return_counts=True)
        if counts.min() >= folds:
            return StratifiedKFold(
                n_splits=folds, shuffle=True, random_state=sklearn_seed(seed)
            )
    return KFold(n_splits=folds, shuffle=True, random_state=sklearn_seed(seed))


def _fold_score(
    X: FloatArray,
    y: npt.NDArray[np.generic],
    train: IntArray,
    valid: IntArray,
    task: Task,
    depth: int,
    seed: int,
    binary: bool,
) -> float:
    if task == "classification":
        clf = DecisionTreeClassifier(max_depth=depth, random_state=sklearn_seed(seed))
        pred = clf.fit(X[train], y[train]).predict(X[valid])
        if binary:  # the F1 of label 1 (0 where it is neither true nor predicted)
            return float(
                f1_score(y[valid], pred, labels=[1], average="macro", zero_division=0.0)
            )
        return float(f1_score(y[valid], pred, average="macro", zero_division=0.0))
    reg = DecisionTreeRegressor(max_depth=depth, random_state=sklearn_seed(seed))
    return float(r2_score(y[valid], reg.fit(X[train], y[train]).predict(X[valid])))


def noisy_size(
    n_rows: int,
    epsilon: float,
    rng: np.random.Generator,
    *,
    accountant: PrivacyAccountant,
    sampler: Sampler = "numpy",
) -> tuple[float, float]:
    """Release ``n_rows + Lap(1/ε)`` (Algorithm 1, steps 7, 13 and 32).

    The count has sensitivity 1, so the release is ε-DP. It goes through
    ``accountant.release``, which refuses an overspend before drawing noise.
    ``rng`` and ``sampler`` are the site's own noise source
    (:class:`fedtrees.federation.SiteNoise`).

    Returns
    -------
    (value, epsilon_spent)
        The noisy size (not clipped nor rounded) and the ε charged, which is
        ``epsilon`` exactly.

    Examples
    --------
    >>> acc = PrivacyAccountant(1.0, owner="client 'A'")
    >>> value, spent = noisy_size(100, 1.0, np.random.default_rng(0),
    ...                           accountant=acc)
    >>> round(value, 3), spent, acc.epsilon_spent
    (100.32, 1.0, 1.0)
    """
    owner = "noisy_size"
    n = check_int(n_rows, "n_rows", owner, min_value=0)
    mechanism = Laplace(epsilon=epsilon, sensitivity=1.0, sampler=sampler)
    noisy = accountant.release(mechanism, float(n), rng, label=SIZE_LABEL)
    return float(noisy), accountant.spends[-1].epsilon


def local_structure(
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    task: Task,
    depth: int,
    *,
    seed: int,
    n_classes: int = 0,
) -> IntArray:
    """Fit and encode the client's local structure ``T_d^i`` (Algorithm 1, step 12).

    A CART of depth ``depth`` fitted on all the client's rows
    (classification: :func:`fedtrees.learners.fit_cart`, Gini; regression:
    scikit-learn's ``DecisionTreeRegressor``, MSE), encoded with its thresholds
    dropped by :func:`._encoding.encode`.

    Parameters
    ----------
    X : array of shape (n, F)
    y : array of shape (n,)
        Class codes in ``[0, n_classes)`` (classification) or targets.
    depth : int
        The global depth ``d`` broadcast by the server; the string has length
        ``2**depth - 1``.
    seed : int
        ``random_state`` of the tree.
    n_classes : int
        Number of agreed classes (classification); ignored for regression.

    Examples
    --------
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> local_structure(X, [0, 1, 1, 1], "classification", 3, seed=0,
    ...                 n_classes=2).tolist()
    [1, 0, -1, -1, -1, -1, -1]
    """
    owner = "local_structure"
    X_arr, y_arr = _check_xy(X, y, owner)
    _check_task(task, owner)
    depth = check_int(depth, "depth", owner, min_value=1, max_value=MAX_DEPTH)
    if task == "classification":
        n_classes = check_int(n_classes, "n_classes", owner, min_value=1)
        codes = np.asarray(y_arr)
        if not np.issubdtype(codes.dtype, np.number) or np.any(
            (codes < 0) | (codes >= n_classes) | (codes != np.round(codes))
        ):
            constraint = f"class codes in [0, {n_classes})"
            raise invalid("y", owner, constraint, "other labels")
        tree = fit_cart(
            X_arr,
            codes.astype(np.int64),
            n_classes=n_classes,
            max_depth=depth,
            seed=seed,
        )
    else:
        reg = DecisionTreeRegressor(max_depth=depth, random_state=sklearn_seed(seed))
        tree = Tree.from_sklearn(reg.fit(X_arr, np.asarray(y_arr, dtype=np.float64)))
    return encode(tree, depth)


def _check_xy(
    X: npt.ArrayLike, y: npt.ArrayLike, owner: str
) -> tuple[FloatArray, npt.NDArray[np.generic]]:
    """Return finite X (columns beyond float32 scaled into it) and y of its rows.

    scikit-learn's trees compute in float32; a column beyond its range is
    scaled by a power of two (:func:`fedtrees.learners.float32_scaled`), which
    changes no split's rows, and the structures keep no thresholds.
    """
    X_arr, _ = float32_scaled(check_matrix(X, "X", owner, allow_empty=True))
    y_arr = np.asarray(y)
    if y_arr.shape != (X_arr.shape[0],):
        raise invalid("y", owner, f"an array of shape ({X_arr.shape[0]},)", y_arr.shape)
    return X_arr, y_arr


def _check_task(task: str, owner: str) -> None:
    if task not in ("classification", "regression"):
        raise invalid("task", owner, "'classification' or 'regression'", task)


def _check_depth_range(depth_range: tuple[int, int], owner: str) -> IntArray:
    try:
        low, high = depth_range
    except (TypeError, ValueError) as exc:
        constraint = "a pair (d_min, d_max)"
        raise invalid("depth_range", owner, constraint, depth_range) from exc
    low = check_int(low, "depth_range[0]", owner, min_value=1, max_value=MAX_DEPTH)
    high = check_int(high, "depth_range[1]", owner, min_value=low, max_value=MAX_DEPTH)
    return np.arange(low, high + 1, dtype=np.int64)
