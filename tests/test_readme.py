"""The README's Python examples run as written, in order, in one namespace."""

from __future__ import annotations

import re

from tests.conftest import PROJECT_ROOT


def test_readme_python_blocks_run() -> None:
    text = (PROJECT_ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) >= 4
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
