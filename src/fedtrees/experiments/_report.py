"""What an experiment returns: tables, raw measurements, notes and plot specs.

Runners build a :class:`Report` and do no I/O (STYLE habit 15); the writer in
:mod:`fedtrees.experiments.results` turns it into CSV, markdown and PNG files, and
the command line prints its tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

__all__ = [
    "Plot",
    "Progress",
    "Report",
    "mean_sd_table",
    "mean_sd_text",
    "pivot_mean",
    "pivot_sd",
    "sample_sd",
]

Progress = Callable[[str], None]
"""Called with a label after every unit of work (a progress bar advances)."""


@dataclass(frozen=True, eq=False)
class Plot:
    """A figure as data: one series per column of ``values``, x along the index.

    ``kind="bars"`` draws grouped bars (one group per index entry), ``"lines"``
    one line per column; ``errors`` (same shape) draws error bars, and
    ``errors_note`` (e.g. "bars: sd over repeats") joins the title only when they
    are drawn: a run of one repeat has no spread and promises none.
    """

    name: str
    title: str
    kind: Literal["bars", "lines"]
    values: pd.DataFrame
    xlabel: str
    ylabel: str
    errors: pd.DataFrame | None = None
    log_y: bool = False
    log_x: bool = False
    errors_note: str = ""


@dataclass(frozen=True, eq=False)
class Report:
    """The result of one experiment run."""

    name: str
    title: str
    config: Mapping[str, Any]
    tables: Mapping[str, pd.DataFrame]
    raw: pd.DataFrame
    notes: tuple[str, ...] = ()
    plots: tuple[Plot, ...] = field(default_factory=tuple)


def _ordered(
    table: pd.DataFrame, raw: pd.DataFrame, rows: str, columns: str
) -> pd.DataFrame:
    return table.reindex(
        index=list(dict.fromkeys(raw[rows])), columns=list(dict.fromkeys(raw[columns]))
    )


def pivot_mean(
    raw: pd.DataFrame, *, rows: str, columns: str, value: str
) -> pd.DataFrame:
    """Return the mean of ``value`` by (``rows``, ``columns``), in raw's order."""
    table = raw.pivot_table(index=rows, columns=columns, values=value, aggfunc="mean")
    return _ordered(table, raw, rows, columns)


def pivot_sd(raw: pd.DataFrame, *, rows: str, columns: str, value: str) -> pd.DataFrame:
    """Return the sample sd of ``value`` by (``rows``, ``columns``); NaN for one draw.

    **Decision:** one draw has no spread, so its sd is NaN (shown as "-", no error
    bar), never a 0 that reads like a measured, perfectly stable result.
    """
    table = raw.pivot_table(
        index=rows,
        columns=columns,
        values=value,
        aggfunc=lambda v: sample_sd(v.to_numpy()),
        dropna=False,
    )
    return _ordered(table, raw, rows, columns)


def sample_sd(values: np.ndarray) -> float:
    """Return the sample sd (ddof 1) of ``values``; NaN for fewer than two."""
    return float(np.std(values, ddof=1)) if values.shape[0] > 1 else float("nan")


def mean_sd_text(values: np.ndarray, digits: int = 3) -> str:
    """Return "mean ± sd" of ``values``, or just the mean for a single value.

    Examples
    --------
    >>> mean_sd_text(np.array([1.0, 3.0]))
    '2.000 ± 1.414'
    >>> mean_sd_text(np.array([0.5]))
    '0.500'
    """
    mean = f"{float(np.mean(values)):.{digits}f}"
    if values.shape[0] < 2:
        return mean
    return f"{mean} ± {sample_sd(values):.{digits}f}"


def mean_sd_table(
    raw: pd.DataFrame, *, rows: str, columns: str, value: str, digits: int = 3
) -> pd.DataFrame:
    """Return "mean ± sd" strings of ``value`` by (``rows``, ``columns``).

    Row and column order follow first appearance in ``raw``; "-" where a method
    was not run; a cell of a single draw shows only its mean (no "± 0.000").

    Examples
    --------
    >>> raw = pd.DataFrame({"m": ["a", "a"], "s": ["x", "x"], "v": [1.0, 3.0]})
    >>> mean_sd_table(raw, rows="m", columns="s", value="v").loc["a", "x"]
    '2.000 ± 1.414'
    """
    cells = raw.groupby([rows, columns], sort=False)[value].agg(
        lambda v: mean_sd_text(v.to_numpy(), digits)
    )
    table = cells.unstack(columns)
    return _ordered(table, raw, rows, columns).fillna("-")
