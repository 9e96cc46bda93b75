"""FedGBDT against XGBoost, LightGBM and scikit-learn boosting: one run, one table.

    python benchmarks/bench_fedgbdt.py                    # 100k and 1M rows
    python benchmarks/bench_fedgbdt.py --skip-1m          # 100k rows only
    python benchmarks/bench_fedgbdt.py --rows 100000 --clients 100 1000
    python benchmarks/bench_fedgbdt.py --profile          # + cProfile of one fit

Setting: ``make_classification`` with 20 features, binary (the data of
``bench_fedforest.py``), 100 trees, depth 6, learning rate 0.1, accuracy on
20 % held-out rows. FedGBDTClassifier over in-process clients (the training
rows split evenly at random; 10 clients, plus ``--clients`` at the smallest
size) against, on the pooled rows, XGBoost's XGBClassifier
(``tree_method="hist"``, ``n_jobs=-1``), LightGBM's LGBMClassifier
(``num_leaves=63``: a full depth-6 tree) and scikit-learn's
HistGradientBoostingClassifier (no early stopping).

Every configuration runs in its own process, so "peak GiB" is that process's
peak resident memory (data generation included). "MiB moved" is up + down over
the whole fit; "KiB/round" is that over the rounds; "max MiB/round" is the
largest round (all clients, both ways). "iters" is the fitted ``n_iter_``.

Targets (the "target" and "met" columns):

- 10 clients: fit <= 5x XGBoost at 100k rows, <= 3x XGBoost at 1M rows;
- every FedGBDT row: accuracy at most 0.5 point below XGBoost's on the same
  data (the signed difference is shown);
- 100 clients: fit <= 1.5x the 10-client fit at the same size.

FedGBDT's clients are served on ``--workers`` threads (default: the machine's
cores); its kernels are compiled by a small fit before the timed one.
``--profile`` runs one more FedGBDT fit (10 clients, the smallest size) under
cProfile, in its own process, and prints the 30 top cumulative entries to
stderr; that fit is not in the table (the profiler slows it down).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _table import print_frame
from bench_fedforest import (
    N_FEATURES,
    ONE_M,
    check_target,
    chosen_sizes,
    data,
    even_groups,
    in_child,
    ledger_columns,
    peak_gib,
    timed,
)

N_TREES, DEPTH, LEARNING_RATE = 100, 6, 0.1
BASE_CLIENTS, SCALE_CLIENTS = 10, 100
SPEED_LIMITS = {100_000: 5.0, ONE_M: 3.0}  # FedGBDT / XGBoost fit, 10 clients
ACCURACY_POINTS = 0.5  # FedGBDT at most this far below XGBoost
SCALING_LIMIT = 1.5  # SCALE_CLIENTS fit / BASE_CLIENTS fit
POOLED = ("xgboost", "lightgbm", "sklearn")
KiB, MiB = 2**10, 2**20
LABELS = {
    "fedgbdt": "FedGBDT",
    "xgboost": "XGBoost hist, pooled",
    "lightgbm": "LightGBM, pooled",
    "sklearn": "sklearn HistGB, pooled",
}


@dataclass(frozen=True)
class Config:
    """One benchmark row: run in its own process (``--one``)."""

    rows: int
    clients: int
    method: str
    workers: int
    profile: bool = False


def fedgbdt(workers: int, **options: Any) -> Any:
    from fedtrees import FedGBDTClassifier

    params: dict[str, Any] = {
        "n_estimators": N_TREES,
        "max_depth": DEPTH,
        "learning_rate": LEARNING_RATE,
        "workers": workers,
        "random_state": 0,
    }
    return FedGBDTClassifier(**{**params, **options})


def warm_up(workers: int) -> None:
    """Compile FedGBDT's kernels with a small fit."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(2000, N_FEATURES)), np.arange(2000) % 2
    fedgbdt(workers, n_estimators=2).fit(X, y, groups=even_groups(2000, 2))


def run_fedgbdt(config: Config) -> dict[str, Any]:
    warm_up(config.workers)
    X_train, X_test, y_train, y_test = data(config.rows)
    groups = even_groups(X_train.shape[0], config.clients)
    model = fedgbdt(config.workers)
    model, seconds = timed(
        lambda: model.fit(X_train, y_train, groups=groups), config.profile
    )
    return {
        "fit s": seconds,
        "accuracy": model.score(X_test, y_test),
        "iters": model.n_iter_,
        **ledger_columns(model.communication_),
    }


def xgboost_model() -> Any:
    from xgboost import XGBClassifier

    return XGBClassifier(
        tree_method="hist",
        n_estimators=N_TREES,
        max_depth=DEPTH,
        learning_rate=LEARNING_RATE,
        n_jobs=-1,
    )


def lightgbm_model() -> Any:
    from lightgbm import LGBMClassifier

    return LGBMClassifier(
        n_estimators=N_TREES,
        max_depth=DEPTH,
        num_leaves=2**DEPTH - 1,
        learning_rate=LEARNING_RATE,
        verbose=-1,
    )


def sklearn_model() -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(
        max_iter=N_TREES,
        max_depth=DEPTH,
        learning_rate=LEARNING_RATE,
        early_stopping=False,
    )


POOLED_MODELS: dict[str, Callable[[], Any]] = {
    "xgboost": xgboost_model,
    "lightgbm": lightgbm_model,
    "sklearn": sklearn_model,
}


def run_pooled(config: Config) -> dict[str, Any]:
    try:
        model = POOLED_MODELS[config.method]()
    except ImportError:
        return {"note": f"{config.method}: not installed (fedtrees[bench])"}
    X_train, X_test, y_train, y_test = data(config.rows)
    model, seconds = timed(lambda: model.fit(X_train, y_train))
    accuracy = float(np.mean(model.predict(X_test) == y_test))
    return {"fit s": seconds, "accuracy": accuracy}


def run_one(config: Config) -> dict[str, Any]:
    """Child process: one configuration, its measurements and its peak memory."""
    runner = run_fedgbdt if config.method == "fedgbdt" else run_pooled
    result = runner(config)
    return {**asdict(config), "peak GiB": peak_gib(), **result}


def configs(args: argparse.Namespace) -> list[Config]:
    """Every row of the table, in order."""
    rows: list[Config] = []
    w = args.workers
    all_sizes = chosen_sizes(args)
    for size in all_sizes:
        rows.append(Config(size, BASE_CLIENTS, "fedgbdt", w))
        rows += [Config(size, 1, m, w) for m in POOLED]
        if size == min(all_sizes):
            rows += [Config(size, c, "fedgbdt", w) for c in args.clients]
    return rows


# -- the table: ratios and targets -------------------------------------------


def _value(
    frame: pd.DataFrame, rows: int, clients: int, method: str, column: str
) -> float:
    """``column`` of the row (rows, clients, method); NaN if it was not run."""
    match = frame[
        (frame["rows"] == rows)
        & (frame["clients"] == clients)
        & (frame["method"] == method)
    ]
    return float(match[column].iloc[0]) if len(match) else np.nan


def targets(frame: pd.DataFrame, row: pd.Series) -> list[tuple[str, str]]:
    """(target, met) pairs that apply to one row."""
    rows, clients = int(row["rows"]), int(row["clients"])
    if row["method"] != "fedgbdt":
        return []
    checks: list[tuple[str, str]] = []
    if clients == BASE_CLIENTS and rows in SPEED_LIMITS:
        limit, ratio = SPEED_LIMITS[rows], row["x XGBoost"]
        label = f"<={limit:g}x XGBoost"
        checks.append(check_target(label, ratio, limit, f"{ratio:.2f}x"))
    gap = 100 * (_value(frame, rows, 1, "xgboost", "accuracy") - row["accuracy"])
    label = f"acc >= XGBoost-{ACCURACY_POINTS:g}pt"
    checks.append(check_target(label, gap, ACCURACY_POINTS, f"{-gap:+.2f} pt"))
    if clients == SCALE_CLIENTS:
        ratio = row["fit s"] / _value(frame, rows, BASE_CLIENTS, "fedgbdt", "fit s")
        label = f"<={SCALING_LIMIT:g}x {BASE_CLIENTS} clients"
        checks.append(check_target(label, ratio, SCALING_LIMIT, f"{ratio:.2f}x"))
    return checks


def table(results: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(results)
    for column in ("fit s", "accuracy", "peak GiB", "iters", "rounds", "MiB moved"):
        if column not in frame:
            frame[column] = np.nan
    if "note" not in frame:
        frame["note"] = None
    federated = frame["method"] == "fedgbdt"
    for method, column in (
        ("xgboost", "x XGBoost"),
        ("lightgbm", "x LightGBM"),
        ("sklearn", "x sklearn"),
    ):
        base = pd.Series(
            [_value(frame, r, 1, method, "fit s") for r in frame["rows"]],
            index=frame.index,
        )
        keep = federated if method != "xgboost" else frame["method"] != "xgboost"
        frame[column] = (frame["fit s"] / base).where(keep)
    frame["KiB/round"] = frame["MiB moved"] * MiB / KiB / frame["rounds"]
    checks = [targets(frame, row) for _, row in frame.iterrows()]
    frame["target"] = ["; ".join(t for t, _ in c) or None for c in checks]
    frame["met"] = ["; ".join(m for _, m in c) or None for c in checks]
    return frame


def integers(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts as integers (blank where missing), not as 3-decimal floats."""
    for column in ("rows", "clients", "iters", "rounds"):
        values = [None if pd.isna(v) else int(v) for v in frame[column]]
        frame[column] = pd.Series(values, index=frame.index, dtype=object)
    return frame


COLUMNS = [
    "rows",
    "clients",
    "method",
    "fit s",
    "accuracy",
    "iters",
    "rounds",
    "MiB moved",
    "KiB/round",
    "max MiB/round",
    "peak GiB",
    "x XGBoost",
    "x LightGBM",
    "x sklearn",
    "target",
    "met",
    "note",
]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, ONE_M])
    parser.add_argument(
        "--clients", type=int, nargs="*", default=[SCALE_CLIENTS],
        help="client counts of the scaling rows, at the smallest --rows",
    )  # fmt: skip
    parser.add_argument("--skip-1m", action="store_true", help="drop sizes >= 1M")
    parser.add_argument(
        "--profile", action="store_true", help="+ a cProfiled FedGBDT fit (stderr)"
    )
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.one:
        result = run_one(Config(**json.loads(args.one)))
        Path(args.out).write_text(json.dumps(result))
        return
    if args.profile and chosen_sizes(args):
        profiled = Config(
            min(chosen_sizes(args)), BASE_CLIENTS, "fedgbdt", args.workers, True
        )
        print(f"profiling {profiled}", file=sys.stderr, flush=True)
        in_child(profiled, __file__)
    results = []
    for config in configs(args):
        print(f"running {config}", file=sys.stderr, flush=True)
        results.append(in_child(config, __file__))
    frame = table(results)
    frame["method"] = [LABELS.get(m, m) for m in frame["method"]]
    title = (
        f"FedGBDT benchmark ({N_TREES} trees, depth {DEPTH}, "
        f"learning rate {LEARNING_RATE:g}, {N_FEATURES} feat.)"
    )
    print_frame(integers(frame.reindex(columns=COLUMNS)), title, 250)


if __name__ == "__main__":
    main()
