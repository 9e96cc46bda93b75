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
config ``classes``, a JSON list) are checked at the agreement only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from logging import INFO
from pathlib import Path
from typing import Any

from flwr.app import Context
from flwr.common.logger import log
from flwr.serverapp import Grid, ServerApp

from fedtrees.exceptions import ValidationError
from fedtrees.federation._codec import MAX_MESSAGE_BYTES
from fedtrees.federation._data import (
    DeclaredCategories,
    check_categories,
    check_classes,
)
from fedtrees.federation._driver import RoundCallback, RoundEnv
from fedtrees.federation._federation import Federation
from fedtrees.federation._ledger import Ledger
from fedtrees.federation.flower._transport import FlowerTransport

__all__ = [
    "JobRunner",
    "ServerConfig",
    "declared_categories",
    "make_server_app",
    "max_message_bytes",
    "write_outputs",
]

JobRunner = Callable[
    [str, Federation, Mapping[str, Any], float, Sequence[RoundCallback]],
    tuple[dict[str, Any], Ledger],
]
"""(job, federation, params, round timeout, callbacks) -> (result document, ledger)."""


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

    @classmethod
    def from_run_config(cls, config: Mapping[str, Any]) -> ServerConfig:
        """Validate the run config; errors name the key."""
        try:
            params = json.loads(str(config.get("params", "{}")))
        except ValueError as exc:
            raise ValidationError(f"Run config 'params' is not JSON: {exc}") from exc
        if not isinstance(params, dict):
            raise ValidationError("Run config 'params' must be a JSON object.")
        return cls(
            job=_get(config, "job", str),
            params=params,
            output_path=Path(_get(config, "output-path", str)),
            min_clients=int(_get(config, "min-clients", int)),
            round_timeout=float(_get(config, "round-timeout", float)),
            registration_timeout=float(_get(config, "registration-timeout", float)),
            poll_interval=float(_get(config, "poll-interval", float)),
            categories=declared_categories(config),
            classes=check_classes(_json(config, "classes"), "Run config 'classes'"),
            max_message_bytes=max_message_bytes(config),
        )


def max_message_bytes(config: Mapping[str, Any]) -> int:
    """Return the run config's ``max-message-bytes`` (an int >= 1), or the default.

    The longest message either side reads: the server checks every reply, each
    ClientApp every request, before decoding.
    """
    if config.get("max-message-bytes") is None:
        return MAX_MESSAGE_BYTES
    value = _get(config, "max-message-bytes", int)
    if value < 1 or (isinstance(value, float) and not value.is_integer()):
        raise ValidationError(
            f"Run config 'max-message-bytes' must be an int >= 1; got {value!r}."
        )
    return int(value)


def declared_categories(config: Mapping[str, Any]) -> DeclaredCategories:
    """Return the run config's ``categories`` (JSON: column -> names), or {}."""
    return check_categories(_json(config, "categories"), "Run config 'categories'")


def _json(config: Mapping[str, Any], key: str) -> Any:
    """Return the run config's JSON value ``key`` parsed, None if absent or ""."""
    text = config.get(key, "")
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        raise ValidationError(
            f"Run config {key!r} must be a JSON string; got {text!r}."
        )
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValidationError(f"Run config {key!r} is not JSON: {exc}") from exc


def _get(config: Mapping[str, Any], key: str, kind: type) -> Any:
    value = config.get(key)
    numeric = (
        kind in (int, float)
        and isinstance(value, int | float)
        and not isinstance(value, bool)
    )
    if value is None or not (isinstance(value, kind) or numeric):
        raise ValidationError(
            f"Run config {key!r} must be a {kind.__name__}; got {value!r}."
        )
    return value


def make_server_app(run_job: JobRunner) -> ServerApp:
    """Build a ServerApp that runs ``run_job`` on the SuperNodes, writing its output."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        config = ServerConfig.from_run_config(context.run_config)
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
            ),
            config.params,
            config.round_timeout,
            [_log_round],
        )
        write_outputs(config.output_path, document, ledger)
        log(INFO, "%s", job_summary(config.output_path, ledger))

    return app


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
