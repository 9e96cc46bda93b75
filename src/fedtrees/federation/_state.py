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

from collections.abc import Callable
from typing import Any, TypeVar

from fedtrees.federation._payload import Payload, payload

__all__ = ["ClientState", "Resync"]

P = TypeVar("P", bound=Payload)
M = TypeVar("M")


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

    def memo_of(self, key: str, cls: type[M], fit_id: int, build: Callable[[], M]) -> M:
        """Return the memo ``key`` of fit ``fit_id``, building and keeping it if absent.

        A memo of another fit (or of another type) is replaced: derived data never
        outlives the fit it was derived for.

        Examples
        --------
        >>> from types import SimpleNamespace as Memo
        >>> state = ClientState()
        >>> first = state.memo_of("m", Memo, 1, lambda: Memo(fit_id=1))
        >>> state.memo_of("m", Memo, 1, lambda: Memo(fit_id=1)) is first
        True
        >>> state.memo_of("m", Memo, 2, lambda: Memo(fit_id=2)).fit_id
        2
        """
        found = self.memo.get(key)
        if isinstance(found, cls) and getattr(found, "fit_id", None) == fit_id:
            return found
        built = build()
        self.memo[key] = built
        return built

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
