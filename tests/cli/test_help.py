from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from fedtrees.cli import app


def _paths(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, sub in getattr(command, "commands", {}).items():
        yield from _paths(sub, (*path, name))


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[Any]:
    yield command
    for sub in getattr(command, "commands", {}).values():
        yield from _commands(sub)


ROOT = typer.main.get_command(app)
PATHS = list(_paths(ROOT))


def test_every_command_group_is_reached() -> None:
    assert ("flower", "supernode") in PATHS
    assert ("experiment", "fedforest-heart") in PATHS
    assert ("demo",) in PATHS


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "fedtrees")
def test_help_screen_shows_no_bool_metavar(path: tuple[str, ...]) -> None:
    out = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "100"})
    assert out.exit_code == 0, out.output
    assert "Usage: fedtrees" in out.output
    assert "<bool>" not in out.output


MARKUP = ("Decision", "``", "**", ":class:", ":mod:", ":func:", ":data:")


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "fedtrees")
def test_help_at_80_columns_speaks_to_users(path: tuple[str, ...]) -> None:
    # Help text comes from docstrings: no maintainer notes, no reST markup.
    out = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    assert [m for m in MARKUP if m in out.output] == []
    assert max(len(line) for line in out.output.splitlines()) <= 80


def test_flags_including_help_have_an_empty_metavar() -> None:
    # typer 0.2x prints a flag's metavar ("<bool>") unless it is set: every flag of
    # every command, --help included, must carry the empty one.
    flags = []
    for command in _commands(ROOT):
        with typer.Context(command) as ctx:
            flags += [p for p in command.get_params(ctx) if getattr(p, "is_flag", 0)]
    names = {opt for flag in flags for opt in flag.opts}
    assert {"--help", "--quick", "--insecure"} <= names
    assert [f.opts for f in flags if f.metavar != ""] == []


def test_version_prints_the_package_version() -> None:
    from fedtrees import __version__

    out = CliRunner().invoke(app, ["--version"])
    assert out.exit_code == 0, out.output
    assert out.output.strip() == f"fedtrees {__version__}"


def test_help_loads_no_method_and_no_scikit_learn() -> None:
    # A fresh process: the help screen must not pay for the methods' imports.
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from fedtrees.cli import app\n"
        "assert CliRunner().invoke(app, ['--help']).exit_code == 0\n"
        "print(sorted(m for m in ('sklearn', 'matplotlib', 'fedtrees.algorithms.fedforest')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
