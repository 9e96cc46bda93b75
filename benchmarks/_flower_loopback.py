"""Heart FedForest (unlimited depth) over a real Flower deployment on 127.0.0.1.

One SuperNode per hospital of ``heart_disease`` (FLamby split, the training rows
that ``fedtrees demo`` trains on, so the bytes match the in-process fit), a
SuperLink with TLS, and the shipped Flower App run through ``flwr run``. The
processes are the integration tests' :class:`tests.integration.deployment.Deployment`.

Times: Flower's own elapsed run time (``flwr ls``), and the wall time from the
submission (once the SuperLink answers) until ``flwr ls`` is seen reporting the
run finished. The bytes come from the ledger CSV the ServerApp writes beside its
result JSON.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from fedtrees import datasets
from fedtrees._random import keyed_rng

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's tests/
from tests.integration.deployment import CONNECTION, Deployment

N_TREES, N_QUANTILES = 50, 32  # fedforest-heart: HeartConfig(n_estimators=50)


@dataclass(frozen=True)
class FlowerRun:
    """What one run cost: seconds, rounds and bytes (total, largest round)."""

    elapsed_s: float
    """Flower's own run time (``flwr ls``: from running to finished)."""
    wall_s: float
    """From ``flwr run`` until ``flwr ls`` was seen reporting the run finished."""
    rounds: int
    bytes_up: int
    bytes_down: int
    max_round_bytes: int


def demo_params() -> dict[str, Any]:
    """FedForest keyword arguments of the fedforest-heart experiment's first repeat.

    Unlimited depth, as measured before; ``fedtrees demo`` now fits depth 6.
    """
    seed = int(keyed_rng(0, 0).integers(2**31 - 1))
    return {"n_estimators": N_TREES, "n_quantiles": N_QUANTILES, "random_state": seed}


def heart_train() -> datasets.Dataset:
    """The demo's training rows: heart_disease, FLamby preparation and split."""
    return datasets.load("heart_disease", flamby=True).train()


def write_sites(folder: Path) -> dict[str, Path]:
    """One ``.npz`` per hospital, as ``fedtrees flower split`` names them."""
    heart = heart_train()
    assert heart.clients is not None
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for site in pd.unique(heart.clients):
        rows = (heart.clients == site).to_numpy()
        name = str(site).replace(" ", "_")
        files[name] = datasets.save_client_file(
            folder / f"{name}.npz", heart.X[rows].reset_index(drop=True), heart.y[rows]
        )
    return files


def ledger_totals(path: Path) -> tuple[int, int, int, int]:
    """Rounds, bytes up, bytes down and the largest round's bytes of a ledger."""
    frame = pd.read_csv(path)
    per_round = frame.groupby("round")[["bytes_up", "bytes_down"]].sum().sum(axis=1)
    return (
        int(frame["round"].nunique()),
        int(frame["bytes_up"].sum()),
        int(frame["bytes_down"].sum()),
        int(per_round.max()),
    )


def _wait_for_superlink(deployment: Deployment, deadline: float = 120.0) -> None:
    start = time.monotonic()
    while not deployment.flwr("ls", CONNECTION).get("success"):
        if time.monotonic() - start > deadline:
            raise TimeoutError(f"the SuperLink did not answer within {deadline} s")
        time.sleep(0.5)


def run_heart(base: Path, deadline: float = 3600.0) -> FlowerRun:
    """Run the demo's FedForest over 4 loopback SuperNodes under ``base``."""
    files = write_sites(base / "sites")
    out = base / "forest.json"
    config = (
        f"job='fedforest' output-path='{out}' min-clients={len(files)} "
        f"round-timeout=120.0 params='{json.dumps(demo_params())}'"
    )
    (base / "deploy").mkdir(parents=True, exist_ok=True)
    with Deployment(base / "deploy", files, tls=True) as deployment:
        _wait_for_superlink(deployment)
        start = time.perf_counter()
        status = deployment.wait(
            deployment.submit(config), deadline=deadline, output=out
        )
        wall = time.perf_counter() - start
    if status.get("status") != "finished:completed":
        raise RuntimeError(f"the Flower run failed: {status}; see {base}")
    rounds, up, down, largest = ledger_totals(out.with_suffix(".ledger.csv"))
    return FlowerRun(float(status["elapsed"]), wall, rounds, up, down, largest)
