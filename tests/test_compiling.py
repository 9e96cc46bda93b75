"""Kernels: declared types, compiled once at install, a cache that travels.

The install step (``hatch_build.py``) compiles the kernels in a copy of the
package and ships the numba cache beside the installed modules; these tests
check each link of that chain: every kernel module is listed, nothing compiles
during a run once the modules are imported, a cache compiled in one folder
loads in another without compiling, and the hook picks each function's files
from one copy and survives a failed compile.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from numba.core import event

from fedtrees._compiling import KERNEL_MODULES, _share, compile_kernels

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "fedtrees"


class _Compiles(event.Listener):
    """Record the name of every function numba compiles."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def on_start(self, event: event.Event) -> None:
        self.names.append(event.data["dispatcher"].py_func.__qualname__)

    def on_end(self, event: event.Event) -> None:
        pass


def test_kernel_modules_lists_every_module_that_declares_kernels() -> None:
    declaring = {
        ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for path in PACKAGE.rglob("*.py")
        if "\n@kernel(" in path.read_text()
    }
    assert declaring == set(KERNEL_MODULES)


def test_the_install_shares_cover_every_kernel_module_once() -> None:
    for n in (1, 2, 3, 4):
        shares = [m for k in range(n) for m in _share(f"{k}/{n}")]
        assert sorted(shares) == sorted(KERNEL_MODULES)


def test_nothing_compiles_during_a_fit_once_the_kernels_are_compiled() -> None:
    from fedtrees._compiling import _DECLARED
    from fedtrees.experiments import run_demo

    compile_kernels()
    listener = _Compiles()
    with event.install_listener("numba:compile", listener):
        run_demo(n_estimators=3, max_depth=3)
    assert listener.names == []
    for declared in (d for kernels in _DECLARED.values() for d in kernels):
        held = declared.dispatcher.signatures  # the declared ones, no other
        assert len(held) == len(declared.signatures), declared.dispatcher


def test_a_cache_compiled_at_install_loads_elsewhere_without_compiling(
    hook_module: Any, tmp_path: Path
) -> None:
    module = "fedtrees.algorithms.fedgbdt._route_kernel"
    built, installed = tmp_path / "build", tmp_path / "site"
    shutil.copytree(
        PACKAGE, built / "fedtrees", ignore=shutil.ignore_patterns("__pycache__")
    )
    share = f"{KERNEL_MODULES.index(module)}/{len(KERNEL_MODULES)}"
    step = hook_module.compile_share(built, share)  # the install step, as the hook
    output = step.communicate()[0]
    assert step.returncode == 0, output
    caches = sorted((built / "fedtrees/algorithms/fedgbdt/__pycache__").glob("*.nb?"))
    assert [p.suffix for p in caches] == [".nbc", ".nbi"]
    shutil.copytree(built, installed)  # another folder, as pip installs the wheel
    for source in installed.rglob("*.py"):  # new times, as an install writes them
        source.touch()
    probe = (
        "from fedtrees._compiling import _skip_package_inits, compile_kernels\n"
        f"_skip_package_inits([{module!r}])\n"
        f"compile_kernels([{module!r}])\n"
        f"from {module} import route_rows\n"
        "print(dict(route_rows.stats.cache_hits), dict(route_rows.stats.cache_misses))"
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=installed,
        env={**env, "PYTHONPATH": str(installed)},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    hits, misses = out.strip().split("} {")
    assert hits.count(": 1") == 1, out  # its one signature, from the cache
    assert misses == "}", out


@pytest.fixture
def hook_module(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``hatch_build.py``, importable without hatchling (the build's own package)."""

    class BuildHookInterface:
        pass

    interface = types.ModuleType("hatchling.builders.hooks.plugin.interface")
    interface.BuildHookInterface = BuildHookInterface  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, interface.__name__, interface)
    spec = importlib.util.spec_from_file_location(
        "hatch_build", ROOT / "hatch_build.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _touch(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_hook_takes_each_function_from_one_copy(
    hook_module: Any, tmp_path: Path
) -> None:
    first, second = tmp_path / "part-0", tmp_path / "part-1"
    cache = "fedtrees/stats/__pycache__"
    for copy in (first, second):  # both copies compiled f (one imports the other)
        _touch(copy / cache / "_k.f-10.py311.nbi", copy.name)
        _touch(copy / cache / "_k.f-10.py311.1.nbc", copy.name)
    _touch(second / cache / "_k.f-10.py311.2.nbc", "second only")
    _touch(second / cache / "_k.f_other-30.py311.nbi", "g")
    _touch(second / cache / "_k.f_other-30.py311.1.nbc", "g")
    chosen = hook_module._cache_files([first, second])
    assert sorted(chosen.values()) == [
        f"{cache}/_k.f-10.py311.1.nbc",
        f"{cache}/_k.f-10.py311.nbi",
        f"{cache}/_k.f_other-30.py311.1.nbc",
        f"{cache}/_k.f_other-30.py311.nbi",
    ]
    f_files = [p for p, target in chosen.items() if "_k.f-10" in target]
    assert {p.read_text() for p in f_files} == {"part-0"}  # index and code together


def test_a_failed_compile_warns_and_installs_without_the_cache(
    hook_module: Any, tmp_path: Path
) -> None:
    source = tmp_path / "src" / "fedtrees"
    _touch(source / "__init__.py", "")
    _touch(source / "_compiling.py", "raise SystemExit('no compiler here')\n")
    warnings: list[str] = []
    hook = hook_module.KernelCacheHook()
    hook._scratch = tmp_path / "scratch"
    hook.app = types.SimpleNamespace(display_warning=warnings.append)
    assert hook._compile(source) == {}
    assert len(warnings) == 1
    assert "compile on first use" in warnings[0]
    assert "no compiler here" in warnings[0]
