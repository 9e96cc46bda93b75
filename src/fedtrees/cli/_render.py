"""Rich rendering shared by the commands: tables and a progress bar."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pandas as pd
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

__all__ = ["progress_bar", "rich_table"]


def rich_table(frame: pd.DataFrame, title: str, *, digits: int = 3) -> Table:
    """Render a DataFrame (index as the first column) as a rich table."""
    table = Table(title=title, title_justify="left")
    table.add_column(str(frame.index.name or ""), style="bold")
    for column in frame.columns:
        table.add_column(str(column), justify="right")
    for label, row in frame.iterrows():
        cells = [
            "-"
            if isinstance(v, float) and v != v
            else f"{v:.{digits}f}"
            if isinstance(v, float)
            else str(v)
            for v in row
        ]
        table.add_row(str(label), *cells)
    return table


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[[str], None]]:
    """Yield a callback that advances a live bar by one step and shows its label."""
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[label]}"),
    )
    task = progress.add_task(description, total=total, label="")

    def advance(label: str) -> None:
        progress.update(task, advance=1, label=label[:60])

    with progress:
        yield advance
