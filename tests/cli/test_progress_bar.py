from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from fedtrees.cli._render import bar_columns, progress_bar
from tests.experiments._figures import TIME_FIELD, bar_problems


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


LONG_LABEL = "repeat 0: Local learning (Cleveland), Local learning (Hungary), more"


def test_at_80_columns_the_time_fields_stay_whole_and_the_bar_ends_on_done() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=80)
    with progress_bar("DP forest on heart_disease", 12, console) as advance:
        for _ in range(12):
            advance(LONG_LABEL)
    assert bar_problems(console.file.getvalue(), 80) == []


def test_mid_run_a_long_label_is_cut_not_the_times() -> None:
    # The frame a terminal shows while a step runs, rendered once.
    columns = bar_columns("FedForest synthetic", 51, 80)
    progress = Progress(*columns, console=Console(width=80))
    progress.add_task("FedForest synthetic", total=51, completed=7, label=LONG_LABEL)
    console = Console(file=io.StringIO(), width=80, record=True)
    console.print(progress.get_renderable())
    line = console.export_text().rstrip("\n")
    assert "\n" not in line
    assert len(line) <= 80
    assert len(TIME_FIELD.findall(line)) == 2, line
    assert " 7/51 " in line
    assert line.rstrip().endswith("…")


def test_off_a_terminal_a_long_step_stays_on_one_line_of_a_log_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "experiment.log"
    with path.open("w") as log:
        console = Console(file=log)  # a file: not a terminal, rich's 80 columns
        with progress_bar("DP forest on heart_disease", 2, console) as advance:
            advance(LONG_LABEL * 2)
            advance("short")
    out = path.read_text().splitlines()
    assert out == [
        f"DP forest on heart_disease 1/2 {LONG_LABEL * 2}",
        "DP forest on heart_disease 2/2 short",
    ]
