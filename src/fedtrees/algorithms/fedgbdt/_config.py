"""FedGBDT configuration: one validated, frozen value (STYLE habit 6).

Parameters are named as XGBoost's scikit-learn API. The estimators store them
untouched; :func:`make_config` validates them all at ``fit`` against one
constraint table per task (:func:`parameter_constraints`) and one table of
cross-parameter rules (:func:`rules`); the rules that need the classes are
checked once they are agreed (:func:`with_classes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from fedtrees._typing import FloatArray
from fedtrees._validation import MAX_ABS_TARGET, invalid
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
from fedtrees.algorithms._params import N_JOBS
from fedtrees.algorithms._ranges import check_ranges_form
from fedtrees.algorithms.histogram import check_declared_edges, check_max_bins

__all__ = [
    "MAX_BOOSTING_DEPTH",
    "MAX_BOOSTING_ROUNDS",
    "MAX_OUTPUTS",
    "MAX_SCALE_POS_WEIGHT",
    "METRICS",
    "OBJECTIVES",
    "BoostConfig",
    "Objective",
    "Protocol",
    "make_config",
    "metric_objectives",
    "parameter_constraints",
    "rules",
    "with_classes",
    "xgboost_objective",
]

MAX_BOOSTING_ROUNDS: Final = 10_000
"""Most boosting iterations: each costs ``max_depth`` rounds of every client."""
MAX_BOOSTING_DEPTH: Final = 16
"""Deepest tree: a level of ``2**depth`` nodes is asked in one round."""
MAX_OUTPUTS: Final = 1024
"""Most classes (one tree per class and iteration; every client allocates them)."""

MAX_SCALE_POS_WEIGHT: Final = 1e50
"""Largest ``scale_pos_weight``: with the total weight at most 1e50, a scaled
gradient sum stays below 1e100 and its square finite."""

Objective = Literal["binary", "softmax", "squared_error"]
Protocol = Literal["histogram", "bagging", "cyclic"]

OBJECTIVES: Final[dict[str, Objective]] = {
    "binary:logistic": "binary",
    "multi:softprob": "softmax",
    "reg:squarederror": "squared_error",
}
"""XGBoost's names of the objectives FedGBDT grows, and fedtrees' own."""
_REFUSED: Final = {
    "multi:softmax": "use 'multi:softprob': it trains the same trees, and predict "
    "gives the class",
    "binary:logitraw": "use 'binary:logistic': it trains the same trees, and "
    "decision_function gives the raw margin",
}
"""Objectives with the same trees as a supported one: what to use instead."""
METRICS: Final[dict[str, tuple[Objective, ...]]] = {
    "logloss": ("binary",),
    "error": ("binary",),
    "mlogloss": ("softmax",),
    "merror": ("softmax",),
    "rmse": ("squared_error",),
}
"""XGBoost's names of the metrics a fit can record, and their objectives: each
is a weighted mean of a per-row value, so the sites' sums give it exactly."""


def xgboost_objective(objective: Objective) -> str:
    """Return XGBoost's name of ``objective``.

    Examples
    --------
    >>> xgboost_objective("softmax")
    'multi:softprob'
    """
    return next(name for name, own in OBJECTIVES.items() if own == objective)


def metric_objectives(metric: str) -> tuple[Objective, ...]:
    """Return the objectives ``metric`` (XGBoost's name) serves; () if none."""
    return METRICS.get(metric, ())


@dataclass(frozen=True)
class BoostConfig:
    """Everything the FedGBDT strategies need, validated."""

    objective: Objective
    n_classes: int
    n_estimators: int
    max_depth: int
    learning_rate: float
    reg_lambda: float
    gamma: float
    min_child_weight: float
    subsample: float
    colsample_bytree: float
    max_bins: int
    base_score: float | None
    early_stopping_rounds: int | None
    validation_fraction: float
    protocol: Protocol
    trees_per_round: int
    on_dropout: Literal["fail", "continue"]
    seed: int
    bin_edges: Mapping[object, FloatArray] | None = None
    subtract: bool = True
    """Internal: histogram subtraction (tests switch it off to compare)."""
    secure_aggregation: bool = False
    """The server learns only sums of the sites' statistics (docs/security.md)."""
    feature_ranges: object = None
    """Declared (low, high) per numeric column: the secure root grid."""
    objective_fixed: bool = False
    """The ``objective`` parameter named it (else a classifier's follows its
    classes)."""
    scale_pos_weight: float = 1.0
    """The factor of the positive rows' g and h (binary logloss, as XGBoost's)."""
    eval_metric: str | None = None
    """XGBoost's name of the metric recorded and early stopping watches (None:
    the objective's own, :func:`._loss.metric_name`)."""

    @property
    def n_trees_per_iteration(self) -> int:
        """One tree per class for softmax, else one."""
        return self.n_classes if self.objective == "softmax" else 1

    @property
    def holdout(self) -> float:
        """Share of each client's rows held out for early stopping (0: none)."""
        return self.validation_fraction if self.early_stopping_rounds else 0.0


def make_config(
    params: dict[str, Any], objective: Objective, n_classes: int, owner: str, seed: int
) -> BoostConfig:
    """Validate estimator parameters (``get_params()``) into a :class:`BoostConfig`.

    ``objective``: the estimator's default (``"squared_error"`` for the
    regressor, else a classifier's); the ``objective`` parameter may name
    another of its task.

    Raises
    ------
    fedtrees.exceptions.ValidationError
        Naming the parameter and what it must be.
    """
    checked = validate(
        owner, params, parameter_constraints(objective), rules(objective)
    )
    named = checked["objective"]
    checked["objective"] = objective if named is None else named
    return BoostConfig(
        **config_fields(BoostConfig, checked),
        objective_fixed=named is not None,
        n_classes=n_classes,
        seed=seed,
    )


def parameter_constraints(objective: Objective) -> dict[str, Constraint]:
    """Return the constraint of every parameter of the estimator of ``objective``.

    ``objective``: the estimator's default (its task).
    """
    regression = objective == "squared_error"
    return {
        "objective": Check(_regression_objective if regression else _class_objective),
        "scale_pos_weight": Interval(float, 0.0, MAX_SCALE_POS_WEIGHT, low_open=True),
        "eval_metric": Check(_regression_metric if regression else _class_metric),
        "n_estimators": Size(1, MAX_BOOSTING_ROUNDS),
        "max_depth": Interval(int, 1, MAX_BOOSTING_DEPTH),
        "learning_rate": _FRACTION,
        "reg_lambda": _NONNEGATIVE,
        "gamma": _NONNEGATIVE,
        "min_child_weight": _NONNEGATIVE,
        "subsample": _FRACTION,
        "colsample_bytree": _FRACTION,
        "max_bins": Check(check_max_bins),
        "base_score": NoneOr(Interval(float, -MAX_ABS_TARGET, MAX_ABS_TARGET)),
        "early_stopping_rounds": NoneOr(Size(1, MAX_BOOSTING_ROUNDS)),
        "validation_fraction": Check(_holdout),
        "protocol": Options(("histogram", "bagging", "cyclic")),
        "trees_per_round": Size(1, MAX_BOOSTING_ROUNDS),
        "on_dropout": Options(("fail", "continue")),
        "bin_edges": Check(check_declared_edges, reads=("max_bins",)),
        "secure_aggregation": Boolean(),
        "feature_ranges": Check(check_ranges_form),
        **RUN_CONSTRAINTS,
        "n_jobs": N_JOBS,
    }


def rules(objective: Objective) -> tuple[Rule, ...]:
    """Return the cross-parameter rules of the estimator of ``objective``.

    Only binary logloss has positive rows: the regressor refuses any
    ``scale_pos_weight`` but 1 (a classifier with more than two classes is
    refused when its classes are known, :func:`with_classes`).
    """
    if objective != "squared_error":
        return RULES
    return (
        *RULES,
        Rule(
            ("scale_pos_weight",),
            lambda factor: factor == 1.0,
            "1.0 (it weights the positive class of binary classification; weight "
            "rows with fit's sample_weight instead)",
            parameter="scale_pos_weight",
        ),
    )


RULES: Final = (
    Rule(
        ("secure_aggregation", "protocol"),
        lambda secure, protocol: not secure or protocol == "histogram",
        "{owner}: secure_aggregation=True sums histograms over the sites; it "
        "needs protocol='histogram' (got protocol={protocol!r}, whose sites send "
        "trees, not sums).",
    ),
)
"""FedGBDT's cross-parameter rules: only the histogram protocol sums statistics."""


def check_objective(value: object, task: Objective, owner: str) -> Objective | None:
    """Return the objective XGBoost's name ``value`` asks for; None leaves the default.

    ``task``: the estimator's default (``"squared_error"`` for the regressor,
    else a classifier's). Every other name is refused with the supported ones.
    """
    if value is None:
        return None
    names = [n for n, own in OBJECTIVES.items() if _same_task(own, task)]
    constraint = f"None or one of {names} (XGBoost's names)"
    if not isinstance(value, str):
        raise invalid(
            "objective", owner, f"{constraint}; a callable objective is not "
            "supported", value,
        )  # fmt: skip
    own = OBJECTIVES.get(value)
    if own is not None and _same_task(own, task):
        return own
    if own is not None:
        other = "FedGBDTClassifier" if own != "squared_error" else "FedGBDTRegressor"
        hint = f"{value!r} is {other}'s"
    else:
        hint = _REFUSED.get(
            value,
            "FedGBDT grows the trees of these losses only (its bounds on every "
            "site's sums are theirs)",
        )
    raise invalid("objective", owner, f"{constraint}; {hint}", value)


def check_eval_metric(value: object, objective: Objective, owner: str) -> str | None:
    """Return the metric XGBoost's name ``value`` asks for (a list of one name too).

    None keeps the objective's own; a classifier's metric is checked against
    its classes again when they are known (:func:`with_classes`).
    """
    names = [m for m, served in METRICS.items() if _same_task(served[0], objective)]
    constraint = (
        f"None or one of {names}, or a list of one of them (XGBoost's names: "
        "weighted means of a per-row value, which the sites' sums give exactly)"
    )
    metric = value[0] if isinstance(value, list | tuple) and len(value) == 1 else value
    if metric is None and value is None:
        return None
    if not isinstance(metric, str) or metric not in names:
        raise invalid("eval_metric", owner, constraint, value)
    return metric


def _same_task(a: Objective, b: Objective) -> bool:
    return (a == "squared_error") == (b == "squared_error")


_FRACTION: Final = Interval(float, 0.0, 1.0, low_open=True)
_NONNEGATIVE: Final = Interval(float, 0.0)


def _class_objective(value: object, owner: str) -> Objective | None:
    return check_objective(value, "binary", owner)


def _regression_objective(value: object, owner: str) -> Objective | None:
    return check_objective(value, "squared_error", owner)


def _class_metric(value: object, owner: str) -> str | None:
    return check_eval_metric(value, "binary", owner)


def _regression_metric(value: object, owner: str) -> str | None:
    return check_eval_metric(value, "squared_error", owner)


def _holdout(value: object, owner: str) -> float:
    """Return ``validation_fraction``: a float in (0, 1)."""
    number = _FRACTION.check(value, "validation_fraction", owner)
    if number >= 1.0:
        raise invalid("validation_fraction", owner, "a float in (0, 1)", value)
    return number


def with_classes(config: BoostConfig, n_classes: int, owner: str) -> BoostConfig:
    """Set a classifier's objective from its agreed classes: logloss or softmax.

    Raises
    ------
    fedtrees.exceptions.ValidationError
        ``base_score`` outside (0, 1) with two classes.
    """
    if config.objective == "squared_error":
        return config
    if config.objective_fixed and config.objective == "binary" and n_classes > 2:
        raise invalid(
            "objective", owner, f"'multi:softprob' or None for {n_classes} classes",
            "binary:logistic",
        )  # fmt: skip
    if n_classes > MAX_OUTPUTS:
        raise invalid(
            "y",
            owner,
            f"labels of at most {MAX_OUTPUTS} classes (every iteration grows one "
            "tree per class on every client)",
            f"{n_classes} classes",
        )
    objective: Objective = (
        config.objective
        if config.objective_fixed
        else ("binary" if n_classes <= 2 else "softmax")
    )
    _check_class_settings(config, objective, n_classes, owner)
    base = config.base_score
    if objective == "binary" and base is not None and not 0.0 < base < 1.0:
        raise invalid("base_score", owner, "None or a probability in (0, 1)", base)
    return replace(config, objective=objective, n_classes=n_classes)


def _check_class_settings(
    config: BoostConfig, objective: Objective, n_classes: int, owner: str
) -> None:
    """Refuse a binary setting for softmax: ``scale_pos_weight``, a binary metric.

    XGBoost ignores ``scale_pos_weight`` under ``multi:softprob`` with a
    warning; here it is an error, as a setting that changes nothing is a
    mistake to say (weight each class's rows with ``sample_weight``).
    """
    if objective == "softmax" and config.scale_pos_weight != 1.0:
        raise invalid(
            "scale_pos_weight", owner, f"1.0 for {n_classes} classes (it weights the "
            "positive class of two; weight each class's rows with fit's "
            "sample_weight, e.g. sklearn's compute_sample_weight('balanced', y))",
            config.scale_pos_weight,
        )  # fmt: skip
    metric = config.eval_metric
    if metric is not None and objective not in metric_objectives(metric):
        served = [m for m, o in METRICS.items() if objective in o]
        raise invalid(
            "eval_metric", owner, f"one of {served} for {n_classes} classes "
            f"({xgboost_objective(objective)})", metric,
        )  # fmt: skip
