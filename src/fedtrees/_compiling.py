"""Say so when numba compiles kernels: the first run's pause is not a hang.

fedtrees' kernels are compiled on first use and cached on disk (``cache=True``),
so only the first run in an environment compiles; it takes seconds, during which
a progress bar would sit still. :func:`compile_notice` listens to numba's
compiler events (a compiler pass runs only when a kernel is really compiled,
not when it is loaded from the cache) and prints one line the first time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final

from numba.core import event

__all__ = ["NOTICE", "compile_notice"]

NOTICE: Final = "compiling kernels, first run only (they are cached for later runs)"


class _FirstPass(event.Listener):
    """Call ``say(NOTICE)`` at the first compiler pass it hears, once."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.said = False
        self.lock = threading.Lock()

    def on_start(self, event: event.Event) -> None:
        with self.lock:
            if self.said:
                return
            self.said = True
        self.say(NOTICE)

    def on_end(self, event: event.Event) -> None:
        pass


@contextmanager
def compile_notice(say: Callable[[str], None]) -> Iterator[None]:
    """Within the block, ``say`` the notice once if any kernel gets compiled.

    Examples
    --------
    >>> import numba
    >>> said = []
    >>> with compile_notice(said.append):
    ...     numba.njit(lambda x: x + 1)(1)
    2
    >>> said == [NOTICE]
    True
    """
    with event.install_listener("numba:run_pass", _FirstPass(say)):
        yield
