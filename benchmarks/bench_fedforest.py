"""FedForest against scikit-learn and XGBoost random forests: one run, one table.

    python benchmarks/bench_fedforest.py                    # 100k and 1M rows
    python benchmarks/bench_fedforest.py --skip-1m          # 100k rows only
    python benchmarks/bench_fedforest.py --rows 100000 --clients 100
    python benchmarks/bench_fedforest.py --missing          # + 20 % NaN rows
    python benchmarks/bench_fedforest.py --flower           # + heart forest on Flower
    python benchmarks/bench_fedforest.py --profile          # + cProfile of one fit

Setting: ``make_classification`` with 20 features, 50 trees, depth 12,
accuracy on 20 % held-out rows. FedForest with ``candidates="hist"`` (the
histogram engine) and ``"quantile"`` (the paper's sketches) over in-process
clients (the training rows split evenly at random; 10 clients, plus
``--clients`` at the smallest size for the modes of ``--scale-candidates``, plus
1000 clients at 1M) against scikit-learn's RandomForestClassifier and XGBoost's
XGBRFClassifier (``tree_method="hist"``) on the pooled rows, both with
``n_jobs=-1``. ``--missing`` adds the same data with 20 % NaN in two
informative features (scikit-learn's and XGBoost's forests accept NaN too).

Every configuration runs in its own process, so "peak GiB" is that process's
peak resident memory (data generation included). "MiB moved" is up + down over
the whole fit; "max MiB/round" is the largest round (all clients, both ways).

Targets (the "target" and "met" columns):

- ``"hist"``, 10 clients: <= 0.5x scikit-learn at 100k; <= 2x XGBoost-RF at
  100k and at 1M;
- ``"quantile"``, 10 clients, 100k rows: <= 1.0x scikit-learn;
- every 10-client FedForest row (the NaN rows too): accuracy at most 1 point
  below scikit-learn's on the same data;
- 100 clients at 100k rows: <= 1.5x the same method's 10-client time;
- 1000 clients x 1M rows: peak memory <= 24 GiB.

``--flower`` adds heart FedForest (the fedforest-heart experiment's forest: 50
trees, unlimited depth) in process and over a Flower deployment on 127.0.0.1
(TLS, a SuperLink and one SuperNode per hospital; needs ``fedtrees[flower]``).
Its "fit s" is Flower's own elapsed run time; its peak memory is not measured
(the ServerApp and ClientApps are Flower's processes).

Rows measured before the histogram engine (``BEFORE``: 100k rows with 10
clients, quantile and the old hist with its per-node refinement) are shown
under the matching rows, with the after/before time and bytes ratios.

FedForest's clients are served on ``--workers`` threads (default: the
machine's cores); the compiled kernels release the GIL.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _table import print_frame

N_FEATURES, N_TREES, DEPTH, BASE_CLIENTS = 20, 50, 12, 10
ONE_M, MANY_CLIENTS = 1_000_000, 1000
CANDIDATES = ("hist", "quantile")
MiB, GiB = 2**20, 2**30
LABELS = {
    "quantile": "FedForest quantile",
    "hist": "FedForest hist",
    "sklearn": "sklearn RF, pooled",
    "xgboost": "XGBoost RF hist, pooled",
    "heart": "heart demo, in process",
    "flower": "heart demo, Flower 4 nodes",
}
HEART_ROWS = 486  # training rows of heart_disease (FLamby split)

BEFORE_COMMIT, BEFORE_DATE = "3a4526e", "2026-11-26"
BEFORE: list[dict[str, Any]] = [
    # Measured at BEFORE_COMMIT (before the histogram engine) with this script on
    # this benchmark's 2-core machine, one run each, kernels compiled beforehand.
    {
        "rows": 100_000,
        "clients": BASE_CLIENTS,
        "method": "quantile",
        "missing": False,
        "fit s": 16.31,
        "accuracy": 0.9640,
        "rounds": 25,
        "bytes": round(784.52 * MiB),
        "max round bytes": round(111.22 * MiB),
        "peak GiB": 1.22,
    },
    {  # the per-node refinement fired at almost every level: 36 rounds
        "rows": 100_000,
        "clients": BASE_CLIENTS,
        "method": "hist",
        "missing": False,
        "fit s": 39.75,
        "accuracy": 0.9630,
        "rounds": 36,
        "bytes": round(1431.15 * MiB),
        "max round bytes": round(219.66 * MiB),
        "peak GiB": 1.47,
    },
]


@dataclass(frozen=True)
class Config:
    """One benchmark row: run in its own process (``--one``)."""

    rows: int
    clients: int
    method: str
    workers: int
    profile: bool = False
    missing: bool = False


MISSING_SHARE, MISSING_COLUMNS = 0.2, (0, 1)  # informative when not shuffled


def data(rows: int, seed: int = 0, missing: bool = False) -> tuple[np.ndarray, ...]:
    """Train and test rows; with ``missing``, 20 % NaN in two informative features.

    Without NaN the data are those of earlier runs (features shuffled); with
    NaN the columns stay in order (the first ones are informative).
    """
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split

    X, y = make_classification(
        n_samples=rows,
        n_features=N_FEATURES,
        n_informative=10,
        n_redundant=5,
        shuffle=not missing,
        random_state=seed,
    )
    if missing:
        rng = np.random.default_rng(seed + 1)
        for j in MISSING_COLUMNS:
            X[rng.random(rows) < MISSING_SHARE, j] = np.nan
    return tuple(train_test_split(X, y, test_size=0.2, random_state=seed))


def even_groups(n_rows: int, n_clients: int, seed: int = 1) -> np.ndarray:
    """Client of every row: sizes differ by at most one, rows drawn at random."""
    return np.random.default_rng(seed).permutation(np.arange(n_rows) % n_clients)


def timed(fit: Callable[[], Any], profile: bool = False) -> tuple[Any, float]:
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    start = time.perf_counter()
    model = fit()
    seconds = time.perf_counter() - start
    if profiler:
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(
            30
        )
    return model, seconds


def peak_gib() -> float:
    """This process's peak resident memory (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GiB


def ledger_columns(ledger: Any) -> dict[str, float]:
    """Rounds, MiB moved and the largest round's MiB of a fitted ``Ledger``."""
    frame = ledger.to_frame()
    per_round = frame.groupby("round")[["bytes_up", "bytes_down"]].sum().sum(axis=1)
    return {
        "rounds": ledger.rounds,
        "MiB moved": (ledger.bytes_up + ledger.bytes_down) / MiB,
        "max MiB/round": float(per_round.max()) / MiB,
    }


def fedforest(candidates: str, workers: int, **options: Any) -> Any:
    from fedtrees import FedForestClassifier

    return FedForestClassifier(
        candidates=candidates, workers=workers, random_state=0, **options
    )


def warm_up(config: Config) -> str | None:
    """Compile the kernels; a note if this FedForest variant does not exist."""
    from fedtrees.exceptions import FedTreesError

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(2000, N_FEATURES)), np.arange(2000) % 2
    try:
        fedforest(config.method, config.workers, n_estimators=2, max_depth=DEPTH).fit(
            X, y, groups=even_groups(2000, 2)
        )
    except FedTreesError as exc:
        if config.method == "quantile":
            raise
        return f"{config.method}: not available ({type(exc).__name__})"
    return None


def run_fedforest(config: Config) -> dict[str, Any]:
    note = warm_up(config)
    if note:
        return {"note": note}
    X_train, X_test, y_train, y_test = data(config.rows, missing=config.missing)
    groups = even_groups(X_train.shape[0], config.clients)
    model = fedforest(
        config.method, config.workers, n_estimators=N_TREES, max_depth=DEPTH
    )
    model, seconds = timed(
        lambda: model.fit(X_train, y_train, groups=groups), config.profile
    )
    return {
        "fit s": seconds,
        "accuracy": model.score(X_test, y_test),
        **ledger_columns(model.communication_),
    }


def run_sklearn(config: Config) -> dict[str, Any]:
    from sklearn.ensemble import RandomForestClassifier

    X_train, X_test, y_train, y_test = data(config.rows, missing=config.missing)
    forest = RandomForestClassifier(
        n_estimators=N_TREES, max_depth=DEPTH, n_jobs=-1, random_state=0
    )
    model, seconds = timed(lambda: forest.fit(X_train, y_train))
    return {"fit s": seconds, "accuracy": model.score(X_test, y_test)}


def run_xgboost(config: Config) -> dict[str, Any]:
    try:
        from xgboost import XGBRFClassifier
    except ImportError:
        return {"note": "xgboost: not installed (pip install 'fedtrees[bench]')"}
    X_train, X_test, y_train, y_test = data(config.rows, missing=config.missing)
    forest = XGBRFClassifier(
        n_estimators=N_TREES,
        max_depth=DEPTH,
        tree_method="hist",
        subsample=0.632,
        colsample_bynode=np.sqrt(N_FEATURES) / N_FEATURES,
        n_jobs=-1,
        random_state=0,
    )
    model, seconds = timed(lambda: forest.fit(X_train, y_train))
    accuracy = float(np.mean(model.predict(X_test) == y_test))
    return {"fit s": seconds, "accuracy": accuracy}


def run_heart(config: Config) -> dict[str, Any]:
    from _flower_loopback import demo_params, heart_train

    from fedtrees import FedForestClassifier
    from fedtrees.datasets import load

    train, test = heart_train(), load("heart_disease", flamby=True).test()
    assert train.clients is not None
    groups = train.clients.to_numpy().astype(str)
    warm_up(Config(200, 2, "quantile", config.workers))
    model = FedForestClassifier(**demo_params())  # fedtrees demo: 1 worker
    model, seconds = timed(lambda: model.fit(train.X, train.y, groups=groups))
    return {
        "fit s": seconds,
        "accuracy": model.score(test.X, test.y),
        **ledger_columns(model.communication_),
    }


def run_flower(config: Config) -> dict[str, Any]:
    from _flower_loopback import run_heart as run_heart_on_flower

    with tempfile.TemporaryDirectory(prefix="bench-flower-") as folder:
        run = run_heart_on_flower(Path(folder))
    return {
        "fit s": run.elapsed_s,
        "rounds": run.rounds,
        "MiB moved": (run.bytes_up + run.bytes_down) / MiB,
        "max MiB/round": run.max_round_bytes / MiB,
        "peak GiB": np.nan,  # the ServerApp and ClientApps are other processes
        "note": f"Flower's elapsed; {run.wall_s:.0f} s submit to seen finished",
    }


RUNNERS: dict[str, Callable[[Config], dict[str, Any]]] = {
    "quantile": run_fedforest,
    "hist": run_fedforest,
    "sklearn": run_sklearn,
    "xgboost": run_xgboost,
    "heart": run_heart,
    "flower": run_flower,
}


def run_one(config: Config) -> dict[str, Any]:
    """Child process: one configuration, its measurements and its peak memory."""
    result = RUNNERS[config.method](config)
    return {**asdict(config), "peak GiB": peak_gib(), **result}


def in_child(config: Any, script: str = __file__) -> dict[str, Any]:
    """Run the dataclass ``config`` in a fresh interpreter of ``script`` (its
    ``--one`` mode); return its result, or a note on failure."""
    with tempfile.TemporaryDirectory(prefix="bench-") as folder:
        out = Path(folder) / "result.json"
        command = [sys.executable, script, "--one", json.dumps(asdict(config))]
        done = subprocess.run([*command, "--out", str(out)], check=False)
        if done.returncode != 0 or not out.exists():
            return {**asdict(config), "note": f"failed (exit {done.returncode})"}
        result: dict[str, Any] = json.loads(out.read_text())
    return result


def chosen_sizes(args: argparse.Namespace) -> list[int]:
    """The ``--rows`` sizes, without those of 1M rows and more under ``--skip-1m``."""
    return [r for r in args.rows if not (args.skip_1m and r >= ONE_M)]


def configs(args: argparse.Namespace) -> list[Config]:
    """Every row to run, in table order."""
    sizes = chosen_sizes(args)
    rows: list[Config] = []
    w = args.workers
    pooled = ("sklearn", "xgboost")
    for size in sizes:
        rows += [Config(size, BASE_CLIENTS, m, w) for m in args.candidates]
        rows += [Config(size, 1, m, w) for m in pooled]
        scaled = [m for m in args.candidates if m in args.scale_candidates]
        if size == min(sizes):
            rows += [Config(size, c, m, w) for c in args.clients for m in scaled]
        if size >= ONE_M and MANY_CLIENTS in args.clients:
            rows += [Config(size, MANY_CLIENTS, m, w) for m in scaled]
    if args.missing:
        size = min(sizes)
        rows += [Config(size, BASE_CLIENTS, "hist", w, missing=True)]
        rows += [Config(size, 1, m, w, missing=True) for m in pooled]
    if args.flower:
        rows += [Config(HEART_ROWS, 4, "heart", w), Config(HEART_ROWS, 4, "flower", w)]
    if args.profile and rows:
        first = rows[0]
        rows[0] = Config(first.rows, first.clients, first.method, w, profile=True)
    return rows


def before_row(before: dict[str, Any]) -> dict[str, Any]:
    """One row measured at ``BEFORE_COMMIT``, in the table's columns."""
    row = {k: v for k, v in before.items() if k not in ("bytes", "max round bytes")}
    return {
        **row,
        "method": f"{LABELS[before['method']]}, before",
        "MiB moved": before["bytes"] / MiB,
        "max MiB/round": before["max round bytes"] / MiB,
        "note": f"commit {BEFORE_COMMIT}, {BEFORE_DATE}",
    }


# -- the table: ratios and targets -------------------------------------------


def _fit_time(frame: pd.DataFrame, rows: int, clients: int, method: str) -> float:
    match = frame[
        (frame["rows"] == rows)
        & (frame["clients"] == clients)
        & (frame["method"] == method)
        & ~frame["missing"]
    ]
    return float(match["fit s"].iloc[0]) if len(match) else np.nan


def _baseline(
    frame: pd.DataFrame, rows: int, method: str, column: str, missing: bool = False
) -> float:
    match = frame[
        (frame["rows"] == rows)
        & (frame["method"] == method)
        & (frame["missing"] == missing)
    ]
    return float(match[column].iloc[0]) if len(match) else np.nan


def check_target(label: str, value: float, limit: float, shown: str) -> tuple[str, str]:
    if np.isnan(value):
        return label, "n/a"
    return label, f"{'yes' if value <= limit else 'NO'} ({shown})"


def targets(frame: pd.DataFrame, row: pd.Series) -> list[tuple[str, str]]:
    """(target, met) pairs that apply to one row."""
    rows, clients, method = int(row["rows"]), int(row["clients"]), row["method"]
    missing = bool(row["missing"])
    checks: list[tuple[str, str]] = []
    if method in CANDIDATES and clients == BASE_CLIENTS:
        checks += _speed_targets(frame, row, rows, method, missing)
        sk_accuracy = _baseline(frame, rows, "sklearn", "accuracy", missing)
        gap = 100 * (sk_accuracy - row["accuracy"])
        shown = f"{-gap:+.2f} pt"
        checks.append(check_target("acc >= sklearn-1pt", gap, 1.0, shown))
    if method in CANDIDATES and clients == 100 and rows == 100_000:
        ten = _fit_time(frame, rows, BASE_CLIENTS, method)
        ratio = row["fit s"] / ten
        checks.append(check_target("<=1.5x 10 clients", ratio, 1.5, f"{ratio:.2f}x"))
    if method in CANDIDATES and clients == MANY_CLIENTS and rows == ONE_M:
        peak = row["peak GiB"]
        checks.append(check_target("peak <=24 GiB", peak, 24.0, f"{peak:.2f} GiB"))
    return checks


def _speed_targets(
    frame: pd.DataFrame, row: pd.Series, rows: int, method: str, missing: bool
) -> list[tuple[str, str]]:
    """The fit-time targets of a 10-client row (none for the NaN rows)."""
    if missing:
        return []
    checks = []
    sk_ratio = row["fit s"] / _baseline(frame, rows, "sklearn", "fit s")
    xgb_ratio = row["fit s"] / _baseline(frame, rows, "xgboost", "fit s")
    if method == "quantile" and rows == 100_000:
        checks.append(check_target("<=1.0x sklearn", sk_ratio, 1.0, f"{sk_ratio:.2f}x"))
    if method == "hist" and rows == 100_000:
        checks.append(check_target("<=0.5x sklearn", sk_ratio, 0.5, f"{sk_ratio:.2f}x"))
    if method == "hist" and rows in (100_000, ONE_M):
        checks.append(check_target("<=2x XGBoost", xgb_ratio, 2.0, f"{xgb_ratio:.2f}x"))
    return checks


def table(results: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(results)
    for column in ("fit s", "accuracy", "peak GiB", "note"):
        if column not in frame:
            frame[column] = np.nan if column != "note" else None
    frame["missing"] = frame["missing"].fillna(False).astype(bool)
    sk = frame.apply(
        lambda r: _baseline(frame, r["rows"], "sklearn", "fit s", r["missing"]), axis=1
    )
    xgb = frame.apply(
        lambda r: _baseline(frame, r["rows"], "xgboost", "fit s", r["missing"]), axis=1
    )
    pooled = frame["method"].isin(["sklearn", "xgboost"])
    frame["x sklearn"] = (frame["fit s"] / sk).where(frame["method"] != "sklearn")
    frame["x XGBoost"] = (frame["fit s"] / xgb).where(~pooled)
    checks = [targets(frame, row) for _, row in frame.iterrows()]
    frame["target"] = ["; ".join(t for t, _ in c) or None for c in checks]
    frame["met"] = ["; ".join(m for _, m in c) or None for c in checks]
    return frame


def integers(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts as integers (blank where missing), not as 3-decimal floats."""
    for column in ("rows", "clients", "rounds"):
        values = [None if pd.isna(v) else int(v) for v in frame[column]]
        frame[column] = pd.Series(values, index=frame.index, dtype=object)
    return frame


def with_before(frame: pd.DataFrame) -> pd.DataFrame:
    """Each before row under its measured row; after/before ratios in the note."""
    parts = []
    for index, row in frame.iterrows():
        before = [b for b in BEFORE if _same(b, row)]
        if before:
            time_ratio = row["fit s"] / before[0]["fit s"]
            byte_ratio = row["MiB moved"] * MiB / before[0]["bytes"]
            frame.loc[index, "note"] = _join(
                row["note"],
                f"vs before: {_ratio(time_ratio)} time, {_ratio(byte_ratio)} bytes",
            )
        parts.append(frame.loc[[index]])
        parts += [pd.DataFrame([before_row(b)]) for b in before]
    return pd.concat(parts, ignore_index=True)


def _same(before: dict[str, Any], row: pd.Series) -> bool:
    keys = ("rows", "clients", "method", "missing")
    return all(before[k] == row[k] for k in keys)


def _join(note: object, more: str) -> str:
    return more if not isinstance(note, str) or not note else f"{note}; {more}"


def _ratio(ratio: float) -> str:
    return "n/a" if np.isnan(ratio) else f"{ratio:.2f}x"


COLUMNS = [
    "rows",
    "clients",
    "method",
    "fit s",
    "accuracy",
    "rounds",
    "MiB moved",
    "max MiB/round",
    "peak GiB",
    "x sklearn",
    "x XGBoost",
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
        "--clients", type=int, nargs="*", default=[100, MANY_CLIENTS],
        help="client counts of the scaling rows, at the smallest --rows",
    )  # fmt: skip
    parser.add_argument("--candidates", nargs="+", default=list(CANDIDATES))
    parser.add_argument(
        "--scale-candidates",
        nargs="+",
        default=["hist"],
        help="modes also run with --clients (and 1000 clients at 1M rows)",
    )
    parser.add_argument(
        "--missing", action="store_true", help="+ 20 %% NaN in two features"
    )
    parser.add_argument("--skip-1m", action="store_true", help="drop sizes >= 1M")
    parser.add_argument("--flower", action="store_true", help="+ heart over Flower")
    parser.add_argument("--profile", action="store_true", help="cProfile row 1")
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
    results = []
    for config in configs(args):
        print(f"running {config}", file=sys.stderr, flush=True)
        results.append(in_child(config))
    frame = with_before(table(results))
    frame["method"] = [
        LABELS.get(m, m) + (", 20 % NaN" if missing else "")
        for m, missing in zip(frame["method"], frame["missing"], strict=True)
    ]
    title = f"FedForest benchmark ({N_TREES} trees, depth {DEPTH}, {N_FEATURES} feat.)"
    print_frame(integers(frame.reindex(columns=COLUMNS)), title, 230)


if __name__ == "__main__":
    main()
