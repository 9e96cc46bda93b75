"""The built wheel carries the bundled datasets; the sdist carries the docs."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT

DATA = "fedtrees/datasets/_data/"


@pytest.mark.slow  # builds the wheel, compiling every kernel: 1-2 minutes
def test_the_wheel_holds_every_bundled_data_file(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps",
         "-w", str(tmp_path), str(PROJECT_ROOT)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("fedtrees-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read(DATA + "MANIFEST.json"))
    assert manifest, "MANIFEST.json lists no data file"
    missing = [f for f in manifest if f"{DATA}{f}.xz" not in names]
    assert not missing, f"bundled data missing from the wheel: {missing}"
    assert DATA + "README.md" in names


def test_the_sdist_includes_the_docs_and_the_readme() -> None:
    text = (PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    start = text.index("[tool.hatch.build.targets.sdist]")
    section = text[start : text.index("\n[", start + 1)]
    for entry in ('"docs"', '"README.md"', '"src/fedtrees"'):
        assert entry in section
