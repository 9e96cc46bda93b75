"""Round progress for ``verbose=True``, fed by the round loop's callbacks.

On a terminal (or in Jupyter) a live rich bar counts the rounds; anywhere else (a
pipe, a log file, CI) a live bar cannot redraw, so one concise line is printed per
stage instead.

**Decision (the bar's total):** how many rounds a run takes is known only when it
ends (a tree stops growing where its nodes are pure), so during the run the bar
shows the strategy's upper bound as ``12/≤129``; when the run ends the total
becomes the rounds actually made and the bar is full (``39/39``).

**Decision (off a terminal):** one line for the agreement (round 0), one per depth
level for strategies that report a ``level`` metric (FedForest: the level's
rounds, bytes and open nodes), else one per round, and a closing line with the
totals. Each is one line however long (never wrapped at the console's width, so a
log file holds one record per line). Nothing is printed when ``verbose`` is False.

Either way, a run that compiles kernels (the first in an environment) says so
in one line (:func:`fedtrees._compiling.compile_notice`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.cells import cell_len
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Column

from fedtrees._compiling import compile_notice
from fedtrees.federation import RoundCallback, RoundEnv

__all__ = ["RoundBar", "StageLines", "round_progress"]


@contextmanager
def round_progress(
    description: str, enabled: bool, console: Console | None = None
) -> Iterator[list[RoundCallback]]:
    """Yield the callbacks to pass to ``run``: a live bar, or one line per stage.

    ``console`` defaults to a new rich console on standard output; the bar is
    used when it is a terminal or Jupyter, the lines otherwise.

    Examples
    --------
    >>> with round_progress("fit", enabled=False) as callbacks:
    ...     callbacks
    []
    """
    if not enabled:
        yield []
        return
    console = console if console is not None else Console()
    if console.is_terminal or console.is_jupyter:
        bar = RoundBar(description, console)
        with bar.progress, compile_notice(bar.progress.console.log):
            yield [bar]
            bar.finish()
    else:
        lines = StageLines(description, console)
        with compile_notice(lines.say):
            yield [lines]
        lines.finish()


def _cut(cells: int) -> Column:
    return Column(width=cells, no_wrap=True, overflow="ellipsis")


def _kib(n_bytes: int) -> str:
    return f"{n_bytes / 1024:.0f} KiB"


def _shown(metrics: dict[str, float], skip: str = "") -> str:
    return " ".join(f"{k}={v:.4g}" for k, v in metrics.items() if k != skip)


class RoundBar:
    """A live bar over the rounds; :meth:`finish` fills it with the rounds made."""

    def __init__(self, description: str, console: Console) -> None:
        # At 80 columns the elapsed time keeps its 7 cells: the description and
        # the status are cut short ("…") instead, and the bar is narrow.
        name = min(cell_len(description), max(8, console.width // 4))
        status = max(4, console.width - name - 20 - 11 - 7 - 4 - 1)
        self.progress = Progress(
            TextColumn("[bold]{task.description}", table_column=_cut(name)),
            BarColumn(bar_width=20),
            TextColumn("{task.fields[count]}", table_column=Column(min_width=11)),
            TextColumn("{task.fields[status]}", table_column=_cut(status)),
            TimeElapsedColumn(table_column=Column(min_width=7, no_wrap=True)),
            console=console,
        )
        self.task: TaskID = self.progress.add_task(
            description, total=None, count="", status=""
        )
        self.bytes = 0

    def __call__(self, env: RoundEnv) -> None:
        """Advance to ``env.round``; the total is the strategy's upper bound."""
        done = env.round + 1
        self.bytes += env.bytes_up + env.bytes_down
        bound = None if env.expected_rounds is None else env.expected_rounds + 1
        self.progress.update(
            self.task,
            completed=done,
            total=bound,
            count=f"{done}/≤{bound}" if bound is not None else f"{done}",
            status=f"{_kib(self.bytes)} {_shown(dict(env.metrics))}".rstrip(),
        )

    def finish(self) -> None:
        """Set the total to the rounds made: the bar ends full, its status "done"."""
        done = int(self.progress.tasks[0].completed)
        self.progress.update(
            self.task,
            total=done,
            count=f"{done}/{done}",
            status=f"done, {_kib(self.bytes)}",
        )


class StageLines:
    """One printed line per stage (agreement, depth level or round), then totals."""

    def __init__(self, description: str, console: Console) -> None:
        self.description, self.console = description, console
        self.pending: list[RoundEnv] = []
        self.level = 0.0  # the ``level`` metric of the last round (levels start at 0)
        self.rounds, self.bytes, self.seconds = 0, 0, 0.0

    def __call__(self, env: RoundEnv) -> None:
        """Print the stage ``env`` completes, or keep it until its level ends."""
        self.rounds = env.round + 1  # the agreement counts, as in the ledger
        self.bytes += env.bytes_up + env.bytes_down
        self.seconds += env.seconds
        if env.round == 0:
            self._print(f"agreement: {env.n_replies} clients, {_kib(_bytes([env]))}")
            return
        level = env.metrics.get("level")
        if level is None:  # a round outside the levels: a line of its own
            self._flush()
            self.pending.append(env)
            self._flush()
            return
        self.pending.append(env)
        previous, self.level = self.level, level
        if level != previous:  # the round that completed a level
            self._flush()

    def finish(self) -> None:
        """Print what is left and the run's totals."""
        self._flush()
        self._print(
            f"done: {self.rounds} rounds, {_kib(self.bytes)}, {self.seconds:.1f} s"
        )

    def _flush(self) -> None:
        if not self.pending:
            return
        first, last = self.pending[0], self.pending[-1]
        span = (
            f"round {first.round}"
            if first is last
            else f"rounds {first.round}-{last.round}"
        )
        metrics = dict(last.metrics)
        if "level" in metrics:
            stage = f"level {metrics['level']:g}: {span}"
        else:
            stage = f"{span} {last.kind}"
        shown = _shown(metrics, skip="level")
        self._print(", ".join(filter(None, [stage, _kib(_bytes(self.pending)), shown])))
        self.pending = []

    def _print(self, text: str) -> None:
        # One record, one line: a log file or a pipe has no width to wrap to.
        self.console.print(
            f"{self.description} {text}", highlight=False, soft_wrap=True
        )

    def say(self, text: str) -> None:
        """Print a line about the run (not a stage), e.g. the compile notice."""
        self._print(text)


def _bytes(envs: list[RoundEnv]) -> int:
    return sum(e.bytes_up + e.bytes_down for e in envs)
