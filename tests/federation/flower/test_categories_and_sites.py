"""``fedtrees flower categories`` (a declaration from files) and ``sites`` (names).

The declaration is the union of the files' names sorted by text — what the
agreement takes — so declaring it changes no model; it reads as the run config's
``categories`` (JSON) and, with ``--toml``, as a job.toml line. ``sites`` joins
the names ``register`` recorded with Flower's own listing, which shows none.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

from typer.testing import CliRunner

from fedtrees import FedGBDTClassifier
from fedtrees.cli import app
from fedtrees.federation import Federation
from fedtrees.federation.flower import list_sites, sites_table
from fedtrees.federation.flower._config import declared_categories
from fedtrees.federation.flower._deploy import SITES_FILE, record_site
from tests.federation.test_agreement import (
    RARE_COLOUR,
    RARE_WORKCLASS,
    pooled,
    sites_of,
    write_sites,
)


def _categories(*args: str) -> str:
    out = CliRunner().invoke(app, ["flower", "categories", *args])
    assert out.exit_code == 0, out.output
    return str(out.stdout)


def test_categories_prints_the_sorted_union_usable_as_the_run_config(
    tmp_path: Path,
) -> None:
    files = write_sites(tmp_path)
    paths = [str(p) for p in files.values()]

    printed = json.loads(_categories(*paths))
    assert printed == {
        "workclass": [RARE_WORKCLASS, "Private", "Self-emp", "State-gov"],
        "colour": ["blue", "red", RARE_COLOUR],
    }
    assert declared_categories({"categories": json.dumps(printed)}) == {
        c: tuple(v) for c, v in printed.items()
    }
    line = _categories(*paths, "--columns", "colour", "--toml")
    assert tomllib.loads(line) == {
        "categories": json.dumps({"colour": printed["colour"]})
    }

    # Declaring it grows the model the union grows (and fit on the pooled rows).
    sites = sites_of(files)
    X, _y, _groups = pooled(sites)
    params = {"n_estimators": 2, "max_depth": 2, "random_state": 0}
    union = FedGBDTClassifier(**params).fit_federation(Federation.from_clients(sites))
    declared = FedGBDTClassifier(**params).fit_federation(
        Federation.from_clients(sites, categories=printed)
    )
    np.testing.assert_array_equal(declared.predict_proba(X), union.predict_proba(X))
    assert declared.communication_.bytes_up < union.communication_.bytes_up


@pytest.mark.hostile("clear_error")
def test_categories_names_a_column_that_is_not_categorical(tmp_path: Path) -> None:
    files = write_sites(tmp_path)
    out = CliRunner().invoke(
        app, ["flower", "categories", str(files["a"]), "--columns", "age"]
    )
    assert out.exit_code != 0
    assert "'age' is not a categorical column" in out.output.replace("\n", " ")


def test_sites_lists_the_registered_names_beside_flower_statuses(
    tmp_path: Path,
) -> None:
    key = tmp_path / "Cleveland.pub"
    key.write_text("ecdsa-sha2-nistp384 AAAA... Cleveland\n")
    record_site("trial", 11, "Cleveland", key, tmp_path)
    record_site("trial", 12, "Hungary", key, tmp_path)
    record_site("other", 11, "Elsewhere", key, tmp_path)
    listing = {
        "success": True,
        "nodes": [
            {"node-id": "11", "status": "online", "online-at": "2026-11-26 10:00:00"},
            {"node-id": "12", "status": "offline", "offline-at": "2026-11-26 10:05:00"},
            {"node-id": "13", "status": "registered", "created-at": "2026-11-26"},
        ],
    }
    seen: list[list[str]] = []

    def flwr(command: list[str], env: Mapping[str, str]) -> str:
        seen.append(command)
        assert env["FLWR_HOME"] == str(tmp_path)
        return "some log line\n" + json.dumps(listing)

    found = list_sites("trial", tmp_path, run=flwr)
    assert seen == [["flwr", "supernode", "list", "trial", "--format", "json"]]
    assert [(s.name, s.node_id, s.status) for s in found] == [
        ("Cleveland", 11, "online"),
        ("Hungary", 12, "offline"),
        (None, 13, "registered"),  # registered some other way: no name
    ]
    table = sites_table(found).splitlines()
    assert table[0].split() == [
        "site",
        "node",
        "id",
        "status",
        "since",
        "key",
        "sha256",
    ]
    assert table[2].split()[:3] == ["Hungary", "12", "offline"]
    assert json.loads((tmp_path / SITES_FILE).read_text())["trial"]["11"]["name"] == (
        "Cleveland"
    )


@pytest.mark.hostile("clear_error")
def test_sites_says_when_flower_cannot_list(tmp_path: Path) -> None:
    def failing(command: list[str], env: Mapping[str, str]) -> str:
        return json.dumps({"success": False, "error-message": "no such connection"})

    with pytest.raises(ValueError, match=r"flwr supernode list trial.*no such conn"):
        list_sites("trial", tmp_path, run=failing)


def test_the_docs_categories_command_runs_as_written(tmp_path: Path) -> None:
    page = (Path(__file__).parents[3] / "docs" / "flower.md").read_text()
    section = page.split("## Sites whose categories differ", 1)[1].split("\n## ", 1)[0]
    (command,) = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    public = tmp_path / "public"
    public.mkdir()
    (public / "a.csv").write_text("workclass,age,y\nPrivate,50,no\n?,61,yes\n")
    (public / "b.csv").write_text("workclass,age,y\nNever-worked,40,no\n")
    (tmp_path / "job.toml").write_text('job = "fedgbdt"\n')
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    done = subprocess.run(
        ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    job = tomllib.loads((tmp_path / "job.toml").read_text())
    assert json.loads(job["categories"]) == {"workclass": ["Never-worked", "Private"]}
