"""A real Flower deployment on 127.0.0.1 for tests: SuperLink, SuperNodes, flwr CLI."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from fedtrees.federation.flower import (
    app_dir,
    flower_env,
    make_certificates,
    superlink_command,
    supernode_command,
    write_connection,
)

CONNECTION = "fedtrees-test"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Deployment:
    """SuperLink + one SuperNode per data file, stopped by pid on exit."""

    def __init__(
        self,
        base: Path,
        files: Mapping[str, Path],
        *,
        tls: bool,
        node_config: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.base, self.files, self.tls = base, dict(files), tls
        self.node_config = dict(node_config or {})
        self.env = flower_env(base / "flwr-home")
        self.link: subprocess.Popen[bytes] | None = None
        self.nodes: dict[str, subprocess.Popen[bytes]] = {}

    def _start(self, name: str, command: list[str]) -> subprocess.Popen[bytes]:
        log = (self.base / f"{name}.log").open("wb")
        return subprocess.Popen(
            command,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def __enter__(self) -> Deployment:
        certs = make_certificates(self.base / "certs") if self.tls else None
        ca = certs / "ca.crt" if certs else None
        port = free_port()
        self.link = self._start(
            "superlink",
            superlink_command(
                certs=certs, insecure=not self.tls, host="127.0.0.1", port=port
            ),
        )
        for client, path in self.files.items():
            command = supernode_command(
                superlink=f"127.0.0.1:{port}",
                client_id=client,
                data_path=path,
                root_certificates=ca,
                insecure=not self.tls,
                port=free_port(),
                node_config=self.node_config.get(client),
            )
            self.nodes[client] = self._start(f"node-{client}", command)
        write_connection(
            CONNECTION,
            f"127.0.0.1:{port}",
            flwr_home=self.base / "flwr-home",
            root_certificates=ca,
            insecure=not self.tls,
        )
        return self

    def flwr(self, *args: str) -> dict[str, Any]:
        done = subprocess.run(
            ["flwr", *args, "--format", "json"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        try:
            result: dict[str, Any] = json.loads(done.stdout)
        except ValueError:
            result = {
                "success": False,
                "error-message": (done.stdout + done.stderr)[-2000:],
            }
        return result

    def submit(self, run_config: str, deadline: float = 60.0) -> str:
        """`flwr run` the shipped app; retried while the SuperLink comes up."""
        start = time.monotonic()
        while True:
            result = self.flwr(
                "run", str(app_dir()), CONNECTION, "--run-config", run_config
            )
            if result.get("success"):
                return str(result["run-id"])
            if time.monotonic() - start > deadline:
                raise RuntimeError(f"flwr run kept failing: {result}")
            time.sleep(1.0)

    def wait(self, run_id: str, deadline: float) -> dict[str, Any]:
        """Poll `flwr ls` until the run has finished; return its status entry."""
        start = time.monotonic()
        while time.monotonic() - start < deadline:
            runs = self.flwr("ls", CONNECTION, "--run-id", run_id).get("runs") or [{}]
            if str(runs[0].get("status", "")).startswith("finished"):
                return dict(runs[0])
            time.sleep(1.0)
        raise TimeoutError(
            f"run {run_id} did not finish within {deadline} s; see {self.base}"
        )

    def logs(self, run_id: str) -> str:
        """What the run's ServerApp has printed so far (`flwr log --show`)."""
        done = subprocess.run(
            ["flwr", "log", run_id, CONNECTION, "--show"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.stdout + done.stderr

    def wait_for_log(self, run_id: str, text: str, deadline: float) -> None:
        """Poll the run's ServerApp log until it shows `text` (observed state)."""
        start = time.monotonic()
        while time.monotonic() - start < deadline:
            if text in self.logs(run_id):
                return
            time.sleep(1.0)
        raise TimeoutError(
            f"run {run_id} never logged {text!r} within {deadline} s; see {self.base}"
        )

    def kill(self, client: str) -> None:
        """Crash a SuperNode (SIGKILL, no goodbye to the SuperLink)."""
        self.nodes[client].send_signal(signal.SIGKILL)
        self.nodes[client].wait(10)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        processes = [*self.nodes.values(), *([self.link] if self.link else [])]
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)
