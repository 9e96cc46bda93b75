"""Write a :class:`Report` to a folder: CSV, markdown and PNG plots (the edge I/O).

Files: ``<name>.md`` (title, configuration, every table, notes, plot links),
``<name>_raw.csv`` (every measurement), ``<name>_<table>.csv`` per table, and one
``<name>_<plot>.png`` per plot (matplotlib, headless backend).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from fedtrees.experiments._report import Plot, Report

__all__ = ["markdown_table", "write_report"]


def write_report(report: Report, folder: str | Path) -> list[Path]:
    """Write every file of ``report`` into ``folder`` (created); return the paths."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / f"{report.name}_raw.csv"]
    report.raw.to_csv(written[0], index=False)
    for key, table in report.tables.items():
        path = out / f"{report.name}_{_slug(key)}.csv"
        table.to_csv(path)
        written.append(path)
    pictures = [
        _save_plot(plot, out / f"{report.name}_{plot.name}.png")
        for plot in report.plots
    ]
    markdown = out / f"{report.name}.md"
    markdown.write_text(_markdown(report, pictures))
    return [markdown, *written, *pictures]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


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

    def cell(value: object) -> str:
        return f"{value:.{digits}f}" if isinstance(value, float) else str(value)

    header = [str(frame.index.name or ""), *(str(c) for c in frame.columns)]
    lines = [
        "| " + " | ".join(header) + " |",
        "|---|" + "---:|" * len(frame.columns),
    ]
    for label, row in frame.iterrows():
        lines.append("| " + " | ".join([str(label), *(cell(v) for v in row)]) + " |")
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(9, 5))
    values = plot.values
    errors = plot.errors
    if plot.kind == "bars":
        rot = 0 if values.shape[0] <= 8 else 35  # many groups: slanted labels
        values.plot.bar(ax=axes, yerr=errors, capsize=2, rot=rot, width=0.85)
        if rot:
            plt.setp(axes.get_xticklabels(), ha="right")
    else:
        for column in values.columns:
            err = None if errors is None else errors[column]
            axes.errorbar(
                values.index,
                values[column],
                yerr=err,
                marker="o",
                capsize=3,
                label=str(column),
            )
        axes.legend()
    if plot.log_y:
        axes.set_yscale("log")
    if plot.log_x:
        axes.set_xscale("log")
    axes.set_title(plot.title)
    axes.set_xlabel(plot.xlabel)
    axes.set_ylabel(plot.ylabel)
    axes.legend(fontsize=8, loc="best")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
