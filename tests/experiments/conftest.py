"""Fixtures of the experiment tests: every figure a quick run draws is checked."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from matplotlib.figure import Figure
from rich.console import Console

from fedtrees import experiments
from fedtrees.cli import _experiment
from fedtrees.experiments import results
from fedtrees.experiments._report import Plot, Report
from tests.experiments._figures import (
    bar_problems,
    cut_short,
    fractional_counts,
    internal_language,
    misleading,
    unreadable,
)


def check_plots(
    monkeypatch: pytest.MonkeyPatch, drawn: list[str], problems: list[str]
) -> None:
    """Wrap ``render_plot``: append each figure's name and what is wrong with it."""
    render = results.render_plot

    def checked(plot: Plot) -> Figure:
        figure = render(plot)
        drawn.append(plot.name)
        problems.extend(f"{plot.name}: {p}" for p in unreadable(figure))
        problems.extend(f"{plot.name}: {p}" for p in misleading(figure, plot))
        return figure

    monkeypatch.setattr(results, "render_plot", checked)


def check_tables(
    monkeypatch: pytest.MonkeyPatch, printed: list[str], problems: list[str]
) -> None:
    """Wrap the printing of tables, the bar and the report's words (see below)."""
    show = _experiment.print_table
    bar = _experiment.progress_bar
    write = experiments.write_report

    def checked(console: Console, frame: pd.DataFrame, title: str, **kw: Any) -> None:
        narrow = Console(width=80, record=True, file=io.StringIO())
        show(narrow, frame, title, **kw)
        problems.extend(f"{title}: {p}" for p in cut_short(narrow.export_text(), 80))
        problems.extend(f"{title}: {p}" for p in fractional_counts(frame, **kw))
        printed.append(title)
        show(console, frame, title, **kw)

    @contextmanager
    def terminal_bar(title: str, total: int) -> Iterator[Callable[[str], None]]:
        screen = Console(file=io.StringIO(), force_terminal=True, width=80)
        with bar(title, total, screen) as advance:
            yield advance
        problems.extend(f"bar: {p}" for p in bar_problems(screen.file.getvalue(), 80))

    def worded(report: Report, folder: str | Path) -> list[Path]:
        problems.extend(internal_language(report))
        return write(report, folder)

    monkeypatch.setattr(_experiment, "print_table", checked)
    monkeypatch.setattr(_experiment, "progress_bar", terminal_bar)
    monkeypatch.setattr(experiments, "write_report", worded)


@pytest.fixture
def readable_plots(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Check every figure that ``write_report`` renders; yield the plots' names.

    Reuses the quick runs the tests already make (no extra run): the wrapper
    lays out each figure before it is saved and records what is unreadable or
    misleading (:func:`tests.experiments._figures.misleading`: fractional ticks
    on a round axis, a line hidden under another, error bars promised and not
    drawn); the test fails at teardown if anything was, or if no figure was drawn.
    A module-scoped run calls :func:`check_plots` itself.
    """
    drawn: list[str] = []
    problems: list[str] = []
    check_plots(monkeypatch, drawn, problems)
    yield drawn
    assert drawn, "no figure was rendered"
    assert not problems, "\n".join(problems)


@pytest.fixture
def readable_tables(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Also print every table and the progress bar of a command at 80 columns.

    Yields the tables' titles. The test fails at teardown if a line is wider
    than 80 cells or a cell is cut short with "…"
    (:func:`tests.experiments._figures.cut_short`), whole numbers print with
    decimals, the live bar (drawn as on an 80-column terminal) cuts its time
    fields or does not end on "done", the report speaks internal language
    (:func:`tests.experiments._figures.internal_language`), or if no table was
    printed. A module-scoped run calls :func:`check_tables` itself.
    """
    printed: list[str] = []
    problems: list[str] = []
    check_tables(monkeypatch, printed, problems)
    yield printed
    assert printed, "no table was printed"
    assert not problems, "\n".join(problems)
