"""Every estimator with its defaults, on a random federation the tests do not name.

    python benchmarks/bench_defaults.py            # credit_default, 50 clients
    python benchmarks/bench_defaults.py --data adult --clients 200
    python benchmarks/bench_defaults.py --only FedGBDTClassifier SyntheticDataClassifier

The bundled dataset is split at random (``_federations.random_split``: 2/3
train dealt at random to ``--clients`` clients, 1/3 test, every test row given
one of the clients). Classifiers predict the dataset's label; regressors a
numeric column (``--target``, credit_default's ``LIMIT_BAL`` by default) from
the other columns. Every estimator runs with its defaults and ``random_state``
only, except:

- ``DPForestClassifier`` needs declared ``feature_ranges``: the min and max of
  every numeric column over the whole bundled file (a public codebook's bounds);
- ``ICDTAClassifier`` runs twice, ``base="id3"`` (its default) and ``"cart"``;
- personalized models (``FedGA*``, ``LocalModels*``) predict every test row
  with its client's model (``client=``).

Each row: the test score (accuracy, or R²), the trivial predictor's (the
training majority class, or the training mean), a pooled scikit-learn
reference with its own defaults fitted on all training rows (categorical
columns one-hot), the fit's wall time and the reference's, and their ratios;
the fit's CPU time (``time.process_time``, every thread of the process), which
a machine busy with other jobs distorts less.
``check`` flags a score within 0.5 point of the trivial predictor's (or
below) and a fit over ``--slow`` seconds. Times are wall times on this
machine: compare ratios across machines, not seconds. ``--timeout`` replaces
every estimator's round timeout (its only non-default setting): on a
machine shared with other heavy jobs a round can wait past the default.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from _federations import Split, load, random_split
from _table import print_frame
from sklearn.ensemble import (
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, r2_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import fedtrees
from fedtrees.exceptions import FedTreesError

CLOSE_TO_TRIVIAL = 0.005


@dataclass(frozen=True)
class Case:
    """One estimator with its defaults, and the pooled reference it is read against."""

    name: str
    make: Callable[[int, Split], Any]
    reference: Callable[[], Any]
    regression: bool = False
    personal: bool = False


def _plain(cls: str, **params: Any) -> Callable[[int, Split], Any]:
    return lambda seed, split: getattr(fedtrees, cls)(random_state=seed, **params)


def _dp_forest(seed: int, split: Split) -> Any:
    return fedtrees.DPForestClassifier(
        feature_ranges=public_ranges(split), random_state=seed
    )


def public_ranges(split: Split) -> dict[str, tuple[float, float]]:
    """The min and max of every numeric column over the whole bundled file."""
    whole = load(split.name).X
    numeric = [c for c in split.X.columns if c in whole and _numeric(whole[c])]
    return {c: (float(whole[c].min()), float(whole[c].max())) for c in numeric}


def _numeric(column: pd.Series) -> bool:
    return bool(pd.api.types.is_numeric_dtype(column)) and not isinstance(
        column.dtype, pd.CategoricalDtype
    )


CASES = (
    Case("FedForestClassifier", _plain("FedForestClassifier"), RandomForestClassifier),
    Case(
        "FedForestRegressor",
        _plain("FedForestRegressor"),
        RandomForestRegressor,
        regression=True,
    ),
    Case(
        "FedGBDTClassifier",
        _plain("FedGBDTClassifier"),
        HistGradientBoostingClassifier,
    ),
    Case(
        "FedGBDTRegressor",
        _plain("FedGBDTRegressor"),
        HistGradientBoostingRegressor,
        regression=True,
    ),
    Case("DPForestClassifier", _dp_forest, RandomForestClassifier),
    Case("ICDTAClassifier", _plain("ICDTAClassifier"), DecisionTreeClassifier),
    Case(
        "ICDTAClassifier(base='cart')",
        _plain("ICDTAClassifier", base="cart"),
        DecisionTreeClassifier,
    ),
    Case(
        "FederatedID3Classifier",
        _plain("FederatedID3Classifier"),
        DecisionTreeClassifier,
    ),
    Case(
        "SyntheticDataClassifier",
        _plain("SyntheticDataClassifier"),
        DecisionTreeClassifier,
    ),
    Case(
        "FedGAClassifier",
        _plain("FedGAClassifier"),
        DecisionTreeClassifier,
        personal=True,
    ),
    Case(
        "FedGARegressor",
        _plain("FedGARegressor"),
        DecisionTreeRegressor,
        regression=True,
        personal=True,
    ),
    Case(
        "FedAvgClassifier",
        _plain("FedAvgClassifier"),
        lambda: make_pipeline(StandardScaler(), LogisticRegression()),
    ),
    Case(
        "LocalEnsembleClassifier",
        _plain("LocalEnsembleClassifier"),
        RandomForestClassifier,
    ),
    Case(
        "LocalEnsembleRegressor",
        _plain("LocalEnsembleRegressor"),
        RandomForestRegressor,
        regression=True,
    ),
    Case(
        "LocalModelsClassifier",
        _plain("LocalModelsClassifier"),
        RandomForestClassifier,
        personal=True,
    ),
    Case(
        "LocalModelsRegressor",
        _plain("LocalModelsRegressor"),
        RandomForestRegressor,
        regression=True,
        personal=True,
    ),
)


def run_case(
    case: Case, split: Split, seed: int, timeout: float | None
) -> dict[str, Any]:
    """Fit the case's estimator and its reference; score both on the test rows."""
    metric = r2_score if case.regression else accuracy_score
    model = case.make(seed, split)
    if timeout is not None:
        model.set_params(timeout=timeout)
    start, cpu = time.perf_counter(), time.process_time()
    model.fit(split.X, split.y, groups=split.groups)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    where = {"client": split.groups_test} if case.personal else {}
    score = metric(split.y_test, model.predict(split.X_test, **where))
    reference, reference_seconds = _reference(case, split, seed, metric)
    trivial = split.mean_r2 if case.regression else split.majority
    return {
        "method": case.name,
        "metric": "R2" if case.regression else "accuracy",
        "score": score,
        "trivial": trivial,
        "sklearn": reference,
        "x sklearn": score / reference if reference else np.nan,
        "fit s": seconds,
        "fit cpu s": cpu,
        "sklearn s": reference_seconds,
        "x sklearn time": seconds / reference_seconds,
    }


def _reference(
    case: Case, split: Split, seed: int, metric: Callable[..., float]
) -> tuple[float, float]:
    """The pooled scikit-learn reference's test score and fit time."""
    train = pd.get_dummies(split.X, dtype=float)
    test = pd.get_dummies(split.X_test, dtype=float).reindex(
        columns=train.columns, fill_value=0.0
    )
    reference = case.reference()
    if "random_state" in reference.get_params():
        reference.set_params(random_state=seed)
    start = time.perf_counter()
    reference.fit(train, split.y)
    seconds = time.perf_counter() - start
    return float(metric(split.y_test, reference.predict(test))), seconds


def check(row: dict[str, Any], slow: float) -> str:
    """What is wrong with a row, if anything: near the trivial score, or slow."""
    notes = []
    if row["score"] <= row["trivial"] + CLOSE_TO_TRIVIAL:
        notes.append("AT OR BELOW TRIVIAL")
    if row["fit s"] > slow:
        notes.append(f"over {slow:g} s")
    return "; ".join(notes) or "ok"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="credit_default")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--target", default="LIMIT_BAL")
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--slow", type=float, default=120.0)
    parser.add_argument("--only", nargs="+", default=None)
    parser.add_argument("--timeout", type=float, default=None)
    args = parser.parse_args()
    cases = [c for c in CASES if not args.only or c.name in args.only]
    splits = {
        False: random_split(args.data, args.clients, args.seed, rows=args.rows),
    }
    if any(case.regression for case in cases):  # --target is a column of --data
        splits[True] = random_split(
            args.data, args.clients, args.seed, target=args.target, rows=args.rows
        )
    rows = []
    for case in cases:
        try:
            row = run_case(case, splits[case.regression], args.seed, args.timeout)
        except FedTreesError as error:  # a default that refuses this data, by name
            row = {"method": case.name, "check": f"{type(error).__name__}: {error}"}
        else:
            row["check"] = check(row, args.slow)
        rows.append(row)
        print({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()})
    split = splits[False]
    title = (
        f"defaults on {args.data}: {len(split.y)} training rows dealt at random to "
        f"{split.n_clients} clients, {len(split.y_test)} test rows (seed {args.seed}); "
        f"regressors predict {args.target}"
    )
    print_frame(pd.DataFrame(rows).rename(columns={"check": "note"}), title, 200)


if __name__ == "__main__":
    main()
