"""Rich rendering shared by the commands: tables and a progress bar."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Final

import pandas as pd
from rich.cells import cell_len
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column, Table

from fedtrees.experiments.results import format_cells

__all__ = [
    "bar_columns",
    "column_groups",
    "print_table",
    "progress_bar",
    "rich_table",
]


def rich_table(frame: pd.DataFrame, title: str, *, digits: int = 3) -> Table:
    """Render a DataFrame (index as the first column) as a rich table.

    Cells are formatted by :func:`fedtrees.experiments.results.format_cells`
    (counts as integers, "-" for a missing value), as in the markdown report.
    """
    return _table(frame, format_cells(frame, digits), range(frame.shape[1]), title)


def print_table(
    console: Console, frame: pd.DataFrame, title: str, *, digits: int = 3
) -> None:
    """Print ``frame`` as one table, or as several that each fit the console.

    **Decision**: a table wider than the console gets its headers wrapped
    between words and a cell's parenthetical remark ("81.2 (paper 79.6)")
    moved to a line of its own; if that is not enough, it is cut into groups
    of whole columns, each printed under the title with "(columns i-j of n)"
    and the index repeated. A number is never cut short ("…") or wrapped: at
    80 columns every cell stays readable. A table whose widest column does
    not fit beside its index (sentences, not numbers) is printed whole, its
    cells wrapped by rich. Nothing is cropped: a line too wide wraps instead.
    """
    cells = format_cells(frame, digits)
    index = max(cell_len(r[0]) for r in [[str(frame.index.name or "")], *cells])
    natural = _column_widths(frame, cells, split_headers=False)
    if index + 4 + sum(w + 3 for w in natural) <= console.width:
        console.print(_table(frame, cells, range(len(natural)), title), crop=False)
        return
    broken = [[r[0], *(c.replace(" (", "\n(") for c in r[1:])] for r in cells]
    need = _column_widths(frame, broken, split_headers=True)
    if index + 4 + max(need, default=0) + 3 > console.width:  # text: rich wraps it
        console.print(_table(frame, cells, range(len(need)), title), crop=False)
        return
    cells = broken
    groups = column_groups(need, index + 4, console.width)
    for group in groups:
        name = title
        if len(groups) > 1:
            name += f" (columns {group[0] + 1}-{group[-1] + 1} of {len(need)})"
        console.print(_table(frame, cells, group, name, need), crop=False)


def _column_widths(
    frame: pd.DataFrame, cells: list[list[str]], *, split_headers: bool
) -> list[int]:
    """Each column's widest cell line, or header (its longest word if split)."""
    out = []
    for i, column in enumerate(frame.columns):
        header = str(column).split() if split_headers else [str(column)]
        lines = [line for r in cells for line in r[i + 1].split("\n")]
        out.append(max(cell_len(t) for t in [*header, *lines]))
    return out


def column_groups(need: list[int], fixed: int, width: int) -> list[list[int]]:
    """Split columns of widths ``need`` into runs that fit ``width`` after ``fixed``.

    A column takes its width plus three cells (padding and border). As few runs
    as fit, of about equal widths (not full runs and a lone last column);
    every run holds at least one column.

    Examples
    --------
    >>> column_groups([10, 10, 10, 30], fixed=20, width=60)
    [[0, 1, 2], [3]]
    >>> column_groups([12] * 10, fixed=23, width=80)
    [[0, 1, 2], [3, 4], [5, 6, 7], [8, 9]]
    """
    fewest = _greedy(need, fixed, width)
    cells = [w + 3 for w in need]
    groups: list[list[int]] = []
    start = 0
    for left in range(len(fewest), 0, -1):
        if start == len(cells):
            break
        target = sum(cells[start:]) / left
        group, used = [start], cells[start]
        start += 1
        while start < len(cells) and (left == 1 or used + cells[start] / 2 <= target):
            group.append(start)
            used += cells[start]
            start += 1
        groups.append(group)
    fits = all(fixed + sum(cells[i] for i in g) <= width for g in groups)
    return groups if fits and start == len(cells) else fewest


def _greedy(need: list[int], fixed: int, width: int) -> list[list[int]]:
    """Fill each run with columns while they fit ``width``."""
    groups: list[list[int]] = [[]]
    used = fixed
    for i, w in enumerate(need):
        if groups[-1] and used + w + 3 > width:
            groups.append([])
            used = fixed
        groups[-1].append(i)
        used += w + 3
    return groups


def _table(
    frame: pd.DataFrame,
    cells: list[list[str]],
    columns: Iterable[int],
    title: str,
    widths: list[int] | None = None,
) -> Table:
    """Return a rich table of some columns (with ``widths``: headers wrapped)."""
    chosen = list(columns)
    table = Table(title=title, title_justify="left")
    index = str(frame.index.name or "")
    table.add_column(index, style="bold", no_wrap=widths is not None, overflow="fold")
    for i in chosen:
        name = str(frame.columns[i])
        if widths is None:
            table.add_column(name, justify="right", overflow="fold")
            continue
        wrapped = textwrap.fill(name, widths[i], break_long_words=False)
        table.add_column(wrapped, justify="right", no_wrap=True, min_width=widths[i])
    for row in cells:
        table.add_row(row[0], *(row[i + 1] for i in chosen))
    return table


@contextmanager
def progress_bar(
    description: str, total: int, console: Console | None = None
) -> Iterator[Callable[[str], None]]:
    """Yield a callback that advances by one step and shows its label.

    On a terminal (or Jupyter) a live bar, full when the work ends; anywhere else
    (a pipe, a log file, CI) one line per step, e.g. ``Heart 3/9 repeat 1: ...``,
    never wrapped however long.
    """
    from fedtrees._compiling import compile_notice  # numba: only when work runs

    console = console if console is not None else Console()
    if not (console.is_terminal or console.is_jupyter):
        done = 0

        def print_line(label: str) -> None:
            nonlocal done
            done += 1
            console.print(
                f"{description} {done}/{total} {label}", highlight=False, soft_wrap=True
            )

        with compile_notice(
            lambda text: console.print(text, highlight=False, soft_wrap=True)
        ):
            yield print_line
        return
    progress = Progress(
        *bar_columns(description, total, console.width), console=console
    )
    task = progress.add_task(description, total=total, label="")

    def advance(label: str) -> None:
        progress.update(task, advance=1, label=label)

    with progress, compile_notice(progress.console.log):
        yield advance
        progress.update(task, total=progress.tasks[0].completed, label="done")


TIME_WIDTH: Final = 7
"""Cells of a time field, "0:00:12" or "-:--:--": never cut short."""
BAR_WIDTH: Final = 10
"""Cells of the bar itself: narrow, so that the time fields fit 80 columns."""


def bar_columns(description: str, total: int, width: int) -> list[ProgressColumn]:
    """Return the columns of a live bar that fits ``width`` cells.

    The counts and the time fields keep their full width; the description and
    the step's label are what gets cut ("…") when the console is narrow.

    Examples
    --------
    >>> [type(c).__name__ for c in bar_columns("Heart", 9, 80)][1:5]
    ['BarColumn', 'MofNCompleteColumn', 'TimeElapsedColumn', 'TimeRemainingColumn']
    """
    count = 2 * len(str(total)) + 1
    name = min(cell_len(description), max(8, width // 3))
    fixed = name + BAR_WIDTH + count + 2 * TIME_WIDTH + 5  # five gaps of one cell
    label = max(4, width - fixed - 1)

    def cut(cells: int) -> Column:
        return Column(width=cells, no_wrap=True, overflow="ellipsis")

    return [
        TextColumn("[bold]{task.description}", table_column=cut(name)),
        BarColumn(bar_width=BAR_WIDTH),
        MofNCompleteColumn(table_column=Column(min_width=count, no_wrap=True)),
        TimeElapsedColumn(table_column=Column(min_width=TIME_WIDTH, no_wrap=True)),
        TimeRemainingColumn(table_column=Column(min_width=TIME_WIDTH, no_wrap=True)),
        TextColumn("{task.fields[label]}", table_column=cut(label)),
    ]
