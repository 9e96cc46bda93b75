"""Readability checks: the experiments' figures at their saved size, tables as printed."""

from __future__ import annotations

from itertools import combinations

from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from rich.cells import cell_len

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
