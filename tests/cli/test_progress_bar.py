from __future__ import annotations

import io

from rich.console import Console

from fedtrees.cli._render import progress_bar


def test_off_a_terminal_one_line_per_step() -> None:
    console = Console(file=io.StringIO(), force_terminal=False, width=80)
    with progress_bar("Heart", 3, console) as advance:
        for step in ("repeat 0: FedForest", "repeat 0: Local", "repeat 0: RF"):
            advance(step)
    assert console.file.getvalue().splitlines() == [
        "Heart 1/3 repeat 0: FedForest",
        "Heart 2/3 repeat 0: Local",
        "Heart 3/3 repeat 0: RF",
    ]


def test_on_a_terminal_the_bar_ends_full() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=80)
    with progress_bar("Heart", 5, console) as advance:
        for _ in range(4):  # fewer steps than announced
            advance("step")
    assert "4/4" in console.file.getvalue()
