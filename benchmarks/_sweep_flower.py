"""Flower replies and ClientApp messages, without Flower processes.

The server's unpacking of a reply (``_transport._delivery`` then ``receive``),
the hello, a fake ``Grid`` for the transport's discovery and deadline, and the
ClientApp called directly with malformed messages.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _sweep_core import Verdict, accepted, blobs, case, check, same, wrong
from _sweep_wire import Ask, Edge


# -- flower ---------------------------------------------------------------------------
def _metadata(message_type: str, reply_to: str = "", message_id: str = "m1") -> Any:
    from flwr.app import Metadata

    return Metadata(
        run_id=1, message_id=message_id, src_node_id=2, dst_node_id=1,
        reply_to_message_id=reply_to, group_id="1", created_at=time.time(),
        ttl=60.0, message_type=message_type,
    )  # fmt: skip


def _honest_reply_bytes() -> bytes:
    from fedtrees.federation import Envelope, encode

    reply = Edge(np.arange(3.0))
    return encode(Envelope("reply", 1, "site-b", reply.kind, reply))


def _server_receives(content: Any = None, error: Any = None) -> Verdict:
    """The ServerApp unpacks a Flower reply from site-b and validates it."""
    from flwr.app import Message

    from fedtrees.federation import receive
    from fedtrees.federation.flower._transport import _delivery

    metadata = _metadata("query.fedtrees", reply_to="m0")
    message = (
        Message(error=error, metadata=metadata)
        if error is not None
        else Message(content, metadata=metadata)
    )
    delivery = _delivery("site-b", message, 0.1)
    got = receive("site-b", 1, Ask(), delivery)
    return check(
        isinstance(got, Edge) and same(got.value, np.arange(3.0)),
        "the reply's bytes, unchanged",
        f"accepted {got!r}",
    )


def _array_record(name: str, array: np.ndarray) -> Any:
    from flwr.app import Array, ArrayRecord, RecordDict

    return RecordDict({"fedtrees": ArrayRecord({name: Array(array)})})


case("reply-without-fedtrees-record", "flower", ("site-b", "malformed|envelope"))(
    lambda: _server_receives(__import__("flwr.app").app.RecordDict({}))
)
case("reply-data-as-float64", "flower", ("site-b", "malformed"))(
    lambda: _server_receives(_array_record("data", _as_float64(_honest_reply_bytes())))
)


def _as_float64(data: bytes) -> np.ndarray:
    """The message's bytes viewed as float64 (as a sender mixing up dtypes would)."""
    return np.frombuffer(data + b"\0" * (-len(data) % 8), np.float64)


case("reply-data-as-2d-array", "flower", ("site-b",))(
    lambda: _server_receives(
        _array_record("data", np.frombuffer(_honest_reply_bytes(), np.uint8)[None])
    )
)
case("reply-record-key-renamed", "flower", ("site-b", "malformed|envelope"))(
    lambda: _server_receives(
        _array_record("payload", np.frombuffer(_honest_reply_bytes(), np.uint8))
    )
)


@case("reply-config-record-named-fedtrees", "flower", ("site-b", "malformed|envelope"))
def config_record_reply() -> Verdict:
    from flwr.app import ConfigRecord, RecordDict

    return _server_receives(RecordDict({"fedtrees": ConfigRecord({"data": b"x"})}))


@case("reply-flower-error", "flower", ("site-b", "unreachable|missing"))
def flower_error_reply() -> Verdict:
    from flwr.app import Error

    return _server_receives(error=Error(code=3, reason="ClientApp crashed"))


def _hello_reply(record: dict[str, Any]) -> Any:
    from flwr.app import ConfigRecord, Message, RecordDict

    content = RecordDict({"hello": ConfigRecord(record)}) if record else RecordDict()
    return Message(content, metadata=_metadata("query.fedtrees_hello", "m0"))


@case("hello-client-id-int", "flower", ("node 7", "client-id"))
def hello_int() -> Verdict:
    from fedtrees.federation.flower._transport import _hello_client_id

    got = _hello_client_id(7, _hello_reply({"client-id": 5}))
    return accepted(f"client id {got!r}")


@case("hello-without-record", "flower", ("node 7", "client-id"))
def hello_empty() -> Verdict:
    from fedtrees.federation.flower._transport import _hello_client_id

    got = _hello_client_id(7, _hello_reply({}))
    return accepted(f"client id {got!r}")


class FakeGrid:
    """A Flower ``Grid`` stand-in: nodes answer with ``answer(node, message)``.

    It sets the identity a ServerApp process has (Flower's own runtime does),
    which a server-side ``Message`` needs.
    """

    def __init__(self, answers: dict[int, Any]) -> None:
        from flwr.supercore.task_identity import TaskIdentity

        TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 1, 0
        self.answers, self.pending, self.count = answers, [], 0

    def get_node_ids(self) -> list[int]:
        return list(self.answers)

    def push_messages(self, messages: list[Any]) -> list[str]:
        ids = []
        for message in messages:
            self.count += 1
            ids.append(f"id{self.count}")
            reply = self.answers[message.metadata.dst_node_id](message)
            if reply is not None:
                self.pending.append(_with_reply_to(reply, ids[-1]))
        return ids

    def pull_messages(self, ids: list[str]) -> list[Any]:
        out = [m for m in self.pending if m.metadata.reply_to_message_id in ids]
        self.pending = [m for m in self.pending if m not in out]
        return out


def _with_reply_to(reply: Any, message_id: str) -> Any:
    from flwr.app import Message

    metadata = _metadata(reply.metadata.message_type, reply_to=message_id)
    if reply.has_error():
        return Message(error=reply.error, metadata=metadata)
    return Message(reply.content, metadata=metadata)


@case("two-supernodes-one-client-id", "flower", ("site-a", "client-id"))
def duplicate_ids() -> Verdict:
    from fedtrees.federation.flower._transport import FlowerTransport

    grid = FakeGrid({1: lambda m: _hello_reply({"client-id": "site-a"})} | {
        2: lambda m: _hello_reply({"client-id": "site-a"})
    })  # fmt: skip
    ids = FlowerTransport(grid, registration_timeout=2.0).client_ids()  # type: ignore[arg-type]
    return accepted(f"clients {ids}")


@case("supernode-never-answers", "flower", ("site-b", "in time"))
def silent_node() -> Verdict:
    from fedtrees.federation import Envelope, Outgoing, encode, receive
    from fedtrees.federation.flower._transport import FlowerTransport

    def hello(name: str) -> Any:
        return lambda m: (
            _hello_reply({"client-id": name})
            if m.metadata.message_type.endswith("hello")
            else None
        )

    grid = FakeGrid({1: hello("site-a"), 2: hello("site-b")})
    transport = FlowerTransport(grid, registration_timeout=2.0, poll_interval=0.01)  # type: ignore[arg-type]
    transport.client_ids()
    data = encode(Envelope("request", 1, "site-b", "sweep.ask", Ask()))
    start = time.monotonic()
    out = transport.exchange(1, [Outgoing("site-b", "sweep.ask", data)], 0.3)
    if time.monotonic() - start > 5.0:
        return wrong("the round outlived its deadline by seconds")
    receive("site-b", 1, Ask(), out["site-b"])
    return accepted("no reply, yet a payload")


def _client_app_answers(content: Any) -> Verdict:
    """The ClientApp of site-b is handed ``content`` as a fedtrees request."""
    from flwr.app import Context, Message, RecordDict

    from fedtrees.datasets import load_site_data, save_client_file
    from fedtrees.federation import decode
    from fedtrees.federation.flower import make_client_app
    from fedtrees.federation.flower._wire import unpack

    X, y, _ = blobs()
    app = make_client_app(load_site_data)
    with tempfile.TemporaryDirectory(prefix="sweep-site-") as folder:
        path = save_client_file(Path(folder) / "site.npz", pd.DataFrame(X), y)
        config = {"client-id": "site-b", "data-path": str(path), "cache-dir": ""}
        context = Context(
            run_id=1, node_id=2, node_config=config, state=RecordDict(), run_config={}
        )  # type: ignore[arg-type]
        reply = app(Message(content, metadata=_metadata("query.fedtrees")), context)
    if reply.has_error():
        return wrong(f"the ClientApp failed: {reply.error.reason}")
    answer = decode(unpack(reply.content))
    if answer.type == "error":
        from fedtrees.exceptions import RemoteProtocolError

        raise RemoteProtocolError("site-b", answer.round, "?", "handler", answer.error)
    return accepted(f"answered {answer.type}")


@case("clientapp-request-without-record", "flower", ("site-b|fedtrees",))
def app_without_record() -> Verdict:
    from flwr.app import RecordDict

    return _client_app_answers(RecordDict({}))


@case("clientapp-request-as-float64", "flower", ("site-b", "Codec|malformed"))
def app_float_record() -> Verdict:
    from fedtrees.federation import Envelope, encode

    data = encode(Envelope("request", 1, "site-b", "sweep.ask", Ask()))
    return _client_app_answers(_array_record("data", _as_float64(data)))


@case("clientapp-reply-envelope-as-request", "flower", ("site-b", "request"))
def app_reply_as_request() -> Verdict:
    data = np.frombuffer(_honest_reply_bytes(), np.uint8)
    return _client_app_answers(_array_record("data", data))
