"""The per-run client state on Flower: kept payloads in ``context.state``.

A new ClientApp process answers every message (README, Flower), so a
:class:`~fedtrees.federation.ClientState` is rebuilt for each one: its kept
payloads are decoded from the SuperNode's ``context.state`` before the request
is served and encoded back after it; its memo starts empty. The codec carries
them, so what is restored is exactly what was kept.

For tests, the node config ``forget-state-at`` (e.g. ``"2,5"``) clears the
state before the requests of those rounds, as a restarted site would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from flwr.app import ConfigRecord, Context

from fedtrees.exceptions import CodecError
from fedtrees.federation._codec import Envelope, decode, encode
from fedtrees.federation._state import ClientState

__all__ = ["load_state", "save_state"]

RECORD: Final = "fedtrees-state"


def load_state(context: Context, request: bytes) -> ClientState:
    """Return the client's state for this message (empty if it must forget)."""
    state = ClientState()
    if _forget(context.node_config, request):
        return state
    record = context.state.get(RECORD)
    if isinstance(record, ConfigRecord):
        for key, blob in record.items():
            try:
                payload = decode(bytes(blob)).payload  # type: ignore[arg-type]
            except CodecError:
                continue  # an unreadable entry is a missing one: a resync follows
            if payload is not None:
                state.put(str(key), payload)
    return state


def save_state(context: Context, state: ClientState) -> None:
    """Write the kept payloads into ``context.state`` (replacing the old ones)."""
    context.state[RECORD] = ConfigRecord(
        {
            key: encode(Envelope("reply", -1, "", value.kind, value))
            for key, value in state.kept.items()
        }
    )


def _forget(node_config: Mapping[str, Any], request: bytes) -> bool:
    rounds = str(node_config.get("forget-state-at", "")).strip()
    if not rounds:
        return False
    try:
        round_ = decode(request).round
    except CodecError:
        return False
    return str(round_) in {r.strip() for r in rounds.split(",")}
