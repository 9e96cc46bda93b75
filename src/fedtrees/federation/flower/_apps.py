"""The ServerApp that runs fedtrees jobs, and the run config it reads.

The app is a thin adapter (docs/flower.md): all protocol logic stays in the
runtime. The ServerApp builds a :class:`Federation` over a
:class:`FlowerTransport`, runs the job named in the run config, and writes the
result document (JSON) and the ledger (CSV) where the operator says — the
ServerApp runs on the SuperLink host, so results are files there. The
ClientApp is :mod:`fedtrees.federation.flower._clientapp`.

Declared categories (run config ``categories``, a JSON object: column -> list of
category names) are public metadata of the run: the ServerApp's federation sends
them at the agreement, and the sites apply them to the data they load for every
message (a new process may answer each one, so a declaration received in round 0
would not survive to the next round otherwise). Declared class labels (run
config ``classes``, a JSON list) are checked at the agreement only. Undeclared
categorical columns whose sites' lists differ agree on their union
(:mod:`fedtrees.federation._agreement`), unless the run config's
``require-declared-categories`` is true.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from logging import INFO
from pathlib import Path
from typing import Any

from flwr.app import Context
from flwr.common.logger import log
from flwr.serverapp import Grid, ServerApp

from fedtrees._validation import shown
from fedtrees.exceptions import ValidationError
from fedtrees.federation._codec import MAX_MESSAGE_BYTES
from fedtrees.federation._data import DeclaredCategories
from fedtrees.federation._driver import RoundCallback, RoundEnv
from fedtrees.federation._federation import Federation
from fedtrees.federation._ledger import Ledger
from fedtrees.federation._plan import announce_plan
from fedtrees.federation.flower._config import (
    check_run_config,
    declared_categories,
    max_message_bytes,
    require_declared_categories,
    run_config_value,
)
from fedtrees.federation.flower._transport import FlowerTransport

__all__ = [
    "JobCheck",
    "JobRunner",
    "ServerConfig",
    "check_output_path",
    "declared_categories",
    "job_callbacks",
    "make_server_app",
    "max_message_bytes",
    "write_outputs",
]

JobRunner = Callable[
    [str, Federation, Mapping[str, Any], float, Sequence[RoundCallback]],
    tuple[dict[str, Any], Ledger],
]
"""(job, federation, params, round timeout, callbacks) -> (result document, ledger)."""
JobCheck = Callable[[str, Mapping[str, Any]], None]
"""(job, params) -> None: refuses an unknown job or parameter name, naming it."""


@dataclass(frozen=True)
class ServerConfig:
    """The ServerApp's run config (``[tool.flwr.app.config]`` plus ``--run-config``)."""

    job: str
    params: dict[str, Any]
    output_path: Path
    min_clients: int
    round_timeout: float
    registration_timeout: float
    poll_interval: float
    categories: DeclaredCategories = field(default_factory=dict)
    classes: tuple[str, ...] | None = None
    max_message_bytes: int = MAX_MESSAGE_BYTES
    require_declared_categories: bool = False

    @classmethod
    def from_run_config(cls, config: Mapping[str, Any]) -> ServerConfig:
        """Validate every key of the run config; errors name the key."""
        check_run_config(config)
        params = run_config_value(config, "params")
        return cls(
            job=run_config_value(config, "job"),
            params={} if params is None else params,
            output_path=Path(run_config_value(config, "output-path")),
            min_clients=run_config_value(config, "min-clients"),
            round_timeout=run_config_value(config, "round-timeout"),
            registration_timeout=run_config_value(config, "registration-timeout"),
            poll_interval=run_config_value(config, "poll-interval"),
            categories=declared_categories(config),
            classes=run_config_value(config, "classes"),
            max_message_bytes=max_message_bytes(config),
            require_declared_categories=require_declared_categories(config),
        )


def check_output_path(path: Path) -> None:
    """Refuse, before the run, an output path the ServerApp could not write at its end.

    A folder, or a path under a file or an unwritable folder, would lose the
    run's work at the last step.

    Raises
    ------
    ValidationError
        Naming the run config's ``output-path`` and what is wrong with it.
    """
    where = f"Run config 'output-path' ({shown(str(path))})"
    if path.is_dir():
        raise ValidationError(f"{where} is a folder; name the result file in it.")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise ValidationError(
            f"{where} cannot be written: {shown(str(folder))} is not a folder the "
            "SuperLink's user may write; the result would be lost at the end of "
            "the run."
        )


def make_server_app(run_job: JobRunner, check_job: JobCheck | None = None) -> ServerApp:
    """Build a ServerApp that runs ``run_job`` on the SuperNodes, writing its output.

    Before it waits for any SuperNode, the ServerApp checks the run config
    (:meth:`ServerConfig.from_run_config`), the output path
    (:func:`check_output_path`) and, with ``check_job``, the job's name and
    parameter names: a mistake there fails the run at once, naming it.
    """
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        config = ServerConfig.from_run_config(context.run_config)
        check_output_path(config.output_path)
        if check_job is not None:
            check_job(config.job, config.params)
        transport = FlowerTransport(
            grid,
            min_clients=config.min_clients,
            registration_timeout=config.registration_timeout,
            poll_interval=config.poll_interval,
        )
        document, ledger = run_job(
            config.job,
            Federation(
                transport,
                categories=config.categories,
                classes=config.classes,
                max_message_bytes=config.max_message_bytes,
                require_declared_categories=config.require_declared_categories,
            ),
            config.params,
            config.round_timeout,
            job_callbacks(config.job),
        )
        write_outputs(config.output_path, document, ledger)
        log(INFO, "%s", job_summary(config.output_path, ledger))

    return app


def job_callbacks(job: str) -> list[RoundCallback]:
    """Return the ServerApp's round callbacks: the plan after round 0, every round.

    After the agreement the log says how many rounds the job takes at most and
    about how long over Flower (:func:`fedtrees.federation.plan_line`); then one
    line per round (what it sent, how long it took). ``flwr run --stream`` and
    ``flwr log`` show them.
    """
    return [announce_plan(job, _log_line), _log_round]


def _log_line(text: str) -> None:
    log(INFO, "%s", text)


def _log_round(env: RoundEnv) -> None:
    log(
        INFO,
        "fedtrees round %d (%s): %d/%d replies, %d B down, %d B up, %.2f s%s",
        env.round,
        env.kind,
        env.n_replies,
        env.n_requests,
        env.bytes_down,
        env.bytes_up,
        env.seconds,
        "".join(f", {k} {v:g}" for k, v in env.metrics.items()),
    )


def job_summary(path: Path, ledger: Ledger) -> str:
    """Return the job's closing log line: what was sent and what was written.

    Examples
    --------
    >>> from fedtrees.federation import Ledger
    >>> print(job_summary(Path("r.json"), Ledger()))  # doctest: +NORMALIZE_WHITESPACE
    fedtrees: done in 0 rounds (0 messages, 0.0 KiB down, 0.0 KiB up);
    wrote r.json and r.ledger.csv
    """
    return (
        f"fedtrees: done in {ledger.rounds} rounds ({ledger.messages} messages, "
        f"{ledger.bytes_down / 1024:.1f} KiB down, {ledger.bytes_up / 1024:.1f} KiB "
        f"up); wrote {path} and {path.with_suffix('.ledger.csv')}"
    )


def write_outputs(path: Path, document: Mapping[str, Any], ledger: Ledger) -> None:
    """Write the result JSON and, beside it, the ledger CSV (``*.ledger.csv``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1))
    ledger.to_frame().to_csv(path.with_suffix(".ledger.csv"), index=False)
