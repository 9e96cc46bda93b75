"""``FedGBDTClassifier`` and ``FedGBDTRegressor``: lossless federated boosting.

The model XGBoost would grow on the pooled, binned rows, grown from the
clients' histograms of gradient sums (:mod:`._strategy`). Parameters are
named as XGBoost's scikit-learn API.
"""

from __future__ import annotations

import secrets
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from fedtrees._random import resolve_seed
from fedtrees._typing import FloatArray
from fedtrees.algorithms._base import FederatedEstimator
from fedtrees.algorithms.fedgbdt._baselines import BaselineStrategy
from fedtrees.algorithms.fedgbdt._config import BoostConfig, Objective, make_config
from fedtrees.algorithms.fedgbdt._export import to_xgboost
from fedtrees.algorithms.fedgbdt._grow import K_RT_EPS
from fedtrees.algorithms.fedgbdt._model import raw_predictions, staged_raw, to_trees
from fedtrees.algorithms.fedgbdt._strategy import BoostResult, FedGBDTStrategy
from fedtrees.federation import Federation, RoundCallback

__all__ = ["FedGBDTClassifier", "FedGBDTRegressor"]


def _warn_no_split(owner: str) -> None:
    """Every tree is one leaf: say why it may be, instead of a silent constant."""
    warnings.warn(
        f"{owner}: every tree is a single leaf; no split gained more than "
        f"{K_RT_EPS:g} (XGBoost's floor on a split's loss reduction). If y varies, "
        "its scale may be too small for it (squared-error gains scale with y^2): "
        "rescale y, e.g. to unit variance, and scale the predictions back.",
        UserWarning,
        stacklevel=4,
    )


class _FedGBDT(FederatedEstimator, BaseEstimator):  # type: ignore[misc]
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
        early_stopping_rounds: int | None = None,
        validation_fraction: float = 0.1,
        bin_edges: dict[Any, Any] | None = None,
        secure_aggregation: bool = False,
        feature_ranges: object = None,
        protocol: str = "histogram",
        trees_per_round: int = 1,
        on_dropout: str = "fail",
        timeout: float = 60.0,
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
        self.early_stopping_rounds = early_stopping_rounds
        self.validation_fraction = validation_fraction
        self.bin_edges = bin_edges
        self.secure_aggregation = secure_aggregation
        self.feature_ranges = feature_ranges
        self.protocol = protocol
        self.trees_per_round = trees_per_round
        self.on_dropout = on_dropout
        self.timeout = timeout
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

    def _fit(
        self,
        federation: Federation,
        classes: npt.NDArray[Any] | None,
        callbacks: Sequence[RoundCallback] = (),
    ) -> Any:
        config = self._config()
        kind = FedGBDTStrategy if config.protocol == "histogram" else BaselineStrategy
        strategy = kind(config, (1 << 61) | secrets.randbits(61))
        outcome = self._run(federation, strategy, callbacks)
        self._remember(outcome.info, classes)
        result: BoostResult = outcome.result
        self.config_ = strategy.config
        self.grid_ = result.grid
        self.base_margin_ = result.margin
        self.trees_ = to_trees(result.iterations, result.grid, self._tree_meta())
        self.evals_result_ = {k: list(v) for k, v in result.evals.items()}
        self.best_iteration_ = result.best_iteration - 1  # 0-based, as XGBoost's
        self.n_iter_ = len(self.trees_)
        self.communication_ = outcome.ledger
        gains = np.zeros(self.n_features_in_)
        for it in result.iterations:
            gains += it.gains_by_feature(self.n_features_in_)
        total = gains.sum()
        self._importances = gains / total if total > 0 else gains
        if self.trees_ and all(t.n_nodes == 1 for it in self.trees_ for t in it):
            _warn_no_split(type(self).__name__)
        return self

    @property
    def feature_importances_(self) -> FloatArray:
        """Total gain (loss change) per feature, normalised to sum to 1."""
        check_is_fitted(self, "trees_")
        out: FloatArray = self._importances
        return out

    def to_xgboost(self, *, as_json: bool = False) -> Any:
        """Return the model as an ``xgboost.Booster`` (or its JSON), same predictions.

        Needs the ``export`` extra; SHAP's ``TreeExplainer`` opens the Booster.
        Categorical columns are refused (one-hot encode them before fitting).
        """
        return to_xgboost(self, as_json=as_json)

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
        (log-odds of the pooled class shares).
    early_stopping_rounds : int or None, default None
        Stop when the pooled validation loss has not improved for this many
        iterations; the model keeps the best iteration's trees.
    validation_fraction : float in (0, 1), default 0.1
        With early stopping: the share of every client's rows held out
        (keyed by seed and client).
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
    workers : int, default 1
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
    n_iter_ : int
        Iterations kept (``best_iteration_ + 1``).
    grid_ : the agreed bin grid
    classes_, communication_, feature_importances_, clients_

    Notes
    -----
    Rounds: the agreement, the start (grid and prior), one round per level of
    every iteration, and a last report: ``2 + n_estimators · max_depth`` at
    most. Missing values (NaN) go where the split scores better (learned per
    node); a categorical NaN is its own category.
    """

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
