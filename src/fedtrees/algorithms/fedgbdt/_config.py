"""FedGBDT configuration: one validated, frozen value (STYLE habit 6).

Parameters are named as XGBoost's scikit-learn API. The estimators store them
untouched; :func:`make_config` validates them all at ``fit``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from fedtrees._typing import FloatArray
from fedtrees._validation import (
    MAX_ABS_TARGET,
    check_choice,
    check_float,
    check_int,
    invalid,
)
from fedtrees.algorithms._params import check_bool, check_size
from fedtrees.algorithms._ranges import check_ranges_form
from fedtrees.algorithms.histogram import check_declared_edges, check_max_bins
from fedtrees.exceptions import ValidationError

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

    Raises
    ------
    fedtrees.exceptions.ValidationError
        Naming the parameter and what it must be.
    """
    max_bins = check_max_bins(params["max_bins"], owner)
    stopping = params["early_stopping_rounds"]
    base = params["base_score"]
    named = check_objective(params["objective"], objective, owner)
    objective = objective if named is None else named
    return BoostConfig(
        objective=objective,
        objective_fixed=named is not None,
        scale_pos_weight=check_scale_pos_weight(
            params["scale_pos_weight"], objective, owner
        ),
        eval_metric=check_eval_metric(params["eval_metric"], objective, owner),
        n_classes=n_classes,
        n_estimators=check_size(
            params["n_estimators"], "n_estimators", owner, 1, MAX_BOOSTING_ROUNDS
        ),
        max_depth=check_int(
            params["max_depth"],
            "max_depth",
            owner,
            min_value=1,
            max_value=MAX_BOOSTING_DEPTH,
        ),
        learning_rate=check_float(
            params["learning_rate"],
            "learning_rate",
            owner,
            min_value=0.0,
            min_inclusive=False,
            max_value=1.0,
        ),
        reg_lambda=_nonnegative(params["reg_lambda"], "reg_lambda", owner),
        gamma=_nonnegative(params["gamma"], "gamma", owner),
        min_child_weight=_nonnegative(
            params["min_child_weight"], "min_child_weight", owner
        ),
        subsample=_fraction(params["subsample"], "subsample", owner),
        colsample_bytree=_fraction(
            params["colsample_bytree"], "colsample_bytree", owner
        ),
        max_bins=max_bins,
        base_score=None if base is None else _base_score(base, objective, owner),
        early_stopping_rounds=None
        if stopping is None
        else check_size(
            stopping, "early_stopping_rounds", owner, 1, MAX_BOOSTING_ROUNDS
        ),
        validation_fraction=_holdout(params["validation_fraction"], owner),
        protocol=check_choice(
            params["protocol"], "protocol", owner, ("histogram", "bagging", "cyclic")
        ),  # type: ignore[arg-type]
        trees_per_round=check_size(
            params["trees_per_round"], "trees_per_round", owner, 1, MAX_BOOSTING_ROUNDS
        ),
        on_dropout=check_choice(
            params["on_dropout"], "on_dropout", owner, ("fail", "continue")
        ),  # type: ignore[arg-type]
        seed=seed,
        bin_edges=check_declared_edges(params["bin_edges"], max_bins, owner),
        secure_aggregation=_secure(params, owner),
        feature_ranges=check_ranges_form(params["feature_ranges"], owner),
    )


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


def check_scale_pos_weight(value: object, objective: Objective, owner: str) -> float:
    """Return ``scale_pos_weight``: a factor > 0 of the positive rows' g and h.

    Only binary logloss has positive rows: the regressor refuses any other
    value than 1, and a classifier with more than two classes (softmax) is
    refused when its classes are known (:func:`with_classes`).
    """
    factor = check_float(
        value, "scale_pos_weight", owner, min_value=0.0, min_inclusive=False,
        max_value=MAX_SCALE_POS_WEIGHT,
    )  # fmt: skip
    if factor != 1.0 and objective == "squared_error":
        raise invalid(
            "scale_pos_weight", owner, "1.0 (it weights the positive class of binary "
            "classification; weight rows with fit's sample_weight instead)", value,
        )  # fmt: skip
    return factor


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


def _secure(params: dict[str, Any], owner: str) -> bool:
    """Return ``secure_aggregation``; only the histogram protocol sums statistics."""
    secure = check_bool(params["secure_aggregation"], "secure_aggregation", owner)
    if secure and params["protocol"] != "histogram":
        raise ValidationError(
            f"{owner}: secure_aggregation=True sums histograms over the sites; it "
            f"needs protocol='histogram' (got protocol={params['protocol']!r}, "
            "whose sites send trees, not sums)."
        )
    return secure


def _positive(value: object, name: str, owner: str) -> float:
    return check_float(value, name, owner, min_value=0.0, min_inclusive=False)


def _nonnegative(value: object, name: str, owner: str) -> float:
    return check_float(value, name, owner, min_value=0.0)


def _fraction(value: object, name: str, owner: str) -> float:
    return check_float(
        value, name, owner, min_value=0.0, min_inclusive=False, max_value=1.0
    )


def _holdout(value: object, owner: str) -> float:
    number = _fraction(value, "validation_fraction", owner)
    if number >= 1.0:
        raise invalid("validation_fraction", owner, "a float in (0, 1)", value)
    return number


def _base_score(value: object, objective: Objective, owner: str) -> float:
    """Return a finite number (a probability for two classes: checked later).

    A raw score is bounded as a target is (|base_score| <= 1e100): the clients'
    gradients ``raw - y`` and their squares must stay finite.
    """
    return check_float(
        value, "base_score", owner, min_value=-MAX_ABS_TARGET, max_value=MAX_ABS_TARGET
    )


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
