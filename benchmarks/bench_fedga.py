"""FedGA-Tree's full paper setting on 50,000 synthetic rows and 20 clients, timed.

    python benchmarks/bench_fedga.py
    python benchmarks/bench_fedga.py --no-regression --profile classification

Data (seed 0, a numpy ``default_rng``): 50,000 training and 10,000 test rows of
10 standard-normal features. Four are informative, with an interaction:
``s = x0 + 1.5 * x1 * x2 + 0.75 * x3 + N(0, 0.5^2)``; the other six are noise.
Classification labels are the tertiles of ``s`` on the training rows (3
balanced classes); the regression target is ``s`` itself. The training rows are
dealt IID to 20 in-process clients (a seeded permutation, modulo 20).

Setting (paper 000, Table II): ``FedGAClassifier(population_size=20,
n_generations=100, client_fraction=1.0, random_state=0)`` and, unless
``--no-regression``, ``FedGARegressor(population_size=40, ...)`` likewise.
Reported per fit: the whole ``fit`` (wall) against the target (under 60 s on
2 cores), the rounds, the codec's bytes up and down per client, the time per
generation (the ledger's per-message seconds of the generation rounds — each
client's decode, handler and encode, one client after another in process —
summed and divided by G; the server's breeding is not in it), the global
depth, and the test score of the personal trees: the mean over clients of
macro-F1 (or MSE) of ``predict(X_test, client=k)`` on the whole test set.

Against, in the same run:

- *local trees*: every client alone runs scikit-learn's ``GridSearchCV`` of a
  ``DecisionTreeClassifier`` (``DecisionTreeRegressor``) over ``max_depth``
  2..15, 5-fold, macro-F1 (negative MSE), and refits; the time is the sum over
  clients, the score the mean over clients on the whole test set;
- *pooled tree*: the same search on the pooled training rows.

"x local" is FedGA ÷ local, for the time and the test score. ``--profile TASK``
runs one more fit of TASK under cProfile and prints where the time goes
(cumulative seconds of the clients' depth CV — at init, and for regression
again in the local round for the votes — the presort
``TrainingRows.of``, the kernel ``score_structures``, the codec and the
server's breeding) and the top functions by own time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
from typing import Any

import numpy as np
import pandas as pd
from _table import print_frame
from sklearn.metrics import f1_score, mean_squared_error
from sklearn.model_selection import GridSearchCV
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from fedtrees import FedGAClassifier, FedGARegressor

TARGET_SECONDS = 60.0
N_TRAIN, N_TEST, N_FEATURES = 50_000, 10_000, 10
DEPTHS = list(range(2, 16))
GENERATION_KINDS = ("fedga.evaluate", "fedga.join")
# (label, file suffix, function) of the profile's breakdown, cumulative seconds
PROFILED = (
    (
        "client depth CV (cross_validate_depths)",
        "_initialize.py",
        "cross_validate_depths",
    ),
    ("local structure (local_structure)", "_initialize.py", "local_structure"),
    ("presort per message (TrainingRows.of)", "_evaluate.py", "of"),
    ("kernel (score_structures)", "_evaluate.py", "score_structures"),
    ("codec encode", "_codec.py", "encode"),
    ("codec decode", "_codec.py", "decode"),
    ("server breeding (_breed)", "_strategy.py", "_breed"),
    ("personal trees (fit_structure)", "_evaluate.py", "fit_structure"),
)


def synthetic(seed: int = 0) -> dict[str, Any]:
    """Training and test rows, class codes and targets (see the module docstring)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N_TRAIN + N_TEST, N_FEATURES))
    noise = rng.normal(0.0, 0.5, N_TRAIN + N_TEST)
    s = X[:, 0] + 1.5 * X[:, 1] * X[:, 2] + 0.75 * X[:, 3] + noise
    cuts = np.quantile(s[:N_TRAIN], [1 / 3, 2 / 3])
    labels = np.digitize(s, cuts)
    columns = [f"x{i}" for i in range(N_FEATURES)]
    frame = pd.DataFrame(X, columns=columns)
    return {
        "X": frame.iloc[:N_TRAIN].reset_index(drop=True),
        "X_test": frame.iloc[N_TRAIN:].reset_index(drop=True),
        "classification": (labels[:N_TRAIN], labels[N_TRAIN:]),
        "regression": (s[:N_TRAIN], s[N_TRAIN:]),
    }


def score(task: str, y_true: Any, y_pred: Any) -> float:
    """Macro-F1 (classification) or MSE (regression)."""
    if task == "classification":
        return float(f1_score(y_true, y_pred, average="macro"))
    return float(mean_squared_error(y_true, y_pred))


def make_fedga(task: str) -> FedGAClassifier | FedGARegressor:
    if task == "classification":
        return FedGAClassifier(
            population_size=20, n_generations=100, client_fraction=1.0, random_state=0
        )
    return FedGARegressor(
        population_size=40, n_generations=100, client_fraction=1.0, random_state=0
    )


def fedga(task: str, data: dict[str, Any], groups: np.ndarray) -> dict[str, Any]:
    y, y_test = data[task]
    start = time.perf_counter()
    model = make_fedga(task).fit(data["X"], y, groups=groups)
    wall = time.perf_counter() - start
    ledger = model.communication_
    frame = ledger.to_frame()
    generations = frame[frame["kind"].isin(GENERATION_KINDS)]
    n_clients = frame["client"].nunique()
    per_client = [
        score(task, y_test, model.predict(data["X_test"], client=k))
        for k in model.trees_
    ]
    return {
        "fit s": wall,
        "score": float(np.mean(per_client)),
        "rounds": ledger.rounds,
        "KiB up/client": ledger.bytes_up / n_clients / 1024,
        "KiB down/client": ledger.bytes_down / n_clients / 1024,
        "s/generation": generations["seconds"].sum() / model.n_generations,
        "depth": model.depth_,
        "note": ("under" if wall < TARGET_SECONDS else "OVER")
        + f" the {TARGET_SECONDS:.0f} s target; init "
        + f"{_seconds(frame, 'fedga.init'):.1f} s, local "
        + f"{_seconds(frame, 'fedga.local'):.1f} s, final "
        + f"{_seconds(frame, 'fedga.final'):.1f} s (client seconds)",
    }


def search(task: str, X: Any, y: Any) -> GridSearchCV:
    """CV-tuned scikit-learn tree: max_depth 2..15, 5-fold, macro-F1 or MSE."""
    if task == "classification":
        tree, scoring = DecisionTreeClassifier(random_state=0), "f1_macro"
    else:
        tree, scoring = DecisionTreeRegressor(random_state=0), "neg_mean_squared_error"
    grid = GridSearchCV(tree, {"max_depth": DEPTHS}, scoring=scoring, cv=5)
    return grid.fit(X, y)


def local_trees(task: str, data: dict[str, Any], groups: np.ndarray) -> dict[str, Any]:
    y, y_test = data[task]
    X, X_test = data["X"].to_numpy(), data["X_test"].to_numpy()
    seconds, scores, depths = 0.0, [], []
    for k in np.unique(groups):
        rows = groups == k
        start = time.perf_counter()
        grid = search(task, X[rows], y[rows])
        seconds += time.perf_counter() - start
        scores.append(score(task, y_test, grid.predict(X_test)))
        depths.append(grid.best_params_["max_depth"])
    return {
        "fit s": seconds,
        "score": float(np.mean(scores)),
        "depth": int(np.median(depths)),
        "note": "sum over clients; depth is the median of the CV depths",
    }


def pooled_tree(task: str, data: dict[str, Any]) -> dict[str, Any]:
    y, y_test = data[task]
    start = time.perf_counter()
    grid = search(task, data["X"].to_numpy(), y)
    seconds = time.perf_counter() - start
    return {
        "fit s": seconds,
        "score": score(task, y_test, grid.predict(data["X_test"].to_numpy())),
        "depth": grid.best_params_["max_depth"],
        "note": "pooled rows",
    }


def compare(task: str, data: dict[str, Any], groups: np.ndarray) -> pd.DataFrame:
    name = "FedGA-Tree" + (" (P=20)" if task == "classification" else " (P=40)")
    fed = fedga(task, data, groups)
    local = local_trees(task, data, groups)
    rows = [
        {"method": name, **fed},
        {"method": "local trees (GridSearchCV)", **local},
        {"method": "pooled tree (GridSearchCV)", **pooled_tree(task, data)},
    ]
    frame = pd.DataFrame(rows)
    frame.insert(2, "x local time", frame["fit s"] / local["fit s"])
    frame.insert(4, "x local score", frame["score"] / local["score"])
    return frame


def profile(task: str, data: dict[str, Any], groups: np.ndarray, top: int) -> None:
    """One fit under cProfile: the breakdown and the top functions by own time."""
    y = data[task][0]
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    make_fedga(task).fit(data["X"], y, groups=groups)
    profiler.disable()
    wall = time.perf_counter() - start
    stats = pstats.Stats(profiler)
    total = max(v[3] for v in stats.stats.values())  # type: ignore[attr-defined]
    rows = []
    for label, suffix, function in PROFILED:
        found = [
            (v[0], v[3])
            for (path, _, name), v in stats.stats.items()  # type: ignore[attr-defined]
            if path.endswith(suffix) and name == function
        ]
        calls = sum(c for c, _ in found)
        seconds = sum(s for _, s in found)
        rows.append(
            {
                "method": label,
                "calls": calls,
                "cum s": seconds,
                "share": seconds / total,
            }
        )
    print_frame(
        pd.DataFrame(rows),
        f"FedGA {task} fit under cProfile: {wall:.1f} s wall "
        f"({total:.1f} s profiled); cumulative, so rows nest",
    )
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    print(out.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--no-regression", action="store_true")
    parser.add_argument("--profile", choices=["classification", "regression"])
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    data = synthetic()
    groups = np.random.default_rng(0).permutation(N_TRAIN) % args.clients
    groups = np.asarray([f"site{k:02d}" for k in groups])
    tasks = ["classification"] + ([] if args.no_regression else ["regression"])
    for task in tasks:
        metric = "macro-F1" if task == "classification" else "MSE"
        title = (
            f"{task}: {N_TRAIN} training rows, {N_FEATURES} features, "
            f"{args.clients} clients, G = 100; score = test {metric} "
            "(mean over clients' trees)"
        )
        print_frame(compare(task, data, groups), title, width=200)
    if args.profile:
        profile(args.profile, data, groups, args.top)


def _seconds(frame: pd.DataFrame, kind: str) -> float:
    return float(frame.loc[frame["kind"] == kind, "seconds"].sum())


if __name__ == "__main__":
    main()
