"""docs/flower.md's table of `job.toml` keys is the app's run config, key by key.

Every key the ServerApp reads is in the table, with the default of the app's
pyproject and an example that the key's own check accepts.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("flwr")

from fedtrees.federation.flower import RUN_CONFIG, app_dir
from fedtrees.federation.flower._config import run_config_value

DOCS = Path(__file__).resolve().parents[3] / "docs" / "flower.md"
ROW = re.compile(r"^\| `([a-z-]+)` \| (.+) \| `(.+)` \| `(.+)` \|$")


def _rows() -> dict[str, tuple[str, str]]:
    text = DOCS.read_text()
    start = text.index("| `job.toml` key |")
    table = text[start : text.index("\n\n", start)].splitlines()[2:]
    rows = {}
    for line in table:
        match = ROW.match(line)
        assert match, f"not a row of key, meaning, default, example: {line}"
        key, _, default, example = match.groups()
        rows[key] = (default, example)
    return rows


def test_the_table_lists_every_run_config_key_with_the_apps_default() -> None:
    app = tomllib.loads((app_dir() / "pyproject.toml").read_text())
    defaults = app["tool"]["flwr"]["app"]["config"]
    rows = _rows()
    assert list(rows) == list(RUN_CONFIG)
    for key, (default, _) in rows.items():
        assert tomllib.loads(f"v = {default}")["v"] == defaults[key], key


@pytest.mark.parametrize("key", list(RUN_CONFIG))
def test_each_example_is_a_value_the_key_accepts(key: str) -> None:
    _, example = _rows()[key]
    parsed = tomllib.loads(example)
    assert list(parsed) == [key]
    assert run_config_value(parsed, key) is not None
