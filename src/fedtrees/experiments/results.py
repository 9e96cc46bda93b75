"""Write a :class:`Report` to a folder: CSV, markdown and PNG plots (the edge I/O).

Files: ``<name>.md`` (title, configuration, every table, notes, plot links),
``<name>_raw.csv`` (every measurement), ``<name>_<table>.csv`` per table, and one
``<name>_<plot>.png`` per plot (matplotlib, headless backend).

**Decision (a table's file name):** ``<table>`` is the head of the table's title,
before its first ``:`` or ``(`` (the qualifiers that follow are in the title, in
the markdown), without possessives: ``"Accuracy (mean over repeats)"`` is
``accuracy.csv``, ``"Ablations of the 'paper' variant: test accuracy (%), one
repeat"`` is ``ablations_of_the_paper_variant.csv``. A quick run and a full run
thus write a table to the same file, and two tables of one report may not share a
name (:func:`table_file_name`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pandas as pd

from fedtrees.exceptions import ValidationError
from fedtrees.experiments._report import Plot, Report

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "format_cells",
    "markdown_table",
    "render_plot",
    "table_file_name",
    "write_report",
]

WIDTH: Final = 9.0
"""Figure width in inches (saved at 120 dpi: 1080 pixels)."""
BAR_HEIGHT: Final = 0.22
"""Inches per bar of a horizontal bar chart, so that its labels never touch."""
UPRIGHT_CHARACTERS: Final = 60
"""Above this many label characters in all, bar groups are drawn horizontally."""


def write_report(report: Report, folder: str | Path) -> list[Path]:
    """Write every file of ``report`` into ``folder`` (created); return the paths."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / f"{report.name}_raw.csv"]
    report.raw.to_csv(written[0], index=False)
    for key, table in report.tables.items():
        path = out / f"{report.name}_{table_file_name(key)}.csv"
        if path in written:
            raise ValidationError(
                f"Report {report.name!r}: the tables {key!r} and another one would "
                f"both be written to {path.name}; give one a title whose head (before "
                "':' or '(') differs."
            )
        table.to_csv(path)
        written.append(path)
    pictures = [
        _save_plot(plot, out / f"{report.name}_{plot.name}.png")
        for plot in report.plots
    ]
    markdown = out / f"{report.name}.md"
    markdown.write_text(_markdown(report, pictures))
    return [markdown, *written, *pictures]


def table_file_name(title: str) -> str:
    """Return the file name (no suffix) of the table titled ``title``.

    The title's head, before its first ``:`` or ``(``, without possessives, as
    lowercase words joined by ``_`` (module docstring).

    Examples
    --------
    >>> table_file_name("Accuracy gap to Pooled XGBoost (points)")
    'accuracy_gap_to_pooled_xgboost'
    >>> table_file_name("Paper 003's figures (Tables 1-2, Sec. 4)")
    'paper_003_figures'
    >>> table_file_name("Test MSE, main settings")
    'test_mse_main_settings'
    """
    head = re.split(r"[:(]", title, maxsplit=1)[0]
    return _slug(re.sub(r"'s\b", "", head))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def format_cells(frame: pd.DataFrame, digits: int = 3) -> list[list[str]]:
    """Return every row of ``frame`` as text, index label first.

    **Decision**: floats print with ``digits`` decimals, except in a column whose
    values are all whole numbers and not all within [0, 1] (counts such as rounds
    or depths averaged over folds), which prints as integers ("4", not "4.000");
    a missing value prints as "-". Rows are read with ``itertuples``, which keeps
    integer columns integer (``iterrows`` would upcast them to float).

    Examples
    --------
    >>> frame = pd.DataFrame({"rounds": [4.0, 35.0], "acc": [0.5, 1.0]})
    >>> format_cells(frame)
    [['0', '4', '0.500'], ['1', '35', '1.000']]
    """
    whole = {
        i for i, column in enumerate(frame.columns) if _whole_counts(frame[column])
    }

    def cell(i: int, value: object) -> str:
        if isinstance(value, float):
            if value != value:
                return "-"
            return f"{value:.0f}" if i in whole else f"{value:.{digits}f}"
        return str(value)

    return [
        [str(label), *(cell(i, v) for i, v in enumerate(row))]
        for label, *row in frame.itertuples(name=None)
    ]


def _whole_counts(column: pd.Series) -> bool:
    values = pd.to_numeric(column, errors="coerce").dropna()
    if column.dtype.kind != "f" or values.empty:
        return False
    return bool((values == values.round()).all() and (values.abs() > 1).any())


def markdown_table(frame: pd.DataFrame, digits: int = 3) -> str:
    """Render a DataFrame as a GitHub markdown table (index as first column).

    Examples
    --------
    >>> frame = pd.DataFrame({"a": [0.5]}, index=pd.Index(["x"], name="k"))
    >>> print(markdown_table(frame))
    | k | a |
    |---|---:|
    | x | 0.500 |
    """
    header = [str(frame.index.name or ""), *(str(c) for c in frame.columns)]
    lines = [
        "| " + " | ".join(header) + " |",
        "|---|" + "---:|" * len(frame.columns),
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in format_cells(frame, digits)]
    return "\n".join(lines)


def _markdown(report: Report, pictures: list[Path]) -> str:
    parts = [f"# {report.title}", "", "Configuration:", "", "```json"]
    parts += [json.dumps(dict(report.config), indent=1, default=str), "```", ""]
    for key, table in report.tables.items():
        parts += [f"## {key}", "", markdown_table(table), ""]
    if report.notes:
        parts += ["## Notes", ""] + [f"- {note}" for note in report.notes] + [""]
    parts += [f"![{p.stem}]({p.name})" for p in pictures]
    return "\n".join(parts) + "\n"


def _save_plot(plot: Plot, path: Path) -> Path:
    import matplotlib.pyplot as plt

    figure = render_plot(plot)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def render_plot(plot: Plot) -> Figure:
    """Draw ``plot`` on a new matplotlib figure (Agg backend) and return it.

    **Decision (readable at the saved size):** bar charts whose group labels
    would crowd the x-axis (more than :data:`UPRIGHT_CHARACTERS` characters in
    all) are drawn as horizontal bars, one row per group in the order of the
    table (first on top), and the figure grows with the number of bars; a
    legend of more than one series sits outside the axes, right of them, so it
    never hides a bar or a line. The caller closes the figure.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values = plot.values
    errors = _errors(plot.errors)
    title = plot.title
    if errors is not None and plot.errors_note:
        title += f" ({plot.errors_note})"
    horizontal = plot.kind == "bars" and _crowded(values.index)
    height = _height(values) if horizontal else 5.0
    figure, axes = plt.subplots(figsize=(WIDTH, height), layout="constrained")
    colors = _colors(values.shape[1])
    axes.set_prop_cycle(color=colors)
    if plot.kind == "bars" and horizontal:
        values.plot.barh(
            ax=axes, xerr=errors, capsize=2, width=0.85, legend=False, color=colors
        )
        axes.invert_yaxis()  # the table's first row on top
        axes.set_xlabel(plot.ylabel)
        axes.set_ylabel(plot.xlabel)
    else:
        if plot.kind == "bars":
            values.plot.bar(
                ax=axes,
                yerr=errors,
                capsize=2,
                rot=0,
                width=0.85,
                legend=False,
                color=colors,
            )
        else:
            _lines(axes, values, errors)
        axes.set_xlabel(plot.xlabel)
        axes.set_ylabel(plot.ylabel)
    if plot.log_y:
        (axes.set_xscale if horizontal else axes.set_yscale)("log")
    if plot.log_x:
        axes.set_xscale("log")
    if plot.kind == "lines" and not plot.log_x and _whole(values.index):
        from matplotlib.ticker import MaxNLocator

        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        low, high = values.index.min(), values.index.max()
        if high - low < 2:  # too few whole numbers in view for integer ticks
            axes.set_xlim(low - 1, high + 1)
    axes.set_title(title, fontsize=11)
    if values.shape[1] > 1:
        axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure


def _colors(n: int) -> list[Any]:
    """Distinct colours: tab10, or tab20 beyond 10 series (no colour twice)."""
    from matplotlib import colormaps

    palette = colormaps["tab10" if n <= 10 else "tab20"]
    return [palette(i % palette.N) for i in range(n)]


def _errors(errors: pd.DataFrame | None) -> pd.DataFrame | None:
    """Error bars, with a missing or zero spread (one repeat) drawn as none at all."""
    if errors is None or bool((errors.fillna(0.0) == 0.0).all().all()):
        return None
    return errors.fillna(0.0)


def _whole(index: pd.Index) -> bool:
    """Whether ``index`` holds only whole numbers (rounds, clients, depths)."""
    if not pd.api.types.is_numeric_dtype(index):  # labels: a category per entry
        return False
    values = pd.Series(index, dtype=float)
    return bool(values.notna().all() and (values == values.round()).all())


def _crowded(index: pd.Index) -> bool:
    return sum(len(str(label)) for label in index) > UPRIGHT_CHARACTERS


def _height(values: pd.DataFrame) -> float:
    bars = values.shape[0] * max(1, values.shape[1])
    return max(4.0, 1.6 + BAR_HEIGHT * bars)


MARKERS: Final = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES: Final = ("-", "--", "-.", ":")


def _lines(axes: Axes, values: pd.DataFrame, errors: pd.DataFrame | None) -> None:
    """One line per column, each with its own marker and dash pattern.

    Lines with equal values lie on top of each other; distinct markers (hollow,
    shrinking with the series' rank) and dash patterns keep every one visible.
    """
    for i, column in enumerate(values.columns):
        err = None if errors is None else errors[column]
        axes.errorbar(
            values.index,
            values[column],
            yerr=err,
            marker=MARKERS[i % len(MARKERS)],
            markersize=max(3.0, 8.0 - i),
            markerfacecolor="none",
            linestyle=LINESTYLES[(i // len(MARKERS) + i) % len(LINESTYLES)],
            capsize=3,
            label=str(column),
        )
