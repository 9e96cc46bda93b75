"""Install step: compile fedtrees' numba kernels once, and install their cache.

Without it, the first run after ``pip install`` compiles every kernel it touches
(seconds, on every machine and in every fresh environment: the demo, each CI
test worker, each Flower site). Here the wheel build compiles them all in fresh
processes (``python -m fedtrees._compiling``) on a copy of the package, and the
numba cache it writes (``__pycache__/*.nbi`` index and ``*.nbc`` code, keyed by
the source file's hash, numba's version and this machine's CPU) is shipped in
the wheel beside the modules; an editable install gets it in ``src/``.

numba checks every key before it loads an entry, so a cache that does not fit
(a wheel built on another CPU, a different numba at run time, a kernel edited
since) is ignored and the kernel compiles at first use: never a wrong result.
If compiling fails here, the install goes on with a warning.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PACKAGE = "fedtrees"
MAX_PROCESSES = 4  # kernel modules compile in parallel, one share each


class KernelCacheHook(BuildHookInterface):
    """Compile the kernels into the wheel (or, editable, into ``src/``)."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Compile, then add every cache file to the build."""
        self._scratch = Path(tempfile.mkdtemp(prefix="fedtrees-kernels-"))
        source = Path(self.root) / "src" / PACKAGE
        caches = self._compile(source)
        for path, target in caches.items():
            if version == "editable":  # the package is imported from src/
                (source.parent / target).parent.mkdir(exist_ok=True)
                shutil.copyfile(path, source.parent / target)
            else:
                build_data["force_include"][str(path)] = target

    def finalize(
        self, version: str, build_data: dict[str, Any], artifact_path: str
    ) -> None:
        """Remove the compiled copies."""
        shutil.rmtree(self._scratch, ignore_errors=True)

    def _compile(self, source: Path) -> dict[Path, str]:
        """Compile the kernels in copies of the package; return file -> wheel path.

        Each process compiles its share of the kernel modules in its own copy,
        so no two processes write one cache index. A function compiled in
        several copies (a module another imports) is taken from one copy
        only, its index with its code files.
        """
        n = max(1, min(os.cpu_count() or 1, MAX_PROCESSES))
        copies = [self._scratch / f"part-{k}" for k in range(n)]
        processes = []
        for k, copy in enumerate(copies):
            shutil.copytree(
                source, copy / PACKAGE, ignore=shutil.ignore_patterns("__pycache__")
            )
            processes.append(compile_share(copy, f"{k}/{n}"))
        outputs = [(p.communicate()[0], p.returncode) for p in processes]
        failures = [out for out, code in outputs if code]
        if failures:
            self.app.display_warning(
                "fedtrees: kernels were not compiled at install; they compile on "
                f"first use instead. numba said:\n{failures[0][-2000:]}"
            )
            return {}
        return _cache_files(copies)


def compile_share(copy: Path, part: str) -> subprocess.Popen[str]:
    """Start compiling share ``part`` (``"k/n"``) of the kernels in ``copy``.

    ``copy`` holds a copy of the package; numba writes the cache beside its
    modules (``NUMBA_CACHE_DIR`` would send it elsewhere, so it is dropped).
    The process's output (numba's errors) is on its ``stdout``.
    """
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    return subprocess.Popen(
        [sys.executable, "-m", f"{PACKAGE}._compiling", part],
        cwd=copy,
        env={**env, "PYTHONPATH": str(copy)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _cache_files(copies: list[Path]) -> dict[Path, str]:
    """Every function's cache index and code files, each taken from one copy."""
    chosen: dict[Path, str] = {}
    taken: set[str] = set()
    for copy in copies:
        for index in sorted(copy.rglob("__pycache__/*.nbi")):
            target = index.relative_to(copy).as_posix()
            if target in taken:
                continue
            taken.add(target)
            stem = index.name.removesuffix(".nbi")
            for path in [index, *sorted(index.parent.glob(f"{stem}.*.nbc"))]:
                chosen[path] = path.relative_to(copy).as_posix()
    return chosen
