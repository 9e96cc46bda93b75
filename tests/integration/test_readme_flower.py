"""The Flower recipe of docs/flower.md, run as written on loopback in a temporary folder.

The ```bash blocks of its section "The recipe on one machine" run in order, in a fresh
folder. A command that ends in ``&`` (the SuperLink, the SuperNodes) is started in
the background, in its own process group, and the test waits on what it shows: the
SuperLink's port accepting connections, each SuperNode logging its node id (the
SuperLink accepted it; an unregistered or crashed one exits, which fails at once). Every other run of lines goes to ``bash -euo pipefail`` as one script.

Substitutions (documented on that page too): the SuperLink's port 9095 becomes a
free port, and ``FLWR_HOME`` points into the temporary folder, so the test neither
collides with another SuperLink nor touches ``~/.flwr``. Nothing else is changed.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fedtrees.algorithms import run_job
from fedtrees.datasets import load_client_file
from fedtrees.federation import Federation
from fedtrees.federation.flower import flower_env
from fedtrees.federation.flower._deploy import free_local_port
from tests.conftest import PROJECT_ROOT
from tests.integration.deployment import COMMAND_TIMEOUT, HANG, poll, stop

pytestmark = pytest.mark.flower

PAGE = PROJECT_ROOT / "docs" / "flower.md"
SECTION = "## The recipe on one machine"
RECIPE_PORT = "9095"
CONNECTION = "trial"  # the recipe's connection name
ACTIVATED = "SuperNode ID:"  # what a SuperNode logs once the SuperLink took it
JOB_DEADLINE = HANG  # seconds for the whole `flwr run ... --stream` block: a hang


@dataclass(frozen=True)
class Step:
    """One background command (``&``) or one foreground script of the recipe."""

    script: str
    background: bool


def recipe(port: int) -> list[Step]:
    """The recipe's steps, with its SuperLink port replaced by ``port``."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start : end if end > 0 else len(text)]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.DOTALL)
    assert blocks, f"no bash blocks in the section {SECTION!r} of {PAGE.name}"
    steps: list[Step] = []
    for block in blocks:
        steps += _steps(re.sub(rf"\b{RECIPE_PORT}\b", str(port), block))
    return steps


def _steps(block: str) -> list[Step]:
    """Split a block at its background commands (continuation lines joined)."""
    lines = block.replace("\\\n", " ").splitlines()
    steps, script = [], []
    for line in lines:
        if line.rstrip().endswith("&") and not line.rstrip().endswith("&&"):
            if script:
                steps.append(Step("\n".join(script), background=False))
                script = []
            steps.append(Step(line.rstrip()[:-1].strip(), background=True))
        else:
            script.append(line)
    if any(line.strip() for line in script):
        steps.append(Step("\n".join(script), background=False))
    return steps


class Trial:
    """Runs the recipe's steps in ``folder``; background processes stop on exit."""

    def __init__(self, folder: Path, port: int) -> None:
        self.folder, self.port = folder, port
        self.env = flower_env(folder / "flwr-home")
        self.background: list[tuple[str, subprocess.Popen[bytes], Path]] = []
        self.outputs: list[str] = []

    def __enter__(self) -> Trial:
        return self

    def __exit__(self, *exc: object) -> None:
        stop(process for _, process, _ in self.background)

    def run(self, step: Step) -> None:
        if step.background:
            self._start(step.script)
        else:
            self._script(step.script)

    def _script(self, script: str) -> None:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=JOB_DEADLINE,
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{script}\n--- exit {done.returncode}:\n{output}"
        self.outputs.append(done.stdout)

    def _start(self, command: str) -> None:
        name = f"background-{len(self.background)}"
        log = self.folder / f"{name}.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                ["bash", "-c", f"exec {command}"],
                cwd=self.folder,
                env=self.env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.background.append((command, process, log))
        if "flower superlink" in command:
            poll(self._listening, HANG, f"the SuperLink never listened; {self._logs()}")
        elif "flower supernode" in command:
            poll(
                lambda: self._logged(log, ACTIVATED),
                HANG,
                f"the SuperNode never joined; {self._logs()}",
            )

    def _alive(self) -> None:
        """Fail at once, with the logs, if a background command has exited."""
        for command, process, _ in self.background:
            if process.poll() is not None:
                pytest.fail(
                    f"{command!r} exited ({process.returncode}); {self._logs()}"
                )

    def _listening(self) -> bool | None:
        self._alive()
        with socket.socket() as probe:
            probe.settimeout(1.0)
            return True if probe.connect_ex(("127.0.0.1", self.port)) == 0 else None

    def _logged(self, log: Path, text: str) -> bool | None:
        self._alive()
        return True if text in log.read_text(errors="replace") else None

    def flwr_json(self, *args: str) -> dict[str, Any]:
        done = subprocess.run(
            ["flwr", *args, "--format", "json"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
        )
        return dict(json.loads(done.stdout))

    def _logs(self) -> str:
        return "\n".join(
            f"--- {command}\n{log.read_text(errors='replace')[-3000:]}"
            for command, _, log in self.background
        )


@pytest.fixture(scope="module")
def trial(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trial]:
    folder = tmp_path_factory.mktemp("flower-recipe")
    port = free_local_port()
    with Trial(folder, port) as trial:
        for step in recipe(port):
            trial.run(step)
        yield trial


def test_the_recipe_has_two_supernodes_on_one_host_without_ports() -> None:
    steps = recipe(9095)
    nodes = [s.script for s in steps if "flower supernode" in s.script]
    assert len(nodes) == 2
    assert all(s.background for s in steps if s.script in nodes)
    assert not any("--port" in node for node in nodes)  # free ports, picked at start


def test_the_recipe_trains_the_forest_fit_grows_in_process(trial: Trial) -> None:
    runs = trial.flwr_json("ls", CONNECTION)["runs"]
    assert [run["status"] for run in runs] == ["finished:completed"], runs
    document = json.loads((trial.folder / "results" / "forest.json").read_text())
    assert document["clients"] == ["Cleveland", "Hungary"]
    assert (trial.folder / "results" / "forest.ledger.csv").is_file()

    sites = {
        site: load_client_file(trial.folder / "sites" / f"{site}.npz")
        for site in ("Cleveland", "Hungary")
    }
    in_process, _ = run_job(
        "fedforest", Federation.from_clients(sites), document["params"]
    )
    expected = json.loads(json.dumps(in_process))
    assert len(document["trees"]) == 10
    assert document["trees"] == expected["trees"]  # same splits, values, counts
    assert document["feature_names"] == list(sites["Cleveland"][0].columns)


def test_the_saved_forest_prints_with_the_feature_names(trial: Trial) -> None:
    # The recipe's last command prints the first tree (after Flower's log).
    printed = [line for line in trial.outputs[-1].splitlines() if line.startswith("|")]
    document = json.loads((trial.folder / "results" / "forest.json").read_text())
    assert printed, trial.outputs[-1]
    assert re.match(r"\|--- \w+ (<=|>) ", printed[0]), printed
    assert printed[0].split()[1] in document["feature_names"], printed
    assert not any(re.search(r"\bx\d+\b", line) for line in printed), printed
