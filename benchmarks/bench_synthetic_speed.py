"""SyntheticDataClassifier on adult, 200 clients: time and accuracy (docs/synthetic.md).

    python benchmarks/bench_synthetic_speed.py                  # seeds 0..4
    python benchmarks/bench_synthetic_speed.py --seeds 0 --paths 100 30

adult is split at random as ``bench_defaults.py`` splits it (2/3 train dealt at
random to 200 clients, 1/3 test; ``_federations.random_split``, split seed 0)
and fitted with the estimator's defaults but ``samples_per_path`` (``--paths``)
and ``random_state`` (``--seeds``). Per fit: the test accuracy, the fit's wall
and CPU time (``time.process_time``: every thread of the process, which a
machine busy with other jobs distorts less), the synthetic rows and the global
tree's nodes; and, on the same synthetic set, the accuracy of scikit-learn's
exact entropy CART with the same limits (the global tree before it was binned)
and its fit's CPU time. The first fit of a process also loads the compiled
kernels: ``--warm`` fits once before measuring.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pandas as pd
from _federations import random_split
from _table import print_frame
from sklearn.tree import DecisionTreeClassifier

from fedtrees import SyntheticDataClassifier
from fedtrees.algorithms.synthetic._strategy import global_limits


def one_fit(split: Any, paths: int, seed: int) -> dict[str, Any]:
    """Fit with ``samples_per_path=paths``; also refit the exact CART on its rows."""
    model = SyntheticDataClassifier(samples_per_path=paths, random_state=seed)
    start, cpu = time.perf_counter(), time.process_time()
    model.fit(split.X, split.y, groups=split.groups)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    depth, leaf = global_limits("auto", model.min_samples_leaf, paths)
    X = model.synthetic_X_.to_numpy()
    exact = DecisionTreeClassifier(
        criterion="entropy", max_depth=depth, min_samples_leaf=leaf, random_state=seed
    )
    exact_cpu = time.process_time()
    exact.fit(np.asfortranarray(X, dtype=np.float32), model.synthetic_y_)
    exact_cpu = time.process_time() - exact_cpu
    test = model._codes(split.X_test)  # the one-hot columns the tree reads
    return {
        "samples_per_path": paths,
        "seed": seed,
        "accuracy": model.score(split.X_test, split.y_test),
        "fit s": seconds,
        "fit cpu s": cpu,
        "rows": X.shape[0],
        "nodes": model.tree_.n_nodes,
        "exact CART accuracy": float(
            np.mean(exact.predict(test.astype(np.float32)) == split.y_test)
        ),
        "exact CART cpu s": exact_cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--paths", type=int, nargs="+", default=[100])
    parser.add_argument("--warm", action="store_true")
    args = parser.parse_args()
    split = random_split("adult", 200, 0)
    if args.warm:
        one_fit(split, args.paths[0], args.seeds[0])
    rows = []
    for paths in args.paths:
        for seed in args.seeds:
            row = one_fit(split, paths, seed)
            print(
                {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}
            )
            rows.append(row)
    frame = pd.DataFrame(rows)
    print_frame(frame, "adult, 200 clients: fits by samples_per_path and seed", 200)
    summary = frame.groupby("samples_per_path")[
        ["accuracy", "exact CART accuracy", "fit s", "fit cpu s", "exact CART cpu s"]
    ].agg(["mean", "std"])
    summary.columns = [" ".join(c) for c in summary.columns]
    print_frame(
        summary.reset_index(), "mean and standard deviation over the seeds", 200
    )


if __name__ == "__main__":
    main()
