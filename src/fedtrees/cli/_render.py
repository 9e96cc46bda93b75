"""Rich rendering shared by the commands: tables and a progress bar."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pandas as pd
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from fedtrees.experiments.results import format_cells

__all__ = ["progress_bar", "rich_table"]


def rich_table(frame: pd.DataFrame, title: str, *, digits: int = 3) -> Table:
    """Render a DataFrame (index as the first column) as a rich table.

    Cells are formatted by :func:`fedtrees.experiments.results.format_cells`
    (counts as integers, "-" for a missing value), as in the markdown report.
    """
    table = Table(title=title, title_justify="left")
    table.add_column(str(frame.index.name or ""), style="bold")
    for column in frame.columns:
        table.add_column(str(column), justify="right")
    for cells in format_cells(frame, digits):
        table.add_row(*cells)
    return table


@contextmanager
def progress_bar(
    description: str, total: int, console: Console | None = None
) -> Iterator[Callable[[str], None]]:
    """Yield a callback that advances by one step and shows its label.

    On a terminal (or Jupyter) a live bar, full when the work ends; anywhere else
    (a pipe, a log file, CI) one line per step, e.g. ``Heart 3/9 repeat 1: ...``.
    """
    console = console if console is not None else Console()
    if not (console.is_terminal or console.is_jupyter):
        done = 0

        def print_line(label: str) -> None:
            nonlocal done
            done += 1
            console.print(f"{description} {done}/{total} {label}", highlight=False)

        yield print_line
        return
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[label]}"),
        console=console,
    )
    task = progress.add_task(description, total=total, label="")

    def advance(label: str) -> None:
        progress.update(task, advance=1, label=label[:60])

    with progress:
        yield advance
        progress.update(task, total=progress.tasks[0].completed)
