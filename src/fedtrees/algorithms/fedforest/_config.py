"""FedForest configuration: one validated, frozen value (STYLE habit 6).

The estimators store their keyword arguments untouched; :func:`make_config`
validates them all at ``fit`` against one constraint table per task
(:func:`parameter_constraints`) and one table of cross-parameter rules
(:data:`RULES`), and resolves the defaults that depend on the task and the
data (``max_features``, ``max_depth``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from fedtrees._typing import FloatArray
from fedtrees._validation import check_bool
from fedtrees.algorithms._class_weight import check_class_weight
from fedtrees.algorithms._constraints import (
    RUN_CONSTRAINTS,
    Boolean,
    Check,
    Constraint,
    Interval,
    NoneOr,
    Options,
    Rule,
    Size,
    config_fields,
    validate,
)
from fedtrees.algorithms._params import (
    MAX_GRID,
    N_JOBS,
    Amount,
    forest_constraints,
    resolve_max_features,
)
from fedtrees.algorithms._ranges import check_ranges_form
from fedtrees.algorithms.histogram import (
    MAX_BINS,
    check_declared_edges,
    check_max_bins,
)
from fedtrees.exceptions import ValidationError

__all__ = [
    "MAX_DEPTH_CAP",
    "Amount",
    "ForestConfig",
    "make_config",
    "parameter_constraints",
    "resolve_max_features",
]

MAX_DEPTH_CAP: Final = 64
"""``max_depth=None`` grows until the other stopping rules end every branch; a
safety cap bounds the number of rounds."""

Candidates = Literal["quantile", "exact", "uniform", "hist"]
Gain = Literal["exact", "avgimp"]


@dataclass(frozen=True)
class ForestConfig:
    """Everything the FedForest strategy needs, validated."""

    task: Literal["classification", "regression"]
    n_estimators: int
    max_depth: int
    min_samples_split: Amount
    min_samples_leaf: Amount
    min_impurity_decrease: float
    max_features: object
    bootstrap: bool
    criterion: Literal["gini", "entropy", "squared_error"]
    candidates: Candidates
    n_quantiles: int
    gain: Gain
    top_k: int | None
    split_on_client: bool
    client_fraction: float
    on_dropout: Literal["fail", "continue"]
    seed: int
    target: Literal["label", "client"] = "label"
    holdout: float = 0.0
    max_bins: int = MAX_BINS
    """``candidates="hist"``: bins per feature of the agreed grid."""
    bin_edges: Mapping[object, FloatArray] | None = None
    """``candidates="hist"``: declared edges by column (name or position)."""
    fold: bool = True
    """Internal: one round for a level whose every node has one client (the
    strategy's **Decision**, :mod:`._fold`); tests switch it off to compare."""
    subtract: bool = True
    """Internal: histogram subtraction in hist mode (:mod:`._hist_level`);
    tests switch it off to compare."""
    secure_aggregation: bool = False
    """``candidates="hist"``: the server learns only sums (docs/security.md)."""
    feature_ranges: object = None
    """Declared (low, high) per numeric column: the secure root grid."""
    class_weight: object = None
    """Classification: None, "balanced", "balanced_subsample" or a dict by label
    (:mod:`fedtrees.algorithms._class_weight`; resolved on the agreed classes)."""
    oob_score: bool = False
    """One more round after the last level: the sites' out-of-bag sums."""


def make_config(
    params: dict[str, Any], task: str, owner: str, seed: int
) -> ForestConfig:
    """Validate estimator parameters (``get_params()``) into a :class:`ForestConfig`."""
    checked = validate(owner, params, parameter_constraints(task), rules(task))
    if checked["gain"] == "auto":
        checked["gain"] = "exact"
    return ForestConfig(**config_fields(ForestConfig, checked), task=task, seed=seed)  # type: ignore[arg-type]


def parameter_constraints(task: str) -> dict[str, Constraint]:
    """Return the constraint of every parameter of FedForest's ``task`` estimator."""
    criteria = ("squared_error",) if task == "regression" else ("gini", "entropy")
    depth = NoneOr(Interval(int, 1, MAX_DEPTH_CAP), none=MAX_DEPTH_CAP)
    table = {
        **forest_constraints(criteria, depth),
        "gain": Options(("exact", "avgimp", "auto")),
        "candidates": Options(("quantile", "exact", "uniform", "hist")),
        "max_bins": Check(check_max_bins),
        "secure_aggregation": Boolean(),
        "n_quantiles": Size(2, MAX_GRID),
        "top_k": NoneOr(Size(1, MAX_GRID)),
        "split_on_client": Boolean(),
        "client_fraction": Interval(float, 0.0, 1.0, low_open=True),
        "on_dropout": Options(("fail", "continue")),
        "bin_edges": Check(check_declared_edges, reads=("max_bins",)),
        "feature_ranges": Check(check_ranges_form),
        "oob_score": Check(_check_oob),
        **RUN_CONSTRAINTS,
        "n_jobs": N_JOBS,
    }
    if task == "classification":
        table["class_weight"] = Check(_check_class_weight)
    return table


def _check_class_weight(value: object, owner: str) -> object:
    """None, "balanced", "balanced_subsample" or a dict by label."""
    return check_class_weight(value, owner, ("balanced", "balanced_subsample"))


def _check_oob(value: object, owner: str) -> bool:
    """Return ``oob_score``: a bool (a callable metric is refused, saying why)."""
    if callable(value):
        raise ValidationError(
            f"The 'oob_score' parameter of {owner} must be a bool. Got a callable "
            "instead: a metric of (y_true, y_pred) needs every row's out-of-bag "
            "prediction, which stays at its site; the sites send only sums, for "
            "accuracy (classifiers) or R^2 (regressors)."
        )
    return check_bool(value, "oob_score", owner)


def rules(task: str) -> tuple[Rule, ...]:
    """Return FedForest's cross-parameter rules for ``task`` (:data:`RULES`)."""
    if task == "classification":
        return (*RULES, _plain_only("class_weight", "None"))
    return RULES


def _plain_only(name: str, off: str) -> Rule:
    """Return the rule that ``name`` (unless None or False) needs the plain protocol."""
    return Rule(
        (name, "secure_aggregation"),
        lambda value, secure: not secure or value is None or value is False,
        f"{{owner}}: {name} needs the plain protocol: pass secure_aggregation=False, "
        f"or {name}={off} (secure sums keep whole counts exact and hide each "
        "site's sums, which class weights and out-of-bag scores need).",
    )


RULES: Final = (
    Rule(
        ("gain", "candidates"),
        lambda gain, candidates: not (gain == "avgimp" and candidates == "hist"),
        "{owner}: gain='avgimp' averages the clients' own gains at sketched "
        "candidates; pass candidates='quantile' (or 'exact', 'uniform') with it "
        "— candidates='hist', the default, scores exact pooled gains on its grid.",
    ),
    Rule(
        ("secure_aggregation", "candidates"),
        lambda secure, candidates: not secure or candidates == "hist",
        "{owner}: secure_aggregation=True sums histograms over the sites; it "
        "needs candidates='hist' (got candidates={candidates!r}).",
    ),
    Rule(
        ("secure_aggregation", "split_on_client"),
        lambda secure, split_on_client: not (secure and split_on_client),
        "{owner}: split_on_client=True needs each site's statistics, which "
        "secure_aggregation=True hides; pass split_on_client=False.",
    ),
    Rule(
        ("oob_score", "bootstrap"),
        lambda oob, bootstrap: bootstrap or not oob,
        "{owner}: oob_score=True needs bootstrap=True (out-of-bag rows are "
        "those a tree's bootstrap did not draw), as in scikit-learn.",
    ),
    _plain_only("oob_score", "False"),
)
"""FedForest's cross-parameter rules (docs/fedforest.md); classifiers add
that ``class_weight`` needs the plain protocol (:func:`rules`).

**Decision:** ``class_weight`` and ``oob_score`` need the plain protocol:
``"balanced"`` sums the sites' class counts and ``oob_score`` their out-of-bag
sums, which ``secure_aggregation`` hides, and class-weighted counts are not
whole numbers, which its sums keep exact. ``oob_score`` needs the bootstrap (as
in scikit-learn) and is a bool: a callable metric would need every row's
prediction, which stays at its site."""
