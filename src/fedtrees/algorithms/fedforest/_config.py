"""FedForest configuration: one validated, frozen value (STYLE habit 6).

The estimators store their keyword arguments untouched; :func:`make_config`
validates them all at ``fit`` against one constraint table and resolves the
defaults that depend on the task and the data (``max_features``, ``max_depth``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from fedtrees._typing import FloatArray
from fedtrees._validation import check_choice, check_float, check_int
from fedtrees.algorithms._class_weight import check_class_weight
from fedtrees.algorithms._params import (
    MAX_GRID,
    MAX_N_ESTIMATORS,
    Amount,
    check_bool,
    check_max_features,
    check_size,
    count_or_fraction,
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
    criteria = ("squared_error",) if task == "regression" else ("gini", "entropy")
    depth = params["max_depth"]
    top_k = params["top_k"]
    gain = check_choice(params["gain"], "gain", owner, ("exact", "avgimp", "auto"))
    candidates = check_choice(
        params["candidates"],
        "candidates",
        owner,
        ("quantile", "exact", "uniform", "hist"),
    )
    if gain == "avgimp" and candidates == "hist":
        raise ValidationError(
            f"{owner}: gain='avgimp' averages the clients' own gains at sketched "
            "candidates; pass candidates='quantile' (or 'exact', 'uniform') with it "
            "— candidates='hist', the default, scores exact pooled gains on its grid."
        )
    max_bins = check_max_bins(params["max_bins"], owner)
    secure = check_bool(params["secure_aggregation"], "secure_aggregation", owner)
    if secure and candidates != "hist":
        raise ValidationError(
            f"{owner}: secure_aggregation=True sums histograms over the sites; it "
            f"needs candidates='hist' (got candidates={candidates!r})."
        )
    if secure and params["split_on_client"]:
        raise ValidationError(
            f"{owner}: split_on_client=True needs each site's statistics, which "
            "secure_aggregation=True hides; pass split_on_client=False."
        )
    bootstrap = check_bool(params["bootstrap"], "bootstrap", owner)
    class_weight, oob = _weights_and_oob(params, owner, bootstrap, secure)
    return ForestConfig(
        task=task,  # type: ignore[arg-type]
        n_estimators=check_size(
            params["n_estimators"], "n_estimators", owner, 1, MAX_N_ESTIMATORS
        ),
        max_depth=MAX_DEPTH_CAP
        if depth is None
        else check_int(depth, "max_depth", owner, min_value=1, max_value=MAX_DEPTH_CAP),
        min_samples_split=count_or_fraction(
            params["min_samples_split"], "min_samples_split", owner, 2
        ),
        min_samples_leaf=count_or_fraction(
            params["min_samples_leaf"], "min_samples_leaf", owner, 1
        ),
        min_impurity_decrease=check_float(
            params["min_impurity_decrease"],
            "min_impurity_decrease",
            owner,
            min_value=0.0,
        ),
        max_features=check_max_features(params["max_features"], owner),
        bootstrap=bootstrap,
        criterion=check_choice(params["criterion"], "criterion", owner, criteria),  # type: ignore[arg-type]
        candidates=candidates,  # type: ignore[arg-type]
        n_quantiles=check_size(
            params["n_quantiles"], "n_quantiles", owner, 2, MAX_GRID
        ),
        gain="exact" if gain == "auto" else gain,  # type: ignore[arg-type]
        top_k=None if top_k is None else check_size(top_k, "top_k", owner, 1, MAX_GRID),
        split_on_client=check_bool(params["split_on_client"], "split_on_client", owner),
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
        max_bins=max_bins,
        bin_edges=check_declared_edges(params["bin_edges"], max_bins, owner),
        secure_aggregation=secure,
        feature_ranges=check_ranges_form(params["feature_ranges"], owner),
        class_weight=class_weight,
        oob_score=oob,
    )


def _weights_and_oob(
    params: dict[str, Any], owner: str, bootstrap: bool, secure: bool
) -> tuple[object, bool]:
    """Check ``class_weight`` (classifiers) and ``oob_score`` (docs/fedforest.md).

    **Decision:** both need the plain protocol: ``"balanced"`` sums the sites'
    class counts and ``oob_score`` their out-of-bag sums, which
    ``secure_aggregation`` hides, and class-weighted counts are not whole
    numbers, which its sums keep exact. ``oob_score`` needs the bootstrap (as in
    scikit-learn) and is a bool: a callable metric would need every row's
    prediction, which stays at its site.
    """
    class_weight = check_class_weight(
        params.get("class_weight"), owner, ("balanced", "balanced_subsample")
    )
    oob = params.get("oob_score", False)
    if callable(oob):
        raise ValidationError(
            f"The 'oob_score' parameter of {owner} must be a bool. Got a callable "
            "instead: a metric of (y_true, y_pred) needs every row's out-of-bag "
            "prediction, which stays at its site; the sites send only sums, for "
            "accuracy (classifiers) or R^2 (regressors)."
        )
    oob = check_bool(oob, "oob_score", owner)
    if oob and not bootstrap:
        raise ValidationError(
            f"{owner}: oob_score=True needs bootstrap=True (out-of-bag rows are "
            "those a tree's bootstrap did not draw), as in scikit-learn."
        )
    for name, used in (("class_weight", class_weight is not None), ("oob_score", oob)):
        if used and secure:
            raise ValidationError(
                f"{owner}: {name} needs the plain protocol: pass "
                f"secure_aggregation=False, or {name}="
                f"{'None' if name == 'class_weight' else 'False'} (secure sums "
                "keep whole counts exact and hide each site's sums, which "
                "class weights and out-of-bag scores need)."
            )
    return class_weight, oob
