"""FedForest against scikit-learn and XGBoost random forests, measured in one run.

    python benchmarks/bench_fedforest.py                  # 100k and 1M rows
    python benchmarks/bench_fedforest.py --rows 100000    # one size
    python benchmarks/bench_fedforest.py --profile        # + cProfile of FedForest

Setting (issue 4): ``make_classification`` with 20 features, 50 trees, depth 12,
FedForest over 10 in-process clients (rows split evenly at random) against
scikit-learn's RandomForestClassifier (``n_jobs=-1``) and XGBoost's
XGBRFClassifier (``tree_method="hist"``, ``n_jobs=-1``) on the pooled rows;
accuracy on 20 % held-out rows. Targets: at 100k, FedForest time <= 1.0x
scikit-learn's; at 1M, <= 2x XGBoost-RF's; accuracy within 1 point of
scikit-learn's.

FedForest's clients are served on ``--workers`` threads (default: the machine's
cores); the numba kernels release the GIL.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from _table import print_frame
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split

from fedtrees import FedForestClassifier

N_FEATURES, N_TREES, DEPTH, N_CLIENTS = 20, 50, 12, 10


def data(rows: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    X, y = make_classification(
        n_samples=rows,
        n_features=N_FEATURES,
        n_informative=10,
        n_redundant=5,
        random_state=seed,
    )
    return tuple(train_test_split(X, y, test_size=0.2, random_state=seed))


def timed(fit: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    model = fit()
    return model, time.perf_counter() - start


def run_size(rows: int, workers: int, profile: bool) -> list[dict[str, Any]]:
    X_train, X_test, y_train, y_test = data(rows)
    groups = np.random.default_rng(1).integers(0, N_CLIENTS, X_train.shape[0])
    results = []

    ours = FedForestClassifier(
        n_estimators=N_TREES, max_depth=DEPTH, workers=workers, random_state=0
    )
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    model, seconds = timed(lambda: ours.fit(X_train, y_train, groups=groups))
    if profiler:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    ledger = model.communication_
    results.append(
        {
            "rows": rows,
            "method": f"FedForest, {N_CLIENTS} clients",
            "fit s": seconds,
            "accuracy": model.score(X_test, y_test),
            "rounds": ledger.rounds,
            "MiB up": ledger.bytes_up / 2**20,
            "MiB down": ledger.bytes_down / 2**20,
        }
    )

    sk = RandomForestClassifier(
        n_estimators=N_TREES, max_depth=DEPTH, n_jobs=-1, random_state=0
    )
    model, seconds = timed(lambda: sk.fit(X_train, y_train))
    results.append(
        {
            "rows": rows,
            "method": "sklearn RF, pooled",
            "fit s": seconds,
            "accuracy": model.score(X_test, y_test),
        }
    )

    try:
        from xgboost import XGBRFClassifier
    except ImportError:  # pip install 'fedtrees[bench]'
        return results
    xgb = XGBRFClassifier(
        n_estimators=N_TREES,
        max_depth=DEPTH,
        tree_method="hist",
        subsample=0.632,
        colsample_bynode=np.sqrt(N_FEATURES) / N_FEATURES,
        n_jobs=-1,
        random_state=0,
    )
    model, seconds = timed(lambda: xgb.fit(X_train, y_train))
    results.append(
        {
            "rows": rows,
            "method": "XGBoost RF hist, pooled",
            "fit s": seconds,
            "accuracy": float(np.mean(model.predict(X_test) == y_test)),
        }
    )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    FedForestClassifier(n_estimators=1, max_depth=2).fit(  # compile the kernels
        np.random.default_rng(0).normal(size=(200, 3)), np.arange(200) % 2
    )
    rows = [r for size in args.rows for r in run_size(size, args.workers, args.profile)]
    frame = pd.DataFrame(rows)
    for size, part in frame.groupby("rows"):
        seconds = part.set_index("method")["fit s"]
        ours = seconds.iloc[0]
        frame.loc[part.index, "x sklearn"] = ours / seconds.get(
            "sklearn RF, pooled", np.nan
        )
        frame.loc[part.index, "x XGBoost"] = ours / seconds.get(
            "XGBoost RF hist, pooled", np.nan
        )
        frame.loc[part.index[1:], ["x sklearn", "x XGBoost"]] = np.nan
        del size
    print_frame(frame, "FedForest benchmark (50 trees, depth 12, 20 features)", 150)


if __name__ == "__main__":
    main()
