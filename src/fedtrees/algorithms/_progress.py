"""A rich progress bar fed by the round loop's callbacks (``verbose=True``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from fedtrees.federation import RoundCallback, RoundEnv

__all__ = ["round_progress"]


@contextmanager
def round_progress(description: str, enabled: bool) -> Iterator[list[RoundCallback]]:
    """Yield the callbacks to pass to ``run``: a live bar with per-round metrics.

    Examples
    --------
    >>> with round_progress("fit", enabled=False) as callbacks:
    ...     callbacks
    []
    """
    if not enabled:
        yield []
        return
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[metrics]}"),
        TimeElapsedColumn(),
        transient=False,
    )
    task = progress.add_task(description, total=None, metrics="")

    def update(env: RoundEnv) -> None:
        shown = " ".join(f"{k}={v:g}" for k, v in env.metrics.items())
        kib = (env.bytes_up + env.bytes_down) / 1024
        total = None if env.expected_rounds is None else env.expected_rounds + 1
        progress.update(
            task,
            completed=env.round + 1,
            total=total,
            metrics=f"round {env.round} {env.kind} {kib:.0f} KiB {shown}",
        )

    with progress:
        yield [update]
