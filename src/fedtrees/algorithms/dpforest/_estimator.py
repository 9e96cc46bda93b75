"""DPForestClassifier: a forest of ε-DP client trees voting (docs/dpforest.md)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from functools import partial
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from fedtrees._random import resolve_seed
from fedtrees._typing import FloatArray, RandomState
from fedtrees._validation import check_choice, check_epsilon
from fedtrees.algorithms._base import (
    FederatedEstimator,
    FitOptions,
    estimator_frame,
    first_frame_outside,
)
from fedtrees.algorithms._constraints import (
    RUN_CONSTRAINTS,
    Check,
    Interval,
    Later,
    Options,
    check_params,
)
from fedtrees.algorithms._packed import rebuild_packed
from fedtrees.algorithms.dpforest._strategy import DPTrees, DPTreeStrategy
from fedtrees.exceptions import PrivacyLeakWarning, ValidationError
from fedtrees.federation import Federation, RoundCallback, RunResult
from fedtrees.learners import BUDGETS, MAX_DEPTH, SCORES, validate_plan

__all__ = ["DPForestClassifier"]


CONSTRAINTS: Final = {
    "epsilon": Check(partial(check_epsilon, allow_inf=True)),
    "max_depth": Interval(int, 1, MAX_DEPTH),
    "feature_ranges": Later(
        "the strategy, against the agreed columns (fit computes 'from-data')"
    ),
    "budget": Options(BUDGETS),
    "split_score": Options(SCORES),
    **RUN_CONSTRAINTS,
}
"""The constraint of every parameter of :class:`DPForestClassifier` (ε = inf:
no noise, for tests)."""


class DPForestClassifier(ClassifierMixin, FederatedEstimator, BaseEstimator):  # type: ignore[misc]
    """Federated forest of ε-differentially-private client trees (docs/dpforest.md).

    One round: every client grows one random-threshold tree on its own rows,
    spending ``epsilon`` — never more, checked exactly (its own budget: clients
    hold disjoint rows) — and sends it; the forest predicts by majority vote.

    Parameters
    ----------
    epsilon : float > 0, default 1.0
        Each client's privacy budget (``inf`` switches the noise off: no
        guarantee, for tests).
    max_depth : int in [1, 62], default 5
        The fixed depth d the budget is planned for. The per-query budget
        (ε over the plan's queries) must be at least 1e-100 so the noise stays
        finite, and a level may hold at most 2^24 noisy counts (open nodes ×
        features × classes; see :mod:`fedtrees.learners._dp_tree`).
    feature_ranges : dict, array of shape (n_features, 2) or "from-data"
        Public (min, max) of every numeric feature, declared by the user; thresholds
        are drawn uniformly from them. Required: never computed from private data
        by default. A categorical (``category``) column takes no range — its
        codes are public schema — and declaring one for it is an error naming the
        column (in the array form, give its row as ``(nan, nan)``).
        ``"from-data"`` (experiments only) takes them from the rows passed to
        :meth:`fit` and warns with :class:`PrivacyLeakWarning`.
    budget : {"paper", "parallel"}, default "paper"
        Per-query budget ``ε/(2^d·F)`` (the paper) or ``ε/(1 + d·F)`` (parallel
        composition over the disjoint nodes of a level; beyond the paper).
    split_score : {"average", "weighted"}, default "average"
        Split score: the plain average of the children's Gini (the paper), or
        weighted by their noisy counts (the authors' public code; beyond the paper).
    timeout : float, default 120.0
        Seconds the round may take.
    workers : int, default 1
        Threads for in-process clients; results do not depend on it.
    verbose : bool, default False
        Show a progress bar.
    random_state : int, Generator or None
        Client k's candidate thresholds use ``[seed, 5, crc32(k)]``. The noise is
        not the server's to seed: each site draws it from its own source
        (:class:`fedtrees.federation.SiteNoise`; fresh entropy by default), so a
        fit is reproducible by ``random_state`` alone only with ``epsilon=inf``.
        To reproduce a simulated fit, give the simulated sites a secret:
        ``fit(..., noise_seed=...)``. The Laplace sampler is a site setting too
        (``Federation.from_groups(..., noise_sampler="opendp")``).

    Attributes
    ----------
    trees_ : list of Tree
        One tree per client, in client order (``clients_``).
    client_trees_ : dict
        The same trees by client id.
    epsilon_spent_ : dict
        ε each client spent: ``epsilon``, or less by a rounding error (under two
        ulps), never more.
    n_queries_ : dict
        Counting queries each client answered.
    feature_ranges_ : array of shape (n_features, 2)
        The ranges used.
    communication_ : Ledger

    Notes
    -----
    **Decision (vote ties):** a row's class is the one with the most votes; on a
    tie, the first of ``classes_`` (sorted labels). A tree votes for the argmax of
    its leaf's noisy counts, again the first class on ties. Sample weights are not
    supported: a row of weight w would change a count by w, not 1, and the Laplace
    scale assumes sensitivity 1.
    """

    _task = "classification"
    _constraint_table = CONSTRAINTS

    def __init__(
        self,
        epsilon: float = 1.0,
        max_depth: int = 5,
        feature_ranges: object = None,
        *,
        budget: str = "paper",
        split_score: str = "average",
        timeout: float = 120.0,
        workers: int = 1,
        verbose: bool = False,
        random_state: RandomState = None,
    ) -> None:
        self.epsilon = epsilon
        self.max_depth = max_depth
        self.feature_ranges = feature_ranges
        self.budget = budget
        self.split_score = split_score
        self.timeout = timeout
        self.workers = workers
        self.verbose = verbose
        self.random_state = random_state

    def fit(
        self,
        X: object,
        y: npt.ArrayLike,
        groups: npt.ArrayLike | None = None,
        sample_weight: npt.ArrayLike | None = None,
        *,
        noise_seed: int | None = None,
    ) -> Any:
        """Fit on in-process clients, one per value of ``groups``.

        ``groups=None`` puts every row on one client (centralized training, with
        a :class:`~fedtrees.exceptions.CentralizedFitWarning`). ``noise_seed``:
        the simulated sites' secret noise seed (docs/security.md): None draws
        fresh operating-system noise, an int reproduces the fit.
        """
        if sample_weight is not None:
            raise ValidationError(
                "DPForestClassifier.fit: sample_weight is not supported (the noise "
                "is calibrated to counts of sensitivity 1)."
            )
        declared = self._ranges_from_data(X)
        return self._fit_rows(X, y, groups, None, noise_seed, {"ranges": declared})

    def fit_federation(
        self, federation: Federation, *, callbacks: Sequence[RoundCallback] = ()
    ) -> Any:
        """Fit on any federation (``feature_ranges`` must be declared)."""
        if isinstance(self.feature_ranges, str):
            _check_keyword(self.feature_ranges)
            raise ValidationError(
                "DPForestClassifier.fit_federation: feature_ranges='from-data' is "
                "only for fit(X, y, groups) experiments; declare the ranges."
            )
        return self._fit_on(federation, callbacks, {"ranges": self.feature_ranges})

    def _ranges_from_data(self, X: object) -> object:
        if not isinstance(self.feature_ranges, str):
            return self.feature_ranges
        _check_keyword(self.feature_ranges)
        warnings.warn(
            "DPForestClassifier: feature_ranges='from-data' computes the ranges from "
            "the training rows; this releases every feature's min and max without "
            "noise and voids the epsilon guarantee. Use it for experiments only.",
            PrivacyLeakWarning,
            stacklevel=first_frame_outside(),
        )
        numeric = estimator_frame(X, "DPForestClassifier.fit").select_dtypes("number")
        low, high = numeric.min().to_numpy(float), numeric.max().to_numpy(float)
        flat = low == high
        low, high = np.where(flat, low - 0.5, low), np.where(flat, high + 0.5, high)
        return {
            c: (lo, hi) for c, lo, hi in zip(numeric.columns, low, high, strict=True)
        }

    def _strategy(
        self,
        federation: Federation,
        classes: npt.NDArray[Any] | None,
        options: FitOptions,
    ) -> DPTreeStrategy:
        """Return the one round's strategy over the declared (or the data's) ranges."""
        owner = type(self).__name__
        return DPTreeStrategy(self._settings(owner), options["ranges"], owner)

    def _keep(self, outcome: RunResult, strategy: DPTreeStrategy) -> None:
        received: DPTrees = outcome.result
        meta = self._tree_meta()
        self.client_trees_ = {
            client: rebuild_packed(reply, **meta)[0]
            for client, reply in received.replies.items()
        }
        self.trees_ = list(self.client_trees_.values())
        self.epsilon_spent_ = {c: r.epsilon_spent for c, r in received.replies.items()}
        self.n_queries_ = {c: r.n_queries for c, r in received.replies.items()}
        self.feature_ranges_ = received.request.ranges

    def _settings(self, owner: str) -> dict[str, Any]:
        """Return the round's validated public settings (the plan's bounds checked)."""
        checked = check_params(self)
        # Up front with one feature (the fewest queries); the strategy checks the
        # plan again once the agreed schema gives the number of features.
        validate_plan(
            checked["epsilon"], checked["max_depth"], 1, checked["budget"], owner
        )
        return {
            "epsilon": checked["epsilon"],
            "max_depth": checked["max_depth"],
            "budget": checked["budget"],
            "score": checked["split_score"],
            "seed": resolve_seed(self.random_state, owner),
        }

    def predict_proba(self, X: object) -> FloatArray:
        """Share of the trees voting for each class."""
        check_is_fitted(self, "trees_")
        forest = self._flat_forest("trees_", self.trees_, votes=True)
        owner = f"{type(self).__name__}.predict_proba"
        return forest.mean_value(self._encode(X), owner=owner)

    def predict(self, X: object) -> npt.NDArray[Any]:
        """Majority vote (first class of ``classes_`` on ties)."""
        proba = self.predict_proba(X)  # first: raises NotFittedError before fit
        labels: npt.NDArray[Any] = self.classes_[np.argmax(proba, axis=1)]
        return labels


def _check_keyword(value: str) -> None:
    """Refuse any keyword but "from-data" in place of declared ranges."""
    check_choice(value, "feature_ranges", "DPForestClassifier", ("from-data",))
