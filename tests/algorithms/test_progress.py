from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from fedtrees.algorithms import FedAvgClassifier, FedForestClassifier
from fedtrees.algorithms._progress import RoundBar, StageLines, round_progress
from fedtrees.datasets import load
from fedtrees.federation import RoundEnv


def _env(round_: int, level: float | None = None, bound: int | None = 9) -> RoundEnv:
    metrics = {} if level is None else {"level": level, "open_nodes": 2.0}
    return RoundEnv(round_, "k.v", 2, 2, (), 512, 512, 0.01, metrics, bound)


def _console(terminal: bool) -> Console:
    return Console(file=io.StringIO(), force_terminal=terminal, width=80)


@pytest.fixture(scope="module")
def heart() -> tuple[object, object, object]:
    train = load("heart_disease", flamby=True).train()
    assert train.clients is not None
    return train.X, train.y, train.clients.to_numpy().astype(str)


def test_bar_is_full_when_the_run_stops_before_the_upper_bound() -> None:
    console = _console(terminal=True)
    with round_progress("fit", True, console) as callbacks:
        (bar,) = callbacks
        assert isinstance(bar, RoundBar)
        for r in range(5):  # the strategy's bound says at most 10 rounds
            bar(_env(r))
        task = bar.progress.tasks[0]
        assert (task.completed, task.total) == (5, 10)
    assert (task.completed, task.total) == (5, 5)
    assert task.finished
    assert "5/5" in console.file.getvalue()  # type: ignore[attr-defined]


def test_bar_without_an_upper_bound_also_ends_full() -> None:
    with round_progress("fit", True, _console(terminal=True)) as callbacks:
        (bar,) = callbacks
        for r in range(3):
            bar(_env(r, bound=None))
    task = bar.progress.tasks[0]  # type: ignore[attr-defined]
    assert task.completed == task.total == 3


def test_off_a_terminal_one_line_per_round_without_levels() -> None:
    console = _console(terminal=False)
    with round_progress("Fit", True, console) as callbacks:
        (lines,) = callbacks
        assert isinstance(lines, StageLines)
        for r in range(4):
            lines(_env(r))
    out = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert out == [
        "Fit agreement: 2 clients, 1 KiB",
        "Fit round 1 k.v, 1 KiB",
        "Fit round 2 k.v, 1 KiB",
        "Fit round 3 k.v, 1 KiB",
        "Fit done: 4 rounds, 4 KiB, 0.0 s",
    ]


@pytest.mark.parametrize("candidates", ["hist", "quantile"])
def test_off_a_terminal_one_line_per_level(
    heart: tuple[object, ...], candidates: str
) -> None:
    X, y, groups = heart
    console = _console(terminal=False)
    model = FedForestClassifier(
        n_estimators=3, max_depth=3, candidates=candidates, random_state=0
    )
    federation, classes = model._federation(X, y, groups, None)
    with round_progress("FedForest", True, console) as callbacks:
        model._fit(federation, classes, callbacks)
    out = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert out[0] == "FedForest agreement: 4 clients, 8 KiB"
    rounds = r"round \d+" if candidates == "hist" else r"rounds \d+-\d+"
    levels = [
        re.match(rf"FedForest level (\d+): {rounds}, \d+ KiB", s) for s in out[1:-1]
    ]
    assert [int(m.group(1)) for m in levels if m] == [1, 2, 3]
    if candidates == "hist":  # the grid round: a line of its own
        assert re.match(r"FedForest round 1 fedforest.grid, \d+ KiB", out[1])
    assert len(out) == 5 + (candidates == "hist")
    rounds = model.communication_.rounds
    assert out[-1].startswith(f"FedForest done: {rounds} rounds, ")
    assert all(len(s) <= 80 and "…" not in s for s in out)


def test_verbose_fit_prints_lines_when_stdout_is_not_a_terminal(
    heart: tuple[object, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    X, y, groups = heart
    FedAvgClassifier(random_state=0, verbose=True).fit(X, y, groups=groups)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "FedAvgClassifier agreement: 4 clients, 8 KiB"
    assert out[-1].startswith("FedAvgClassifier done: ")
    n_rounds = int(out[-1].split()[2])
    assert len(out) == n_rounds + 1  # agreement, one per round, done
    assert all(re.match(r"FedAvgClassifier round \d+ fedavg\.", s) for s in out[1:-1])


def test_a_compile_during_the_run_is_announced_once() -> None:
    import numba

    from fedtrees._compiling import NOTICE

    out = io.StringIO()
    console = Console(file=out, width=200)
    with round_progress("FedForestClassifier", enabled=True, console=console):
        numba.njit(lambda x: x * 2)(3)  # a fresh kernel: compiled now
        numba.njit(lambda x: x * 3)(3)  # a second compile: no second line
    with round_progress("FedForestClassifier", enabled=True, console=console):
        pass  # nothing compiled: nothing said
    assert out.getvalue().count(NOTICE) == 1, out.getvalue()


def test_at_80_columns_the_bar_keeps_its_elapsed_time_and_ends_on_done() -> None:
    console = _console(terminal=True)
    metrics = {f"metric_{i}": 0.5 for i in range(8)}  # a status far wider than 80
    with round_progress("FedForestClassifier on heart", True, console) as callbacks:
        (bar,) = callbacks
        for r in range(3):
            bar(RoundEnv(r, "k.v", 2, 2, (), 512, 512, 0.01, metrics, 9))
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", console.file.getvalue())  # type: ignore[attr-defined]
    last = [f.rstrip() for f in re.split(r"[\r\n]", plain) if f.strip()][-1]
    assert len(last) <= 80, last
    assert re.search(r" \d+:\d\d:\d\d$", last), last  # the elapsed time, whole
    assert " 3/3 " in last, last
    assert "done, 3 KiB" in last, last


def test_off_a_terminal_a_long_record_stays_on_one_line_of_a_log_file(
    tmp_path: Path,
) -> None:
    # A log file or a pipe has no width: a record wrapped at 80 columns would be
    # two lines of the log, the second without the description that starts it.
    metrics = {f"metric_{i}": 0.5 + i for i in range(12)}  # far wider than 80
    path = tmp_path / "fit.log"
    with path.open("w") as log:
        console = Console(file=log)  # what verbose=True gets with stdout in a file
        assert not console.is_terminal
        with round_progress("FedForestClassifier", True, console) as callbacks:
            (lines,) = callbacks
            for r in range(3):
                lines(
                    RoundEnv(
                        r, "fedforest.evaluate", 2, 2, (), 512, 512, 0.01, metrics, 9
                    )
                )
            lines.say("a notice " + "long " * 30)
    out = path.read_text().splitlines()
    assert len(out) == 5  # agreement, two rounds, the notice, done
    assert all(line.startswith("FedForestClassifier ") for line in out), out
    assert max(len(line) for line in out) > 80
    assert out[1].endswith("metric_11=11.5")
