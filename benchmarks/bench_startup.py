"""Start-up costs as ratios, one run: imports, the command line, the first demo.

    python benchmarks/bench_startup.py            # everything (the cold demo compiles)
    python benchmarks/bench_startup.py --skip-demo

Every measurement is a fresh Python process (the median of ``--repeats``
processes for the imports and the command line). Targets (the issue's):

- ``import fedtrees`` <= 2x ``import pandas``;
- the ClientApp module (``from fedtrees.cli.flower_app import clientapp``) <=
  1.5x ``import flwr.clientapp``: what every Flower message's process pays
  when its site worker serves it; the same plus the handlers of a job
  (``load_handlers``) is what it pays serving the message itself (a SuperNode
  started without a site worker), shown beside it;
- the first ``fedtrees demo`` after installing fedtrees into an empty folder
  (a fresh environment: numba has cached nothing) <= 2x the next one. The
  install compiles the kernels (``hatch_build.py``); the run without any cache
  is shown beside it.

Beside them, what a Flower message pays to read a site's data: parsing a CSV
site file (100,000 rows, 16 numeric and 4 text columns) against reading the
run's cache of it (``fedtrees.datasets.load_site_data``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _table import print_frame

ROOT = str(Path(__file__).resolve().parents[1])
IMPORTS = {
    "import pandas": "import pandas",
    "import flwr.clientapp": "import flwr.clientapp",
    "import fedtrees": "import fedtrees",
    "ClientApp module": "from fedtrees.cli.flower_app import clientapp",
    "ClientApp serving itself, fedforest": (
        "from fedtrees.cli.flower_app import clientapp\n"
        "from fedtrees.algorithms._handlers import load_handlers\n"
        "load_handlers('fedforest')"
    ),
    "ClientApp serving itself, fedgbdt": (
        "from fedtrees.cli.flower_app import clientapp\n"
        "from fedtrees.algorithms._handlers import load_handlers\n"
        "load_handlers('fedgbdt')"
    ),
}
TARGETS = {  # row: (reference row, most times the reference)
    "import fedtrees": ("import pandas", 2.0),
    "ClientApp module": ("import flwr.clientapp", 1.5),
    "demo, first run after install": ("demo, next run", 2.0),
}


def timed_code(code: str, setup: str = "") -> float:
    """Seconds a fresh process spends running ``code`` after ``setup`` (untimed)."""
    probe = (
        f"{setup}\nimport time\n_t = time.perf_counter()\n{code}\n"
        "print(time.perf_counter() - _t)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def timed_command(args: list[str], env: dict[str, str] | None = None) -> float:
    """Wall seconds of one command (a process of its own, output discarded)."""
    start = time.perf_counter()
    subprocess.run(args, capture_output=True, check=True, env=env)
    return time.perf_counter() - start


def site_data_rows(folder: str, repeats: int) -> list[dict[str, Any]]:
    """Parsing a CSV site file, and reading it from the run's cache (median s)."""
    rng = np.random.default_rng(0)
    n = 100_000
    frame = pd.DataFrame({f"x{j}": rng.normal(size=n) for j in range(16)})
    for j in range(4):
        frame[f"t{j}"] = rng.choice(["red", "green", "blue", "none"], n)
    frame["label"] = rng.choice(["yes", "no"], n)
    site = os.path.join(folder, "site.csv")
    frame.to_csv(site, index=False)
    setup = "from fedtrees.datasets import load_site_data"
    read = f"load_site_data({site!r}, 'label', cache_dir={{}}, run_id=1)"
    cache = repr(os.path.join(folder, "cache"))
    timed_code(read.format(cache), setup)  # the run's first message fills it
    return [
        {
            "what": label,
            "s": statistics.median(timed_code(code, setup) for _ in range(repeats)),
        }
        for label, code in (
            ("site data: parse the CSV (every message)", read.format(None)),
            ("site data: the run's cache", read.format(cache)),
        )
    ]


def demo_rows() -> list[dict[str, Any]]:
    """The demo in a fresh install: its first run, its next, and without a cache.

    ``pip install --target`` builds fedtrees from this checkout as a user's
    ``pip install .`` does (the build compiles the kernels, ``hatch_build.py``)
    into an empty folder that is put first on the path. The last row is what a
    run pays where the installed cache cannot serve (``NUMBA_CACHE_DIR`` at an
    empty folder): every kernel compiles at its module's first import.
    """
    demo = [sys.executable, "-c", "from fedtrees.cli import main; main()", "demo"]
    with tempfile.TemporaryDirectory() as folder:
        site = os.path.join(folder, "site")
        install = ["pip", "install", "--quiet", "--no-deps", "--target", site, ROOT]
        seconds = timed_command([sys.executable, "-m", *install])
        env = {**os.environ, "PYTHONPATH": site}
        env.pop("NUMBA_CACHE_DIR", None)
        first = timed_command(demo, env)
        then = timed_command(demo, env)
        uncached = timed_command(
            demo, {**env, "NUMBA_CACHE_DIR": os.path.join(folder, "empty")}
        )
    return [
        {"what": "pip install . (compiles the kernels)", "s": seconds},
        {"what": "demo, first run after install", "s": first},
        {"what": "demo, next run", "s": then},
        {"what": "demo, no kernel cache (all compile)", "s": uncached},
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-demo", action="store_true")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for label, code in IMPORTS.items():
        seconds = [timed_code(code) for _ in range(args.repeats)]
        rows.append({"what": label, "s": statistics.median(seconds)})
    fedtrees = [shutil.which("fedtrees") or "fedtrees"]
    for label, extra in (
        ("fedtrees --help", ["--help"]),
        ("fedtrees --version", ["--version"]),
    ):
        seconds = [timed_command([*fedtrees, *extra]) for _ in range(args.repeats)]
        rows.append({"what": label, "s": statistics.median(seconds)})
    with tempfile.TemporaryDirectory() as folder:
        rows += site_data_rows(folder, args.repeats)
    if not args.skip_demo:
        rows += demo_rows()
    frame = pd.DataFrame(rows).set_index("what")
    frame["ratio"] = None
    frame["target"] = None
    for row, (reference, limit) in TARGETS.items():
        if row in frame.index and reference in frame.index:
            ratio = frame.loc[row, "s"] / frame.loc[reference, "s"]
            frame.loc[row, "ratio"] = f"{ratio:.2f}x {reference}"
            frame.loc[row, "target"] = (
                f"<= {limit:g}x: {'yes' if ratio <= limit else 'NO'}"
            )
    print_frame(frame.reset_index(), "Start-up (median of fresh processes; 2 cores)")


if __name__ == "__main__":
    main()
