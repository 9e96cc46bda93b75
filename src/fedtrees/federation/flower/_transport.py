"""``FlowerTransport``: the runtime's transport over a Flower ``Grid``.

Flower 1.41 and 1.42.

Encoded fedtrees messages travel as one ``uint8`` array in a ``query.fedtrees``
message. Following docs/flower.md:

- our own push/pull loop with a short poll, not ``Grid.send_and_receive`` (which
  sleeps 3 s between pulls);
- a TTL on every message (the round timeout plus a margin) and a deadline on
  every round, so a hung client can never hang the server;
- ``push_messages`` returns an empty id for an unknown or unregistered node:
  that client is reported unreachable at once;
- every reply is checked with ``has_error()`` (a crashed ClientApp, an expired
  TTL, a node that lost its heartbeat) before its content is touched, and
  content that does not unpack (:class:`~fedtrees.federation.flower._wire.
  MalformedContent`) is that client's ``malformed`` delivery, not the run's end.

SuperNodes are identified by their node config ``client-id``, learnt once by a
``query.fedtrees_hello`` exchange (node ids change when a SuperNode restarts).
That exchange is transport-level addressing and is not in the ledger.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Final

from flwr.app import ConfigRecord, Message, RecordDict
from flwr.serverapp import Grid

from fedtrees._validation import MAX_CLIENT_ID_CHARS, check_float, check_int, shown
from fedtrees.exceptions import NotEnoughClientsError, RemoteProtocolError
from fedtrees.federation._transport import Delivery, Outgoing
from fedtrees.federation.flower._wire import MalformedContent, pack, unpack

__all__ = ["HELLO", "MESSAGE_TYPE", "FlowerTransport"]

MESSAGE_TYPE: Final = "query.fedtrees"
HELLO: Final = "query.fedtrees_hello"
TTL_MARGIN: Final = 30.0


class FlowerTransport:
    """Delivers encoded requests to SuperNodes through a Flower ``Grid``.

    Parameters
    ----------
    grid : flwr.serverapp.Grid
    min_clients : int
        SuperNodes to wait for before the first round.
    registration_timeout : float
        Seconds to wait for them.
    poll_interval : float
        Seconds between pulls (docs/flower.md: 10–50 ms).
    """

    site_files: Final = True
    """Its sites serve data files: schema errors advise their settings."""

    def __init__(
        self,
        grid: Grid,
        *,
        min_clients: int = 1,
        registration_timeout: float = 120.0,
        poll_interval: float = 0.02,
    ) -> None:
        self.grid = grid
        self.min_clients = check_int(
            min_clients, "min_clients", "FlowerTransport", min_value=1
        )
        self.registration_timeout = check_float(
            registration_timeout,
            "registration_timeout",
            "FlowerTransport",
            min_value=0.0,
        )
        self.poll_interval = check_float(
            poll_interval,
            "poll_interval",
            "FlowerTransport",
            min_value=0.0,
            min_inclusive=False,
        )
        self._nodes: dict[str, int] = {}

    def client_ids(self) -> tuple[str, ...]:
        """Client ids of the SuperNodes (discovered on first use)."""
        if not self._nodes:
            self._nodes = self._discover()
        return tuple(sorted(self._nodes))

    def _discover(self) -> dict[str, int]:
        deadline = time.monotonic() + self.registration_timeout
        while len(node_ids := list(self.grid.get_node_ids())) < self.min_clients:
            if time.monotonic() > deadline:
                raise NotEnoughClientsError(
                    f"{len(node_ids)} SuperNodes registered within "
                    f"{self.registration_timeout:g} s; min_clients={self.min_clients}."
                )
            time.sleep(0.5)
        messages = [
            Message(
                RecordDict({}),
                dst_node_id=n,
                message_type=HELLO,
                ttl=self.registration_timeout + TTL_MARGIN,
            )
            for n in node_ids
        ]
        replies = self._push_pull(messages, self.registration_timeout)
        nodes: dict[str, int] = {}
        for node, (reply, _) in zip(node_ids, replies, strict=True):
            client = _hello_client_id(node, reply)
            if client in nodes:
                raise RemoteProtocolError(
                    client,
                    0,
                    "hello",
                    "client-id",
                    f"is claimed by SuperNodes {nodes[client]} and {node}; give every "
                    "SuperNode its own --node-config client-id",
                )
            nodes[client] = node
        return nodes

    def exchange(
        self, round: int, messages: Sequence[Outgoing], timeout: float
    ) -> dict[str, Delivery]:
        """Push one message per client; pull replies until all came or time is up."""
        flower = [
            Message(
                pack(m.data),
                dst_node_id=self._nodes[m.client],
                message_type=MESSAGE_TYPE,
                ttl=timeout + TTL_MARGIN,
                group_id=str(round),
            )
            for m in messages
        ]
        replies = self._push_pull(flower, timeout)
        return {
            m.client: _delivery(m.client, r, s)
            for m, (r, s) in zip(messages, replies, strict=True)
        }

    def _push_pull(
        self, messages: list[Message], timeout: float
    ) -> list[tuple[Message | str, float]]:
        """Return replies in message order; a string says why a message has none."""
        start = time.monotonic()
        ids = list(self.grid.push_messages(messages))
        out: list[tuple[Message | str, float]] = [("no reply in time", timeout)] * len(
            messages
        )
        position = {message_id: i for i, message_id in enumerate(ids) if message_id}
        for i, message_id in enumerate(ids):
            if not message_id:  # docs/flower.md: unknown or unregistered node
                out[i] = (
                    "push_messages returned no id: node unknown or unregistered",
                    0.0,
                )
        pending = set(position)
        while pending and time.monotonic() - start < timeout:
            for reply in self.grid.pull_messages(list(pending)):
                reply_to = reply.metadata.reply_to_message_id
                if reply_to in pending:
                    pending.discard(reply_to)
                    out[position[reply_to]] = (reply, time.monotonic() - start)
            if pending:
                time.sleep(self.poll_interval)
        return out


def _hello_client_id(node: int, reply: Message | str) -> str:
    if isinstance(reply, str) or reply.has_error():
        reason = (
            reply
            if isinstance(reply, str)
            else f"{reply.error.code}: {reply.error.reason}"
        )
        raise RemoteProtocolError(
            f"node {node}", 0, "hello", "reply", f"is missing ({reason})"
        )
    record = reply.content.config_records.get("hello", ConfigRecord())
    client = record.get("client-id")
    if not isinstance(client, str) or not client:
        raise RemoteProtocolError(
            f"node {node}",
            0,
            "hello",
            "client-id",
            "is missing: start the SuperNode with --node-config 'client-id=\"...\"'",
        )
    if len(client) > MAX_CLIENT_ID_CHARS:
        raise RemoteProtocolError(
            f"node {node}",
            0,
            "hello",
            "client-id",
            f"is {len(client)} characters long ({shown(client)}); a client id has "
            f"at most {MAX_CLIENT_ID_CHARS}",
        )
    return client


def _delivery(client: str, reply: Message | str, seconds: float) -> Delivery:
    if isinstance(reply, str):
        if reply.startswith("push_messages"):
            return Delivery(client, "unreachable", None, seconds, reply)
        return Delivery(client, "timeout", None, seconds, reply)
    if reply.has_error():
        detail = f"Flower error {reply.error.code}: {reply.error.reason}"
        return Delivery(client, "unreachable", None, seconds, detail)
    try:
        data = unpack(reply.content)
    except MalformedContent as exc:  # this client's failure, never the run's
        return Delivery(client, "malformed", None, seconds, f"Flower content: {exc}")
    return Delivery(client, "ok", data, seconds)
