"""Root pytest configuration: collection rules, OpenMP waits, the hypothesis profile."""

from __future__ import annotations

import importlib.util
import os

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

# The default run has a worker per core, and each worker's parallel kernels (numba,
# scikit-learn) start an OpenMP thread per core: more threads than cores. An OpenMP
# thread that waits for work spins by default, on a core another worker's test
# needs; passive waits leave it to them (measured on 2 cores: the tests of
# tests/algorithms took 15% less CPU and wall time). Set before any OpenMP
# runtime loads (at collection); an explicit OMP_WAIT_POLICY is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

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
