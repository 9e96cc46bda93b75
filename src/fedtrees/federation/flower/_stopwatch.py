"""A message's timing at the site, for its log line."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

__all__ = ["Stopwatch"]


@dataclass
class Stopwatch:
    """Where one message's seconds went at the site, for its log (docs/flower.md).

    ``cpu_before`` is the CPU time the ClientApp process spent before the message
    reached fedtrees (starting Python, Flower's set-up, importing the app).
    ``benchmarks/bench_flower_rounds.py`` reads these lines from the SuperNodes' logs.

    Examples
    --------
    >>> str(Stopwatch(cpu_before=1.5, laps={"handlers": 0.25, "serve": 0.125}))
    'process CPU before 1.500 s; handlers 0.250 s, serve 0.125 s'
    """

    cpu_before: float = field(default_factory=time.process_time)
    laps: dict[str, float] = field(default_factory=dict)
    _last: float = field(default_factory=time.perf_counter)

    def lap(self, step: str) -> None:
        """Record the seconds since the previous lap as ``step``'s."""
        now = time.perf_counter()
        self.laps[step] = now - self._last
        self._last = now

    def __str__(self) -> str:
        """Render as the site's log line, e.g. ``process CPU before 0.41 s; ...``."""
        steps = ", ".join(f"{step} {s:.3f} s" for step, s in self.laps.items())
        return f"process CPU before {self.cpu_before:.3f} s; {steps}"
