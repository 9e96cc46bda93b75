"""DP forest fit and predict time at HuGaDB size, measured in one run.

    python benchmarks/bench_dpforest.py

Setting (issue 5): 18 in-process clients, depth 10, 38 features, 7 classes,
221,144 rows (the size of the 7-activity HuGaDB subset), declared ranges covering
the data. Target: fit under 10 s on 2 cores; prediction vectorised. A scikit-learn
decision tree per client (no DP) is timed in the same run for scale.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from _table import print_frame
from sklearn.tree import DecisionTreeClassifier

from fedtrees import DPForestClassifier

ROWS, FEATURES, CLIENTS, CLASSES, DEPTH = 221_144, 38, 18, 7, 10


def main() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(ROWS, FEATURES))
    y = np.argmax(X[:, :CLASSES] + rng.normal(scale=0.5, size=(ROWS, CLASSES)), axis=1)
    groups = rng.integers(0, CLIENTS, ROWS)
    ranges = [(-5.0, 5.0)] * FEATURES
    rows = []
    for budget in ("paper", "parallel"):
        model = DPForestClassifier(100.0, DEPTH, ranges, budget=budget, random_state=0)
        start = time.perf_counter()
        model.fit(X, y, groups=groups)
        fit = time.perf_counter() - start
        start = time.perf_counter()
        accuracy = model.score(X, y)
        predict = time.perf_counter() - start
        rows.append(
            {
                "method": f"DPForest ({budget}), {CLIENTS} clients",
                "fit s": fit,
                "predict s": predict,
                "accuracy": accuracy,
                "KiB": (model.communication_.bytes_up + model.communication_.bytes_down)
                / 1024,
            }
        )
    start = time.perf_counter()
    for k in range(CLIENTS):
        mine = groups == k
        DecisionTreeClassifier(max_depth=DEPTH, random_state=0).fit(X[mine], y[mine])
    rows.append(
        {
            "method": "sklearn tree per client (no DP)",
            "fit s": time.perf_counter() - start,
        }
    )
    title = f"DP forest, {ROWS} rows, depth {DEPTH}, {FEATURES} features"
    print_frame(pd.DataFrame(rows), title)


if __name__ == "__main__":
    main()
