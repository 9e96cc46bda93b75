"""The cost of secure aggregation: FedForest hist and FedGBDT, masked against plain.

    python benchmarks/bench_secure.py                     # 100k rows, 10 and 100 sites
    python benchmarks/bench_secure.py --quick             # 20k rows, 10 sites (< 60 s)
    python benchmarks/bench_secure.py --sites 10 --rows 100000
    python benchmarks/bench_secure.py --profile           # + where the secure time goes

Setting: ``make_classification`` with 10 features (6 informative, 2 redundant),
binary, 10 % NaN in features 0 and 1; ``--rows`` training rows (split evenly at
random over the sites) and a quarter as many held-out rows for the accuracy.
FedForestClassifier (``candidates="hist"``, 10 trees, depth 6) and
FedGBDTClassifier (20 trees, depth 6, learning rate 0.1), each fitted three ways
on the same rows and sites, in one run:

- ``plain, edges``: no masking, on declared ``bin_edges``: 63 quantile edges per
  column computed from the pooled training rows (``max_bins=64``);
- ``secure, edges``: ``secure_aggregation=True`` on the same ``bin_edges``: the
  same grid, so the ratios to the plain row are the cost of the masking alone
  (dense replies, fixed point, one ChaCha20 mask per other site);
- ``secure, ranges``: ``secure_aggregation=True`` with ``feature_ranges`` (the
  pooled rows' min and max per column, rounded outward to integers) instead:
  one more masked round, of 1024 fine bins per column, cuts the grid.

Every configuration runs in its own process after a small fit that compiles
the kernels; the sites are served on ``--workers`` threads (default: the
machine's cores). "MiB up" and "MiB down" come from
``model.communication_.summary()``; "x time" and "x bytes" are each secure row
over the plain row of the same model and sites. "mask s" is the time spent in
``fedtrees.federation._secure.mask_words`` (the ChaCha20 expansion of a round
key into a mask, the sites' and the server's), summed over the worker threads,
and "mask %" that over "fit s". The target of the issue: secure at most 2x the
plain fit time at 10 sites ("target" and "met" columns).

The secure masking costs O(K^2 L) per round for K in-process sites (every site
expands K - 1 masks of the round's length L), so ``--big-sites`` (default:
100) runs use ``--big-trees`` (default: the same trees) if the full size would
take too long; the table's note says so. ``--profile`` adds one plain and one secure
fit per model (the smallest ``--sites``, one worker thread) in which each step of
secure aggregation (``STEPS``: mask expansion, round keys, fixed point, dense
layout, codec) is wrapped and timed, summed over the threads that serve the
sites (cProfile would see only the calling thread).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _table import print_frame
from bench_fedforest import check_target, even_groups, in_child, peak_gib

N_FEATURES, MISSING_SHARE, MISSING_COLUMNS = 10, 0.1, (0, 1)
MAX_BINS = 64  # 63 declared edges per column
FOREST = {"n_estimators": 10, "max_depth": 6}
GBDT = {"n_estimators": 20, "max_depth": 6, "learning_rate": 0.1}
MODELS = {"fedforest": FOREST, "fedgbdt": GBDT}
VARIANTS = ("plain, edges", "secure, edges", "secure, ranges")
TIME_LIMIT, TARGET_SITES = 2.0, 10  # secure / plain fit time at 10 sites
MiB = 2**20
LABELS = {"fedforest": "FedForest hist", "fedgbdt": "FedGBDT"}
# The steps timed under --profile: (label, module, function or Class.method).
STEPS = [
    ("mask expansion (ChaCha20)", "fedtrees.federation._secure", "mask_words"),
    ("round keys (X25519 + HKDF)", "fedtrees.federation._secure", "round_key"),
    ("masking, all (keys + masks + adds)", "fedtrees.federation._secure",
     "masked_vector"),
    ("fixed point: to_fixed", "fedtrees.federation._secure", "to_fixed"),
    ("fixed point: from_fixed", "fedtrees.federation._secure", "from_fixed"),
    ("server: MaskedRound.total", "fedtrees.federation._secure", "MaskedRound.total"),
    ("dense layout: DenseLayout.dense", "fedtrees.algorithms.histogram._dense",
     "DenseLayout.dense"),
    ("dense layout: DenseLayout.sparse", "fedtrees.algorithms.histogram._dense",
     "DenseLayout.sparse"),
    ("codec: encode", "fedtrees.federation._codec", "encode"),
    ("codec: encode_broadcast", "fedtrees.federation._codec", "encode_broadcast"),
    ("codec: decode", "fedtrees.federation._codec", "decode"),
]  # fmt: skip


@dataclass(frozen=True)
class Config:
    """One benchmark row: run in its own process (``--one``)."""

    rows: int
    sites: int
    model: str
    variant: str
    workers: int
    n_estimators: int
    profile: bool = False


def data(rows: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """``rows`` training rows and ``rows // 4`` held-out rows, NaN in two columns."""
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split

    total = rows + rows // 4
    X, y = make_classification(
        n_samples=total,
        n_features=N_FEATURES,
        n_informative=6,
        n_redundant=2,
        shuffle=False,  # the first columns are informative
        random_state=seed,
    )
    rng = np.random.default_rng(seed + 1)
    for j in MISSING_COLUMNS:
        X[rng.random(total) < MISSING_SHARE, j] = np.nan
    return tuple(train_test_split(X, y, train_size=rows, random_state=seed))


def quantile_edges(X: np.ndarray) -> dict[int, np.ndarray]:
    """``MAX_BINS - 1`` quantile edges per column of the pooled rows (NaN left out)."""
    shares = np.arange(1, MAX_BINS) / MAX_BINS
    return {j: np.unique(np.nanquantile(X[:, j], shares)) for j in range(X.shape[1])}


def declared_ranges(X: np.ndarray) -> dict[int, tuple[float, float]]:
    """Each column's (min, max) over the pooled rows, rounded outward."""
    return {
        j: (float(np.floor(np.nanmin(X[:, j]))), float(np.ceil(np.nanmax(X[:, j]))))
        for j in range(X.shape[1])
    }


def estimator(model: str, workers: int, **options: Any) -> Any:
    from fedtrees import FedForestClassifier, FedGBDTClassifier

    params = {**MODELS[model], "max_bins": MAX_BINS, "workers": workers}
    if model == "fedforest":
        return FedForestClassifier(
            candidates="hist", random_state=0, **params, **options
        )
    return FedGBDTClassifier(random_state=0, **params, **options)


def variant_options(variant: str, X: np.ndarray) -> dict[str, Any]:
    if variant == "plain, edges":
        return {"bin_edges": quantile_edges(X)}
    if variant == "secure, edges":
        return {"secure_aggregation": True, "bin_edges": quantile_edges(X)}
    return {"secure_aggregation": True, "feature_ranges": declared_ranges(X)}


def warm_up(config: Config) -> None:
    """Compile the kernels (and load the cipher) with a small fit of this variant."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(3000, N_FEATURES)), np.arange(3000) % 2
    options = variant_options(config.variant, X)
    model = estimator(config.model, config.workers, **options)
    model.set_params(n_estimators=2)
    model.fit(X, y, groups=even_groups(3000, 3))


class StepClock:
    """Seconds spent in each of :data:`STEPS`, summed over threads.

    The sites are served on worker threads, which cProfile (one thread) does
    not see: each function is wrapped, wherever a fedtrees module holds it.
    """

    def __init__(self, steps: list[tuple[str, str, str]]) -> None:
        self.seconds: dict[str, float] = {}
        for label, module, name in steps:
            self.seconds[label] = 0.0
            self._wrap(label, importlib.import_module(module), name)

    def _wrap(self, label: str, module: Any, name: str) -> None:
        owner: Any = module
        if "." in name:
            cls, name = name.split(".")
            owner = getattr(module, cls)
        inner = getattr(owner, name)

        def timed_step(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds[label] += time.perf_counter() - start

        if owner is not module:
            setattr(owner, name, timed_step)
            return
        for loaded in list(sys.modules.values()):  # every module that imported it
            ours = getattr(loaded, "__name__", "").startswith("fedtrees")
            if ours and getattr(loaded, name, None) is inner:
                setattr(loaded, name, timed_step)


def run_one(config: Config) -> dict[str, Any]:
    """Child process: one configuration's fit, bytes, accuracy and mask time."""
    warm_up(config)
    X_train, X_test, y_train, y_test = data(config.rows)
    groups = even_groups(X_train.shape[0], config.sites)
    model = estimator(
        config.model, config.workers, **variant_options(config.variant, X_train)
    )
    model.set_params(n_estimators=config.n_estimators)
    clock = StepClock(STEPS if config.profile else STEPS[:1])
    start = time.perf_counter()
    model.fit(X_train, y_train, groups=groups)
    seconds = time.perf_counter() - start
    summary = model.communication_.summary()
    result = {
        **asdict(config),
        "fit s": seconds,
        "accuracy": model.score(X_test, y_test),
        "rounds": summary["rounds"],
        "masked rounds": summary.get("masked_rounds", 0),
        "MiB up": summary["bytes_up"] / MiB,
        "MiB down": summary["bytes_down"] / MiB,
        "mask s": clock.seconds[STEPS[0][0]],
        "peak GiB": peak_gib(),
    }
    if config.profile:
        result["steps"] = {"fit": seconds, **clock.seconds}
    return result


def configs(args: argparse.Namespace) -> list[Config]:
    """Every row of the table, in order."""
    rows: list[Config] = []
    for sites in args.sites:
        for model in args.models:
            trees = MODELS[model]["n_estimators"]
            if sites >= args.big_sites and args.big_trees is not None:
                trees = min(trees, args.big_trees)
            rows += [
                Config(args.rows, sites, model, v, args.workers, trees)
                for v in VARIANTS
            ]
    return rows


def profile_configs(args: argparse.Namespace) -> list[Config]:
    """One plain and one secure fit per model, at the first site count."""
    sites = min(args.sites)
    return [
        Config(args.rows, sites, model, variant, 1, MODELS[model]["n_estimators"], True)
        for model in args.models
        for variant in ("plain, edges", "secure, edges")
    ]


# -- the tables ----------------------------------------------------------------------


def table(results: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(results)
    for column in ("fit s", "MiB up", "MiB down", "mask s", "note"):
        if column not in frame:
            frame[column] = np.nan if column != "note" else None
    frame["MiB moved"] = frame["MiB up"] + frame["MiB down"]
    plain = frame.apply(lambda r: _plain(frame, r), axis=1)
    secure = frame["variant"] != "plain, edges"
    frame["x time"] = (frame["fit s"] / plain["fit s"]).where(secure)
    frame["x bytes"] = (frame["MiB moved"] / plain["MiB moved"]).where(secure)
    frame["mask %"] = (100 * frame["mask s"] / frame["fit s"]).where(secure)
    frame["mask s"] = frame["mask s"].where(secure)
    checks = [_target(row) for _, row in frame.iterrows()]
    frame["target"] = [c[0] if c else None for c in checks]
    frame["met"] = [c[1] if c else None for c in checks]
    frame["trees"] = frame["n_estimators"]
    frame["method"] = [LABELS[m] for m in frame["model"]]
    return frame


def _plain(frame: pd.DataFrame, row: pd.Series) -> pd.Series:
    """The plain row of the same model, sites and trees."""
    match = frame[
        (frame["model"] == row["model"])
        & (frame["sites"] == row["sites"])
        & (frame["n_estimators"] == row["n_estimators"])
        & (frame["variant"] == "plain, edges")
    ]
    if not len(match):
        return pd.Series({"fit s": np.nan, "MiB moved": np.nan})
    return match[["fit s", "MiB moved"]].iloc[0]


def _target(row: pd.Series) -> tuple[str, str] | None:
    if row["sites"] != TARGET_SITES or row["variant"] != "secure, edges":
        return None
    ratio = row["x time"]
    return check_target(f"<={TIME_LIMIT:g}x plain", ratio, TIME_LIMIT, f"{ratio:.2f}x")


COLUMNS = [
    "rows",
    "sites",
    "method",
    "trees",
    "variant",
    "fit s",
    "accuracy",
    "rounds",
    "masked rounds",
    "MiB up",
    "MiB down",
    "x time",
    "x bytes",
    "mask s",
    "mask %",
    "peak GiB",
    "target",
    "met",
    "note",
]


def markdown(frame: pd.DataFrame) -> str:
    """The table as markdown (for docs/benchmarks.md)."""
    lines = [
        "| sites | method | variant | fit s | x time | MiB up | MiB down | x bytes "
        "| rounds (masked) | mask % | accuracy |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for _, r in frame.iterrows():
        trees = (
            f", {r['trees']} trees"
            if r["trees"] != MODELS[r["model"]]["n_estimators"]
            else ""
        )
        cells = [
            str(r["sites"]),
            f"{r['method']}{trees}",
            r["variant"],
            _num(r["fit s"], 2),
            _num(r["x time"], 2, "\N{MULTIPLICATION SIGN}"),
            _num(r["MiB up"], 1),
            _num(r["MiB down"], 1),
            _num(r["x bytes"], 2, "\N{MULTIPLICATION SIGN}"),
            _rounds(r),
            _num(r["mask %"], 0, " %"),
            _num(r.get("accuracy"), 4),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _rounds(r: pd.Series) -> str:
    if pd.isna(r.get("rounds")):
        return ""
    return f"{int(r['rounds'])} ({int(r['masked rounds'])})"


def _num(value: object, digits: int, unit: str = "") -> str:
    if value is None or pd.isna(value):
        return ""
    return f"{float(value):,.{digits}f}{unit}"


def profile_table(results: list[dict[str, Any]]) -> pd.DataFrame:
    """Cumulative seconds of each step, one column per profiled fit."""
    columns = {
        f"{LABELS[r['model']]}, {r['variant']}": r.get("steps", {}) for r in results
    }
    return pd.DataFrame(columns).rename_axis("case").reset_index()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000, help="training rows")
    parser.add_argument("--sites", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument(
        "--quick", action="store_true", help="20k rows, 10 sites: a smoke run"
    )
    parser.add_argument(
        "--big-sites", type=int, default=100, help="site count from which "
        "--big-trees applies",
    )  # fmt: skip
    parser.add_argument(
        "--big-trees", type=int, default=None,
        help="at most this many trees at --big-sites sites and more",
    )  # fmt: skip
    parser.add_argument("--profile", action="store_true", help="+ time by step")
    parser.add_argument("--markdown", action="store_true", help="+ a markdown table")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.rows, args.sites = 20_000, [10]
    return args


def main() -> None:
    args = parse_args()
    if args.one:
        result = run_one(Config(**json.loads(args.one)))
        Path(args.out).write_text(json.dumps(result))
        return
    results = []
    for config in configs(args):
        print(f"running {config}", file=sys.stderr, flush=True)
        results.append(in_child(config, __file__))
    frame = table(results)
    title = (
        f"Secure aggregation ({args.rows:,} training rows, {N_FEATURES} feat., "
        f"max_bins {MAX_BINS}; FedForest {FOREST['n_estimators']} trees depth "
        f"{FOREST['max_depth']}, FedGBDT {GBDT['n_estimators']} trees depth "
        f"{GBDT['max_depth']})"
    )
    print_frame(frame.reindex(columns=COLUMNS), title, 250)
    if args.markdown:
        print(markdown(frame))
    if args.profile:
        profiled = []
        for config in profile_configs(args):
            print(f"profiling {config}", file=sys.stderr, flush=True)
            profiled.append(in_child(config, __file__))
        title = "Seconds in each step (10 sites, 1 worker thread, summed over threads)"
        print_frame(profile_table(profiled), title, 250)


if __name__ == "__main__":
    main()
