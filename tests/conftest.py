"""Shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

PROJECT_ROOT = Path(__file__).resolve().parents[1]

# Hypothesis profiles. The default run gives a property that is parametrized over
# many cases (the codec's round trip of every payload type: about a hundred) a
# handful of examples per case (:func:`per_case`); the ``thorough`` profile gives
# every property hypothesis's full count. Select it with
# ``pytest --hypothesis-profile=thorough`` or ``HYPOTHESIS_PROFILE=thorough``; the
# slow run uses it (README, docs/benchmarks.md).
# Neither profile has a deadline: nothing may rely on timing, and a loaded machine
# (the whole suite on every core) slows every example.
DEFAULT = "fedtrees"
THOROUGH = "thorough"
FULL_COUNT = 100  # hypothesis's own default max_examples
settings.register_profile(DEFAULT, deadline=None)
settings.register_profile(THOROUGH, max_examples=FULL_COUNT, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", DEFAULT))


def per_case(handful: int) -> settings:
    """Settings of a property run once per case of a long parametrization.

    Parameters
    ----------
    handful : int
        Examples per case in the default run; the ``thorough`` profile (loaded
        by the environment variable or ``--hypothesis-profile``, both before
        the test modules are imported) runs :data:`FULL_COUNT` instead.

    Returns
    -------
    hypothesis.settings
        The decorator to put above ``@given``. It sets no deadline and lets
        drawing be slow: nothing may rely on timing, and a loaded machine (the
        whole suite on every core) slows every draw.
    """
    thorough = settings.default == settings.get_profile(THOROUGH)
    return settings(
        max_examples=FULL_COUNT if thorough else handful,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


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
