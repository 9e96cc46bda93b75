"""Per-run client state: what a handler may keep between the rounds of one run.

A handler may keep state across the rounds of one run. In process the transport holds
one :class:`ClientState` per client; on Flower it lives in the SuperNode's
``context.state`` (a new ClientApp process answers every message, so only what is saved
there survives). Each request carries the version of the state the server believes the
client holds and only what changed since; a client whose state is missing or older
answers :class:`Resync` and the server sends it whole. State is a cache: results never
depend on it (tests drop it at random rounds and get the same model).

Two parts, because only one of them can cross a process boundary:

``kept``
    Payloads (codec-encodable), e.g. the forest a client has been told so far.
    On Flower they are encoded into ``context.state`` after every message and
    decoded before the next one.
``memo``
    Anything derived from the kept state and the local data (presorted columns,
    row partitions). It lives as long as the process: for the whole run in
    process, for one message on Flower — where it is rebuilt from ``kept``.
"""

from __future__ import annotations

from typing import Any, TypeVar

from fedtrees.federation._payload import Payload, payload

__all__ = ["ClientState", "Resync"]

P = TypeVar("P", bound=Payload)


class ClientState:
    """One client's state for one run (a cache; see the module docstring).

    Examples
    --------
    >>> state = ClientState()
    >>> state.put("doc", Resync("example"))
    >>> state.get("doc", Resync).reason
    'example'
    >>> state.clear(); state.get("doc", Resync) is None
    True
    """

    def __init__(self) -> None:
        self.kept: dict[str, Payload] = {}
        self.memo: dict[str, Any] = {}

    def get(self, key: str, cls: type[P]) -> P | None:
        """Return the kept payload ``key`` if it is a ``cls``, else None."""
        value = self.kept.get(key)
        return value if isinstance(value, cls) else None

    def put(self, key: str, value: Payload) -> None:
        """Keep ``value`` under ``key`` (it must be a payload: it may be encoded)."""
        self.kept[key] = value

    def clear(self) -> None:
        """Forget everything (as a restarted client would)."""
        self.kept.clear()
        self.memo.clear()


@payload("federation.resync")
class Resync(Payload):
    """A client's answer when its state does not match the request's version.

    The round loop then sends that client the request's full form (the
    :class:`~fedtrees.federation.RoundPlan`'s ``resync``), in the same round.
    """

    reason: str
