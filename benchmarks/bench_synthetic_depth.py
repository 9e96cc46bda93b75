"""SyntheticDataClassifier's default global tree, measured (docs/synthetic.md).

    python benchmarks/bench_synthetic_depth.py          # every federation, seed 0
    python benchmarks/bench_synthetic_depth.py --seeds 0 1 2 --data car nursery

Every bundled dataset is split at random (2/3 train dealt to its clients, 1/3
test; ``_federations.random_split``) and fitted with the estimator's defaults
except the global tree's depth rule:

- ``auto``: the default — depth at most 10, every leaf at least
  ``samples_per_path`` (50; 100 when the table in docs/synthetic.md was
  measured) synthetic rows;
- ``7`` and ``4``: the paper's fixed depths (census, IoT), leaves of 1 row;
- ``None``: grown until pure (the default before ``auto``);
- ``10``: the depth bound of ``auto`` without its leaf size, to show which part
  of the rule does the work.

Printed per federation and rule: test accuracy, the majority-class rate, the
global tree's depth and nodes, the whole fit's wall time and its ratio to the
``7`` fit's in the same run. Times are wall times of the whole ``fit`` on this
machine; compare ratios. Adult with 200 clients takes several minutes per
seed (the ``None`` fits dominate).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import pandas as pd
from _federations import NATURAL, random_split
from _table import print_frame

from fedtrees import SyntheticDataClassifier

FEDERATIONS: dict[str, tuple[str, int | str]] = {
    "adult": ("adult", 200),
    "credit_default": ("credit_default", 200),
    "hotel_ac_iot": ("hotel_ac_iot", 200),
    "hotel_ac_iot (4 hotels)": ("hotel_ac_iot", NATURAL),
    "nursery": ("nursery", 50),
    "car": ("car", 10),
    "heart_disease (4 hospitals)": ("heart_disease", NATURAL),
}
RULES: dict[str, Any] = {"auto": "auto", "7": 7, "4": 4, "None": None, "10": 10}


def one_fit(split: Any, rule: Any, seed: int) -> dict[str, Any]:
    """Fit with the rule; return accuracy, the tree's size and the wall time."""
    start = time.perf_counter()
    model = SyntheticDataClassifier(global_max_depth=rule, random_state=seed)
    model.fit(split.X, split.y, groups=split.groups)
    seconds = time.perf_counter() - start
    return {
        "accuracy": model.score(split.X_test, split.y_test),
        "depth": model.tree_.max_depth,
        "nodes": model.tree_.n_nodes,
        "fit s": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", nargs="+", default=list(FEDERATIONS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--rules", nargs="+", default=list(RULES))
    args = parser.parse_args()
    one_fit(random_split("car", 3, 0), "auto", 0)  # warm up: imports, kernels
    rows = []
    for label in args.data:
        name, clients = FEDERATIONS[label]
        for seed in args.seeds:
            split = random_split(name, clients, seed)
            for rule in args.rules:
                result = one_fit(split, RULES[rule], seed)
                rows.append(
                    {"data": label, "seed": seed, "rule": rule}
                    | {"majority": split.majority}
                    | result
                )
                print(rows[-1], flush=True)
    frame = pd.DataFrame(rows)
    base = frame[frame["rule"] == "7"].set_index(["data", "seed"])["fit s"]
    keys = pd.MultiIndex.from_frame(frame[["data", "seed"]])
    frame["x time of 7"] = frame["fit s"].to_numpy() / base.reindex(keys).to_numpy()
    print_frame(frame, "SyntheticDataClassifier: global depth rules", width=160)
    summary = frame.pivot_table(
        index="data", columns="rule", values="accuracy", aggfunc="mean"
    )
    summary.insert(0, "majority", frame.groupby("data")["majority"].mean())
    print_frame(
        summary.reset_index().rename(columns={"data": "case"}),
        f"mean test accuracy over seeds {args.seeds}",
        width=160,
    )


if __name__ == "__main__":
    main()
