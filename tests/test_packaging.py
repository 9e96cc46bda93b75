"""The built wheel carries the bundled datasets and every kernel's compiled cache.

The sdist carries the docs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT
from tests.test_compiling import (
    assert_every_kernel_loads_from_the_cache,
    declared_kernels,
)

DATA = "fedtrees/datasets/_data/"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel pip builds from this checkout in a fresh virtual environment.

    As a user's ``pip install .`` does: nothing installed but pip, the build's
    own numpy and numba in pip's isolated build environment. ``CI`` is set, so
    a kernel that does not compile fails the build (``hatch_build.py``) with
    numba's message instead of shipping no cache.
    """
    folder = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "venv", str(folder / "venv")], check=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH", "VIRTUAL_ENV")
    }
    built = subprocess.run(
        [str(folder / "venv" / "bin" / "python"), "-m", "pip", "wheel", "--no-deps",
         "-w", str(folder / "dist"), str(PROJECT_ROOT)],
        env={**env, "CI": "true"},
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (path,) = (folder / "dist").glob("fedtrees-*.whl")
    return path


@pytest.mark.slow  # builds the wheel, compiling every kernel: 1-3 minutes
def test_the_wheel_holds_every_bundled_data_file(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read(DATA + "MANIFEST.json"))
    assert manifest, "MANIFEST.json lists no data file"
    missing = [f for f in manifest if f"{DATA}{f}.xz" not in names]
    assert not missing, f"bundled data missing from the wheel: {missing}"
    assert DATA + "README.md" in names


@pytest.mark.slow  # shares the wheel built above
def test_the_wheel_holds_every_declared_kernels_cache(
    wheel: Path, tmp_path: Path
) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(tmp_path / "site")
    kernels = declared_kernels()
    assert len(kernels) > 20  # parsed from the kernel modules
    no_index = [stem for stem in kernels if f"{stem}.nbi" not in names]
    assert no_index == [], "kernels without a cache index in the wheel"
    short = [
        stem
        for stem, signatures in kernels.items()
        if sum(n.startswith(f"{stem}.") and n.endswith(".nbc") for n in names)
        < signatures
    ]
    assert short == [], "kernels with fewer compiled files than signatures"
    assert_every_kernel_loads_from_the_cache(tmp_path / "site")


def test_the_sdist_includes_the_docs_and_the_readme() -> None:
    text = (PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    start = text.index("[tool.hatch.build.targets.sdist]")
    section = text[start : text.index("\n[", start + 1)]
    for entry in ('"docs"', '"README.md"', '"src/fedtrees"'):
        assert entry in section


def test_every_extra_that_needs_xgboost_takes_its_cpu_only_wheel() -> None:
    # xgboost's Linux wheel pulls NVIDIA's NCCL (about 480 MB); xgboost-cpu is
    # the same package without GPU code. Two extras naming different ones would
    # install both into one environment, and they install the same files.
    extras = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    named = {
        extra: [r for r in requirements if re.match(r"xgboost\b", r)]
        for extra, requirements in extras.items()
    }
    assert all(r.startswith("xgboost-cpu") for rs in named.values() for r in rs)
    assert named["export"]
    assert named["bench"]
    assert "fedtrees[export]" in extras["test"]  # the tests run what users get


def test_this_environment_holds_one_xgboost_package_at_most() -> None:
    installed = set()
    for name in ("xgboost", "xgboost-cpu"):
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        installed.add(name)
    assert len(installed) <= 1, (
        f"{sorted(installed)} are both installed and write the same files: "
        "pip uninstall xgboost (docs/getting-started.md)"
    )
