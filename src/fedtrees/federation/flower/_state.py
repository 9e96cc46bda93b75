"""The per-run client state on Flower: kept payloads, as bytes in ``context.state``.

A new ClientApp process answers every message (docs/flower.md), so a
:class:`~fedtrees.federation.ClientState` is rebuilt for each one: its kept
payloads are decoded from what the SuperNode keeps in ``context.state`` (key ->
encoded payload) before the request is served, and encoded back after it; its
memo starts empty. The codec carries them, so what is restored is exactly what
was kept.

For tests, the node config ``forget-state-at`` (e.g. ``"2,5"``) clears the
state before the requests of those rounds, as a restarted site would — all but
the agreed categories, which are the run's coding, not a cache
(:mod:`fedtrees.federation._agreement`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fedtrees.exceptions import CodecError
from fedtrees.federation._agreement import AGREED_KEY
from fedtrees.federation._codec import Envelope, decode, encode
from fedtrees.federation._state import ClientState

__all__ = ["kept_state", "load_state"]


def load_state(
    node_config: Mapping[str, Any], kept: Mapping[str, bytes], request: bytes
) -> ClientState:
    """Return the client's state for this message (empty if it must forget)."""
    state = ClientState()
    forget = _forget(node_config, request)
    for key, blob in kept.items():
        if forget and key != AGREED_KEY:  # the agreement is not a cache
            continue
        try:
            payload = decode(bytes(blob)).payload
        except CodecError:
            continue  # an unreadable entry is a missing one: a resync follows
        if payload is not None:
            state.put(str(key), payload)
    return state


def kept_state(state: ClientState) -> dict[str, bytes]:
    """Return the payloads to keep, encoded (they replace the old ones)."""
    return {
        key: encode(Envelope("reply", -1, "", value.kind, value))
        for key, value in state.kept.items()
    }


def _forget(node_config: Mapping[str, Any], request: bytes) -> bool:
    rounds = str(node_config.get("forget-state-at", "")).strip()
    if not rounds:
        return False
    try:
        round_ = decode(request).round
    except CodecError:
        return False
    return str(round_) in {r.strip() for r in rounds.split(",")}
