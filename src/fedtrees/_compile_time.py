"""Seconds each thread has spent compiling kernels, which deadlines do not count.

A kernel compiles at its first call wherever the installed cache cannot serve
(:mod:`fedtrees._compiling`): seconds on an idle machine, minutes on a loaded
one. **Decision:** in process, a handler's deadline (the round's ``timeout``,
:mod:`fedtrees.federation._transport`) counts the handler's own work, not the
time its thread spends compiling or waiting for a kernel another thread
compiles. The deadline catches a client that hangs; a compile is work under
way that always ends, and how long it takes says nothing about the client.

Standard library only: the transport asks this clock without importing numba.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

__all__ = ["compile_seconds", "compiling"]

_LOCK: Final = threading.Lock()
_DONE: Final[dict[int, float]] = {}  # thread id -> seconds of its ended compiles
_SINCE: Final[dict[int, float]] = {}  # thread id -> start of its compile under way


@contextmanager
def compiling() -> Iterator[None]:
    """Count the block's time as this thread's compile time (nested: once).

    Examples
    --------
    >>> me = threading.get_ident()
    >>> before = compile_seconds(me)
    >>> with compiling():
    ...     with compiling():
    ...         time.sleep(0.01)
    >>> compile_seconds(me) - before >= 0.01
    True
    """
    me, start = threading.get_ident(), time.monotonic()
    with _LOCK:
        outermost = me not in _SINCE
        if outermost:
            _SINCE[me] = start
    try:
        yield
    finally:
        if outermost:
            with _LOCK:
                del _SINCE[me]
                _DONE[me] = _DONE.get(me, 0.0) + time.monotonic() - start


def compile_seconds(thread: int, now: float | None = None) -> float:
    """Return the seconds ``thread`` has spent compiling, the compile under way too.

    Only differences mean something: a thread id is reused once its thread
    ends, so a reading taken when a handler starts is subtracted from one
    taken later in the same thread. ``now`` is a :func:`time.monotonic`
    reading (default: the current one).
    """
    now = time.monotonic() if now is None else now
    with _LOCK:
        under_way = now - _SINCE[thread] if thread in _SINCE else 0.0
        return _DONE.get(thread, 0.0) + under_way
