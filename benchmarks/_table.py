"""One home for printing a benchmark's results: a DataFrame as a rich table."""

from __future__ import annotations

import pandas as pd
from rich.console import Console
from rich.table import Table

TEXT_COLUMNS = ("method", "note", "case", "class")


def print_frame(frame: pd.DataFrame, title: str, width: int = 120) -> None:
    """Print ``frame``: floats with 3 decimals, missing values blank."""
    table = Table(title=title)
    for column in frame.columns:
        table.add_column(
            str(column), justify="left" if column in TEXT_COLUMNS else "right"
        )
    for _, row in frame.iterrows():
        table.add_row(*[_cell(v) for v in row])
    Console(width=width).print(table)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "" if pd.isna(value) else f"{value:.3f}"
    return "" if value is None else str(value)
