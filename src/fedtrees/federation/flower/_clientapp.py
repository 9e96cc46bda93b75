"""The ClientApp: a Flower process per message, kept to Flower and a socket.

Flower starts a ClientApp process for every message (docs/flower.md). This
module is all that process imports of fedtrees: it answers the hello with the
node config's ``client-id`` and hands every request to the site's worker
(:mod:`fedtrees.federation.flower._wire`), whose socket the node config's
``site-worker`` names. Without a worker, or when it does not answer, the
process serves the request itself (:func:`fedtrees.federation.flower._site.serve_site`,
loaded only then): the same code, so the same reply. The client state kept
between messages lives in ``context.state`` either way.
"""

from __future__ import annotations

from collections.abc import Callable
from logging import INFO, WARNING
from typing import TYPE_CHECKING, Final

from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.logger import log

from fedtrees.federation.flower._stopwatch import Stopwatch
from fedtrees.federation.flower._wire import (
    NODE_CONFIG_KEY,
    MalformedContent,
    SiteAnswer,
    SiteMessage,
    WorkerUnavailable,
    ask_worker,
    pack,
    unpack,
)

if TYPE_CHECKING:
    from fedtrees.federation.flower._site import DataLoader

__all__ = ["STATE_RECORD", "make_client_app"]

STATE_RECORD: Final = "fedtrees-state"
"""The ``context.state`` record that keeps the client state between messages."""


def make_client_app(
    load_data: DataLoader,
    load_handlers: Callable[[str], None] = lambda job: None,
    *,
    site_worker: bool = False,
) -> ClientApp:
    """Build a ClientApp serving fedtrees requests from its node's local data file.

    ``load_data`` and ``load_handlers`` serve a request in this process:
    ``load_handlers(job)`` registers the payloads and handlers of the run's job
    (the run config's ``job``) before a request is decoded. With
    ``site_worker``, a request goes first to the worker the node config's
    ``site-worker`` names, which must serve with the same two functions (as
    fedtrees' own app and worker do, :mod:`fedtrees.cli.flower_app`).
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
        try:
            request = unpack(message.content)
        except MalformedContent as exc:  # answered, saying why, as any bad request
            return Message(pack(_unreadable(context, exc)), reply_to=message)
        site = SiteMessage(
            request,
            dict(context.node_config),
            dict(context.run_config),
            context.run_id,
            _kept(context),
        )
        served, where = (_by_worker(site) if site_worker else None), "site worker"
        if served is None:
            from fedtrees.federation.flower._site import serve_site

            served, where = serve_site(site, load_data, load_handlers), "ClientApp"
        context.state[STATE_RECORD] = ConfigRecord(dict(served.state))
        if served.laps:
            watch.laps.update(served.laps)
            client = site.node_config.get("client-id", "")
            log(INFO, "fedtrees site %s: %s (served by the %s)", client, watch, where)
        return Message(pack(served.reply), reply_to=message)

    return app


def _unreadable(context: Context, problem: MalformedContent) -> bytes:
    """Return the error envelope of a request whose Flower content is malformed."""
    from fedtrees.federation._client import refuse

    client = str(context.node_config.get("client-id", ""))
    return refuse(None, client, f"the request's Flower content is malformed: {problem}")


def _kept(context: Context) -> dict[str, bytes]:
    record = context.state.get(STATE_RECORD)
    if not isinstance(record, ConfigRecord):
        return {}
    return {str(k): v for k, v in record.items() if isinstance(v, bytes)}


def _by_worker(site: SiteMessage) -> SiteAnswer | None:
    """Return the site worker's answer; None without a worker or its answer."""
    path = site.node_config.get(NODE_CONFIG_KEY)
    if not isinstance(path, str) or not path:
        return None
    try:
        return ask_worker(path, site)
    except WorkerUnavailable as exc:
        log(WARNING, "fedtrees: %s; serving this message here instead", exc)
        return None
