"""Builders of the Flower ServerApp and ClientApp that run fedtrees jobs.

The apps are thin adapters (README, Flower): all protocol logic stays in the
runtime. The ServerApp builds a :class:`Federation` over a
:class:`FlowerTransport`, runs the job named in the run config, and writes the
result document (JSON) and the ledger (CSV) where the operator says — the
ServerApp runs on the SuperLink host, so results are files there. The ClientApp
answers the hello with its node config ``client-id``, loads its data from
``data-path`` (a new process serves every message, so only the per-run client
state kept in ``context.state`` survives between messages, and the data is read
through a per-run cache on the SuperNode's disk, :func:`site_cache_dir`) and
serves each request with :func:`fedtrees.federation.serve`.

Declared categories (run config ``categories``, a JSON object: column -> list of
category names) are public metadata of the run: the ServerApp's federation sends
them at the agreement, and the ClientApp applies them to the data it loads for
every message (a new process answers each one, so a declaration received in
round 0 would not survive to the next round otherwise). Declared class labels
(run config ``classes``, a JSON list) are checked at the agreement only.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from logging import INFO
from pathlib import Path
from typing import Any, Protocol

import pandas as pd
from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.logger import log
from flwr.serverapp import Grid, ServerApp

from fedtrees.exceptions import ValidationError
from fedtrees.federation._client import refuse, serve
from fedtrees.federation._codec import MAX_MESSAGE_BYTES
from fedtrees.federation._data import (
    ClientData,
    DeclaredCategories,
    check_categories,
    check_classes,
)
from fedtrees.federation._driver import RoundCallback, RoundEnv
from fedtrees.federation._federation import Federation
from fedtrees.federation._ledger import Ledger
from fedtrees.federation.flower._state import load_state, save_state
from fedtrees.federation.flower._transport import FlowerTransport, pack, unpack

__all__ = [
    "JobRunner",
    "ServerConfig",
    "Stopwatch",
    "make_client_app",
    "make_server_app",
]

JobRunner = Callable[
    [str, Federation, Mapping[str, Any], float, Sequence[RoundCallback]],
    tuple[dict[str, Any], Ledger],
]
"""(job, federation, params, round timeout, callbacks) -> (result document, ledger)."""


class DataLoader(Protocol):
    """Reads a site's data file, through the run's cache folder when one is given."""

    def __call__(
        self, path: str, target: str | None, *, cache_dir: Path | None, run_id: int
    ) -> tuple[pd.DataFrame, Any]:
        """Return ``(X, y)`` of the file at ``path`` (``target``: its label column)."""
        ...


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
        log(INFO, "fedtrees: wrote %s (%s)", config.output_path, ledger)

    return app


def _log_round(env: RoundEnv) -> None:
    log(
        INFO,
        "fedtrees round %d (%s): %d/%d replies, %d B down, %d B up, %.2f s %s",
        env.round,
        env.kind,
        env.n_replies,
        env.n_requests,
        env.bytes_down,
        env.bytes_up,
        env.seconds,
        dict(env.metrics),
    )


def write_outputs(path: Path, document: Mapping[str, Any], ledger: Ledger) -> None:
    """Write the result JSON and, beside it, the ledger CSV (``*.ledger.csv``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1))
    ledger.to_frame().to_csv(path.with_suffix(".ledger.csv"), index=False)


def make_client_app(
    load_data: DataLoader, load_handlers: Callable[[str], None] = lambda job: None
) -> ClientApp:
    """Build a ClientApp serving fedtrees requests from its node's local data file.

    ``load_handlers(job)`` registers the payloads and handlers of the run's job
    (the run config's ``job``) before a request is decoded.
    """
    app = ClientApp()

    @app.query("fedtrees_hello")
    def hello(message: Message, context: Context) -> Message:
        client = str(context.node_config.get("client-id", ""))
        return Message(
            RecordDict({"hello": ConfigRecord({"client-id": client})}), reply_to=message
        )

    @app.query("fedtrees")
    def answer(message: Message, context: Context) -> Message:
        watch = Stopwatch()
        request = unpack(message.content)
        client = str(context.node_config.get("client-id", ""))
        try:
            limit = max_message_bytes(context.run_config)
        except ValidationError as exc:  # refuse every request, saying why
            return Message(pack(refuse(request, client, str(exc))), reply_to=message)
        load_handlers(str(context.run_config.get("job", "")))
        watch.lap("handlers")
        try:
            data = _load(load_data, client, context)
            data.declare_categories(declared_categories(context.run_config))
            watch.lap("data")
        except Exception as exc:  # the data itself failed: say so, naming the client
            reply = refuse(
                request,
                client,
                f"cannot load local data: {type(exc).__name__}: {exc}",
                max_message_bytes=limit,
            )
        else:
            state = load_state(context, request)
            reply = serve(request, data, state=state, max_message_bytes=limit)
            save_state(context, state)
            watch.lap("serve")
            log(INFO, "fedtrees site %s: %s", client, watch)
        return Message(pack(reply), reply_to=message)

    return app


@dataclass
class Stopwatch:
    """Where one message's seconds went at the site, for its log (README, Flower).

    ``cpu_before`` is the CPU time the ClientApp process spent before the message
    reached fedtrees (starting Python, Flower's set-up, importing the app).
    ``benchmarks/bench_flower_rounds.py`` reads these lines from the SuperNodes' logs.

    Examples
    --------
    >>> str(Stopwatch(cpu_before=1.5, laps={"handlers": 0.25, "serve": 0.125}))
    'process CPU before 1.500 s; handlers 0.250 s, serve 0.125 s'
    """

    cpu_before: float = field(default_factory=time.process_time)
    laps: dict[str, float] = field(default_factory=dict)
    _last: float = field(default_factory=time.perf_counter)

    def lap(self, step: str) -> None:
        """Record the seconds since the previous lap as ``step``'s."""
        now = time.perf_counter()
        self.laps[step] = now - self._last
        self._last = now

    def __str__(self) -> str:
        """Render as the site's log line, e.g. ``process CPU before 0.41 s; ...``."""
        steps = ", ".join(f"{step} {s:.3f} s" for step, s in self.laps.items())
        return f"process CPU before {self.cpu_before:.3f} s; {steps}"


def _load(load_data: DataLoader, client: str, context: Context) -> ClientData:
    node_config = context.node_config
    path = node_config.get("data-path")
    if not client or not isinstance(path, str) or not path:
        raise ValidationError(
            'start the SuperNode with --node-config \'client-id="NAME" '
            'data-path="/path/to/data.npz"\''
        )
    target = node_config.get("target")
    X, y = load_data(
        path,
        str(target) if target else None,
        cache_dir=site_cache_dir(node_config),
        run_id=context.run_id,
    )
    return ClientData.build(client, X, y)


def site_cache_dir(node_config: Mapping[str, Any]) -> Path | None:
    """Return the folder caching this site's prepared data per run (None: no cache).

    The node config's ``cache-dir`` (``""`` turns the cache off); by default
    ``fedtrees/site-data`` under ``$XDG_CACHE_HOME`` (else ``~/.cache``).
    """
    chosen = node_config.get("cache-dir")
    if chosen is not None:
        return Path(str(chosen)).expanduser() if str(chosen) else None
    home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(home) / "fedtrees" / "site-data"
