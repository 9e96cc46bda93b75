"""Every federated estimator, with settings small enough for the conformance suite.

Each :class:`Entry` builds a fresh estimator for a ``random_state`` and says what
the protocol-level checks must know about it: which fields send per-row values by
design (declared to the value audit), and what a client dropping out does to it.
To add an estimator, add one :class:`Entry` to :data:`ENTRIES`; every check then
runs on it. A check it cannot take part in goes in ``skip`` (check -> reason).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pytest

from fedtrees import (
    DPForestClassifier,
    FedAvgClassifier,
    FederatedID3Classifier,
    FedForestClassifier,
    FedForestRegressor,
    FedGAClassifier,
    FedGARegressor,
    FedGBDTClassifier,
    FedGBDTRegressor,
    ICDTAClassifier,
    LocalEnsembleClassifier,
    LocalEnsembleRegressor,
    LocalModelsClassifier,
    LocalModelsRegressor,
    SyntheticDataClassifier,
)
from fedtrees._methods import estimator_homes

SITES = ("a", "b", "c")
SIZES = (60, 70, 80)
N_FEATURES = 4
RANGES = [(-4.0, 4.0)] * N_FEATURES
EDGES = {f"x{j}": [-1.0, 0.0, 1.0] for j in range(N_FEATURES)}
# A client below 256 rows sends an exact sketch: each of its values (declared).
SKETCH = {"discretize.sketch_reply": ["points"]}

Dropout = Literal["continue", "fail"]


@dataclass(frozen=True)
class Entry:
    """One estimator of the suite.

    ``make(random_state)`` builds it unfitted. ``personal``: one model per site
    (``predict(X, client=...)``). ``keeps_state``: its clients keep state between
    rounds (and ask for a resync when they lost it). ``per_row``: payload fields
    that send per-row values by design (as the method's own audit declares them).
    ``dropout``: what a client missing a round does ("continue": the fit ends
    with a warning naming it; "fail": an error naming it); an estimator with an
    ``on_dropout`` parameter is run with both settings. ``dp``: its sites release
    Laplace noise (their own: reproducible only with their secret). ``skip``:
    check -> why this estimator cannot take part in it.
    """

    name: str
    make: Callable[[int], Any]
    regression: bool = False
    personal: bool = False
    keeps_state: bool = False
    per_row: Mapping[str, list[str]] = field(default_factory=dict)
    dropout: Dropout = "fail"
    dp: bool = False
    skip: Mapping[str, str] = field(default_factory=dict)


def _forest(make: Any, candidates: str) -> Callable[[int], Any]:
    def build(seed: int) -> Any:
        return make(
            n_estimators=2,
            max_depth=3,
            candidates=candidates,
            n_quantiles=8,
            max_bins=16,
            random_state=seed,
        )

    return build


def _gbdt(make: Any) -> Callable[[int], Any]:
    return lambda seed: make(
        n_estimators=2, max_depth=2, max_bins=16, random_state=seed
    )


def _ga(make: Any) -> Callable[[int], Any]:
    return lambda seed: make(
        population_size=6,
        n_generations=2,
        depth_range=(2, 3),
        cv_folds=3,
        random_state=seed,
    )


def _local(make: Any) -> Callable[[int], Any]:
    return lambda seed: make(n_estimators=2, max_depth=3, random_state=seed)


ENTRIES: tuple[Entry, ...] = (
    Entry(
        "FedForestClassifier-hist",
        _forest(FedForestClassifier, "hist"),
        keeps_state=True,
    ),
    Entry(
        "FedForestClassifier-quantile",
        _forest(FedForestClassifier, "quantile"),
        keeps_state=True,
    ),
    Entry(  # the class-count preamble and the out-of-bag round (issue 42)
        "FedForestClassifier-params",
        lambda seed: _forest(FedForestClassifier, "hist")(seed).set_params(
            class_weight="balanced_subsample", oob_score=True
        ),
        keeps_state=True,
    ),
    Entry(
        "FedForestRegressor-hist",
        _forest(FedForestRegressor, "hist"),
        regression=True,
        keeps_state=True,
    ),
    Entry(
        "FedForestRegressor-quantile",
        _forest(FedForestRegressor, "quantile"),
        regression=True,
        keeps_state=True,
    ),
    Entry("FedGBDTClassifier", _gbdt(FedGBDTClassifier), keeps_state=True),
    Entry(
        "FedGBDTRegressor",
        _gbdt(FedGBDTRegressor),
        regression=True,
        keeps_state=True,
    ),
    Entry(
        "DPForestClassifier",
        lambda seed: DPForestClassifier(
            epsilon=1.0, max_depth=3, feature_ranges=RANGES, random_state=seed
        ),
        dp=True,
    ),
    Entry(
        "ICDTAClassifier",
        lambda seed: ICDTAClassifier(max_depth=2, random_state=seed),
        per_row=SKETCH,
    ),
    Entry(
        "FederatedID3Classifier",
        lambda seed: FederatedID3Classifier(max_depth=2, random_state=seed),
        per_row=SKETCH,
    ),
    Entry(  # with noise: declared edges (DP refuses the sketch round)
        "FederatedID3Classifier-epsilon",
        lambda seed: FederatedID3Classifier(
            epsilon=4.0, max_depth=2, bin_edges=EDGES, random_state=seed
        ),
        dp=True,
    ),
    Entry(
        "SyntheticDataClassifier",
        lambda seed: SyntheticDataClassifier(
            client_max_depth=2,
            samples_per_path=20,
            feature_ranges=RANGES,
            random_state=seed,
        ),
    ),
    Entry(
        "FedGAClassifier",
        _ga(FedGAClassifier),
        personal=True,
        dropout="continue",
        dp=True,
    ),
    Entry(
        "FedGARegressor",
        _ga(FedGARegressor),
        regression=True,
        personal=True,
        dropout="continue",
        dp=True,
    ),
    Entry(
        "FedAvgClassifier",
        lambda seed: FedAvgClassifier(
            n_rounds=2, local_steps=5, batch_size=8, random_state=seed
        ),
    ),
    Entry("LocalEnsembleClassifier", _local(LocalEnsembleClassifier)),
    Entry("LocalEnsembleRegressor", _local(LocalEnsembleRegressor), regression=True),
    Entry("LocalModelsClassifier", _local(LocalModelsClassifier), personal=True),
    Entry(
        "LocalModelsRegressor",
        _local(LocalModelsRegressor),
        regression=True,
        personal=True,
    ),
)


def data(
    regression: bool, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Training rows of three sites (X, y, groups) and held-out rows."""
    rng = np.random.default_rng(seed)
    n = sum(SIZES)
    X = rng.uniform(-3.0, 3.0, size=(n + 40, N_FEATURES))
    X[:, 3] = np.round(X[:, 3])  # ties
    signal = X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(scale=0.3, size=n + 40)
    y = signal if regression else (signal > 0).astype(np.int64)
    groups = np.repeat(SITES, SIZES)
    return X[:n], y[:n], groups, X[n:]


def params(check: str) -> list[Any]:
    """The entries as pytest parameters, skipped where ``check`` does not apply."""
    return [
        pytest.param(
            entry,
            id=entry.name,
            marks=[pytest.mark.skip(reason=entry.skip[check])]
            if check in entry.skip
            else [],
        )
        for entry in ENTRIES
    ]


def covers_every_estimator() -> set[str]:
    """Federated estimators of the registry of methods that no entry builds."""
    built = {type(entry.make(0)).__name__ for entry in ENTRIES}
    return set(estimator_homes()) - built
