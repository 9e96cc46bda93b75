"""Start-up costs as ratios, one run: imports, the command line, the first demo.

    python benchmarks/bench_startup.py            # everything (the cold demo compiles)
    python benchmarks/bench_startup.py --skip-demo

Every measurement is a fresh Python process (the median of ``--repeats``
processes for the imports and the command line). Targets (the issue's):

- ``import fedtrees`` <= 2x ``import pandas``;
- the ClientApp module (``from fedtrees.cli.flower_app import clientapp``) <=
  1.5x ``import flwr.clientapp``; the same plus the handlers of a job
  (``load_handlers``) is what every Flower message pays, shown beside it;
- the first ``fedtrees demo`` in an environment (an empty numba cache, so every
  kernel compiles) <= 2x the next one (the kernels load from the cache).
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
from typing import Any

import pandas as pd
from _table import print_frame

IMPORTS = {
    "import pandas": "import pandas",
    "import flwr.clientapp": "import flwr.clientapp",
    "import fedtrees": "import fedtrees",
    "ClientApp module": "from fedtrees.cli.flower_app import clientapp",
    "ClientApp + fedforest handlers": (
        "from fedtrees.cli.flower_app import clientapp\n"
        "from fedtrees.algorithms._handlers import load_handlers\n"
        "load_handlers('fedforest')"
    ),
    "ClientApp + fedgbdt handlers": (
        "from fedtrees.cli.flower_app import clientapp\n"
        "from fedtrees.algorithms._handlers import load_handlers\n"
        "load_handlers('fedgbdt')"
    ),
}
TARGETS = {  # row: (reference row, most times the reference)
    "import fedtrees": ("import pandas", 2.0),
    "ClientApp module": ("import flwr.clientapp", 1.5),
    "demo, first run (compiles)": ("demo, next run (cached kernels)", 2.0),
}


def timed_code(code: str) -> float:
    """Seconds a fresh process spends running ``code`` (not starting Python)."""
    probe = (
        f"import time\n_t = time.perf_counter()\n{code}\n"
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
    if not args.skip_demo:
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache}
            cold = timed_command([*fedtrees, "demo"], env)
            warm = timed_command([*fedtrees, "demo"], env)
        rows.append({"what": "demo, first run (compiles)", "s": cold})
        rows.append({"what": "demo, next run (cached kernels)", "s": warm})
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
