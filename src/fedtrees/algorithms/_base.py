"""What every federated estimator shares: inputs in, federation built, schema kept.

``fit(X, y, groups=None)`` simulates the federation in process: one client per
value of ``groups``. **Decision (groups=None):** all rows go to one client
(id ``"0"``) — centralized training, which scikit-learn's checks, pipelines and
cross-validation need — and ``fit`` says so once with a
:class:`~fedtrees.exceptions.CentralizedFitWarning`.

**Decision (DP noise in fit):** ``fit`` plays every site, so it holds their noise
source too (:class:`fedtrees.federation.SiteNoise`; docs/security.md). Only DP
releases draw noise (``DPForestClassifier``, FedGA's noisy sizes, Federated-ID3 with
``epsilon``), and never from ``random_state``: the server knows it, and could redraw
the noise and subtract it. ``fit(..., noise_seed=None)`` (default) draws every
release's noise from fresh operating-system entropy, so a DP fit differs from one
call to the next; ``noise_seed=<int>`` makes each simulated site key its noise by
that secret, its own id, its rows and the request, so the same call (same
``random_state``, data and seed) reproduces the fit. It is the sites' setting, a
keyword of ``fit`` rather than a parameter: it is never sent, nor stored on the
estimator (a pickled model does not carry it). ``fit_federation`` leaves the noise
to the federation's sites (``Federation.from_groups(..., noise_seed=...)``, or each
Flower site's own node config).

**Decision (groups in model selection):** every estimator *requests* ``groups``
for ``fit`` through scikit-learn's metadata routing by default
(``__metadata_request__fit``), where scikit-learn's own consumers default to
"not requested". ``groups`` is not optional metadata such as a weight: it is the
federation, and a fit without it is a different (centralized) model. So once
routing is on (``sklearn.set_config(enable_metadata_routing=True)``),
``GridSearchCV(est, grid, cv=GroupKFold(3)).fit(X, y, groups=site)`` hands
``groups`` to the splitter *and* to every fit (the training folds' rows; the
refit gets all of them), as ``GroupKFold`` itself requests it by default.
``est.set_fit_request(groups=False)`` opts out. With routing off, scikit-learn
passes ``groups`` to the splitter only; the warning then says how to route it.

Inputs are numpy arrays or DataFrames; labels may be strings. **Missing
values**: an estimator that learns where they go (``_accepts_missing()``:
FedForest's histogram mode, FedGBDT) accepts NaN in X — in a numeric column, or as a
category of its own in a categorical one; every other estimator refuses NaN
naming the column and the estimators that accept it (:data:`ACCEPTS_MISSING`).
Infinite values are refused everywhere.

**Decision (a wrong argument names the public class):** Python's own
``TypeError`` for an unknown keyword names the function that defines
``__init__`` — often a private base (``_FedGBDT.__init__()``). Every
estimator's ``__init__``, ``fit`` and ``fit_federation`` are wrapped once,
where they are defined (:meth:`FederatedEstimator.__init_subclass__`), to bind
their arguments first and raise
:class:`~fedtrees.exceptions.UnknownParameterError` (a ``TypeError``) naming
``type(self)`` (``ICDTAClassifier.fit`` for a method, never the private
``SingleTreeClassifier.fit``), the closest parameter name and every
parameter: ``fit(..., sample_weight=w)`` on a method without sample weights
is refused so. The wrapper keeps the signature (``__wrapped__``), so
scikit-learn's ``get_params``, ``set_params``, ``clone`` and its checks of
``fit``'s parameters see them as before.

**Decision (one fit template):** every estimator fits through
:meth:`FederatedEstimator._fit`: validate the data (``fit``: the rows into an
in-process federation; ``fit_federation``: the agreed names), build the
strategy (the method's :meth:`~FederatedEstimator._strategy` hook), run it on
the federation, then set the fitted attributes (``n_features_in_``,
``classes_``, ``communication_`` here, the method's own in its
:meth:`~FederatedEstimator._keep` hook). A method's own fit keywords
(FedAvg's ``eval_set``, FedGA's ``join_at``, the DP forest's ranges) reach
the hooks as :data:`FitOptions`.

**Decision (which columns are categorical):** a column is categorical
exactly when its pandas dtype is ``category`` (its categories, in order, are
then declared public metadata of the fit); every other column must hold
numbers (bool as 0/1, an object column of numbers as floats). A string or
object column of text is a :class:`~fedtrees.exceptions.ValidationError` naming
the column and the fix (``X[c] = X[c].astype("category")``) — never guessed. At
predict time every column must keep the kind it had at fit (a category column
stays ``category``, a numeric one numeric), or the error names the column.

**Decision (category values):** a predict value is the fitted category whose
name it prints, or, for a number, the category that prints the same number:
``1.0`` at predict is the category ``1`` of the fit, as in pandas and
scikit-learn's encoders (:mod:`fedtrees.federation._values`). Text is matched
as text (``"01234"`` is not ``1234``).

**Decision (unseen categories):** a category the fit did not agree on is not an
error — as in scikit-learn's ``HistGradientBoosting*`` it is routed: it gets a
code no category has (``K``, the number of categories), so it follows a set
split's default (right) branch, stops a multiway (ID3) split at that node, and
one-hot encodes as all zeros. Where missing values are accepted, ``K`` is also
the missing category's code: an unseen category follows the missing ones.

Size: one module past ~400 lines, by choice: the fit template and the checks of
what ``fit`` receives (rows, labels, weights, groups) are read together; 219
lines are docstrings, the module Decisions above among them.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import os
import sys
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.multiclass import check_classification_targets

from fedtrees._compiling import kernel_threads
from fedtrees._typing import FloatArray
from fedtrees._validation import (
    check_class_labels,
    check_int,
    check_regression_target,
    check_sample_weight,
    check_total_weight,
    label_array,
)
from fedtrees.algorithms._constraints import check_verbose
from fedtrees.algorithms._inputs import FittedInputs, Task, as_numbers, missing_message
from fedtrees.algorithms._params import check_n_jobs
from fedtrees.algorithms._progress import round_progress
from fedtrees.exceptions import (
    CentralizedFitWarning,
    UnknownParameterError,
    ValidationError,
)
from fedtrees.federation import (
    Federation,
    Ledger,
    RoundCallback,
    RunResult,
    ServerStrategy,
    as_frame,
    check_noise,
    check_timeout,
)
from fedtrees.tree import FlatForest, Tree

__all__ = [
    "FederatedEstimator",
    "checked_init",
    "estimator_frame",
    "first_frame_outside",
]


FitOptions: TypeAlias = Mapping[str, Any]
"""A method's own fit keywords, by name (e.g. FedAvg's ``eval_set``)."""
NO_OPTIONS: Final[FitOptions] = MappingProxyType({})


class FederatedEstimator(FittedInputs):
    """Mixin: fitting entry points, input validation and encoding of all estimators.

    A subclass gives the two hooks of the fit template :meth:`_fit`:
    :meth:`_strategy` (the server strategy, its settings validated) and
    :meth:`_keep` (its fitted attributes from the run).
    """

    _task: Task = "classification"
    # metadata routing: fit asks for groups unless told not to (module Decision)
    __metadata_request__fit: Final = {"groups": True}
    _max_abs_feature: float | None = None
    """A bound on |x| of numeric features the method's math needs (None: none)."""
    _input_names: list[str] | None = None
    _names_agreed: bool = False  # fit_federation: the agreed schema names the columns

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Wrap the class's own ``__init__`` to name the public class on a bad call.

        See the module's Decision: a wrong argument raises
        :class:`~fedtrees.exceptions.UnknownParameterError` naming
        ``type(self)``, before the wrapped ``__init__`` runs.
        """
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None:
            cls.__init__ = checked_init(init)  # type: ignore[method-assign]
        for name in ("fit", "fit_federation"):
            method = cls.__dict__.get(name)
            if method is not None:
                setattr(cls, name, checked_method(method, name))

    # -- fit ---------------------------------------------------------------------
    def fit(
        self,
        X: object,
        y: npt.ArrayLike,
        groups: npt.ArrayLike | None = None,
        sample_weight: npt.ArrayLike | None = None,
        *,
        noise_seed: int | None = None,
    ) -> Any:
        """Fit on in-process clients: one per distinct value of ``groups``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Numbers; categorical columns as pandas ``category`` dtype (a string
            column is an error: ``X[c] = X[c].astype("category")``).
        y : array-like of shape (n_samples,)
        groups : array-like of shape (n_samples,), optional
            The client (site) of every row. None puts every row on one client
            (``"0"``): centralized training, with a
            :class:`~fedtrees.exceptions.CentralizedFitWarning`.
        sample_weight : array-like of shape (n_samples,), optional
            Per-row weights (>= 0, not all zero); each client keeps its own.
        noise_seed : int >= 0, optional
            The simulated sites' secret noise seed (module docstring,
            docs/security.md): None draws every DP release's noise from fresh
            operating-system entropy; an int reproduces a DP fit.
        """
        return self._fit_rows(X, y, groups, sample_weight, noise_seed)

    def fit_federation(
        self, federation: Federation, *, callbacks: Sequence[RoundCallback] = ()
    ) -> Any:
        """Fit on any federation: in-process clients or a Flower deployment.

        ``callbacks`` are called with a :class:`fedtrees.federation.RoundEnv` after
        every round (per-round metrics for logs and dashboards).

        **Decision**: ``feature_names_in_`` (and so the fitted trees' feature
        names) are the column names agreed in round 0: there is no X to take them
        from, and a saved model must read ``age <= 54.5``, not ``x0 <= 54.5``.
        """
        return self._fit_on(federation, callbacks)

    # -- the fit template ---------------------------------------------------------
    def _fit_rows(
        self,
        X: object,
        y: npt.ArrayLike,
        groups: npt.ArrayLike | None,
        sample_weight: npt.ArrayLike | None,
        noise_seed: int | None,
        options: FitOptions = NO_OPTIONS,
    ) -> Any:
        """``fit``'s path: the validated rows as in-process sites, then :meth:`_fit`."""
        federation, classes = self._federation(
            X, y, groups, sample_weight, self._site_threads(), noise_seed
        )
        return self._fit(federation, classes, (), options)

    def _fit_on(
        self,
        federation: Federation,
        callbacks: Sequence[RoundCallback],
        options: FitOptions = NO_OPTIONS,
    ) -> Any:
        """``fit_federation``'s path: the agreed names, then :meth:`_fit`."""
        self._use_agreed_names()
        return self._fit(federation, None, callbacks, options)

    def _fit(
        self,
        federation: Federation,
        classes: npt.NDArray[Any] | None,
        callbacks: Sequence[RoundCallback],
        options: FitOptions = NO_OPTIONS,
    ) -> Any:
        """Fit: build the strategy, run it, set the fitted attributes.

        The one template of every estimator (module Decision): ``classes`` are
        the labels of ``fit``'s ``y`` (None: ``fit_federation``, the agreed
        ones); ``options`` the method's own fit keywords.
        """
        self._empty_forest_cache()
        strategy = self._strategy(federation, classes, options)
        outcome = self._run(federation, strategy, callbacks)
        self._remember(outcome.info, classes)
        self.communication_ = outcome.ledger
        self._keep(outcome, strategy)
        return self

    def _strategy(
        self,
        federation: Federation,
        classes: npt.NDArray[Any] | None,
        options: FitOptions,
    ) -> ServerStrategy:
        """Return the method's server strategy, its settings validated."""
        raise NotImplementedError

    def _keep(self, outcome: RunResult, strategy: Any) -> None:
        """Set the method's fitted attributes from the run (and its ``strategy``)."""
        raise NotImplementedError

    def _site_threads(self) -> int:
        """Return the sites served at once: ``n_jobs`` where set, else ``workers``.

        **Decision (n_jobs):** scikit-learn's name for this machine's threads:
        ``fit``'s simulated sites served at once and the server's compiled
        kernels (:func:`fedtrees._compiling.kernel_threads`); None keeps the
        defaults (``workers`` sites, kernels on every core). It changes no
        model. ``workers`` (the older name of the first) and ``n_jobs`` may
        not both be set.
        """
        owner = type(self).__name__
        workers = check_int(getattr(self, "workers", 1), "workers", owner, min_value=1)
        n_jobs = check_n_jobs(getattr(self, "n_jobs", None), owner)
        if n_jobs is None:
            return workers
        if workers != 1:
            raise ValidationError(
                f"{owner}: workers={workers!r} and n_jobs={n_jobs!r} both set the "
                "threads of the simulated sites; pass n_jobs only."
            )
        return n_jobs

    def _federation(
        self,
        X: object,
        y: npt.ArrayLike,
        groups: npt.ArrayLike | None,
        sample_weight: npt.ArrayLike | None,
        workers: int = 1,
        noise_seed: int | None = None,
    ) -> tuple[Federation, npt.NDArray[Any] | None]:
        """Validate ``fit``'s inputs; return the in-process federation and classes.

        **Decision:** the estimator holds every row, so the categories of every
        categorical column are known here: it declares them (the frame's
        categories, in order) and, for classification, the classes (the labels
        of ``y``), so the agreement sends no category value and no label set up
        (``fit_federation`` declares only what its federation declares).
        """
        owner = type(self).__name__
        check_noise("numpy", noise_seed, f"{owner}.fit", ("sampler", "noise_seed"))
        frame = _checked_frame(X, owner, self._missing_hint(), self._max_abs_feature)
        target = _checked_target(y, frame.shape[0], self._task, owner)
        if groups is None:
            _warn_centralized(owner)
        keys = (
            np.zeros(frame.shape[0], dtype=np.int64)
            if groups is None
            else np.asarray(groups)
        )
        if keys.shape[0] != frame.shape[0]:
            raise ValidationError(
                f"{owner}.fit: groups has {keys.shape[0]} entries; X has "
                f"{frame.shape[0]} rows."
            )
        weights = _checked_weights(sample_weight, frame.shape[0], owner)
        declared = {
            str(column): [str(v) for v in frame[column].cat.categories]
            for column in frame.columns
            if isinstance(frame[column].dtype, pd.CategoricalDtype)
        }
        federation = Federation.from_groups(
            frame,
            target,
            keys,
            sample_weight=weights,
            workers=workers,
            categories=declared,
            noise_seed=noise_seed,
        )
        classes = np.unique(target) if self._task == "classification" else None
        if classes is not None:
            federation = federation.with_classes(classes.tolist())
        self._input_names = list(frame.columns) if isinstance(X, pd.DataFrame) else None
        self._names_agreed = False
        return federation, classes

    def _run(
        self,
        federation: Federation,
        strategy: ServerStrategy,
        callbacks: Sequence[RoundCallback] = (),
    ) -> RunResult:
        """Run ``strategy`` with a fresh ledger, the progress bar and ``callbacks``.

        ``verbose``, ``workers``, ``n_jobs`` and ``timeout`` are checked here,
        for every estimator and both entry points (``fit_federation`` uses no
        workers, but a bad value is still refused by name); the server's
        kernels run on ``n_jobs`` threads (:meth:`_site_threads`).
        """
        owner = type(self).__name__
        verbose = check_verbose(getattr(self, "verbose", False), owner)
        self._site_threads()
        threads = check_n_jobs(getattr(self, "n_jobs", None), owner)
        timeout = check_timeout(getattr(self, "timeout", 60.0), owner)
        with round_progress(owner, verbose) as progress, kernel_threads(threads):
            return federation.run(
                strategy,
                task=self._task,
                timeout=timeout,
                callbacks=[*progress, *callbacks],
                ledger=Ledger(),
            )

    def _flat_forest(
        self, slot: Hashable, trees: Sequence[Tree], *, votes: bool = False
    ) -> FlatForest:
        """``trees`` joined for prediction, built once and kept under ``slot``.

        The cache (``_flat_forests``) is created empty by ``fit`` and filled
        in place at the first prediction, so ``predict`` leaves the
        estimator's attributes as they were (as scikit-learn requires). A kept
        forest serves while it holds exactly ``trees`` (the same objects); a
        changed list is joined anew. Pickling keeps the cache empty.
        """
        kept: dict[Hashable, FlatForest] | None = self.__dict__.get("_flat_forests")
        forest = None if kept is None else kept.get(slot)
        if forest is None or not forest.packs(trees):
            forest = FlatForest.of(trees, votes=votes)
            if kept is not None:
                kept[slot] = forest
        return forest

    def _empty_forest_cache(self) -> None:
        self._flat_forests: dict[Hashable, FlatForest] = {}

    def __getstate__(self) -> dict[str, Any]:
        """Return the pickled state, with an empty cache of joined forests."""
        inherited: Any = super().__getstate__()
        state: dict[str, Any] = dict(inherited)
        if "_flat_forests" in state:
            state["_flat_forests"] = {}
        return state


def checked_init(init: Callable[..., None]) -> Callable[..., None]:
    """Return ``init`` checking its arguments first (module docstring, Decision).

    Examples
    --------
    >>> class Model:
    ...     def __init__(self, n_jobs=None):
    ...         self.n_jobs = n_jobs
    >>> Model.__init__ = checked_init(Model.__init__)
    >>> try:
    ...     Model(n_job=2)
    ... except TypeError as error:
    ...     print(error)  # doctest: +NORMALIZE_WHITESPACE
    Model got an unexpected keyword argument 'n_job'; did you mean 'n_jobs'?
    Its parameters are: n_jobs.
    """
    return _checked(init, "")


def checked_method(method: Callable[..., Any], name: str) -> Callable[..., Any]:
    """Return ``method`` checking its arguments first, naming ``Class.name``.

    Examples
    --------
    >>> class Model:
    ...     def fit(self, X, y, *, noise_seed=None):
    ...         return self
    >>> Model.fit = checked_method(Model.fit, "fit")
    >>> try:
    ...     Model().fit([[0]], [0], sample_weight=[1.0])
    ... except TypeError as error:
    ...     print(error)  # doctest: +NORMALIZE_WHITESPACE
    Model.fit got an unexpected keyword argument 'sample_weight'. Its
    parameters are: X, y, noise_seed.
    """
    return _checked(method, name)


def _checked(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    """Wrap ``function`` (``name``: "" for ``__init__``) to refuse a bad call."""
    signature = inspect.signature(function)

    @functools.wraps(function)
    def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            signature.bind(self, *args, **kwargs)
        except TypeError:
            owner = type(self).__name__ + (f".{name}" if name else "")
            raise UnknownParameterError(
                _bad_call(owner, signature, len(args), kwargs)
            ) from None
        return function(self, *args, **kwargs)

    return checked


def _bad_call(
    owner: str, signature: inspect.Signature, n_args: int, kwargs: dict[str, Any]
) -> str:
    """Say what is wrong with a call to ``owner(...)``, and list its parameters."""
    params = list(signature.parameters.values())[1:]  # without self
    names = [p.name for p in params]
    listing = f"Its parameters are: {', '.join(names)}."
    unknown = [k for k in kwargs if k not in names]
    if unknown:
        close = difflib.get_close_matches(unknown[0], names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else "."
        return (
            f"{owner} got an unexpected keyword argument {unknown[0]!r}{hint} "
            + listing
        )
    positional = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    if n_args > len(positional):
        return (
            f"{owner} takes at most {len(positional)} positional argument(s) "
            f"({', '.join(positional) or 'none'}); got {n_args}. Pass the others "
            "by keyword. " + listing
        )
    twice = [name for name in positional[:n_args] if name in kwargs]
    if twice:
        return f"{owner} got the argument {twice[0]!r} twice. " + listing
    return f"{owner} got arguments it cannot take. " + listing


def _warn_centralized(owner: str) -> None:
    warnings.warn(
        f"{owner}.fit was called without groups: every row goes to one client "
        "('0'), which is centralized training, not a federation. Pass groups= "
        "(the site of every row) to simulate one client per site. Inside "
        "GridSearchCV, cross_validate or a Pipeline, turn on scikit-learn's "
        "metadata routing (sklearn.set_config(enable_metadata_routing=True)): "
        f"{owner} requests groups by default and then receives the training "
        "rows' groups from GridSearchCV(...).fit(X, y, groups=site) or "
        "cross_validate(..., params={'groups': site}); without routing, pass "
        "<step>__groups=site to a Pipeline's fit.",
        CentralizedFitWarning,
        stacklevel=first_frame_outside(),
    )


def first_frame_outside() -> int:
    """Return the ``stacklevel`` of the caller's line (skipping fedtrees frames)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and os.path.abspath(
        frame.f_code.co_filename
    ).startswith(package + os.sep):
        level, frame = level + 1, frame.f_back
    return level


def estimator_frame(X: object, owner: str) -> pd.DataFrame:
    """Return ``fit``'s X as a DataFrame typed by the estimators' rule.

    pandas ``category`` columns stay categorical; every other column becomes
    numbers (bool as 0.0/1.0, an object column of numbers as float64).

    Raises
    ------
    ValidationError
        Naming a column of strings (or other text) that is not ``category``,
        and how to make it categorical.
    """
    frame = as_frame(X, owner, strings="keep")
    for column in frame.columns:
        series = frame[column]
        if not isinstance(series.dtype, pd.CategoricalDtype):
            frame[column] = as_numbers(series, str(column), owner)
    return frame


def _checked_frame(
    X: object, owner: str, missing_hint: str | None, bound: float | None = None
) -> pd.DataFrame:
    frame = estimator_frame(X, f"{owner}.fit")
    if frame.shape[0] == 0:
        raise ValidationError(
            f"{owner}.fit: X: found array with 0 sample(s) (shape={frame.shape}) "
            "while a minimum of 1 is required."
        )
    if frame.shape[1] == 0:
        raise ValidationError(
            f"{owner}.fit: X: found array with 0 feature(s) (shape={frame.shape}) "
            "while a minimum of 1 is required."
        )
    for column in frame.columns:
        _check_column(frame[column], str(column), owner, missing_hint, bound)
    return frame


def _check_bound(values: FloatArray, column: str, owner: str, bound: float) -> None:
    with np.errstate(invalid="ignore"):
        beyond = np.abs(values) > bound
    if beyond.any():
        raise ValidationError(
            f"{owner}.fit: column {column!r} holds values beyond |x| <= {bound:g} "
            f"(first at row {int(np.flatnonzero(beyond)[0])}); the method's "
            "statistics (sums of x and x^2) must stay finite float64. Rescale "
            "the column."
        )


def _check_column(
    series: pd.Series,
    column: str,
    owner: str,
    missing_hint: str | None,
    bound: float | None = None,
) -> None:
    """Refuse inf (and NaN, unless the estimator accepts missing values).

    With ``bound``, also |x| above it in a numeric column (the method's math
    needs it: e.g. FedAvg's moments of x^2).
    """
    missing = series.isna().to_numpy()
    if isinstance(series.dtype, pd.CategoricalDtype):
        infinite = np.zeros_like(missing)
    else:
        values = pd.to_numeric(series, errors="coerce").to_numpy(
            np.float64, na_value=np.nan
        )
        infinite = np.isinf(values)
        if bound is not None and not infinite.any():
            _check_bound(values, column, owner, bound)
    if infinite.any():
        raise ValidationError(
            f"{owner}.fit: column {column!r} holds infinite values (first at row "
            f"{int(np.flatnonzero(infinite)[0])}); replace them"
            + ("." if missing_hint else " (missing values may stay NaN).")
        )
    if missing.any() and missing_hint:
        first = int(np.flatnonzero(missing)[0])
        raise ValidationError(
            missing_message(f"{owner}.fit", column, first, missing_hint)
        )


def _checked_weights(
    sample_weight: npt.ArrayLike | None, n: int, owner: str
) -> FloatArray | None:
    if sample_weight is None:
        return None
    weights = check_sample_weight(sample_weight, n, f"{owner}.fit")
    return check_total_weight(weights, f"{owner}.fit")


def _checked_target(
    y: npt.ArrayLike, n: int, task: Task, owner: str
) -> npt.NDArray[Any]:
    if y is None:
        raise ValidationError(
            f"{owner} requires y to be passed, but the target y is None."
        )
    target = label_array(y)
    if target.ndim == 2 and target.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected; fedtrees "
            f"({owner}.fit) ravels it to shape (n_samples,).",
            DataConversionWarning,
            stacklevel=first_frame_outside(),
        )
        target = target.ravel()
    if target.ndim != 1 or target.shape[0] != n:
        raise ValidationError(
            f"{owner}.fit: y must have shape ({n},); got {target.shape}."
        )
    if task == "classification":
        if pd.isna(target).any():
            raise ValidationError(f"{owner}.fit: y holds missing values.")
        check_class_labels(target, f"{owner}.fit")
        check_classification_targets(target)
        return target
    return check_regression_target(target, f"{owner}.fit")


# The base's own entry points, checked as __init_subclass__ checks a subclass's.
FederatedEstimator.fit = checked_method(FederatedEstimator.fit, "fit")  # type: ignore[method-assign]
FederatedEstimator.fit_federation = checked_method(  # type: ignore[method-assign]
    FederatedEstimator.fit_federation, "fit_federation"
)
