"""Kernels: declared types, compiled once at install, a cache that travels.

The install step (``hatch_build.py``) compiles the kernels in a copy of the
package and ships the numba cache beside the installed modules; these tests
check each link of that chain: every kernel module is listed, nothing compiles
during a run once the modules are imported, a cache compiled in one folder
loads in another without compiling, the hook's compile share compiles every
kernel module as the build runs it (package ``__init__`` modules skipped) into
a cache that serves every declared signature, the hook picks each function's
files from one copy, and a failed compile fails the build where ``CI`` is set
and warns elsewhere, shipping what did compile.
"""

from __future__ import annotations

import ast
import importlib.util
import json
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


def _seed(copy: Path) -> None:
    """Put the checkout's numba cache into ``copy`` (where it fits, it loads)."""
    for path in PACKAGE.rglob("__pycache__/*.nb[ic]"):
        target = copy / "fedtrees" / path.relative_to(PACKAGE)
        target.parent.mkdir(exist_ok=True)
        shutil.copyfile(path, target)


INSTALLED_PROBE = """
import json, fedtrees
from fedtrees._compiling import KERNEL_MODULES, _skip_package_inits
from fedtrees._compiling import _DECLARED, compile_kernels, compile_notice
_skip_package_inits(KERNEL_MODULES)  # as the install step; scikit-learn stays out
said = []
with compile_notice(said.append):
    compile_kernels()
kernels = [d for declared in _DECLARED.values() for d in declared]
print(json.dumps({
    "file": fedtrees.__file__,
    "said": said,
    "kernels": len(kernels),
    "not_from_cache": sorted(
        f"{d.dispatcher.py_func.__module__}.{d.dispatcher.__name__}"
        for d in kernels
        if d.dispatcher.stats.cache_misses
        or sum(d.dispatcher.stats.cache_hits.values()) != len(d.signatures)
    ),
}))
"""


def test_the_install_step_compiles_every_kernel_module_into_a_cache_that_serves(
    hook_module: Any, tmp_path: Path
) -> None:
    """The build hook's compile share, as the build runs it, for every module.

    The hook's own steps: copies of the package, one per process; each process
    (``python -m fedtrees._compiling k/n``, package ``__init__`` modules
    skipped) compiles its share; one file per function is picked from the
    copies. The picked files, put beside a fresh copy of the package (as the
    wheel installs them), must serve every declared signature of every kernel
    module in a fresh process: no compile, no cache miss. One departure from
    the build, for speed: each copy is seeded with the checkout's numba cache
    (written by the editable install and the test runs), which numba loads
    where its keys fit and otherwise ignores, compiling and writing afresh
    (the slow wheel test in ``test_packaging.py`` starts from no cache).
    """
    copies = hook_module.copy_package(PACKAGE, tmp_path / "build", 2)
    for copy in copies:
        _seed(copy)
    shares = hook_module.run_shares(copies)
    failed = [share for share in shares if share.returncode]
    assert not failed, hook_module.failure_report(failed, "the test fails")
    installed = tmp_path / "site"
    shutil.copytree(
        PACKAGE, installed / "fedtrees", ignore=shutil.ignore_patterns("__pycache__")
    )
    for source, target in hook_module._cache_files(copies).items():
        (installed / target).parent.mkdir(exist_ok=True)
        shutil.copyfile(source, installed / target)
    for source in installed.rglob("*.py"):  # new times, as an install writes them
        source.touch()
    assert_every_kernel_loads_from_the_cache(installed)


def assert_every_kernel_loads_from_the_cache(installed: Path) -> None:
    """In a fresh process, every declared kernel of ``installed`` loads, none compiles.

    ``installed`` holds the package as an install lays it out (``fedtrees/``).
    """
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    out = subprocess.run(
        [sys.executable, "-c", INSTALLED_PROBE],
        cwd=installed.parent,
        env={**env, "PYTHONPATH": str(installed)},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    report = json.loads(out.strip().splitlines()[-1])
    assert Path(report["file"]).is_relative_to(installed), report
    assert report["not_from_cache"] == [], report
    assert report["said"] == [], report  # nothing compiled
    assert report["kernels"] == len(declared_kernels()) > len(KERNEL_MODULES), report


def declared_kernels() -> dict[str, int]:
    """Every function declared with signatures (parsed): its cache name -> how many.

    The cache name is numba's: ``<module>.<function>-<first line>.py3XY``, the
    first line being its first decorator's, in ``<package>/__pycache__/``.
    """
    tag = f"py{sys.version_info.major}{sys.version_info.minor}"
    found = {}
    for module in KERNEL_MODULES:
        package, _, name = module.rpartition(".")
        path = PACKAGE.parent.joinpath(*module.split(".")).with_suffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            for d in node.decorator_list:
                if isinstance(d, ast.Call) and getattr(d.func, "id", "") == "kernel":
                    line = min(each.lineno for each in node.decorator_list)
                    folder = package.replace(".", "/") + "/__pycache__"
                    stem = f"{folder}/{name}.{node.name}-{line}.{tag}"
                    found[stem] = len(d.args)  # no signatures: a helper
    return {stem: n for stem, n in found.items() if n}


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


def _failing_hook(hook_module: Any, tmp_path: Path, compiling: str) -> Any:
    """A hook over a package whose install step is ``compiling`` (its source)."""
    source = tmp_path / "src" / "fedtrees"
    _touch(source / "__init__.py", "")
    _touch(source / "_compiling.py", compiling)
    hook = hook_module.KernelCacheHook()
    hook._scratch = tmp_path / "scratch"
    hook.warnings = []
    hook.app = types.SimpleNamespace(display_warning=hook.warnings.append)
    hook.source = source
    return hook


def test_a_failed_compile_warns_and_installs_without_the_cache(
    hook_module: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    hook = _failing_hook(
        hook_module, tmp_path, "raise SystemExit('no compiler here')\n"
    )
    assert hook._compile(hook.source) == {}
    assert len(hook.warnings) == 1
    assert "compile on first use" in hook.warnings[0]
    assert "no compiler here" in hook.warnings[0]


@pytest.mark.parametrize("value", ["true", "1", "True", "yes"])
def test_a_failed_compile_fails_the_build_in_ci(
    hook_module: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CI", value)
    hook = _failing_hook(
        hook_module, tmp_path, "raise SystemExit('no compiler here')\n"
    )
    with pytest.raises(
        hook_module.KernelCompileError,
        match=r"(?s)not compiled at install; CI is set, so the build fails.*no compiler here",
    ):
        hook._compile(hook.source)
    assert hook.warnings == []


@pytest.mark.parametrize(
    ("environ", "expected"),
    [({}, False), ({"CI": ""}, False), ({"CI": "0"}, False), ({"CI": "false"}, False),
     ({"CI": "No"}, False), ({"CI": "true"}, True), ({"CI": "1"}, True)],
)  # fmt: skip
def test_ci_is_read_as_ci_systems_set_it(
    hook_module: Any, environ: dict[str, str], expected: bool
) -> None:
    assert hook_module.in_ci(environ) is expected


def test_the_install_step_imports_from_the_build_environment(
    hook_module: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pip's isolated build: PYTHONPATH holds a sitecustomize that puts the build
    # environment's packages (numpy, numba) on the path; a fresh virtual
    # environment has none of its own. The install step must keep it.
    build_env, packages = tmp_path / "pip-site", tmp_path / "overlay"
    _touch(
        build_env / "sitecustomize.py",
        f"import site\nsite.addsitedir({str(packages)!r})\n",
    )
    _touch(packages / "only_in_the_build_environment.py", "")
    monkeypatch.setenv("PYTHONPATH", str(build_env))
    monkeypatch.setenv("CI", "true")
    monkeypatch.setattr(hook_module, "processes", lambda: 1)
    compiling = (
        "import only_in_the_build_environment\n"
        "from pathlib import Path\n"
        "cache = Path(__file__).parent / '__pycache__'\n"
        "cache.mkdir()\n"
        "(cache / '_k.f-1.py311.nbi').write_text('')\n"
    )
    hook = _failing_hook(hook_module, tmp_path, compiling)
    chosen = hook._compile(hook.source)  # raises, in CI, if the import failed
    assert list(chosen.values()) == ["fedtrees/__pycache__/_k.f-1.py311.nbi"]


def test_a_failed_share_warns_and_the_others_still_ship(
    hook_module: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(hook_module, "processes", lambda: 2)
    compiling = (
        "import sys\n"
        "from pathlib import Path\n"
        "if sys.argv[1] == '1/2':\n"
        "    raise SystemExit('share one broke')\n"
        "cache = Path(__file__).parent / '__pycache__'\n"
        "cache.mkdir()\n"
        "(cache / '_k.f-1.py311.nbi').write_text(sys.argv[1])\n"
        "(cache / '_k.f-1.py311.1.nbc').write_text(sys.argv[1])\n"
    )
    hook = _failing_hook(hook_module, tmp_path, compiling)
    chosen = hook._compile(hook.source)
    assert sorted(chosen.values()) == [
        "fedtrees/__pycache__/_k.f-1.py311.1.nbc",
        "fedtrees/__pycache__/_k.f-1.py311.nbi",
    ]
    assert {path.read_text() for path in chosen} == {"0/2"}
    assert len(hook.warnings) == 1
    assert "share(s) 1/2 were not compiled" in hook.warnings[0]
    assert "share one broke" in hook.warnings[0]
