"""The README: short, and its Python examples run as written, in order."""

from __future__ import annotations

from tests.conftest import PROJECT_ROOT
from tests.docs_checks import python_blocks

README = PROJECT_ROOT / "README.md"
MAX_LINES = 200


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines"


def test_readme_keeps_the_test_command() -> None:
    text = README.read_text(encoding="utf-8")
    command = (
        "<!-- test-command: .ci/run runs exactly the command in this block -->\n"
        "```bash\n"
        'pip install -e ".[test,flower]" && ruff check . && ruff format --check . '
        "&& mypy && pytest\n"
        "```\n"
        "<!-- /test-command -->"
    )
    assert command in text


def test_readme_python_blocks_run() -> None:
    blocks = python_blocks(README)
    assert len(blocks) >= 8  # the setup and one example per method
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
