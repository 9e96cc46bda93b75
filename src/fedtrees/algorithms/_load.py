"""``fedtrees.load``: a job's result document as its fitted estimator.

A job (:mod:`fedtrees.algorithms._jobs`, the Flower ServerApp's ``job=...``)
writes a JSON document; :func:`load` returns the estimator the job fitted, in
the state its fit left it: **the same class, the same code paths**. The
estimator is built from ``document["params"]`` as the job built it
(:func:`~fedtrees.algorithms._jobs.job_estimator`; ``get_params()`` returns
them), its inputs are restored by the code ``fit_federation`` runs on the
agreed schema (``feature_names_in_``, ``n_features_in_``, ``categories_``,
``classes_``, ``clients_``), and its model by the method's fitted attributes
(``trees_`` or ``tree_``, FedGBDT's ``base_margin_``, the bins of ICDTA4FL and
Federated-ID3, FedGA's personal trees). So ``predict``, ``predict_proba``,
``score``, ``to_sklearn`` and ``to_xgboost`` run the in-process code: a
DataFrame with the agreed columns, unseen categories and NaN are routed as
in process (:mod:`fedtrees.algorithms._base`).

**Decision (what a loaded model lacks):** what the server kept of the run but
the model does not need is not in the document, and a loaded model has no
such attribute (``AttributeError``): ``communication_`` (the ledger: its
totals are ``document["communication"]``, every message in the job's
``*.ledger.csv``), FedForest's ``bin_edges_`` and FedGBDT's ``grid_`` (the
pooled quantile grid is not part of the model, and a document shared as a
model should not reveal it), ICDTA4FL's client trees, score matrix and rule
set, the synthetic rows of the synthetic-data method, FedGA's population.

The document is checked like a reply (:mod:`fedtrees.algorithms._documents`):
a bad field is refused by name before it reaches the estimator.

Size: one module past ~400 lines, by choice: the inverse of ``_jobs``, one
restore per document shape beside each other; 78 lines are docstrings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

import numpy as np
import pandas as pd

from fedtrees._validation import check_choice, is_integral, is_real
from fedtrees.algorithms._documents import (
    bad_field,
    bins_field,
    client_map,
    column_lists,
    floats,
    history_field,
    int_list,
    label_list,
    losses_field,
    mapping,
    ranges_field,
    read_document,
    tree_at,
)
from fedtrees.algorithms._jobs import job_estimator
from fedtrees.algorithms._onehot import category_counts, expanded_names
from fedtrees.algorithms.fedgbdt import with_classes
from fedtrees.exceptions import SerializationError, ValidationError
from fedtrees.federation import FederationInfo, Schema
from fedtrees.tree import Tree

__all__ = ["load"]

T = TypeVar("T")
Document = Mapping[str, Any]


def load(source: object) -> Any:
    """Return the fitted estimator of a job's result document.

    Parameters
    ----------
    source : str, os.PathLike or dict
        The document a job wrote (the Flower run's ``output-path``): its path,
        its JSON text, or the parsed dict.

    Returns
    -------
    estimator
        The job's estimator (``FedForestClassifier``, ``FedGBDTRegressor``,
        ...), fitted: ``predict(X)`` (FedGA: ``predict(X, client=...)``)
        takes the DataFrame the sites held, as in process. What a loaded model
        lacks is in this module's docstring (``communication_``, the server's
        working state).

    Raises
    ------
    DataNotFoundError
        No file at the path.
    SerializationError
        A document of another format or a newer version, a job that fits no
        model (``toy``), or a malformed field, named.

    Examples
    --------
    >>> import numpy as np
    >>> from fedtrees.algorithms import run_job
    >>> from fedtrees.federation import Federation
    >>> X = np.arange(40.0)[:, None]; y = (X[:, 0] > 19).astype(int)
    >>> fed = Federation.from_groups(X, y, np.arange(40) % 2)
    >>> document, _ = run_job("fedforest", fed, {"n_estimators": 2, "random_state": 0})
    >>> model = load(document)
    >>> type(model).__name__, model.predict([[3.0], [30.0]]).tolist()
    ('FedForestClassifier', [0, 1])
    """
    document = read_document(source)
    job = document.get("job")
    restore = _RESTORE.get(job) if isinstance(job, str) else None
    if restore is None or not isinstance(job, str):
        raise bad_field(
            "job", f"the name of a fitting job, one of {sorted(_RESTORE)}", job
        )
    params = mapping(document, "params")
    estimator, _ = _checked(lambda: job_estimator(job, params))
    expected = type(estimator).__name__
    if document.get("estimator") != expected:
        raise bad_field(
            "estimator",
            f"{expected!r} (job {job!r} with these params fits it)",
            document.get("estimator"),
        )
    schema = _restore_inputs(estimator, document)
    restore(estimator, document, schema)
    return estimator


def _checked(step: Callable[[], T]) -> T:
    """Run a parameter check of the estimator; a failure names the params field."""
    try:
        return step()
    except ValidationError as exc:
        raise SerializationError(f"Result document field 'params': {exc}") from None


def _restore_inputs(estimator: Any, document: Document) -> Schema:
    """Set the input attributes as ``fit_federation`` does, from the agreed schema."""
    names, categories, clients = column_lists(document)
    task = estimator._task
    classes, label_type = label_list(document.get("classes"), task == "classification")
    schema = Schema(
        feature_names=tuple(names),
        feature_kinds=tuple(
            "numeric" if c is None else "categorical" for c in categories
        ),
        categories=tuple(categories),
        task=task,
        classes=classes,
        label_type=label_type,
    )
    estimator._use_agreed_names()
    estimator._remember(FederationInfo(tuple(clients), schema), None)
    estimator._empty_forest_cache()
    return schema


def _outputs(estimator: Any) -> int:
    """Values per tree node: one per class, or one (regression)."""
    classes = getattr(estimator, "classes_", None)
    return 1 if classes is None else len(classes)


def _trees(document: Document, estimator: Any, name: str = "trees") -> list[Tree]:
    """Return field ``name``: a non-empty list of the model's trees."""
    value = document.get(name)
    if not isinstance(value, list) or not value:
        raise bad_field(name, "a non-empty list of tree documents", value)
    n, k = estimator.n_features_in_, _outputs(estimator)
    return [tree_at(t, f"{name}[{i}]", n, k) for i, t in enumerate(value)]


def _tree_owners(
    document: Document, n_trees: int, clients: tuple[str, ...]
) -> list[str]:
    """Return ``tree_clients``: the client of every tree, one per tree."""
    value = document.get("tree_clients")
    if (
        not isinstance(value, list)
        or len(value) != n_trees
        or not all(isinstance(c, str) and c in clients for c in value)
    ):
        raise bad_field(
            "tree_clients", f"a list of {n_trees} clients of {list(clients)}", value
        )
    return value


def _number_map(
    document: Document,
    name: str,
    clients: tuple[str, ...],
    *,
    none: float | None = None,
) -> dict[str, float]:
    """Return a client -> number field (``none`` stands for JSON null, if allowed).

    With ``none=nan`` (a score no client gave), JSON's NaN is accepted too.
    """
    value = client_map(document, name, clients)
    out: dict[str, float] = {}
    for client, number in value.items():
        unknown = none is not None and math.isnan(none) and is_real(number)
        if none is not None and (number is None or (unknown and math.isnan(number))):
            out[client] = none
            continue
        out[client] = float(floats([number], f"{name}[{client!r}]")[0])
    return out


# -- the jobs' models ------------------------------------------------------------------
def _fedforest(estimator: Any, document: Document, schema: Schema) -> None:
    estimator.config_ = _checked(estimator._config)
    estimator.trees_ = _trees(document, estimator)
    estimator._importances = floats(
        document.get("feature_importances"),
        "feature_importances",
        estimator.n_features_in_,
    )


def _local_ensemble(estimator: Any, document: Document, schema: Schema) -> None:
    owner = type(estimator).__name__
    _checked(estimator._forest_params)
    _checked(lambda: check_choice(estimator.weighting, "weighting", owner, _WEIGHTS))
    trees = _trees(document, estimator)
    owners = _tree_owners(document, len(trees), estimator.clients_)
    forests: dict[str, list[Tree]] = {}
    for client, tree in zip(owners, trees, strict=True):
        forests.setdefault(client, []).append(tree)
    weights = _number_map(document, "client_weights", estimator.clients_)
    if set(weights) != set(forests) or min(weights.values()) < 0:
        raise bad_field(
            "client_weights",
            f"a weight >= 0 for each client of tree_clients ({sorted(forests)})",
            document.get("client_weights"),
        )
    if estimator.weighting == "size" and sum(weights.values()) <= 0:
        raise bad_field("client_weights", "weights of a positive sum", weights)
    estimator.forests_ = forests
    estimator.client_weights_ = {client: weights[client] for client in forests}
    estimator._pool_forests()


_WEIGHTS: Final = ("uniform", "size")


def _dpforest(estimator: Any, document: Document, schema: Schema) -> None:
    clients = estimator.clients_
    _checked(lambda: estimator._settings(type(estimator).__name__))
    trees = _trees(document, estimator)
    owners = _tree_owners(document, len(trees), clients)
    if len(set(owners)) != len(owners):
        raise bad_field("tree_clients", "one tree per client (distinct ids)", owners)
    estimator.client_trees_ = dict(zip(owners, trees, strict=True))
    estimator.trees_ = trees
    inf = float("inf")
    spent = _number_map(document, "epsilon_spent", tuple(owners), none=inf)
    queries = _number_map(document, "n_queries", tuple(owners))
    if set(spent) != set(owners) or set(queries) != set(owners):
        raise bad_field(
            "epsilon_spent" if set(spent) != set(owners) else "n_queries",
            f"an entry for every client of tree_clients ({owners})",
            spent if set(spent) != set(owners) else queries,
        )
    estimator.epsilon_spent_ = spent
    estimator.n_queries_ = {c: int(n) for c, n in queries.items()}
    estimator.feature_ranges_ = ranges_field(document.get("feature_ranges"), schema)


def _single_tree(estimator: Any, document: Document, schema: Schema) -> None:
    """ICDTA4FL, Federated-ID3: one tree over codes, and the numeric columns' bins."""
    _checked(estimator._settings)
    binned = getattr(estimator, "base", "id3") == "id3"  # ICDTA's CART: raw values
    bins = document.get("bins")
    if binned == (bins is None):
        raise bad_field(
            "bins",
            "the bin edges of every numeric column"
            if binned
            else "null (a CART base splits raw values)",
            bins,
        )
    estimator.binning_ = None if bins is None else bins_field(bins, schema)
    tree = document.get("tree")
    estimator.tree_ = tree_at(
        tree, "tree", estimator.n_features_in_, _outputs(estimator)
    )
    _RESTORE_REPORT[document["job"]](estimator, document)


def _icdta_report(estimator: Any, document: Document) -> None:
    clients = estimator.clients_
    kept = document.get("kept")
    if (
        not isinstance(kept, list)
        or not kept
        or not all(isinstance(c, str) and c in clients for c in kept)
        or len(set(kept)) != len(kept)
    ):
        raise bad_field("kept", f"a list of distinct clients of {list(clients)}", kept)
    estimator.kept_ = list(kept)
    scores = _number_map(document, "tree_scores", clients, none=float("nan"))
    estimator.tree_scores_ = pd.Series(scores, name="score", dtype=np.float64)
    estimator.global_scores_ = _number_map(document, "global_scores", clients)


def _fedid3_report(estimator: Any, document: Document) -> None:
    clients = estimator.clients_
    spent = _number_map(document, "epsilon_spent", clients, none=float("inf"))
    estimator.epsilon_spent_ = spent
    levels = document.get("levels")
    if not is_integral(levels) or levels < 0:
        raise bad_field("levels", "an int >= 0", levels)
    estimator.levels_ = int(levels)


def _synthetic(estimator: Any, document: Document, schema: Schema) -> None:
    """Restore the global tree and the client trees, over the one-hot columns."""
    _checked(estimator._settings)
    if document.get("bins") is not None:
        bins = document.get("bins")
        raise bad_field("bins", "null (the tree routes one-hot columns)", bins)
    names = expanded_names(schema.feature_names, schema.categories)
    estimator.binning_ = None
    estimator.feature_names_out_ = np.asarray(names, dtype=object)
    estimator.n_categories_ = category_counts(schema.categories)
    width, k = len(names), _outputs(estimator)
    estimator.tree_ = tree_at(document.get("tree"), "tree", width, k)
    given = client_map(document, "client_trees", estimator.clients_)
    estimator.client_trees_ = {
        c: tree_at(t, f"client_trees[{c!r}]", width, k) for c, t in given.items()
    }


def _fedga(estimator: Any, document: Document, schema: Schema) -> None:
    """Restore the personal trees (by client), the structures, the outcome."""
    clients = estimator.clients_
    n, k = estimator.n_features_in_, _outputs(estimator)
    given = client_map(document, "trees", clients)
    estimator.trees_ = {
        c: tree_at(t, f"trees[{c!r}]", n, k) for c, t in sorted(given.items())
    }
    structures = client_map(document, "structures", clients)
    estimator.structures_ = {
        c: int_list(s, f"structures[{c!r}]") for c, s in sorted(structures.items())
    }
    depth = document.get("depth")
    if not is_integral(depth) or depth < 1:
        raise bad_field("depth", "an int >= 1", depth)
    estimator.depth_ = int(depth)
    estimator.fitness_history_ = history_field(document.get("fitness_history"))
    ratio = document.get("train_ratio")
    if not (is_real(ratio) and 0.0 < ratio <= 1.0):
        raise bad_field("train_ratio", "a number in (0, 1]", ratio)
    estimator.train_ratio_ = float(ratio)
    elitism = document.get("elitism")
    if not isinstance(elitism, bool):
        raise bad_field("elitism", "true or false", elitism)
    estimator.elitism_ = elitism
    estimator.epsilon_spent_ = _number_map(document, "epsilon_spent", clients)


def _fedgbdt(estimator: Any, document: Document, schema: Schema) -> None:
    """Restore the boosted model: per iteration a tree per output, the margin."""
    config = _checked(estimator._config)
    if schema.task == "classification":
        owner = type(estimator).__name__
        config = _checked(lambda: with_classes(config, len(schema.classes), owner))
    outputs = config.n_trees_per_iteration
    estimator.trees_ = _iterations(document.get("trees"), estimator, outputs)
    estimator.base_margin_ = floats(document.get("base_margin"), "base_margin", outputs)
    estimator.evals_result_ = losses_field(document.get("evals_result"))
    best = document.get("best_iteration")
    if best != len(estimator.trees_) - 1 or not is_integral(best):
        expected = f"{len(estimator.trees_) - 1} (the last kept iteration, 0-based)"
        raise bad_field("best_iteration", expected, best)
    estimator.best_iteration_ = int(best)
    estimator.n_iter_ = len(estimator.trees_)
    estimator.config_ = config
    estimator._importances = floats(
        document.get("feature_importances"),
        "feature_importances",
        estimator.n_features_in_,
    )


def _iterations(value: object, estimator: Any, outputs: int) -> list[list[Tree]]:
    if not isinstance(value, list) or not all(
        isinstance(it, list) and len(it) == outputs for it in value
    ):
        raise bad_field("trees", f"a list of iterations of {outputs} trees each", value)
    n = estimator.n_features_in_
    return [
        [tree_at(t, f"trees[{i}][{k}]", n, 1) for k, t in enumerate(it)]
        for i, it in enumerate(value)
    ]


Restore = Callable[[Any, Document, Schema], None]
_RESTORE: Final[dict[str, Restore]] = {
    "fedforest": _fedforest,
    "local-ensemble": _local_ensemble,
    "dpforest": _dpforest,
    "icdta": _single_tree,
    "federated-id3": _single_tree,
    "synthetic": _synthetic,
    "fedga": _fedga,
    "fedgbdt": _fedgbdt,
}
"""Every fitting job and how its document's model is restored (the toy fits none)."""
_RESTORE_REPORT: Final[dict[str, Callable[[Any, Document], None]]] = {
    "icdta": _icdta_report,
    "federated-id3": _fedid3_report,
}
"""What the single-tree jobs report beside their tree."""
