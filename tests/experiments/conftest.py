"""Fixtures of the experiment tests: every figure a quick run draws is checked."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from matplotlib.figure import Figure

from fedtrees.experiments import results
from fedtrees.experiments._report import Plot
from tests.experiments._figures import unreadable


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
