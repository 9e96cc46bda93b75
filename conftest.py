"""Root pytest configuration: collection rules and the hypothesis profile."""

from __future__ import annotations

import importlib.util

from hypothesis import HealthCheck, settings

# --doctest-modules imports every module under src/; the Flower adapter needs flwr.
collect_ignore_glob = []
if importlib.util.find_spec("flwr") is None:
    collect_ignore_glob += [
        "src/fedtrees/federation/flower/*",
        "src/fedtrees/cli/flower_app.py",
        "tests/federation/flower/*",
        "tests/integration/*",
    ]

# Deterministic example generation so CI never fails on a draw it never saw before;
# no per-example deadline (CI machines are slow and shared).
settings.register_profile(
    "fedtrees",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("fedtrees")
