"""The federation runtime: payloads, codec, the one round loop, transports, ledger.

A client's rows never leave its handler. Server strategies plan requests and fold
validated replies; client handlers answer requests from local data; every message
is encoded to bytes by the codec, metered by the ledger and validated on arrival —
in process and over Flower alike (docs/security.md).

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
read with an error envelope. A site may declare its own privacy budget
(:class:`SiteBudget`, kept across runs in a :class:`BudgetFile`): every DP
release is charged to it, and a request that would exceed it is refused with an
error naming the budget. Its DP noise is its own (:class:`SiteNoise`: fresh
operating-system entropy, or keyed by a secret only the site holds), never drawn
from anything the server sends or knows. Not defended: a malicious server, collusion,
traffic analysis. The audit (:mod:`fedtrees.audit`, a layer above this one)
tests that no message carries row-level data (docs/security.md).

The names below load on first use (PEP 562): a Flower ClientApp process, which
only hands its message to the site worker, pays for none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from fedtrees._lazy import lazy_names

_HOMES: Final[dict[str, str]] = {
    "PublicKeyError": "fedtrees.federation._secure",
    "MaskedRounds": "fedtrees.federation._secure_sum",
    "SumCheck": "fedtrees.federation._secure_sum",
    "rounding_bound": "fedtrees.federation._secure",
    "require_key": "fedtrees.federation._secure",
    "no_cohort_keys": "fedtrees.federation._secure",
    "no_cohort": "fedtrees.federation._secure",
    "check_cohort": "fedtrees.federation._secure",
    "check_public_keys": "fedtrees.federation._secure",
    "to_fixed": "fedtrees.federation._secure",
    "masked_spec": "fedtrees.federation._secure",
    "masked_reply": "fedtrees.federation._secure",
    "from_fixed": "fedtrees.federation._secure",
    "RevealRequest": "fedtrees.federation._secure",
    "RevealReply": "fedtrees.federation._secure",
    "MaskedRound": "fedtrees.federation._secure_sum",
    "MaskedReply": "fedtrees.federation._secure",
    "MaskFields": "fedtrees.federation._secure",
    "MIN_COHORT": "fedtrees.federation._secure",
    "BudgetCharge": "fedtrees.federation._budget",
    "BudgetFile": "fedtrees.federation._budget_file",
    "CapturedMessage": "fedtrees.federation._ledger",
    "ClientData": "fedtrees.federation._data",
    "ClientState": "fedtrees.federation._state",
    "Delivery": "fedtrees.federation._transport",
    "Envelope": "fedtrees.federation._codec",
    "Fault": "fedtrees.federation._transport",
    "FLOWER_ROUND_SECONDS": "fedtrees.federation._plan",
    "Federation": "fedtrees.federation._federation",
    "FederationInfo": "fedtrees.federation._driver",
    "declared_weight": "fedtrees.federation._driver",
    "Field": "fedtrees.federation._payload",
    "Handle": "fedtrees.federation._client",
    "InProcessTransport": "fedtrees.federation._transport",
    "InvalidField": "fedtrees.federation._checks",
    "Ledger": "fedtrees.federation._ledger",
    "LedgerEntry": "fedtrees.federation._ledger",
    "MAX_MESSAGE_BYTES": "fedtrees.federation._codec",
    "MAX_ROUNDS": "fedtrees.federation._driver",
    "MAX_TIMEOUT": "fedtrees.federation._driver",
    "MeteredTransport": "fedtrees.federation._ledger",
    "Outgoing": "fedtrees.federation._transport",
    "Payload": "fedtrees.federation._payload",
    "RTOL": "fedtrees.federation._checks",
    "ReplySpec": "fedtrees.federation._payload",
    "Resync": "fedtrees.federation._state",
    "RoundCallback": "fedtrees.federation._driver",
    "RoundEnv": "fedtrees.federation._driver",
    "RoundPlan": "fedtrees.federation._driver",
    "RunResult": "fedtrees.federation._driver",
    "Schema": "fedtrees.federation._schema",
    "SchemaReply": "fedtrees.federation._schema",
    "SchemaRequest": "fedtrees.federation._schema",
    "ServerStrategy": "fedtrees.federation._driver",
    "SiteBudget": "fedtrees.federation._budget",
    "SiteNoise": "fedtrees.federation._noise",
    "Task": "fedtrees.federation._schema",
    "Transport": "fedtrees.federation._transport",
    "agree": "fedtrees.federation._schema",
    "announce_plan": "fedtrees.federation._plan",
    "as_frame": "fedtrees.federation._data",
    "as_reply": "fedtrees.federation._checks",
    "category_positions": "fedtrees.federation._values",
    "check_at_most": "fedtrees.federation._checks",
    "check_moments": "fedtrees.federation._checks",
    "check_noise": "fedtrees.federation._noise",
    "check_reply": "fedtrees.federation._checks",
    "check_same_stats": "fedtrees.federation._checks",
    "check_timeout": "fedtrees.federation._driver",
    "decode": "fedtrees.federation._codec",
    "dispatch": "fedtrees.federation._client",
    "duration_text": "fedtrees.federation._plan",
    "encode": "fedtrees.federation._codec",
    "encode_broadcast": "fedtrees.federation._codec",
    "handler": "fedtrees.federation._client",
    "payload": "fedtrees.federation._payload",
    "payload_class": "fedtrees.federation._payload",
    "plan_line": "fedtrees.federation._plan",
    "receive": "fedtrees.federation._driver",
    "recording": "fedtrees.federation._ledger",
    "refuse": "fedtrees.federation._client",
    "run": "fedtrees.federation._driver",
    "serve": "fedtrees.federation._client",
}
"""Every public name and the module it loads from."""

__all__ = [
    "FLOWER_ROUND_SECONDS",
    "MAX_MESSAGE_BYTES",
    "MAX_ROUNDS",
    "MAX_TIMEOUT",
    "MIN_COHORT",
    "RTOL",
    "BudgetCharge",
    "BudgetFile",
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
    "MaskFields",
    "MaskedReply",
    "MaskedRound",
    "MaskedRounds",
    "MeteredTransport",
    "Outgoing",
    "Payload",
    "PublicKeyError",
    "ReplySpec",
    "Resync",
    "RevealReply",
    "RevealRequest",
    "RoundCallback",
    "RoundEnv",
    "RoundPlan",
    "RunResult",
    "Schema",
    "SchemaReply",
    "SchemaRequest",
    "ServerStrategy",
    "SiteBudget",
    "SiteNoise",
    "SumCheck",
    "Task",
    "Transport",
    "agree",
    "announce_plan",
    "as_frame",
    "as_reply",
    "category_positions",
    "check_at_most",
    "check_cohort",
    "check_moments",
    "check_noise",
    "check_public_keys",
    "check_reply",
    "check_same_stats",
    "check_timeout",
    "declared_weight",
    "decode",
    "dispatch",
    "duration_text",
    "encode",
    "encode_broadcast",
    "from_fixed",
    "handler",
    "masked_reply",
    "masked_spec",
    "no_cohort",
    "no_cohort_keys",
    "payload",
    "payload_class",
    "plan_line",
    "receive",
    "recording",
    "refuse",
    "require_key",
    "rounding_bound",
    "run",
    "serve",
    "to_fixed",
]

if TYPE_CHECKING:
    from fedtrees.federation._budget import BudgetCharge, SiteBudget
    from fedtrees.federation._budget_file import BudgetFile
    from fedtrees.federation._checks import (
        RTOL,
        InvalidField,
        as_reply,
        check_at_most,
        check_moments,
        check_reply,
        check_same_stats,
    )
    from fedtrees.federation._client import Handle, dispatch, handler, refuse, serve
    from fedtrees.federation._codec import (
        MAX_MESSAGE_BYTES,
        Envelope,
        decode,
        encode,
        encode_broadcast,
    )
    from fedtrees.federation._data import ClientData, as_frame
    from fedtrees.federation._driver import (
        MAX_ROUNDS,
        MAX_TIMEOUT,
        FederationInfo,
        RoundCallback,
        RoundEnv,
        RoundPlan,
        RunResult,
        ServerStrategy,
        check_timeout,
        declared_weight,
        receive,
        run,
    )
    from fedtrees.federation._federation import Federation
    from fedtrees.federation._ledger import (
        CapturedMessage,
        Ledger,
        LedgerEntry,
        MeteredTransport,
        recording,
    )
    from fedtrees.federation._noise import SiteNoise, check_noise
    from fedtrees.federation._payload import (
        Field,
        Payload,
        ReplySpec,
        payload,
        payload_class,
    )
    from fedtrees.federation._plan import (
        FLOWER_ROUND_SECONDS,
        announce_plan,
        duration_text,
        plan_line,
    )
    from fedtrees.federation._schema import (
        Schema,
        SchemaReply,
        SchemaRequest,
        Task,
        agree,
    )
    from fedtrees.federation._secure import (
        MIN_COHORT,
        MaskedReply,
        MaskFields,
        PublicKeyError,
        RevealReply,
        RevealRequest,
        check_cohort,
        check_public_keys,
        from_fixed,
        masked_reply,
        masked_spec,
        no_cohort,
        no_cohort_keys,
        require_key,
        rounding_bound,
        to_fixed,
    )
    from fedtrees.federation._secure_sum import MaskedRound, MaskedRounds, SumCheck
    from fedtrees.federation._state import ClientState, Resync
    from fedtrees.federation._transport import (
        Delivery,
        Fault,
        InProcessTransport,
        Outgoing,
        Transport,
    )
    from fedtrees.federation._values import category_positions

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
