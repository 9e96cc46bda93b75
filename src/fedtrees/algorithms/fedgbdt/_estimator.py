"""``FedGBDTClassifier`` and ``FedGBDTRegressor``: lossless federated boosting.

The model XGBoost would grow on the pooled, binned rows, grown from the
clients' histograms of gradient sums (:mod:`._strategy`). Parameters are
named as XGBoost's scikit-learn API.

Size: one module past ~400 lines, by choice: the classifier, the regressor and
their shared base with XGBoost's parameter names documented one by one (165
lines of docstrings).
"""

from __future__ import annotations

import secrets
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from fedtrees._random import resolve_seed
from fedtrees._typing import FloatArray
from fedtrees.algorithms._base import (
    FitOptions,
    first_frame_outside,
)
from fedtrees.algorithms.fedgbdt._baselines import BaselineStrategy
from fedtrees.algorithms.fedgbdt._config import (
    BoostConfig,
    Objective,
    make_config,
    parameter_constraints,
    with_classes,
)
from fedtrees.algorithms.fedgbdt._grow import K_RT_EPS
from fedtrees.algorithms.fedgbdt._model import raw_predictions, staged_raw, to_trees
from fedtrees.algorithms.fedgbdt._strategy import BoostResult, FedGBDTStrategy
from fedtrees.algorithms.fedgbdt._xgboost_api import XGBoostAPI
from fedtrees.exceptions import ValidationError
from fedtrees.federation import Federation, RunResult

__all__ = ["FedGBDTClassifier", "FedGBDTRegressor"]


def _warn_no_split(owner: str) -> None:
    """Every tree is one leaf: say why it may be, instead of a silent constant."""
    warnings.warn(
        f"{owner}: every tree is a single leaf; no split gained more than "
        f"{K_RT_EPS:g} (XGBoost's floor on a split's loss reduction). If y varies, "
        "its scale may be too small for it (squared-error gains scale with y^2): "
        "rescale y, e.g. to unit variance, and scale the predictions back.",
        UserWarning,
        stacklevel=first_frame_outside(),
    )


class _FedGBDT(XGBoostAPI, BaseEstimator):  # type: ignore[misc]
    """Shared fit and predict of the FedGBDT estimators."""

    def __init__(
        self,
        n_estimators: int = 100,
        max_depth: int = 6,
        learning_rate: float = 0.3,
        reg_lambda: float = 1.0,
        gamma: float = 0.0,
        min_child_weight: float = 1.0,
        subsample: float = 1.0,
        colsample_bytree: float = 1.0,
        max_bins: int = 255,
        base_score: float | None = None,
        objective: str | None = None,
        scale_pos_weight: float = 1.0,
        early_stopping_rounds: int | None = None,
        validation_fraction: float = 0.1,
        eval_metric: str | list[str] | None = None,
        bin_edges: dict[Any, Any] | None = None,
        secure_aggregation: bool = False,
        feature_ranges: object = None,
        protocol: str = "histogram",
        trees_per_round: int = 1,
        on_dropout: str = "fail",
        timeout: float = 60.0,
        n_jobs: int | None = None,
        workers: int = 1,
        verbose: bool = False,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.reg_lambda = reg_lambda
        self.gamma = gamma
        self.min_child_weight = min_child_weight
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.max_bins = max_bins
        self.base_score = base_score
        self.objective = objective
        self.scale_pos_weight = scale_pos_weight
        self.early_stopping_rounds = early_stopping_rounds
        self.validation_fraction = validation_fraction
        self.eval_metric = eval_metric
        self.bin_edges = bin_edges
        self.secure_aggregation = secure_aggregation
        self.feature_ranges = feature_ranges
        self.protocol = protocol
        self.trees_per_round = trees_per_round
        self.on_dropout = on_dropout
        self.timeout = timeout
        self.n_jobs = n_jobs
        self.workers = workers
        self.verbose = verbose
        self.random_state = random_state

    def __sklearn_tags__(self) -> Any:
        """NaN in X is a missing value (inf is refused)."""
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def _accepts_missing(self) -> bool:
        return True

    def _config(self) -> BoostConfig:
        """Validate the parameters (a classifier's objective follows its classes)."""
        owner = type(self).__name__
        seed = resolve_seed(self.random_state, owner)
        objective: Objective = (
            "squared_error" if self._task == "regression" else "binary"
        )
        return make_config(self.get_params(), objective, 0, owner, seed)

    def _strategy(
        self,
        federation: Federation,
        classes: npt.NDArray[Any] | None,
        options: FitOptions,
    ) -> FedGBDTStrategy | BaselineStrategy:
        """Return the boosting server (``fit``: the classes checked by name)."""
        config = self._config()
        if classes is not None:  # fit: the classes are known, refuse here by name
            config = with_classes(config, len(classes), type(self).__name__)
        kind = FedGBDTStrategy if config.protocol == "histogram" else BaselineStrategy
        return kind(config, (1 << 61) | secrets.randbits(61))

    def _keep(
        self, outcome: RunResult, strategy: FedGBDTStrategy | BaselineStrategy
    ) -> None:
        result: BoostResult = outcome.result
        self.config_ = strategy.config
        self.grid_ = result.grid
        self.base_margin_ = result.margin
        self.trees_ = to_trees(result.iterations, result.grid, self._tree_meta())
        self.evals_result_ = {k: list(v) for k, v in result.evals.items()}
        self.best_iteration_ = result.best_iteration - 1  # 0-based, as XGBoost's
        self.n_iter_ = len(self.trees_)
        gains = np.zeros(self.n_features_in_)
        for it in result.iterations:
            gains += it.gains_by_feature(self.n_features_in_)
        total = gains.sum()
        self._importances = gains / total if total > 0 else gains
        if self.trees_ and all(t.n_nodes == 1 for it in self.trees_ for t in it):
            _warn_no_split(type(self).__name__)

    @property
    def feature_importances_(self) -> FloatArray:
        """Total gain (loss change) per feature, normalised to sum to 1."""
        check_is_fitted(self, "trees_")
        out: FloatArray = self._importances
        return out

    # -- XGBoost's scikit-learn API -------------------------------------------------
    def fit(
        self,
        X: object,
        y: npt.ArrayLike,
        groups: npt.ArrayLike | None = None,
        sample_weight: npt.ArrayLike | None = None,
        *,
        noise_seed: int | None = None,
        eval_set: object = None,
    ) -> Any:
        """Fit on in-process clients: one per distinct value of ``groups``.

        As :meth:`fedtrees.algorithms._base.FederatedEstimator.fit`.

        **Decision (eval_set):** refused. XGBoost's ``eval_set`` is rows the
        caller holds, which a federation does not have: each site keeps its
        own. ``early_stopping_rounds`` with ``validation_fraction`` has every
        site hold out that share of its own rows; their pooled metric is
        ``evals_result()["validation_1"]`` and stops the fit.
        """
        if eval_set is not None:
            owner = type(self).__name__
            raise ValidationError(
                f"{owner}.fit: eval_set is not supported: it holds validation rows "
                "at the caller, and in a federation every site keeps its own rows. "
                f"Use {owner}(early_stopping_rounds=N, validation_fraction=0.1): "
                "every site holds out that share of its own rows, only their loss "
                "sums travel, and evals_result()['validation_1'] is their pooled "
                "metric."
            )
        return super().fit(X, y, groups, sample_weight, noise_seed=noise_seed)

    def _raw(self, X: object) -> FloatArray:
        check_is_fitted(self, "trees_")
        return raw_predictions(self.trees_, self.base_margin_, self._encode(X))

    def _staged(self, X: object) -> Iterator[FloatArray]:
        check_is_fitted(self, "trees_")
        yield from staged_raw(self.trees_, self.base_margin_, self._encode(X))


class FedGBDTClassifier(ClassifierMixin, _FedGBDT):  # type: ignore[misc]
    """Federated histogram gradient boosting, lossless: binary logloss or softmax.

    Grows the model XGBoost (``tree_method="hist"`` on the agreed grid) would
    grow on the pooled rows, from the clients' histograms of gradient sums:
    no row and no per-row gradient leaves a client.

    Parameters
    ----------
    n_estimators : int, default 100
        Boosting iterations (one tree per class per iteration for more than
        two classes), at most 10,000.
    max_depth : int in [1, 16], default 6
    learning_rate : float in (0, 1], default 0.3
        Shrinkage η of every leaf weight ``−η·G/(H+λ)`` (XGBoost's range for
        ``eta``: a larger step overshoots, and the raw scores can overflow).
    reg_lambda : float >= 0, default 1.0
        L2 regularisation λ of the leaf weights.
    gamma : float >= 0, default 0.0
        XGBoost's ``min_split_loss``: splits whose loss change is below it are
        pruned bottom-up when the tree is finished.
    min_child_weight : float >= 0, default 1.0
        Least hessian sum of a child.
    subsample : float in (0, 1], default 1.0
        Share of every client's rows drawn per iteration (keyed by seed,
        iteration and client).
    colsample_bytree : float in (0, 1], default 1.0
        Share of the features each tree considers (drawn by the server).
    max_bins : int in [2, 255], default 255
        Bins per numeric feature of the grid agreed at the start.
    base_score : float or None, default None
        The starting prediction: a probability for two classes, a margin for
        more (|base_score| <= 1e100, as a target); None: the pooled prior
        (log-odds of the pooled class shares; with ``scale_pos_weight`` s,
        every positive row counted s times, as XGBoost 3's intercept).
    objective : str or None, default None
        XGBoost's name: ``"binary:logistic"`` (two classes),
        ``"multi:softprob"`` (any number: one tree per class per iteration),
        ``"reg:squarederror"`` (the regressor's). None: the classifier's
        follows its classes, as ``XGBClassifier``'s; an explicit
        ``"binary:logistic"`` with more classes is refused. Every other name
        is refused, with the supported ones.
    scale_pos_weight : float in (0, 1e50], default 1.0
        Binary logloss: every positive row's g and h are multiplied by it, as
        XGBoost does (the metrics do not see it; ``n_negative / n_positive``
        balances the classes). Each site scales its own rows' sums: nothing new
        leaves it. Refused for more than two classes (XGBoost ignores it there
        with a warning; weight rows with ``sample_weight``) and by
        ``FedGBDTRegressor``.
    early_stopping_rounds : int or None, default None
        Stop when the pooled validation metric has not improved for this many
        iterations; the model keeps the best iteration's trees.
    validation_fraction : float in (0, 1), default 0.1
        With early stopping: the share of every client's rows held out
        (keyed by seed and client). ``fit`` takes no ``eval_set``: a
        federation's validation rows are the sites' own.
    eval_metric : str, list of one str, or None, default None
        XGBoost's name of the metric recorded per iteration (``evals_result()``)
        and watched by early stopping: ``"logloss"`` or ``"error"`` (two
        classes), ``"mlogloss"`` or ``"merror"`` (more), ``"rmse"`` (the
        regressor). None: the objective's loss (``logloss``, ``mlogloss``,
        ``rmse``). One metric: the sites sum it per iteration. Ranking
        metrics (``auc``) are refused: they are not sums over rows.
    bin_edges : dict or None, default None
        Declared edges per numeric column (by name or position); such columns
        are not summarised by the clients.
    secure_aggregation : bool, default False
        The server learns only the sums over the sites (pairwise masks,
        docs/security.md, "Secure aggregation"): histograms, node sums, the
        prior and the losses travel masked, (g, h) in fixed point (units of
        2^-32). Needs at least 3 sites, ``protocol="histogram"``, and the grid
        of every numeric column from ``bin_edges`` or ``feature_ranges``.
    feature_ranges : dict, array of shape (n_features, 2) or None
        With ``secure_aggregation``: a public (min, max) per numeric column, as
        the DP forest takes it; the grid is cut from the secure sum of fine
        histograms over it (docs/fedgbdt.md, "Secure aggregation").
    protocol : {"histogram", "bagging", "cyclic"}, default "histogram"
        ``"histogram"``: FedGBDT (the pooled model). ``"bagging"`` and
        ``"cyclic"``: Flower's baselines on the same grid and learner — every
        client boosts ``trees_per_round`` trees on its own rows from the
        global model and the server appends them (bagging), or the clients
        take turns (cyclic).
    trees_per_round : int, default 1
        Baselines: trees a client boosts per round.
    on_dropout : {"fail", "continue"}, default "fail"
    timeout : float, default 60.0
    n_jobs : int or None, default None
        This machine's threads for the fit (scikit-learn's meaning: -1 is every
        core): ``fit``'s simulated sites served at once and the server's
        compiled kernels (the split search). None keeps the defaults
        (``workers`` sites, kernels on every core). The model does not depend
        on it. On Flower every site answers in its own process: its speed is
        the site's own setting, and ``n_jobs`` sets the server's kernels only.
    workers : int, default 1
        The older name of ``n_jobs``'s first half (sites served at once); not
        both.
    verbose : bool, default False
        A progress bar with the pooled losses.
    random_state : int, Generator or None

    Attributes
    ----------
    trees_ : list of list of fedtrees.tree.Tree
        Per iteration, one tree per output (leaf weights).
    base_margin_ : ndarray of shape (n_outputs,)
    evals_result_ : dict
        Per-iteration pooled losses: ``training_logloss`` (or ``mlogloss``)
        and, with early stopping, ``validation_...``.
    best_iteration_ : int
        The 0-based index of the best iteration, as XGBoost's: the model keeps
        iterations ``0 … best_iteration_`` (the last one without early stopping).
        ``best_iteration`` is the same, by XGBoost's name.
    n_iter_ : int
        Iterations kept (``best_iteration_ + 1``).
    grid_ : the agreed bin grid
    classes_, communication_, feature_importances_, clients_

    Notes
    -----
    XGBoost's scikit-learn API, as far as it federates: :meth:`evals_result`,
    :meth:`get_booster`, :meth:`save_model` and :meth:`load_model` (XGBoost's
    JSON), ``best_iteration``; docs/fedgbdt.md lists the differences.

    Rounds: the agreement, the start (grid and prior), one round per level of
    every iteration, and a last report: ``2 + n_estimators · max_depth`` at
    most. Missing values (NaN) go where the split scores better (learned per
    node); a categorical NaN is its own category.
    """

    _constraint_table = parameter_constraints("binary")

    def decision_function(self, X: object) -> FloatArray:
        """Raw margins: (n,) for two classes, (n, n_classes) for more."""
        raw = self._raw(X)
        out: FloatArray = raw[:, 0] if raw.shape[1] == 1 else raw
        return out

    def predict_proba(self, X: object) -> FloatArray:
        """Class probabilities, (n, n_classes)."""
        proba = _probabilities(self._raw(X))
        return proba[:, :1] / proba[:, :1] if len(self.classes_) == 1 else proba

    def predict(self, X: object) -> npt.NDArray[Any]:
        """Predict the most probable class of every row."""
        proba = self.predict_proba(X)
        labels: npt.NDArray[Any] = np.asarray(self.classes_)[np.argmax(proba, axis=1)]
        return labels

    def staged_predict_proba(self, X: object) -> Iterator[FloatArray]:
        """Class probabilities after each iteration."""
        for raw in self._staged(X):
            proba = _probabilities(raw)
            yield proba[:, :1] / proba[:, :1] if len(self.classes_) == 1 else proba

    def staged_predict(self, X: object) -> Iterator[npt.NDArray[Any]]:
        """Predicted classes after each iteration."""
        for proba in self.staged_predict_proba(X):
            yield np.asarray(self.classes_)[np.argmax(proba, axis=1)]


class FedGBDTRegressor(RegressorMixin, _FedGBDT):  # type: ignore[misc]
    """Federated histogram gradient boosting, lossless: squared error.

    The parameters, attributes and rounds are :class:`FedGBDTClassifier`'s;
    ``base_score`` is a value (None: the pooled mean) and the losses are RMSE.
    """

    _task = "regression"
    _constraint_table = parameter_constraints("squared_error")

    def predict(self, X: object) -> FloatArray:
        """Predict the value of every row."""
        out: FloatArray = self._raw(X)[:, 0]
        return out

    def staged_predict(self, X: object) -> Iterator[FloatArray]:
        """Predicted values after each iteration."""
        for raw in self._staged(X):
            yield raw[:, 0]


def _probabilities(raw: FloatArray) -> FloatArray:
    if raw.shape[1] == 1:
        p = expit(raw[:, 0])
        return np.column_stack([1.0 - p, p])
    out: FloatArray = softmax(raw, axis=1)
    return out
