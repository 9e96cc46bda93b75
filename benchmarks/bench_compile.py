"""Compile time of every numba kernel: what the install spends, and a run without it.

    python benchmarks/bench_compile.py

Each kernel module compiles in a fresh process with an empty numba cache
(``NUMBA_CACHE_DIR`` at a new folder), its package ``__init__`` modules skipped
as at install; every declared kernel is timed while it compiles all its
signatures (the helpers it calls compile inside it). A module's first kernel
also carries numba's start-up in that process (about 0.3 s). The install runs
the modules in shares, one process per core (``hatch_build.py``), and ships
the cache: ``bench_startup.py`` times that and the demo on either side of it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import pandas as pd
from _table import print_frame

from fedtrees._compiling import KERNEL_MODULES

PROBE = """
import json, sys, time
from fedtrees._compiling import _skip_package_inits
_skip_package_inits([{module!r}])
t = time.perf_counter()
import {module}
imported = time.perf_counter() - t
from fedtrees._compiling import _DECLARED
rows = []
for declared in _DECLARED.get({module!r}, []):
    t = time.perf_counter()
    declared.compile()
    rows.append([declared.dispatcher.py_func.__name__, len(declared.signatures),
                 time.perf_counter() - t])
print(json.dumps({{"imported": imported, "kernels": rows}}))
"""


def compile_module(module: str) -> list[dict[str, Any]]:
    """Compile one module's kernels in a fresh process; a row per kernel."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        out = subprocess.run(
            [sys.executable, "-c", PROBE.format(module=module)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        ).stdout
    found = json.loads(out.strip().splitlines()[-1])
    return [
        {"module": module, "kernel": name, "signatures": n, "compile s": seconds}
        for name, n, seconds in found["kernels"]
    ]


def main() -> None:
    rows = [row for module in KERNEL_MODULES for row in compile_module(module)]
    frame = pd.DataFrame(rows)
    frame["module"] = frame["module"].str.replace("fedtrees.", "", regex=False)
    total = frame["compile s"].sum()
    print_frame(
        frame.round(3), f"Kernel compile times, empty cache (total {total:.1f} s)"
    )
    by_module = frame.groupby("module", sort=False)["compile s"].sum().round(2)
    print(by_module.sort_values(ascending=False).to_string())


if __name__ == "__main__":
    main()
