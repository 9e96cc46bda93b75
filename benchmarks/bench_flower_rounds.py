"""Where a Flower round's seconds go: the docs' recipe, over real SuperNodes.

    python benchmarks/bench_flower_rounds.py            # 2 and 4 heart sites
    python benchmarks/bench_flower_rounds.py --sites 2

A SuperLink and one SuperNode per heart-disease hospital on 127.0.0.1 with TLS
(the integration tests' ``Deployment``), running the job of docs/flower.md (FedForest,
10 trees of depth 2) and a small FedGBDT (3 trees of depth 2), each run
``--repeats`` times (3) in a row, once with the
SuperNodes' site workers (as ``fedtrees flower supernode`` starts them) and once
without (every ClientApp process serves its message itself; ``--worker-only``
skips these). A round's seconds are its slowest reply, from the ledger the
ServerApp writes. Every site logs where each message's seconds went
(``fedtrees site NAME: process CPU before ...``,
:class:`fedtrees.federation.flower._stopwatch.Stopwatch`): the CPU its ClientApp
process spent before the message reached fedtrees (Python, Flower's set-up,
importing the app), then the job's handlers, the data (through the run's
cache) and the work, wherever they ran. What the sites do not account for is
Flower's: the SuperNode's 3 s idle poll, its task poll (0.2 s, ``flower_env``),
the reply's 0.5 s poll. The same fit in process is timed beside it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
from _flower_loopback import _wait_for_superlink, write_sites
from _table import print_frame

from fedtrees import datasets
from fedtrees.algorithms import run_job
from fedtrees.federation import Federation

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's tests/
from tests.integration.deployment import Deployment

JOBS = {
    "the recipe (fedforest 10x2)": (
        "fedforest",
        {"n_estimators": 10, "max_depth": 2, "random_state": 0},
    ),
    "fedgbdt 3x2": ("fedgbdt", {"n_estimators": 3, "max_depth": 2, "random_state": 0}),
}
SITE_LINE = re.compile(
    r"fedtrees site \S+: process CPU before ([0-9.]+) s; handlers ([0-9.]+) s, "
    r"data ([0-9.]+) s, serve ([0-9.]+) s"
)


def site_laps(folder: Path) -> pd.DataFrame:
    """Every message's laps, read from the SuperNodes' logs in ``folder``."""
    rows = [
        dict(
            zip(
                ("CPU before", "handlers", "data", "serve"),
                map(float, m.groups()),
                strict=True,
            )
        )
        for log in folder.glob("node-*.log")
        for m in SITE_LINE.finditer(log.read_text(errors="replace"))
    ]
    return pd.DataFrame(rows)


def run_rounds(
    deployment: Deployment, n_sites: int, job: str, params: dict[str, Any], out: Path
) -> pd.Series:
    """Submit one run of ``job``; return its rounds' seconds (the ledger's)."""
    config = (
        f"job='{job}' output-path='{out}' min-clients={n_sites} "
        f"round-timeout=120.0 params='{json.dumps(params)}'"
    )
    status = deployment.wait(deployment.submit(config), deadline=1800, output=out)
    if status.get("status") != "finished:completed":
        raise RuntimeError(f"{job}: the run failed: {status}; see {out.parent}")
    ledger = pd.read_csv(out.with_suffix(".ledger.csv"))
    return ledger.groupby("round")["seconds"].max()


def measure(
    n_sites: int, base: Path, site_worker: bool, repeats: int
) -> list[dict[str, Any]]:
    """One row per job: its rounds on Flower (``repeats`` runs), in process, laps."""
    files = dict(list(write_sites(base / "sites").items())[:n_sites])
    rows = []
    deploy = Deployment(base / "deploy", files, tls=True, site_worker=site_worker)
    with deploy as deployment:
        _wait_for_superlink(deployment)
        for label, (job, params) in JOBS.items():
            before = len(site_laps(base / "deploy"))
            runs = [
                run_rounds(deployment, n_sites, job, params, base / f"{job}-{k}.json")
                for k in range(repeats)
            ]
            rounds = pd.concat(runs, ignore_index=True)
            laps = site_laps(base / "deploy").iloc[before:]
            clients = {n: datasets.load_client_file(p) for n, p in files.items()}
            start = time.perf_counter()
            run_job(job, Federation.from_clients(clients), params)
            rows.append(
                {
                    "sites": n_sites,
                    "served by": "site worker" if site_worker else "ClientApp",
                    "job": label,
                    "rounds": f"{len(runs[0])} x {repeats}",
                    "median round s": rounds.median(),
                    "each round s": " | ".join(
                        " ".join(f"{r:.1f}" for r in run) for run in runs
                    ),
                    "in process s": time.perf_counter() - start,
                    **{f"site {k} s": laps[k].median() for k in laps.columns},
                    "Flower's polls and waits s": rounds.median()
                    - laps[["handlers", "data", "serve"]].sum(axis=1).median()
                    - laps["CPU before"].median(),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sites", type=int, nargs="+", default=[2, 4])
    parser.add_argument(
        "--worker-only", action="store_true", help="skip the runs without a worker"
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs of each job")
    args = parser.parse_args()
    rows = []
    for n_sites in args.sites:
        for site_worker in (True,) if args.worker_only else (False, True):
            base = Path(tempfile.mkdtemp(prefix="fedtrees-rounds-"))
            rows += measure(n_sites, base, site_worker, args.repeats)
    frame = pd.DataFrame(rows)
    print_frame(
        frame.round(3),
        "Flower rounds, TLS on 127.0.0.1 (median over rounds and site messages)",
    )


if __name__ == "__main__":
    main()
