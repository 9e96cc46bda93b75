"""Bad parameters of every estimator: numpy scalars, NaN and inf, huge, wrong types.

Each row: the estimator, the parameters given, what a clear error must name, and
the reference parameters whose fit must give the same predictions when the
value is accepted (None: the value must be refused, accepting it is a silent
wrong result; a string: accepting it is documented, and the string says where).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from _sweep_core import accepted, case, check, data_for, documented, fit, same

NAN, INF = math.nan, math.inf
U64 = np.uint64(2**64 - 1)

Reference = dict[str, Any] | str | None
ROWS: list[tuple[str, str, dict[str, Any], tuple[str, ...], Reference]] = [
    # FedForest
    ("n_estimators-np-int64", "FedForestClassifier",
     {"n_estimators": np.int64(2)}, ("n_estimators",), {"n_estimators": 2}),
    ("n_estimators-np-int64-1e12", "FedForestClassifier",
     {"n_estimators": np.int64(10**12)}, ("n_estimators",), None),
    ("n_estimators-True", "FedForestRegressor",
     {"n_estimators": True}, ("n_estimators",), None),
    ("max_depth-62", "FedForestClassifier",
     {"max_depth": 62}, ("max_depth",), {"max_depth": None}),
    ("max_depth-np-uint64-max", "FedForestClassifier",
     {"max_depth": U64}, ("max_depth",), {"max_depth": None}),
    ("random_state-np-uint64-max", "FedForestRegressor",
     {"random_state": U64}, ("random_state",), None),
    ("max_features-nan", "FedForestClassifier",
     {"max_features": NAN}, ("max_features",), None),
    ("min_samples_leaf-1.5", "FedForestClassifier",
     {"min_samples_leaf": 1.5}, ("min_samples_leaf",), None),
    ("client_fraction-nan", "FedForestClassifier",
     {"client_fraction": NAN}, ("client_fraction",), None),
    ("timeout-nan", "FedForestRegressor", {"timeout": NAN}, ("timeout",), None),
    ("max_bins-np-int8-1", "FedForestClassifier",
     {"max_bins": np.int8(1)}, ("max_bins",), None),
    ("bin_edges-unsorted", "FedForestClassifier",
     {"bin_edges": {"x0": [3.0, 1.0, 2.0]}}, ("bin_edges|x0",), None),
    ("bin_edges-nan", "FedForestRegressor",
     {"bin_edges": {"x1": [NAN, 1.0]}}, ("bin_edges|x1",), None),
    ("bin_edges-unknown-column", "FedForestClassifier",
     {"bin_edges": {"nope": [0.0]}}, ("nope",), None),
    ("n_quantiles-float", "FedForestClassifier",
     {"candidates": "quantile", "n_quantiles": 8.5}, ("n_quantiles",), None),
    ("workers-huge", "FedForestClassifier",
     {"workers": 10**7}, ("workers",), {"workers": 1}),
    # FedGBDT
    ("learning_rate-np-float32", "FedGBDTRegressor",
     {"learning_rate": np.float32(0.5)}, ("learning_rate",), {"learning_rate": 0.5}),
    ("max_depth-62", "FedGBDTRegressor", {"max_depth": 62}, ("max_depth",),
     "docs/fedgbdt.md: trees stop where the rows run out"),
    ("n_estimators-1e6", "FedGBDTClassifier",
     {"n_estimators": 10**6}, ("n_estimators",), None),
    ("learning_rate-nan", "FedGBDTClassifier",
     {"learning_rate": NAN}, ("learning_rate",), None),
    ("reg_lambda-inf", "FedGBDTRegressor", {"reg_lambda": INF}, ("reg_lambda",), None),
    ("base_score-1.5", "FedGBDTClassifier", {"base_score": 1.5}, ("base_score",), None),
    ("n_estimators-float", "FedGBDTClassifier",
     {"n_estimators": 3.0}, ("n_estimators",), {"n_estimators": 3}),
    ("subsample-0", "FedGBDTRegressor", {"subsample": 0.0}, ("subsample",), None),
    ("validation_fraction-1", "FedGBDTClassifier",
     {"early_stopping_rounds": 2, "validation_fraction": 1.0},
     ("validation_fraction",), None),
    ("max_bins-2**40", "FedGBDTRegressor", {"max_bins": 2**40}, ("max_bins",), None),
    ("gamma-negative", "FedGBDTClassifier", {"gamma": -1.0}, ("gamma",), None),
    ("trees_per_round-np-int-0", "FedGBDTClassifier",
     {"protocol": "bagging", "trees_per_round": np.int64(0)},
     ("trees_per_round",), None),
    # DP forest
    ("epsilon-negative", "DPForestClassifier", {"epsilon": -1.0}, ("epsilon",), None),
    ("max_depth-np-int32", "DPForestClassifier",
     {"max_depth": np.int32(3)}, ("max_depth",), {"max_depth": 3}),
    ("max_depth-62-epsilon-1e6", "DPForestClassifier",
     {"max_depth": 62, "epsilon": 1e6}, ("max_depth",),
     "docs/dpforest.md: thresholds are drawn only for the nodes still open"),
    ("epsilon-np-float16", "DPForestClassifier",
     {"epsilon": np.float16(8.0)}, ("epsilon",), {"epsilon": 8.0}),
    ("feature_ranges-inverted", "DPForestClassifier",
     {"feature_ranges": {"x0": (5.0, -5.0), "x1": (-9, 9), "x2": (-9, 9)}},
     ("x0",), None),
    ("feature_ranges-inf", "DPForestClassifier",
     {"feature_ranges": [(-INF, INF)] * 3}, ("x0|feature_ranges",), None),
    ("feature_ranges-nan-numeric", "DPForestClassifier",
     {"feature_ranges": [(NAN, NAN)] * 3}, ("x0|feature_ranges",), None),
    # ICDTA, Federated-ID3
    ("filter-unknown", "ICDTAClassifier", {"filter": "bogus"}, ("filter",), None),
    ("max_rules-0", "ICDTAClassifier", {"max_rules": 0}, ("max_rules",), None),
    ("max_depth-1e6", "ICDTAClassifier",  # ID3 on 3 features: at most 3 levels
     {"max_depth": 10**6}, ("max_depth",), {"max_depth": 3}),
    ("n_bins-np-int64", "ICDTAClassifier",
     {"n_bins": np.int64(4)}, ("n_bins",), {"n_bins": 4}),
    ("epsilon-0", "FederatedID3Classifier", {"epsilon": 0.0}, ("epsilon",), None),
    ("max_depth-negative", "FederatedID3Classifier",
     {"max_depth": -1}, ("max_depth",), None),
    # FedGA
    ("depth_range-reversed", "FedGAClassifier",
     {"depth_range": (3, 1)}, ("depth_range",), None),
    ("epsilon-nan", "FedGARegressor", {"epsilon": NAN}, ("epsilon",), None),
    ("population_size-1", "FedGAClassifier",
     {"population_size": 1}, ("population_size",), None),
    ("tournament_size-above-population", "FedGAClassifier",
     {"tournament_size": 50}, ("tournament_size",),
     "docstring of tournament_select: draws min(size, P) candidates"),
    ("train_ratio-1", "FedGARegressor", {"train_ratio": 1.0}, ("train_ratio",),
     "docstring: train_ratio in (0, 1]"),
    # Synthetic data
    ("alpha-nan", "SyntheticDataClassifier", {"alpha": NAN}, ("alpha",), None),
    ("fill-one-value", "SyntheticDataClassifier", {"fill": [0.0]}, ("fill",),
     "docstring: a sequence of numbers, one picked per cell"),
    ("fill-inf", "SyntheticDataClassifier", {"fill": [0.0, np.inf]}, ("fill",), None),
    ("p_max-2", "SyntheticDataClassifier", {"p_max": 2.0}, ("p_max",), None),
    # FedAvg
    ("learning_rate-inf", "FedAvgClassifier",
     {"learning_rate": INF}, ("learning_rate",), None),
    ("hidden_layer_sizes-zero", "FedAvgClassifier",
     {"hidden_layer_sizes": (0,)}, ("hidden_layer_sizes",), None),
    ("batch_size-0", "FedAvgClassifier", {"batch_size": 0}, ("batch_size",), None),
    ("stop_at_score-nan", "FedAvgClassifier",
     {"stop_at_score": NAN}, ("stop_at_score",), None),
    # Local baselines
    ("weighting-unknown", "LocalEnsembleClassifier",
     {"weighting": "bogus"}, ("weighting",), None),
    ("max_features-2.0", "LocalModelsRegressor",
     {"max_features": 2.0}, ("max_features",), None),
    ("criterion-gini-for-regressor", "LocalEnsembleRegressor",
     {"criterion": "gini"}, ("criterion",), None),
    ("min_samples_split-np-float-nan", "LocalModelsClassifier",
     {"min_samples_split": np.float64(NAN)}, ("min_samples_split",), None),
]  # fmt: skip


def _register(
    label: str,
    name: str,
    params: dict[str, Any],
    names: tuple[str, ...],
    reference: Reference,
) -> None:
    @case(f"{name}-{label}", "params", names)
    def run() -> Any:
        X, _, _ = data = data_for(name)
        model = fit(name, data, **params)
        if reference is None:
            return accepted(f"{params} fitted")
        if isinstance(reference, str):
            return documented(f"accepted ({reference})")
        expected = fit(name, data, **reference)
        return check(
            same(model.predict(X), expected.predict(X)),
            f"same predictions as {reference}",
            f"predictions differ from {reference}",
        )


for _row in ROWS:
    _register(*_row)
