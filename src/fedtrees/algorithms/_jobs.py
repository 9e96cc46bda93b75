"""Jobs: what a Flower deployment (or any Federation) can be asked to run by name.

A job takes a :class:`Federation`, JSON parameters, a round timeout and round
callbacks, and returns a JSON-compatible result document and the ledger. The
Flower ServerApp runs ``job=<name>`` from its run config with :func:`run_job`;
running the same job on an in-process federation gives the same document.

Every document names the agreed columns: ``"feature_names"`` and ``"categories"``
(per column, its category names; None for numeric ones), and every tree in it
(:meth:`fedtrees.tree.Tree.to_dict`) carries them too, so a saved model renders
``age <= 54.5`` rather than ``x0 <= 54.5`` (FedGA's structures and the toy's
feature are column positions in that list).

The jobs are the registry's (:data:`fedtrees._methods.METHODS`): a method's
job names the estimators it fits, its run settings and the shape of its
document (:class:`fedtrees._methods.Document`); the estimator classes load from
the method's package when the job runs, so importing this module loads no method
but the toy.

Every document opens with ``"format": "fedtrees.job"`` and its ``"version"``
(:data:`JOB_FORMAT`, :data:`JOB_VERSION`); :func:`fedtrees.load` turns a
fitting job's document back into its fitted estimator.

Size: one module past ~400 lines, by choice: every job's runner and document
writer in one table a deployment reads as one; 129 lines are docstrings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import Any, Final

import numpy as np

from fedtrees._methods import METHODS, Document, JobEntry, Method, job_method
from fedtrees._validation import invalid, shown
from fedtrees.algorithms.toy import run_toy
from fedtrees.federation import Federation, Ledger, RoundCallback

__all__ = [
    "JOBS",
    "JOB_FORMAT",
    "JOB_VERSION",
    "check_job",
    "job_estimator",
    "job_params",
    "run_job",
]

JOB_FORMAT: Final = "fedtrees.job"
"""The ``"format"`` of every job's result document."""
JOB_VERSION: Final = 1
"""The ``"version"`` of the documents this fedtrees writes (and the newest it loads).

Version 1 is the first that names its format and version, and the first
:func:`fedtrees.load` reads: a document without them is refused, naming the field.
"""

Job = Callable[
    [Federation, Mapping[str, Any], float, Sequence[RoundCallback]],
    tuple[dict[str, Any], Ledger],
]


def _check_params(job: str, params: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = sorted(str(k) for k in params if k not in allowed)
    if unknown:
        raise invalid(
            "params",
            f"job {job!r}",
            f"a JSON object whose keys are among {sorted(allowed)}",
            f"the unknown key {shown(unknown[0])}",
        )


def _toy(
    federation: Federation,
    params: Mapping[str, Any],
    timeout: float,
    callbacks: Sequence[RoundCallback],
) -> tuple[dict[str, Any], Ledger]:
    _check_params("toy", params, set(TOY_PARAMS))
    outcome = run_toy(federation, timeout=timeout, callbacks=callbacks, **params)
    schema = outcome.info.schema
    document = {
        "job": "toy",
        "params": dict(params),
        "clients": list(outcome.info.clients),
        **_columns(schema.feature_names, schema.categories),
        "result": outcome.result.to_dict(),
        "communication": outcome.ledger.summary(),
    }
    return document, outcome.ledger


def job_estimator(
    job: str, params: Mapping[str, Any], timeout: float | None = None
) -> tuple[Any, dict[str, Any]]:
    """Return the estimator job ``job`` fits with ``params``, and its run settings.

    ``params["task"]`` ("classification", the default, or "regression") picks
    the estimator where the job has both; the other params are its arguments,
    checked by name (their values are checked by the estimator), beside the
    run settings the job passes to ``fit_federation`` (FedGA's ``join_at``).
    ``timeout``, if given, is the estimator's ``timeout`` unless ``params``
    sets one. The jobs and :func:`fedtrees.load` build their estimator here.

    Examples
    --------
    >>> model, settings = job_estimator("fedforest", {"task": "regression"})
    >>> type(model).__name__, settings
    ('FedForestRegressor', {})
    """
    method = job_method(job)
    kinds = _estimator_types(method)
    kwargs = dict(params)
    run_settings = () if method.job is None else method.job.run_settings
    settings = {k: kwargs.pop(k) for k in run_settings if k in kwargs}
    if len(kinds) == 2:
        estimator, kwargs = _by_task(job, kwargs, kinds[0], kinds[1])
    else:
        estimator = kinds[0]()
    _check_params(job, kwargs, set(estimator.get_params()))
    given = {} if timeout is None else {"timeout": timeout}
    estimator.set_params(**{**given, **kwargs})  # params' own timeout wins
    return estimator, settings


def _estimator_types(method: Method) -> tuple[type[Any], ...]:
    """Return the estimator classes ``method``'s job fits, loading its package.

    The registry names them (:attr:`fedtrees._methods.Method.job_fits`); each
    is a public name of the method's package, loaded as its face loads it.
    """
    package = import_module(method.package)
    return tuple(getattr(package, name) for name in method.job_fits)


def _fitted(
    name: str,
    params: Mapping[str, Any],
    federation: Federation,
    timeout: float,
    callbacks: Sequence[RoundCallback],
) -> tuple[Any, dict[str, Any]]:
    """Fit the job's estimator (:func:`job_estimator`); return it and the common part.

    The round timeout becomes the estimator's ``timeout``; the run settings go
    to ``fit_federation``.
    """
    estimator, settings = job_estimator(name, params, timeout)
    estimator.fit_federation(federation, callbacks=callbacks, **settings)
    classes = getattr(estimator, "classes_", None)
    return estimator, {
        "job": name,
        "estimator": type(estimator).__name__,
        "clients": list(estimator.clients_),
        "classes": None if classes is None else classes.tolist(),
        **_columns(estimator.feature_names_in_, estimator.categories_),
        "params": dict(params),
    }


def _columns(
    names: Sequence[object], categories: Sequence[Sequence[str] | None]
) -> dict[str, Any]:
    """Return the agreed columns, JSON-ready: names and (categorical) categories."""
    return {
        "feature_names": [str(name) for name in names],
        "categories": [None if c is None else list(c) for c in categories],
    }


def _by_task(
    name: str, params: Mapping[str, Any], classifier: type[Any], regressor: type[Any]
) -> tuple[Any, dict[str, Any]]:
    """Return the estimator ``params["task"]`` picks and the remaining params.

    ``"task"`` is ``"classification"`` (the default) or ``"regression"``.
    """
    kwargs = dict(params)
    task = kwargs.pop("task", "classification")
    if task not in ("classification", "regression"):
        raise invalid("task", f"job {name!r}", "classification or regression", task)
    return (classifier() if task == "classification" else regressor()), kwargs


@dataclass(frozen=True)
class _Fitting:
    """A job fitting its method's estimator; ``params`` are the estimator's arguments.

    The document is the common part (:func:`_fitted`), the method's model and
    report (``model``, from the fitted estimator) and the communication.
    """

    name: str
    model: Callable[[Any], dict[str, Any]]

    def __call__(
        self,
        federation: Federation,
        params: Mapping[str, Any],
        timeout: float,
        callbacks: Sequence[RoundCallback],
    ) -> tuple[dict[str, Any], Ledger]:
        """Run the job: fit, then write the document."""
        estimator, common = _fitted(self.name, params, federation, timeout, callbacks)
        document = {
            **common,
            **self.model(estimator),
            "communication": estimator.communication_.summary(),
        }
        return document, estimator.communication_


def _trees(estimator: Any) -> dict[str, Any]:
    """Return a forest's trees, as :meth:`fedtrees.tree.Tree.to_dict` documents."""
    return {"trees": [tree.to_dict() for tree in estimator.trees_]}


def _fedforest_model(estimator: Any) -> dict[str, Any]:
    """FedForest: the trees and the feature importances."""
    return {
        **_trees(estimator),
        "feature_importances": estimator.feature_importances_.tolist(),
    }


def _local_ensemble_model(estimator: Any) -> dict[str, Any]:
    """Local ensembles: the trees, the client of every tree, every client's weight.

    The clients' weights weight the trees.
    """
    return {
        **_trees(estimator),
        "tree_clients": [c for c, t in estimator.forests_.items() for _ in t],
        "client_weights": dict(estimator.client_weights_),
    }


def _dpforest_model(estimator: Any) -> dict[str, Any]:
    """DP forest: the trees, the client of every tree, each spend, the ranges."""
    return {
        **_trees(estimator),
        "tree_clients": list(estimator.client_trees_),
        "epsilon_spent": _finite_or_none(estimator.epsilon_spent_),
        "n_queries": dict(estimator.n_queries_),
        "feature_ranges": [
            [None if np.isnan(v) else float(v) for v in row]
            for row in np.asarray(estimator.feature_ranges_, dtype=float)
        ],
    }


def _finite_or_none(spent: Mapping[str, float]) -> dict[str, float | None]:
    """ε per client, JSON-ready: None for an unbounded (exact, no noise) spend."""
    return {c: None if e == float("inf") else e for c, e in spent.items()}


def _tree(estimator: Any) -> dict[str, Any]:
    """Return a single-tree estimator's tree and the bins its codes route.

    The tree is a :meth:`fedtrees.tree.Tree.to_dict` document; ``"bins"``
    holds the bin edges of every numeric column, None for categorical ones.
    """
    binning = estimator.binning_
    return {
        "tree": estimator.tree_.to_dict(),
        "bins": None
        if binning is None
        else [None if e is None else e.tolist() for e in binning.edges],
    }


def _icdta_model(estimator: Any) -> dict[str, Any]:
    """ICDTA4FL: the tree, its bins, the kept trees, their scores, the rules."""
    return {
        **_tree(estimator),
        "kept": list(estimator.kept_),
        "tree_scores": estimator.tree_scores_.to_dict(),
        "n_rules": len(estimator.rule_set_),
        "global_scores": estimator.global_scores_,
    }


def _fedid3_model(estimator: Any) -> dict[str, Any]:
    """Federated-ID3: the tree, its bins, the privacy spend and the levels."""
    spent = _finite_or_none(estimator.epsilon_spent_)
    return {**_tree(estimator), "epsilon_spent": spent, "levels": estimator.levels_}


def _synthetic_model(estimator: Any) -> dict[str, Any]:
    """Synthetic data: the tree, its bins, the synthetic rows' counts, client trees."""
    origin = estimator.synthetic_origin_
    return {
        **_tree(estimator),
        "n_synthetic_rows": int(origin.shape[0]),
        "n_flipped": int(origin["flipped"].sum()),
        "client_trees": {c: t.to_dict() for c, t in estimator.client_trees_.items()},
    }


def _fedga_model(estimator: Any) -> dict[str, Any]:
    """FedGA-Tree: what the server knows (``params["join_at"]``: late joins).

    Every client's chosen structure and its personal tree (``"trees"``, client
    -> a :meth:`fedtrees.tree.Tree.to_dict` document, which the site fitted
    and sent in the last round), the depth, the fitness history and the
    privacy spend.
    """
    return {
        "depth": estimator.depth_,
        "structures": {c: s.tolist() for c, s in estimator.structures_.items()},
        "trees": {c: t.to_dict() for c, t in estimator.trees_.items()},
        "fitness_history": estimator.fitness_history_.to_numpy().tolist(),
        "train_ratio": estimator.train_ratio_,
        "elitism": estimator.elitism_,
        "epsilon_spent": estimator.epsilon_spent_,
    }


def _fedgbdt_model(estimator: Any) -> dict[str, Any]:
    """FedGBDT: the boosted model.

    ``"trees"`` is one list per iteration of
    :meth:`fedtrees.tree.Tree.to_dict` documents (one per class for softmax,
    else one) whose leaf values are the weights added to the raw score,
    ``"base_margin"`` the starting raw score (one per class for softmax),
    ``"classes"`` the labels the scores stand for; the raw score of a row is
    the base margin plus its leaves' values over the iterations. Also the
    pooled validation losses and the best iteration when early stopping ran.
    """
    return {
        "base_margin": np.atleast_1d(estimator.base_margin_).tolist(),
        "trees": [[tree.to_dict() for tree in it] for it in estimator.trees_],
        "evals_result": estimator.evals_result_,
        "best_iteration": estimator.best_iteration_,
        "feature_importances": estimator.feature_importances_.tolist(),
    }


_MODELS: Final[dict[Document, Callable[[Any], dict[str, Any]]]] = {
    Document.FEDFOREST: _fedforest_model,
    Document.LOCAL_ENSEMBLE: _local_ensemble_model,
    Document.DPFOREST: _dpforest_model,
    Document.ICDTA: _icdta_model,
    Document.FEDID3: _fedid3_model,
    Document.SYNTHETIC: _synthetic_model,
    Document.FEDGA: _fedga_model,
    Document.FEDGBDT: _fedgbdt_model,
}
"""What each fitting job's document holds beside the common part."""

TOY_PARAMS: Final = frozenset({"feature", "n_bins", "n_rounds", "initial"})
"""The toy job's parameters (:func:`fedtrees.algorithms.toy.run_toy`)."""


def job_params(job: str) -> frozenset[str]:
    """Return the names of every parameter job ``job`` takes.

    A fitting job takes its estimator's parameters (``get_params()``; the
    classifier's and the regressor's are the same), plus ``task`` where it has
    both and its run settings (FedGA's ``join_at``); the toy takes
    :data:`TOY_PARAMS`.

    Examples
    --------
    >>> sorted(job_params("toy"))
    ['feature', 'initial', 'n_bins', 'n_rounds']
    >>> {"task", "n_estimators", "bin_edges"} <= job_params("fedgbdt")
    True
    """
    method = job_method(job)
    if method.job is None or method.job.document is Document.TOY:
        return TOY_PARAMS
    kinds = _estimator_types(method)
    names = {name for cls in kinds for name in cls().get_params()}
    task = {"task"} if len(kinds) == 2 else set()
    return frozenset(names | task | set(method.job.run_settings))


def check_job(job: object, params: object) -> None:
    """Refuse an unknown job, or params that job does not take, before any round.

    ``params`` must be a mapping (a JSON object) whose keys are among
    :func:`job_params`; their values are checked when the job runs, by the
    estimator, naming the parameter.

    Raises
    ------
    ValidationError
        Naming ``job`` or ``params`` and what was expected.
    """
    if not isinstance(job, str) or job not in JOBS:
        raise invalid("job", "run_job", f"one of {sorted(JOBS)}", job)
    if not isinstance(params, Mapping):
        raise invalid("params", f"job {job!r}", "a JSON object (a dict)", params)
    _check_params(job, params, set(job_params(job)))


def _job(entry: JobEntry) -> Job:
    """Return the job ``entry`` names: the toy's run, or a fit and its document."""
    if entry.document is Document.TOY:
        return _toy
    return _Fitting(entry.name, _MODELS[entry.document])


JOBS: Final[dict[str, Job]] = {
    method.job.name: _job(method.job) for method in METHODS if method.job is not None
}
"""Every job by name, from the registry (:data:`fedtrees._methods.METHODS`)."""


def run_job(
    job: str,
    federation: Federation,
    params: Mapping[str, Any],
    timeout: float = 120.0,
    callbacks: Sequence[RoundCallback] = (),
) -> tuple[dict[str, Any], Ledger]:
    """Run the job named ``job`` on ``federation``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.arange(8.0)[:, None]
    >>> fed = Federation.from_groups(X, [0, 1] * 4, [0, 0, 1, 1] * 2)
    >>> document, ledger = run_job("toy", fed, {"n_bins": 2, "n_rounds": 1})
    >>> document["result"]["class_counts"], ledger.rounds
    ([4.0, 4.0], 3)
    """
    check_job(job, params)
    document, ledger = JOBS[job](federation, params, timeout, callbacks)
    return {"format": JOB_FORMAT, "version": JOB_VERSION, **document}, ledger
