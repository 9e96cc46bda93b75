"""The federation runtime: payloads, codec, the one round loop, transports, ledger.

A client's rows never leave its handler. Server strategies plan requests and fold
validated replies; client handlers answer requests from local data; every message
is encoded to bytes by the codec, metered by the ledger and validated on arrival —
in process and over Flower alike (README, "Security and privacy model").

Threat model: the server and the clients are honest but curious (they follow the
protocol and may study all they receive); a client may also be buggy or hostile in
what it sends. Every reply is then size-limited (``max_message_bytes``), decoded by
a strict codec, checked against its request and against the invariants of its
kind (counts within the row and weight bounds declared at the agreement, sums
that agree, consistent moments), and a bad one is rejected naming the client, the
round and the field, before it touches server state; ``on_dropout`` decides
whether the run goes on without that client. These checks bound what a buggy
client can do; they are not a Byzantine defence (plausible false statistics
within the bounds go undetected). A client's runtime answers anything it cannot
read with an error envelope. Not defended: a malicious server, collusion,
traffic analysis. :func:`audit_row_scaling` and :func:`find_client_values` test
that no message carries row-level data (README, "Security and privacy model").
"""

from fedtrees.federation._audit import (
    AuditReport,
    Finding,
    audit_row_scaling,
    compare_message_sizes,
    find_client_values,
    row_scaled_pair,
)
from fedtrees.federation._checks import InvalidField, as_reply, check_reply
from fedtrees.federation._client import Handle, dispatch, handler, refuse, serve
from fedtrees.federation._codec import (
    MAX_MESSAGE_BYTES,
    Envelope,
    decode,
    encode,
    encode_broadcast,
)
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
    "MAX_MESSAGE_BYTES",
    "AuditReport",
    "CapturedMessage",
    "ClientData",
    "ClientState",
    "Delivery",
    "Envelope",
    "Fault",
    "Federation",
    "FederationInfo",
    "Field",
    "Finding",
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
    "audit_row_scaling",
    "check_reply",
    "compare_message_sizes",
    "decode",
    "dispatch",
    "encode",
    "encode_broadcast",
    "find_client_values",
    "handler",
    "payload",
    "payload_class",
    "receive",
    "refuse",
    "row_scaled_pair",
    "run",
    "serve",
]
