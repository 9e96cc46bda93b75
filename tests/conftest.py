"""Shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def hugadb_path() -> Path:
    """The HuGaDB folder: $FEDTREES_HUGADB, else ../shared/data/hugadb of the project."""
    env = os.environ.get("FEDTREES_HUGADB")
    path = Path(env) if env else PROJECT_ROOT.parent / "shared" / "data" / "hugadb"
    if not path.is_dir():
        pytest.skip(
            f"HuGaDB data not found at {path}: set FEDTREES_HUGADB to the folder "
            "holding the HuGaDB_v1_*.txt files to run these tests."
        )
    return path


HOSTILE_OUTCOMES = ("clear_error", "documented", "correct")


def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Every ``hostile`` case says its outcome; parallel workers start with Flower.

    A ``hostile`` case's outcome is one of :data:`HOSTILE_OUTCOMES`.

    In a parallel run (a pytest-xdist worker, ``config.workerinput``) the tests
    marked ``flower`` come first: their real deployments are the longest tests
    (minutes in all), so they run beside the other workers' tests instead of
    trailing the run. ``--dist loadfile`` hands out whole files in this order,
    so the Flower files are spread over the workers from the start, and each
    module's deployment starts once (measured on 2 cores: 5 min, against 10 min
    with ``worksteal``, which kept them all on one worker).
    """
    for item in items:
        marker = item.get_closest_marker("hostile")
        if marker is not None and tuple(marker.args) not in {
            (o,) for o in HOSTILE_OUTCOMES
        }:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.hostile takes one of {HOSTILE_OUTCOMES}, "
                f"got {marker.args!r}."
            )
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: item.get_closest_marker("flower") is None)
