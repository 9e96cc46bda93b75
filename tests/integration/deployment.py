"""A real Flower deployment on 127.0.0.1 for tests: SuperLink, SuperNodes, flwr CLI.

Every wait polls observed state (a command's answer, a run's status, a log line,
a process's exit) until a deadline; nothing waits a fixed time. The deadlines
only catch hangs (:data:`HANG`): on a loaded machine a wait lasts as long as the
work it waits for, and a test fails only if that work never ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TypeVar

from fedtrees.cli.site_worker import with_site_worker
from fedtrees.exceptions import ValidationError
from fedtrees.federation.flower import (
    app_dir,
    flower_env,
    make_certificates,
    superlink_command,
    supernode_command,
    write_connection,
)
from fedtrees.federation.flower._deploy import make_supernode_keys, register_supernode

CONNECTION = "fedtrees-test"
HANG: Final = 1800.0
"""Seconds after which a wait fails as a hang (a run, a log line, a registration)."""
COMMAND_TIMEOUT: Final = 600.0
"""Seconds one ``flwr`` command may take before it counts as hung."""
ROUND_TIMEOUT: Final = 600.0
"""The tests' ``round-timeout``: a round ends early only when a site hangs. A
killed SuperNode stops its heartbeats, and Flower reports it offline (its
messages answered with an error, a dropout) after at most two missed 30 s
heartbeats, well before this."""
POLL = 1.0  # seconds between two looks at the observed state
FILE_POLL = 0.2  # seconds between two looks for a file (a stat call)
STATUS_EVERY = 10.0  # seconds between `flwr ls` calls while a run's file is awaited
T = TypeVar("T")


def poll(
    look: Callable[[], T | None], deadline: float, what: str, every: float = POLL
) -> T:
    """Call ``look`` every ``every`` s until it returns something but None, or fail."""
    start = time.monotonic()
    while True:
        seen = look()
        if seen is not None:
            return seen
        if time.monotonic() - start > deadline:
            raise TimeoutError(f"{what} within {deadline} s")
        time.sleep(every)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Deployment:
    """SuperLink + one SuperNode per data file, stopped by pid on exit.

    ``supernode_auth=True`` (TLS only) starts the SuperLink with SuperNode
    authentication: every SuperNode of ``files`` gets a key pair whose public key
    is registered before it starts; those of ``strangers`` (client id -> data
    file) get a key pair that is never registered, so the SuperLink refuses them.
    Every SuperNode has its site worker, as ``fedtrees flower supernode`` starts
    it, unless ``site_worker=False`` (its ClientApps then serve every message).
    """

    def __init__(
        self,
        base: Path,
        files: Mapping[str, Path],
        *,
        tls: bool,
        node_config: Mapping[str, Mapping[str, str]] | None = None,
        supernode_auth: bool = False,
        strangers: Mapping[str, Path] | None = None,
        site_worker: bool = True,
    ) -> None:
        self.base, self.files, self.tls = base, dict(files), tls
        self.node_config = dict(node_config or {})
        self.supernode_auth = supernode_auth
        self.strangers = dict(strangers or {})
        self.site_worker = site_worker
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
                certs=certs,
                insecure=not self.tls,
                host="127.0.0.1",
                port=port,
                supernode_auth=self.supernode_auth,
            ),
        )
        write_connection(
            CONNECTION,
            f"127.0.0.1:{port}",
            flwr_home=self.base / "flwr-home",
            root_certificates=ca,
            insecure=not self.tls,
        )
        keys = self._keys(self.files, register=True)
        keys.update(self._keys(self.strangers, register=False))
        for client, path in {**self.files, **self.strangers}.items():
            command = supernode_command(
                superlink=f"127.0.0.1:{port}",
                client_id=client,
                data_path=path,
                root_certificates=ca,
                insecure=not self.tls,
                port=free_port(),
                node_config={
                    "cache-dir": str(self.base / "site-cache"),
                    **self.node_config.get(client, {}),
                },
                auth_private_key=keys.get(client),
            )
            if self.site_worker:
                command = with_site_worker(command)
            self.nodes[client] = self._start(f"node-{client}", command)
        return self

    def _keys(self, clients: Iterable[str], *, register: bool) -> dict[str, Path]:
        """Key pairs of ``clients`` (with auth), registered at the SuperLink or not."""
        if not self.supernode_auth:
            return {}
        keys = {}
        for client in clients:
            private, public = make_supernode_keys(self.base / "keys", client)
            keys[client] = private
            if register:
                self._register(public)
        return keys

    def _register(self, public: Path) -> None:
        """Register a public key; retried while the SuperLink comes up."""
        error = ""

        def look() -> int | None:
            nonlocal error
            try:
                return register_supernode(
                    public,
                    CONNECTION,
                    name=public.stem,
                    flwr_home=self.env["FLWR_HOME"],
                )
            except ValidationError as exc:
                error = str(exc)
                return None

        try:
            poll(look, HANG, f"{public.name} was not registered")
        except TimeoutError as exc:
            raise RuntimeError(f"{exc}: {error}") from exc

    def refusal(self, client: str, deadline: float = HANG) -> str:
        """Wait until SuperNode ``client`` has exited; return its exit code and log."""
        process = self.nodes[client]
        try:
            code = process.wait(deadline)
        except subprocess.TimeoutExpired as exc:
            raise TimeoutError(
                f"SuperNode {client!r} still runs after {deadline} s; see {self.base}"
            ) from exc
        return f"exit code {code}\n" + (self.base / f"node-{client}.log").read_text()

    def flwr(self, *args: str) -> dict[str, Any]:
        done = subprocess.run(
            ["flwr", *args, "--format", "json"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
        )
        try:
            result: dict[str, Any] = json.loads(done.stdout)
        except ValueError:
            result = {
                "success": False,
                "error-message": (done.stdout + done.stderr)[-2000:],
            }
        return result

    def submit(self, run_config: str, deadline: float = HANG) -> str:
        """`flwr run` the shipped app; retried while the SuperLink comes up."""
        last: dict[str, Any] = {}

        def look() -> str | None:
            nonlocal last
            last = self.flwr(
                "run", str(app_dir()), CONNECTION, "--run-config", run_config
            )
            return str(last["run-id"]) if last.get("success") else None

        try:
            return poll(look, deadline, "flwr run did not succeed")
        except TimeoutError as exc:
            raise RuntimeError(f"flwr run kept failing: {last}") from exc

    def wait(
        self, run_id: str, deadline: float = HANG, output: Path | None = None
    ) -> dict[str, Any]:
        """Wait until the run has finished; return its `flwr ls` status entry.

        Every `flwr ls` is a process that costs about a second of CPU, which the
        run's own processes then lack on a 2-core machine. With ``output`` (the
        run's ``output-path``) the wait looks for the ledger the ServerApp writes
        last, a cheap look, and asks `flwr ls` once it is there, or every
        :data:`STATUS_EVERY` s in case the run fails without writing it.
        """
        ledger = None if output is None else output.with_suffix(".ledger.csv")
        asked = time.monotonic()

        def look() -> dict[str, Any] | None:
            nonlocal asked
            waiting = ledger is not None and not ledger.exists()
            if waiting and time.monotonic() - asked < STATUS_EVERY:
                return None
            asked = time.monotonic()
            runs = self.flwr("ls", CONNECTION, "--run-id", run_id).get("runs") or [{}]
            finished = str(runs[0].get("status", "")).startswith("finished")
            return dict(runs[0]) if finished else None

        return poll(
            look,
            deadline,
            f"run {run_id} did not finish; see {self.base}",
            every=POLL if ledger is None else FILE_POLL,
        )

    def logs(self, run_id: str) -> str:
        """What the run's ServerApp has printed so far (`flwr log --show`)."""
        done = subprocess.run(
            ["flwr", "log", run_id, CONNECTION, "--show"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
        )
        return done.stdout + done.stderr

    def wait_for_log(self, run_id: str, text: str, deadline: float = HANG) -> None:
        """Poll the run's ServerApp log until it shows `text` (observed state)."""
        poll(
            lambda: True if text in self.logs(run_id) else None,
            deadline,
            f"run {run_id} never logged {text!r}; see {self.base}",
        )

    def kill(self, client: str) -> None:
        """Crash a SuperNode (SIGKILL, no goodbye to the SuperLink)."""
        self.nodes[client].send_signal(signal.SIGKILL)
        self.nodes[client].wait(COMMAND_TIMEOUT)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stop([*self.nodes.values(), *([self.link] if self.link else [])])


def stop(processes: Iterable[subprocess.Popen[bytes]]) -> None:
    """Stop the process groups ``processes`` lead: SIGTERM, then SIGKILL after 15 s.

    The whole group: a refused SuperNode exits but leaves its SuperExec, and a
    command started through a shell leaves its children.
    """
    processes = list(processes)
    for process in processes:
        _signal_group(process, signal.SIGTERM)
    for process in processes:
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.wait(COMMAND_TIMEOUT)


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Signal the process group ``process`` leads (if anything of it is left)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)
