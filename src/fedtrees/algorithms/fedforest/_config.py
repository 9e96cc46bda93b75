"""FedForest configuration: one validated, frozen value (STYLE habit 6).

The estimators store their keyword arguments untouched; :func:`make_config`
validates them all at ``fit`` against one constraint table and resolves the
defaults that depend on the task and the data (``max_features``, ``max_depth``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final, Literal

from fedtrees._validation import check_choice, check_float, check_int, invalid

__all__ = [
    "MAX_DEPTH_CAP",
    "Amount",
    "ForestConfig",
    "make_config",
    "resolve_max_features",
]

MAX_DEPTH_CAP: Final = 64
"""``max_depth=None`` grows until the other stopping rules end every branch; a
safety cap bounds the number of rounds."""

Candidates = Literal["quantile", "exact", "uniform"]


@dataclass(frozen=True)
class Amount:
    """A ``min_samples_*`` value: rows, or (as scikit-learn) a fraction of all rows."""

    value: float
    fraction: bool = False

    def rows(self, total: float) -> float:
        """Return the amount in (weighted) rows for a tree of ``total`` rows."""
        return math.ceil(self.value * total) if self.fraction else self.value


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

    @property
    def rounds_per_level(self) -> int:
        """Round trips per depth level (AvgImp top-k adds a shortlist round)."""
        if self.candidates == "uniform":
            return 1
        return 3 if (self.gain == "avgimp" and self.top_k) else 2


def make_config(
    params: dict[str, Any], task: str, owner: str, seed: int
) -> ForestConfig:
    """Validate estimator parameters (``get_params()``) into a :class:`ForestConfig`."""
    criteria = ("squared_error",) if task == "regression" else ("gini", "entropy")
    depth = params["max_depth"]
    top_k = params["top_k"]
    gain = check_choice(params["gain"], "gain", owner, ("exact", "avgimp", "auto"))
    return ForestConfig(
        task=task,  # type: ignore[arg-type]
        n_estimators=check_int(
            params["n_estimators"], "n_estimators", owner, min_value=1
        ),
        max_depth=MAX_DEPTH_CAP
        if depth is None
        else check_int(depth, "max_depth", owner, min_value=1, max_value=MAX_DEPTH_CAP),
        min_samples_split=_count_or_fraction(
            params["min_samples_split"], "min_samples_split", owner, 2
        ),
        min_samples_leaf=_count_or_fraction(
            params["min_samples_leaf"], "min_samples_leaf", owner, 1
        ),
        min_impurity_decrease=check_float(
            params["min_impurity_decrease"],
            "min_impurity_decrease",
            owner,
            min_value=0.0,
        ),
        max_features=_check_max_features(params["max_features"], owner),
        bootstrap=_check_bool(params["bootstrap"], "bootstrap", owner),
        criterion=check_choice(params["criterion"], "criterion", owner, criteria),  # type: ignore[arg-type]
        candidates=check_choice(  # type: ignore[arg-type]
            params["candidates"], "candidates", owner, ("quantile", "exact", "uniform")
        ),
        n_quantiles=check_int(params["n_quantiles"], "n_quantiles", owner, min_value=2),
        gain="exact" if gain == "auto" else gain,  # type: ignore[arg-type]
        top_k=None if top_k is None else check_int(top_k, "top_k", owner, min_value=1),
        split_on_client=_check_bool(
            params["split_on_client"], "split_on_client", owner
        ),
        client_fraction=check_float(
            params["client_fraction"],
            "client_fraction",
            owner,
            min_value=0.0,
            min_inclusive=False,
            max_value=1.0,
        ),
        on_dropout=check_choice(
            params["on_dropout"], "on_dropout", owner, ("fail", "continue")
        ),  # type: ignore[arg-type]
        seed=seed,
    )


def _check_bool(value: object, name: str, owner: str) -> bool:
    if not isinstance(value, bool):
        raise invalid(name, owner, "a bool", value)
    return value


def _count_or_fraction(value: object, name: str, owner: str, smallest: int) -> Amount:
    """Check an int >= ``smallest`` (rows) or a float in (0, 1] (a fraction)."""
    if isinstance(value, float):
        fraction = check_float(
            value, name, owner, min_value=0.0, min_inclusive=False, max_value=1.0
        )
        return Amount(fraction, fraction=True)
    return Amount(float(check_int(value, name, owner, min_value=smallest)))


def _check_max_features(value: object, owner: str) -> object:
    if value is None or value in ("sqrt", "log2"):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return check_int(value, "max_features", owner, min_value=1)
    if isinstance(value, float):
        return check_float(
            value,
            "max_features",
            owner,
            min_value=0.0,
            min_inclusive=False,
            max_value=1.0,
        )
    raise invalid(
        "max_features",
        owner,
        "'sqrt', 'log2', None, an int >= 1 or a float in (0, 1]",
        value,
    )


def resolve_max_features(value: object, n_features: int) -> int:
    """Features considered per node, as scikit-learn counts them."""
    if value is None:
        return n_features
    if value == "sqrt":
        return max(1, int(math.sqrt(n_features)))
    if value == "log2":
        return max(1, int(math.log2(n_features)))
    if isinstance(value, float):
        return max(1, int(value * n_features))
    return min(int(str(value)), n_features)
