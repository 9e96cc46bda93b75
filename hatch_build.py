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

**Decision:** a failed compile fails the build where the environment variable
``CI`` is set (CI systems set ``CI=true``; ``.ci/run`` sets it too; ``0``,
``false`` and ``no`` count as unset), so a kernel that stops compiling at
install cannot go unnoticed. Elsewhere the install goes on with a warning
(pip shows a build's warnings with ``pip install -v``) and ships the cache of
every share that compiled; the others compile at first use.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PACKAGE = "fedtrees"
MAX_PROCESSES = 4  # kernel modules compile in parallel, one share each
UNSET = ("", "0", "false", "no")  # values of CI that do not mean "in CI"


class KernelCompileError(RuntimeError):
    """The kernels did not compile at install, in CI: the build fails.

    A plain ``RuntimeError``: the build runs before fedtrees (and its
    ``FedTreesError``) can be imported.
    """


class Share(NamedTuple):
    """One install process: its copy of the package, its part, how it ended.

    (Not a dataclass: hatchling loads this file without registering it as a
    module, which dataclasses need.)
    """

    copy: Path
    part: str  # "k/n"
    returncode: int
    output: str  # numba's and Python's messages


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

        Raises
        ------
        KernelCompileError
            If a share did not compile and ``CI`` is set.
        """
        copies = copy_package(source, self._scratch, processes())
        shares = run_shares(copies)
        failed = [share for share in shares if share.returncode]
        if failed and in_ci(os.environ):
            raise KernelCompileError(
                failure_report(failed, "CI is set, so the build fails")
            )
        if failed:
            self.app.display_warning(
                failure_report(
                    failed,
                    "they compile on first use instead (set CI=1 to make this an "
                    "error)",
                )
            )
        return _cache_files([s.copy for s in shares if not s.returncode])


def processes() -> int:
    """How many install processes compile the kernels (one share each)."""
    return max(1, min(os.cpu_count() or 1, MAX_PROCESSES))


def in_ci(environ: Mapping[str, str]) -> bool:
    """Whether ``CI`` says this build runs in continuous integration."""
    return environ.get("CI", "").strip().lower() not in UNSET


def copy_package(source: Path, scratch: Path, n: int) -> list[Path]:
    """Copy the package (no ``__pycache__``) into ``n`` folders under ``scratch``.

    Each process compiles its share of the kernel modules in its own copy,
    so no two processes write one cache index.
    """
    copies = [scratch / f"part-{k}" for k in range(n)]
    for copy in copies:
        shutil.copytree(
            source, copy / PACKAGE, ignore=shutil.ignore_patterns("__pycache__")
        )
    return copies


def run_shares(copies: list[Path]) -> list[Share]:
    """Compile share k of ``len(copies)`` in copy k, all at once; wait for all."""
    n = len(copies)
    started = [(copy, f"{k}/{n}") for k, copy in enumerate(copies)]
    running = [compile_share(copy, part) for copy, part in started]
    shares = []
    for (copy, part), process in zip(started, running, strict=True):
        output = process.communicate()[0]
        shares.append(Share(copy, part, process.returncode, output))
    return shares


def compile_share(copy: Path, part: str) -> subprocess.Popen[str]:
    """Start compiling share ``part`` (``"k/n"``) of the kernels in ``copy``.

    ``copy`` holds a copy of the package; numba writes the cache beside its
    modules (``NUMBA_CACHE_DIR`` would send it elsewhere, so it is dropped).
    ``copy`` goes first on ``PYTHONPATH``, before what is there already: pip's
    isolated build environment is on it (a ``sitecustomize`` that puts the
    build's numpy and numba on the path), and a fresh environment has no
    numba of its own. The process's output (numba's errors) is on its
    ``stdout``.
    """
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    inherited = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    return subprocess.Popen(
        [sys.executable, "-m", f"{PACKAGE}._compiling", part],
        cwd=copy,
        env={**env, "PYTHONPATH": os.pathsep.join([str(copy), *inherited])},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def failure_report(failed: list[Share], outcome: str) -> str:
    """Say what went wrong in one message: the shares, the first one's output."""
    first = failed[0]
    parts = ", ".join(share.part for share in failed)
    return (
        f"fedtrees: the kernels of install share(s) {parts} were not compiled at "
        f"install; {outcome}. Share {first.part} said:\n{first.output[-2000:]}"
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
