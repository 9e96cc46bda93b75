"""Runtime overhead: in-process round trips, and optionally a Flower loopback run.

    python benchmarks/bench_federation.py            # in-process table
    python benchmarks/bench_federation.py --flower   # + 3 SuperNodes on 127.0.0.1

Target (issue 3): < 20 ms per in-process round with 100 clients and 1 KB payloads.
The handler does nothing, so the time is the runtime's own: encode, deliver,
decode, validate, meter, for every client.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from fedtrees.federation import (
    ClientData,
    FederationInfo,
    Field,
    InProcessTransport,
    Payload,
    ReplySpec,
    RoundEnv,
    RoundPlan,
    handler,
    payload,
    run,
)

PAYLOAD_FLOATS = 128  # 1 KB of float64


@payload("bench.echo_reply")
class EchoReply(Payload):
    values: np.ndarray


@payload("bench.echo")
class Echo(Payload):
    values: np.ndarray

    def expected_reply(self) -> ReplySpec:
        return ReplySpec(EchoReply, {"values": Field.array("f", (PAYLOAD_FLOATS,))})


@handler("bench.echo")
def echo(request: Echo, data: ClientData) -> EchoReply:
    return EchoReply(request.values)


class EchoRounds:
    def __init__(self, rounds: int) -> None:
        self.rounds = rounds
        self.values = np.arange(PAYLOAD_FLOATS, dtype=np.float64)

    def start(self, info: FederationInfo) -> None:
        self.clients = info.clients

    def plan_round(self, round: int) -> RoundPlan | None:
        return (
            RoundPlan.broadcast(Echo(self.values), self.clients)
            if round <= self.rounds
            else None
        )

    def aggregate(self, round: int, replies: Mapping[str, Payload]) -> None:
        self.values = sum(r.values for r in replies.values()) / len(replies)  # type: ignore[attr-defined]

    def finish(self) -> None:
        return None


def in_process(
    n_clients: int, rounds: int, workers: int, repeats: int = 5
) -> tuple[float, int, int]:
    rng = np.random.default_rng(0)
    clients = {
        f"c{k:03d}": ClientData.build(
            f"c{k:03d}", rng.normal(size=(10, 3)), rng.integers(0, 2, 10)
        )
        for k in range(n_clients)
    }
    transport = InProcessTransport(clients, workers=workers)
    per_round = []
    for _ in range(repeats):
        timings: list[float] = []

        def record(env: RoundEnv, timings: list[float] = timings) -> None:
            if env.round:
                timings.append(env.seconds)

        result = run(
            EchoRounds(rounds), transport, task="classification", callbacks=[record]
        )
        per_round.append(statistics.median(timings))
    entry = result.ledger.entries[-1]
    return statistics.median(per_round) * 1000, entry.bytes_down, entry.bytes_up


def flower_loopback() -> pd.DataFrame:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.integration.deployment import Deployment

    from fedtrees import datasets

    base = Path(tempfile.mkdtemp(prefix="fedtrees-bench-"))
    heart = datasets.load("heart_disease", flamby=True)
    files = {}
    for site in ("Cleveland", "Hungary", "Long Beach VA"):
        rows = (heart.clients == site).to_numpy()
        files[site.replace(" ", "-")] = datasets.save_client_file(
            base / f"{site}.npz", heart.X[rows].reset_index(drop=True), heart.y[rows]
        )
    out = base / "result.json"
    params = json.dumps({"n_rounds": 8})
    config = f"job='toy' output-path='{out}' min-clients=3 params='{params}'"
    with Deployment(base, files, tls=True) as deployment:
        deployment.wait(deployment.submit(config), deadline=600, output=out)
    ledger = pd.read_csv(out.with_suffix(".ledger.csv"))
    return ledger.groupby("round")["seconds"].max()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--flower", action="store_true", help="also measure a Flower loopback run"
    )
    args = parser.parse_args()
    table = Table(title="In-process round overhead (median of 5 runs x 20 rounds)")
    for column in (
        "clients",
        "workers",
        "bytes down/client",
        "bytes up/client",
        "ms/round",
        "target",
    ):
        table.add_column(column, justify="right")
    for n_clients, workers in ((10, 1), (100, 1), (100, 2), (1000, 1)):
        ms, down, up = in_process(n_clients, rounds=20, workers=workers)
        target = "< 20 ms" if n_clients == 100 else ""
        table.add_row(
            str(n_clients), str(workers), str(down), str(up), f"{ms:.2f}", target
        )
    Console().print(table)
    if args.flower:
        seconds = flower_loopback()
        flower = Table(
            title="Flower loopback, 3 SuperNodes, TLS: slowest client per round (s)"
        )
        flower.add_column("round")
        flower.add_column("seconds", justify="right")
        for round_, value in seconds.items():
            flower.add_row(str(round_), f"{value:.2f}")
        flower.add_row("median", f"{seconds.median():.2f}")
        Console().print(flower)


if __name__ == "__main__":
    main()
