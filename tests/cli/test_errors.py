"""Command-line errors in command-line words, and the data folders' variables."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from fedtrees.cli import app
from fedtrees.cli._typer import cli_words
from fedtrees.datasets._fedga import fedga_folder
from fedtrees.datasets._hugadb import load_hugadb
from fedtrees.exceptions import DataNotFoundError


@pytest.mark.parametrize(
    ("command", "variable"),
    [("dpforest-hugadb", "FEDTREES_HUGADB"), ("fedga", "FEDTREES_FEDGA")],
)
def test_data_folder_comes_from_the_variable_the_tests_read(
    command: str, variable: str, tmp_path: Path
) -> None:
    missing = tmp_path / "absent"
    out = CliRunner().invoke(
        app, ["experiment", command, "--quick"], env={variable: str(missing)}
    )
    assert out.exit_code == 2, out.output
    assert "--data" in out.output
    assert variable in out.output
    assert "path=" not in out.output
    shown = CliRunner().invoke(app, ["experiment", command, "--help"])
    assert variable in shown.output


def test_without_flag_or_variable_the_hugadb_error_names_both() -> None:
    out = CliRunner().invoke(
        app, ["experiment", "dpforest-hugadb", "--quick"], env={"FEDTREES_HUGADB": ""}
    )
    assert out.exit_code == 2
    assert "Missing option '--data'" in out.output
    assert "FEDTREES_HUGADB" in out.output


def test_loader_messages_reach_the_command_line_as_flags(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("FEDTREES_FEDGA", raising=False)
    messages = []
    for load in (lambda: fedga_folder(None), lambda: load_hugadb(tmp_path / "x")):
        with pytest.raises(DataNotFoundError, match="path=") as caught:
            load()
        messages.append(cli_words(str(caught.value)))
    assert all("--data" in m and "path=" not in m for m in messages), messages


def test_flower_errors_name_flags_not_the_python_api(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import os

    pytest.importorskip("flwr")
    monkeypatch.setattr(os, "execvpe", lambda *_: None)  # never start Flower
    base = ["flower", "supernode", "--superlink", "h:1", "--data", str(tmp_path)]
    out = CliRunner().invoke(app, [*base, "--client-id", "", "--insecure"])
    assert out.exit_code == 2, out.output
    assert "--client-id" in out.output
    assert "supernode_command" not in out.output
    assert "'client_id'" not in out.output
    key = tmp_path / "site.key"
    key.write_text("")
    out = CliRunner().invoke(
        app, [*base, "--client-id", "a", "--insecure", "--auth-key", str(key)]
    )
    assert out.exit_code == 2, out.output
    assert "--auth-key" in out.output
    assert "--insecure" in out.output
    assert "insecure=True" not in out.output
