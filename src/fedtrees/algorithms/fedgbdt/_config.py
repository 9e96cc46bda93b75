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
    "BoostConfig",
    "Objective",
    "Protocol",
    "make_config",
    "with_classes",
]

MAX_BOOSTING_ROUNDS: Final = 10_000
"""Most boosting iterations: each costs ``max_depth`` rounds of every client."""
MAX_BOOSTING_DEPTH: Final = 16
"""Deepest tree: a level of ``2**depth`` nodes is asked in one round."""
MAX_OUTPUTS: Final = 1024
"""Most classes (one tree per class and iteration; every client allocates them)."""

Objective = Literal["binary", "softmax", "squared_error"]
Protocol = Literal["histogram", "bagging", "cyclic"]


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
    return BoostConfig(
        objective=objective,
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
    if n_classes > MAX_OUTPUTS:
        raise invalid(
            "y",
            owner,
            f"labels of at most {MAX_OUTPUTS} classes (every iteration grows one "
            "tree per class on every client)",
            f"{n_classes} classes",
        )
    objective: Objective = "binary" if n_classes <= 2 else "softmax"
    base = config.base_score
    if objective == "binary" and base is not None and not 0.0 < base < 1.0:
        raise invalid("base_score", owner, "None or a probability in (0, 1)", base)
    return replace(config, objective=objective, n_classes=n_classes)
