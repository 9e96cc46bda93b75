"""Should ``candidates="hist"`` be FedForest's default? Accuracy over 5 seeds.

    python benchmarks/bench_fedforest_candidates.py           # everything (~15 min)
    python benchmarks/bench_fedforest_candidates.py --quick   # fewer trees and rows

The rule (the histogram engine's issue): hist becomes the default if, over 5
seeds, its score on each of three workloads is within the seeds' spread of
``"quantile"``'s — here: hist's mean lies inside the [min, max] of quantile's
five scores, or beats quantile's mean. The workloads:

- **heart**: the fedforest-heart experiment's FedForest (100 trees, no depth
  limit, 4 hospitals), accuracy on the pooled test rows (the split is fixed;
  the seed drives bootstrap and feature draws);
- **synthetic**: the fedforest-synthetic experiment's three main settings
  (homogeneous, covariate shift, outcome shift; 4 clients), test MSE (lower is
  better), a new data draw per seed;
- **benchmark**: the FedForest benchmark's data (make_classification, 20
  features, 100k rows, 10 clients, 50 trees, depth 12), accuracy.

Prints one table: per workload and mode, the mean, sd, min and max over the
seeds, and the verdict.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
from _table import print_frame
from bench_fedforest import data, even_groups

from fedtrees import FedForestClassifier, FedForestRegressor
from fedtrees.datasets import load
from fedtrees.datasets.synthetic import make_fedforest

SEEDS = range(5)
MODES = ("quantile", "hist")


def heart(candidates: str, seed: int, quick: bool) -> float:
    heart_data = load("heart_disease", flamby=True)
    train, test = heart_data.train(), heart_data.test()
    assert train.clients is not None
    model = FedForestClassifier(
        n_estimators=20 if quick else 100, candidates=candidates, random_state=seed
    )
    model.fit(train.X, train.y, groups=train.clients.to_numpy().astype(str))
    return float(model.score(test.X, test.y))


def synthetic(setting: str) -> Callable[[str, int, bool], float]:
    def run(candidates: str, seed: int, quick: bool) -> float:
        d = make_fedforest(setting, random_state=seed)  # type: ignore[arg-type]
        model = FedForestRegressor(
            n_estimators=20 if quick else 100,
            max_depth=10,
            min_samples_leaf=5,
            max_features=1 / 3,
            candidates=candidates,
            random_state=seed,
        )
        model.fit(d.X, d.y, groups=d.groups)
        return float(np.mean((model.predict(d.X_test) - d.y_test) ** 2))

    return run


def benchmark(candidates: str, seed: int, quick: bool) -> float:
    rows = 20_000 if quick else 100_000
    X_train, X_test, y_train, y_test = data(rows, seed=seed)
    model = FedForestClassifier(
        n_estimators=50, max_depth=12, candidates=candidates, random_state=seed
    )
    model.fit(X_train, y_train, groups=even_groups(X_train.shape[0], 10, seed))
    return float(model.score(X_test, y_test))


WORKLOADS: dict[str, tuple[Callable[[str, int, bool], float], bool]] = {
    # name: (run, higher is better)
    "heart accuracy": (heart, True),
    "synthetic homogeneous MSE": (synthetic("homogeneous"), False),
    "synthetic covariate shift MSE": (synthetic("covariate_shift"), False),
    "synthetic outcome shift MSE": (synthetic("outcome_shift"), False),
    "benchmark accuracy": (benchmark, True),
}


def verdict(quantile: np.ndarray, hist: np.ndarray, higher: bool) -> str:
    """Within the spread: hist's mean inside quantile's [min, max], or better."""
    mean = hist.mean()
    better = mean >= quantile.mean() if higher else mean <= quantile.mean()
    inside = quantile.min() <= mean <= quantile.max()
    return "yes" if better or inside else "NO"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rows = []
    for name, (run, higher) in WORKLOADS.items():
        scores = {}
        for mode in MODES:
            start = time.perf_counter()
            scores[mode] = np.array([run(mode, s, args.quick) for s in SEEDS])
            seconds = time.perf_counter() - start
            print(f"{name}, {mode}: {scores[mode]} ({seconds:.0f} s)", file=sys.stderr)
            rows.append(
                {
                    "workload": name,
                    "mode": mode,
                    "mean": scores[mode].mean(),
                    "sd": scores[mode].std(ddof=1),
                    "min": scores[mode].min(),
                    "max": scores[mode].max(),
                    "fit s (5 seeds)": seconds,
                }
            )
        rows[-1]["hist within quantile's spread"] = verdict(
            scores["quantile"], scores["hist"], higher
        )
    frame = pd.DataFrame(rows)
    print_frame(frame.fillna(""), "hist vs quantile over 5 seeds", 160)


if __name__ == "__main__":
    main()
