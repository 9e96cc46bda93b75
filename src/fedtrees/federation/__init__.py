"""The federation runtime: payloads, codec, the one round loop, transports, ledger.

A client's rows never leave its handler. Server strategies plan requests and fold
validated replies; client handlers answer requests from local data; every message
is encoded to bytes by the codec, metered by the ledger and validated on arrival —
in process and over Flower alike (DESIGN.md, "The privacy boundary is the design").
"""

from fedtrees.federation._audit import audit_messages
from fedtrees.federation._checks import InvalidField, as_reply, check_reply
from fedtrees.federation._client import Handle, dispatch, handler, refuse, serve
from fedtrees.federation._codec import Envelope, decode, encode, encode_broadcast
from fedtrees.federation._data import ClientData
from fedtrees.federation._driver import (
    FederationInfo,
    RoundCallback,
    RoundEnv,
    RoundPlan,
    RunResult,
    ServerStrategy,
    receive,
    run,
)
from fedtrees.federation._federation import Federation
from fedtrees.federation._ledger import (
    CapturedMessage,
    Ledger,
    LedgerEntry,
    MeteredTransport,
)
from fedtrees.federation._payload import (
    Field,
    Payload,
    ReplySpec,
    payload,
    payload_class,
)
from fedtrees.federation._schema import Schema, SchemaReply, SchemaRequest, Task, agree
from fedtrees.federation._state import ClientState, Resync
from fedtrees.federation._transport import (
    Delivery,
    Fault,
    InProcessTransport,
    Outgoing,
    Transport,
)

__all__ = [
    "CapturedMessage",
    "ClientData",
    "ClientState",
    "Delivery",
    "Envelope",
    "Fault",
    "Federation",
    "FederationInfo",
    "Field",
    "Handle",
    "InProcessTransport",
    "InvalidField",
    "Ledger",
    "LedgerEntry",
    "MeteredTransport",
    "Outgoing",
    "Payload",
    "ReplySpec",
    "Resync",
    "RoundCallback",
    "RoundEnv",
    "RoundPlan",
    "RunResult",
    "Schema",
    "SchemaReply",
    "SchemaRequest",
    "ServerStrategy",
    "Task",
    "Transport",
    "agree",
    "as_reply",
    "audit_messages",
    "check_reply",
    "decode",
    "dispatch",
    "encode",
    "encode_broadcast",
    "handler",
    "payload",
    "payload_class",
    "receive",
    "refuse",
    "run",
    "serve",
]
