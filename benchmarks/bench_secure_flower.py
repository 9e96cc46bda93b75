"""What secure aggregation costs over Flower: the heart forest, plain and masked.

    python benchmarks/bench_secure_flower.py                 # 50 trees of depth 6
    python benchmarks/bench_secure_flower.py --trees 10 --depth 4 --repeats 2

One loopback deployment with TLS (the integration tests' ``Deployment``, the
sites of :mod:`_flower_loopback`: one SuperNode per heart-disease hospital, the
FLamby training rows) runs the same FedForest twice, in turns: plain, then with
``secure_aggregation=True``. Both use ``candidates="hist"`` on the same declared
grid (``bin_edges``, the integration tests' heart edges), so they grow the same
forest (checked) and differ only in what travels: the masked run sends, every
level, a dense histogram of every open node over every bin of the grid, in
64-bit words, instead of the non-zero bins; and each site draws a key pair at
the agreement and derives a mask per level.

Times: Flower's own elapsed run time (``flwr ls``) and the wall time from the
submission until ``flwr ls`` is seen reporting the run finished, as
:mod:`_flower_loopback` measures them; the same fit in process beside them.
Bytes and rounds come from the ledger CSV the ServerApp writes. A Flower round
is mostly Flower's polls (docs/flower.md), so the time ratio is small next to
the bytes ratio; on a busy machine the times are noisy, the bytes are not.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
from _flower_loopback import (
    FlowerRun,
    _wait_for_superlink,
    ledger_totals,
    write_sites,
)

from fedtrees import datasets
from fedtrees.algorithms import run_job
from fedtrees.federation import Federation

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's tests/
from tests.integration.deployment import Deployment

MiB = 2**20
HEART_EDGES = {  # as tests/integration/test_flower.py declares them
    "age": [45.0, 55.0, 65.0],
    "trestbps": [120.0, 140.0],
    "chol": [200.0, 250.0],
    "thalach": [120.0, 150.0],
    "oldpeak": [0.5, 1.5],
    **{c: [0.5] for c in ("sex", "fbs", "exang", "cp_2", "cp_3", "cp_4")},
    **{c: [0.5] for c in ("restecg_1", "restecg_2")},
}
MODES = ("plain", "secure")


def forest_params(trees: int, depth: int, secure: bool) -> dict[str, Any]:
    """The same hist forest on the declared grid, masked or not."""
    return {
        "n_estimators": trees,
        "max_depth": depth,
        "candidates": "hist",
        "bin_edges": HEART_EDGES,
        "secure_aggregation": secure,
        "random_state": 0,
    }


def run_once(
    deployment: Deployment, n_sites: int, params: dict[str, Any], out: Path
) -> tuple[FlowerRun, dict[str, Any]]:
    """Submit one run; return what it cost and its result document."""
    config = (
        f"job='fedforest' output-path='{out}' min-clients={n_sites} "
        f"round-timeout=120.0 params='{json.dumps(params)}'"
    )
    start = time.perf_counter()
    status = deployment.wait(deployment.submit(config), deadline=3600, output=out)
    wall = time.perf_counter() - start
    if status.get("status") != "finished:completed":
        raise RuntimeError(f"the Flower run failed: {status}; see {out.parent}")
    rounds, up, down, largest = ledger_totals(out.with_suffix(".ledger.csv"))
    run = FlowerRun(float(status["elapsed"]), wall, rounds, up, down, largest)
    return run, json.loads(out.read_text())


def in_process(files: dict[str, Path], params: dict[str, Any]) -> tuple[float, Any]:
    """Seconds of the same fit in this process, and its trees."""
    clients = {name: datasets.load_client_file(p) for name, p in files.items()}
    start = time.perf_counter()
    document, _ = run_job("fedforest", Federation.from_clients(clients), params)
    seconds = time.perf_counter() - start
    return seconds, json.loads(json.dumps(document))["trees"]


def measure(base: Path, trees: int, depth: int, repeats: int) -> pd.DataFrame:
    """One row per mode: medians over ``repeats`` runs, taken in turns.

    In process: the fastest of the ``repeats`` fits, after one untimed.
    """
    files = write_sites(base / "sites")
    runs: dict[str, list[FlowerRun]] = {mode: [] for mode in MODES}
    masked: dict[str, int] = {}
    in_process_s: dict[str, float] = {}
    forests: dict[str, Any] = {}
    for mode in MODES:  # imports and compiled kernels, before anything is timed
        in_process(files, forest_params(trees, depth, mode == "secure"))
    with Deployment(base / "deploy", files, tls=True) as deployment:
        _wait_for_superlink(deployment)
        for k in range(repeats):
            for mode in MODES:
                params = forest_params(trees, depth, mode == "secure")
                out = base / f"{mode}-{k}.json"
                run, document = run_once(deployment, len(files), params, out)
                runs[mode].append(run)
                masked[mode] = document["communication"].get("masked_rounds", 0)
                seconds, expected = in_process(files, params)
                if document["trees"] != expected:
                    raise AssertionError(f"{mode}: Flower's forest is not in process'")
                in_process_s[mode] = min(seconds, in_process_s.get(mode, seconds))
                forests[mode] = expected
    if forests["secure"] != forests["plain"]:
        raise AssertionError("the secure forest is not the plain one")
    firsts = {mode: runs[mode][0] for mode in MODES}
    rows = []
    for mode in MODES:
        frame = pd.DataFrame([r.__dict__ for r in runs[mode]])
        rows.append(
            {
                "mode": mode,
                "sites": len(files),
                "runs": repeats,
                "elapsed s": frame["elapsed_s"].median(),
                "wall s": frame["wall_s"].median(),
                "in process s": in_process_s[mode],
                "rounds": firsts[mode].rounds,
                "masked rounds": masked[mode],
                "MiB up": firsts[mode].bytes_up / MiB,
                "MiB down": firsts[mode].bytes_down / MiB,
                "max MiB/round": firsts[mode].max_round_bytes / MiB,
            }
        )
    return pd.DataFrame(rows)


def ratios(frame: pd.DataFrame) -> dict[str, float]:
    """Secure over plain, for the times and the bytes."""
    plain, secure = (frame.set_index("mode").loc[m] for m in MODES)
    moved = {
        m: frame.set_index("mode").loc[m, ["MiB up", "MiB down"]].sum() for m in MODES
    }
    return {
        "elapsed s": secure["elapsed s"] / plain["elapsed s"],
        "wall s": secure["wall s"] / plain["wall s"],
        "in process s": secure["in process s"] / plain["in process s"],
        "MiB up": secure["MiB up"] / plain["MiB up"],
        "MiB down": secure["MiB down"] / plain["MiB down"],
        "MiB moved": moved["secure"] / moved["plain"],
        "max MiB/round": secure["max MiB/round"] / plain["max MiB/round"],
    }


def markdown(frame: pd.DataFrame, factors: dict[str, float]) -> str:
    """The table, and a last row of secure / plain ratios."""
    columns = list(frame.columns)
    lines = [
        "| " + " | ".join(columns) + " |",
        "|" + "|".join("---" if c == "mode" else "---:" for c in columns) + "|",
    ]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join(_cell(row[c]) for c in columns) + " |")
    ratio = [
        "secure / plain",
        *(f"{factors[c]:.2f}x" if c in factors else "" for c in columns[1:]),
    ]
    lines.append("| " + " | ".join(ratio) + " |")
    return "\n".join(lines)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trees", type=int, default=50, help="n_estimators (50)")
    parser.add_argument("--depth", type=int, default=6, help="max_depth (6)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each mode")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fedtrees-secure-flower-") as folder:
        frame = measure(Path(folder), args.trees, args.depth, args.repeats)
    print(
        f"Heart FedForest over Flower, TLS on 127.0.0.1: {args.trees} trees of depth "
        f"{args.depth}, hist on the declared heart edges (median over runs)\n"
    )
    print(markdown(frame, ratios(frame)))


if __name__ == "__main__":
    main()
