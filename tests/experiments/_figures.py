"""Readability checks: the experiments' figures at their saved size, tables as printed.

And honesty checks: ticks, lines, error bars, numbers and words as a user reads them.
"""

from __future__ import annotations

import re
from itertools import combinations
from typing import Final

import numpy as np
import pandas as pd
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from rich.cells import cell_len

from fedtrees.experiments._report import Plot, Report
from fedtrees.experiments.results import format_cells

SAVED_DPI = 120  # what write_report saves at


def _tick_labels(figure: Figure) -> list[list[Text]]:
    """Every axis' drawn tick labels (major and minor), one list per axis.

    A label counts when it is visible, not empty and its tick lies inside the
    view limits (matplotlib keeps spare tick objects with stale text outside).
    """
    groups = []
    for axes in figure.axes:
        for axis, coordinate in ((axes.xaxis, 0), (axes.yaxis, 1)):
            low, high = sorted(axis.get_view_interval())
            groups.append(
                [
                    t
                    for t in axis.get_ticklabels(which="both")
                    if t.get_visible()
                    and t.get_text()
                    and low <= t.get_position()[coordinate] <= high
                ]
            )
    return groups


def unreadable(figure: Figure) -> list[str]:
    """Return what is unreadable: overlapping tick labels, text outside the figure.

    The figure is laid out at the saved dpi (Agg renderer) first, so the boxes
    are those of the PNG.
    """
    figure.set_dpi(SAVED_DPI)
    figure.draw_without_rendering()
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    page = figure.bbox
    problems = []
    for labels in _tick_labels(figure):
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in labels]
        for (a, box_a), (b, box_b) in combinations(boxes, 2):
            if box_a.overlaps(box_b):
                problems.append(f"tick labels {a!r} and {b!r} overlap")
        problems += [
            f"tick label {text!r} is outside the figure"
            for text, box in boxes
            if not _inside(box, page)
        ]
    for axes in figure.axes:
        for text in (axes.title, axes.xaxis.label, axes.yaxis.label):
            if text.get_text() and not _inside(text.get_window_extent(renderer), page):
                problems.append(f"{text.get_text()!r} is outside the figure")
    return problems


def _inside(box: Bbox, page: Bbox) -> bool:
    tolerance = 1.0  # pixels: antialiasing of the outermost glyphs
    return bool(
        box.x0 >= page.x0 - tolerance
        and box.y0 >= page.y0 - tolerance
        and box.x1 <= page.x1 + tolerance
        and box.y1 <= page.y1 + tolerance
    )


def cut_short(text: str, width: int) -> list[str]:
    """Return the printed lines wider than ``width`` cells or holding a "…"."""
    return [line for line in text.splitlines() if cell_len(line) > width or "…" in line]


def misleading(figure: Figure, plot: Plot) -> list[str]:
    """Return what a drawn figure gets wrong beyond layout (drawn first by the caller).

    Fractional ticks on an axis of whole numbers (rounds, clients), lines of
    equal values drawn alike (one hides the other), error bars promised in the
    title ("bars: ...") and not drawn, or drawn and not explained.
    """
    problems = []
    for axes in figure.axes:
        title = axes.get_title()
        if plot.kind == "lines" and not plot.log_x and _whole(plot.values.index):
            low, high = sorted(axes.xaxis.get_view_interval())
            ticks = [t for t in axes.get_xticks() if low <= t <= high]
            problems += [f"x tick {t:g} on a whole-number axis" for t in ticks if t % 1]
        lines = [
            c.lines[0] for c in axes.containers if isinstance(c, ErrorbarContainer)
        ]
        for a, b in combinations([x for x in lines if x is not None], 2):
            same = np.array_equal(a.get_ydata(), b.get_ydata())
            alike = (a.get_marker(), a.get_linestyle()) == (
                b.get_marker(),
                b.get_linestyle(),
            )
            if same and alike:
                problems.append(f"{a.get_label()!r} hides {b.get_label()!r}")
        drawn = any(_has_spread(c) for c in axes.containers)
        if "bars:" in title and not drawn:
            problems.append(f"{title!r} promises error bars that are not drawn")
        if drawn and "bars:" not in title:
            problems.append(f"{title!r} does not say what its error bars are")
    return problems


def _whole(index: pd.Index) -> bool:
    if not pd.api.types.is_numeric_dtype(index):  # labels: a category per entry
        return False
    values = pd.Series(index, dtype=float)
    return bool(values.notna().all() and (values % 1 == 0).all())


def _has_spread(container: object) -> bool:
    if not isinstance(container, ErrorbarContainer):
        return False
    _, _, bars = container.lines
    return any(
        np.ptp(segment, axis=0).any()
        for collection in bars
        for segment in collection.get_segments()
    )


def fractional_counts(frame: pd.DataFrame, digits: int = 3) -> list[str]:
    """Return the columns of whole numbers (not all within [0, 1]) printed with decimals."""
    cells = format_cells(frame, digits)
    problems = []
    for i, column in enumerate(frame.columns):
        values = pd.to_numeric(frame[column], errors="coerce").dropna()
        if values.empty or (values % 1 != 0).any() or not (values.abs() > 1).any():
            continue
        printed = [row[i + 1] for row in cells]
        if any("." in cell for cell in printed):
            problems.append(f"column {column!r} prints whole numbers as {printed[0]!r}")
    return problems


TIME_FIELD: Final = re.compile(r"(?<![\d:])(\d+:\d\d:\d\d|-:--:--)(?![\d:])")


def bar_problems(output: str, width: int) -> list[str]:
    """Return what is wrong with a live bar's last frame (its terminal output).

    It must fit ``width``, show its elapsed and remaining times whole and end on
    "done".
    """
    frames = [_plain(f) for f in re.split(r"[\r\n]", output)]
    last = [f.rstrip() for f in frames if f.strip()][-1]
    problems = [f"wider than {width}: {last!r}"] if cell_len(last) > width else []
    if len(TIME_FIELD.findall(last)) != 2:
        problems.append(f"time fields cut: {last!r}")
    if not last.endswith("done"):
        problems.append(f"does not end on 'done': {last!r}")
    return problems


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


INTERNAL_WORDS: Final = re.compile(r"\bDecision\b|config above|path=\.\.\.")


def internal_language(report: Report) -> list[str]:
    """Return the report's texts that speak the maintainers' or the API's language.

    "Decision" tags, "the config above" (the console prints no config),
    ``path=...`` where the command line has ``--data``, and raw field names
    with underscores as table headers.
    """
    texts = [report.title, *report.notes, *report.tables]
    texts += [p.title + " " + p.errors_note for p in report.plots]
    problems = [f"internal wording: {t!r}" for t in texts if INTERNAL_WORDS.search(t)]
    for title, table in report.tables.items():
        raw = [c for c in table.columns if "_" in str(c) and c in report.raw.columns]
        problems += [f"{title}: raw field name {c!r} as a header" for c in raw]
    return problems
