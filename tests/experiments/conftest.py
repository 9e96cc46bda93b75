"""Fixtures of the experiment tests: every figure a quick run draws is checked."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from matplotlib.figure import Figure
from rich.console import Console

from fedtrees.cli import _experiment
from fedtrees.experiments import results
from fedtrees.experiments._report import Plot
from tests.experiments._figures import cut_short, unreadable


@pytest.fixture
def readable_plots(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Check every figure that ``write_report`` renders; yield the plots' names.

    Reuses the quick runs the tests already make (no extra run): the wrapper
    lays out each figure before it is saved and records what is unreadable;
    the test fails at teardown if anything was, or if no figure was drawn.
    """
    drawn: list[str] = []
    problems: list[str] = []
    render = results.render_plot

    def checked(plot: Plot) -> Figure:
        figure = render(plot)
        drawn.append(plot.name)
        problems.extend(f"{plot.name}: {p}" for p in unreadable(figure))
        return figure

    monkeypatch.setattr(results, "render_plot", checked)
    yield drawn
    assert drawn, "no figure was rendered"
    assert not problems, "\n".join(problems)


@pytest.fixture
def readable_tables(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Also print every table of a command at 80 columns; yield the titles.

    The test fails at teardown if a line is wider than 80 cells or a cell is
    cut short with "…" (:func:`tests.experiments._figures.cut_short`), or if
    no table was printed.
    """
    printed: list[str] = []
    problems: list[str] = []
    show = _experiment.print_table

    def checked(console: Console, frame: pd.DataFrame, title: str, **kw: Any) -> None:
        narrow = Console(width=80, record=True, file=io.StringIO())
        show(narrow, frame, title, **kw)
        problems.extend(f"{title}: {p}" for p in cut_short(narrow.export_text(), 80))
        printed.append(title)
        show(console, frame, title, **kw)

    monkeypatch.setattr(_experiment, "print_table", checked)
    yield printed
    assert printed, "no table was printed"
    assert not problems, "\n".join(problems)
