"""Prediction speed: FedForest against scikit-learn's forest of the same size.

    python benchmarks/bench_predict.py
    python benchmarks/bench_predict.py --repeats 20

Setting (issue 25): 20,000 rows of 20 numeric features (a noisy threshold rule),
federated over 4 in-process clients. ``FedForestClassifier`` and
``FedForestRegressor`` (``candidates="hist"``, 50 trees, depth 6 and 12) against
scikit-learn's ``RandomForestClassifier`` / ``RandomForestRegressor`` fitted on
the pooled rows with the same depth, trees and ``max_features``. Times
``predict_proba`` (``predict`` for regression) on 1, 100 and 10,000 held-out
rows: the median of ``--repeats`` calls after one warm-up call, both models in
the same run. Reports milliseconds, the ratio fedtrees / scikit-learn (below
1: fedtrees is faster) and both forests' node counts. Target: ratio <= 1 for 1
row and for 10,000 rows. scikit-learn predicts on one thread (``n_jobs=None``),
fedtrees on every core from 1024 rows on: ``NUMBA_NUM_THREADS=1`` compares one
thread with one thread.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from _table import print_frame
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

from fedtrees import FedForestClassifier, FedForestRegressor

N_TREES = 50
ROW_COUNTS = (1, 100, 10_000)


def data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, binary labels and a continuous target (20 features)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 20))
    score = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] - X[:, 3] + rng.normal(0, 0.5, n)
    return X, (score > 0).astype(int), score


def median_ms(call: Callable[[], Any], repeats: int) -> float:
    """Median wall time of ``call`` in milliseconds, after one warm-up call."""
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1000.0 * float(np.median(times))


def models(task: str, depth: int) -> tuple[Any, Any]:
    """The fedtrees forest and scikit-learn's forest of the same size."""
    settings = {"n_estimators": N_TREES, "max_depth": depth, "random_state": 0}
    if task == "classification":
        return (
            FedForestClassifier(**settings),
            RandomForestClassifier(**settings, max_features="sqrt"),
        )
    return (
        FedForestRegressor(**settings),
        RandomForestRegressor(**settings, max_features=1.0),
    )


def run(repeats: int) -> pd.DataFrame:
    X, labels, score = data(20_000, 0)
    X_test = data(10_000, 1)[0]
    groups = np.arange(X.shape[0]) % 4
    rows = []
    for task in ("classification", "regression"):
        y = labels if task == "classification" else score
        for depth in (6, 12):
            ours, theirs = models(task, depth)
            ours.fit(X, y, groups=groups)
            theirs.fit(X, y)
            method = "predict_proba" if task == "classification" else "predict"
            for n in ROW_COUNTS:
                batch = X_test[:n]
                ours_ms = median_ms(partial(getattr(ours, method), batch), repeats)
                theirs_ms = median_ms(partial(getattr(theirs, method), batch), repeats)
                rows.append(
                    {
                        "case": f"{task}, depth {depth}",
                        "rows": n,
                        "fedtrees ms": ours_ms,
                        "scikit-learn ms": theirs_ms,
                        "ratio": ours_ms / theirs_ms,
                        "nodes": sum(tree.n_nodes for tree in ours.trees_),
                        "scikit-learn nodes": sum(
                            e.tree_.node_count for e in theirs.estimators_
                        ),
                    }
                )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11)
    args = parser.parse_args()
    frame = run(args.repeats)
    print_frame(frame, f"predict, {N_TREES} trees: fedtrees / scikit-learn")


if __name__ == "__main__":
    main()
