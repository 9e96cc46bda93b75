"""The toy stump (``tests/algorithms/stump_method.py``) through the Flower ClientApp.

Its handlers reach the ClientApp through its registry entry (``STUMP``), given
to the loader with the registry's methods: the stump is no method of fedtrees.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("flwr")

from flwr.supercore.task_identity import TaskIdentity

from fedtrees._methods import METHODS
from fedtrees.algorithms import _handlers
from fedtrees.datasets import load_client_file, save_client_file
from fedtrees.federation import Federation
from fedtrees.federation.flower import FlowerTransport
from tests.algorithms.stump_method import STUMP, StumpStrategy
from tests.algorithms.test_stump_method import (
    EDGES,
    SITES,
    assert_same_stump,
    sites_data,
)
from tests.federation.flower.test_client_app_jobs import ClientAppGrid


@pytest.mark.parametrize("secure", [False, True])
def test_through_the_client_app_the_stump_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, secure: bool
) -> None:
    X, y, groups = sites_data(seed=4)
    files = {
        site: save_client_file(
            tmp_path / f"{site}.npz", X[groups == site], y[groups == site]
        )
        for site in SITES
    }
    for name, value in {"_task_id": 1, "_run_id": 1, "_node_id": 0}.items():
        monkeypatch.setattr(TaskIdentity, name, value)  # as inside a ServerApp
    imported: list[str] = []
    real_import = _handlers.import_module
    monkeypatch.setattr(
        _handlers,
        "import_module",
        lambda name: imported.append(name) or real_import(name),
    )
    methods = (*METHODS, STUMP)
    configs: Mapping[str, Mapping[str, str]] = {
        site: {"client-id": site, "data-path": str(path), "cache-dir": ""}
        for site, path in files.items()
    }
    grid = ClientAppGrid(
        configs, "stump", lambda job: _handlers.load_handlers(job, methods)
    )
    params: dict[str, Any] = {"secure": secure, "max_bins": 16}
    params |= {"bin_edges": EDGES} if secure else {}

    flower = Federation(FlowerTransport(grid, min_clients=len(files)))  # type: ignore[arg-type]
    over_flower = flower.run(StumpStrategy(**params), task="classification").result
    clients = {site: load_client_file(path) for site, path in files.items()}
    in_process = Federation.from_clients(clients).run(
        StumpStrategy(**params), task="classification"
    )

    assert_same_stump(over_flower, in_process.result)
    # The ClientApp loaded the stump's package by its job, from the entry given.
    assert "stump" not in _handlers.JOB_PACKAGES
    assert _handlers.job_packages(methods)["stump"] == (STUMP.package,)
    assert STUMP.package in imported
