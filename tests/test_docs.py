"""The docs: every page's Python runs, every link and citation resolves.

Each page's ```python blocks run in order in a namespace of their own, so a page
defines what it uses. Links (README.md and docs/*.md) and citations of the docs in
code, tests, scripts and docs (``docs/runtime.md, "Per-run client state"``,
``§"Title"``) must name files and headings that exist.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT
from tests.docs_checks import (
    anchors,
    broken_citations,
    broken_links,
    citation_problems,
    cited_files,
    doc_files,
    python_blocks,
    slug,
)

PAGES = sorted((PROJECT_ROOT / "docs").glob("*.md"))
EXPECTED_PAGES = {
    "benchmarks.md",
    "data.md",
    "design.md",
    "dpforest.md",
    "fedforest.md",
    "fedga.md",
    "fedgbdt.md",
    "flower.md",
    "getting-started.md",
    "histogram.md",
    "icdta.md",
    "runtime.md",
    "security.md",
    "synthetic.md",
}


def test_every_page_is_there() -> None:
    assert {page.name for page in PAGES} >= EXPECTED_PAGES


@pytest.mark.parametrize(
    "page", [p for p in PAGES if python_blocks(p)], ids=lambda p: p.name
)
def test_page_python_blocks_run(page: Path) -> None:
    namespace: dict[str, object] = {}
    for block in python_blocks(page):
        exec(compile(block, f"docs/{page.name}", "exec"), namespace)


def test_links_resolve() -> None:
    problems = [str(p) for path in doc_files() for p in broken_links(path)]
    assert not problems, "\n".join(problems)


def test_citations_resolve() -> None:
    problems = [str(p) for path in cited_files() for p in broken_citations(path)]
    assert not problems, "\n".join(problems)


def test_no_citation_of_files_outside_the_repository() -> None:
    outside = ("ALGORITHMS.md", "DESIGN.md", "STYLE.md", "FLOWER.md")
    found = [
        f"{path.relative_to(PROJECT_ROOT)}: {name}"
        for path in cited_files()
        for name in outside
        if name in path.read_text(encoding="utf-8")
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("What `fedtrees demo` shows", "what-fedtrees-demo-shows"),
        ("What travels (protocol v2)", "what-travels-protocol-v2"),
        ("A site's own privacy budget", "a-sites-own-privacy-budget"),
        ("ICDTA4FL and Federated-ID3", "icdta4fl-and-federated-id3"),
        (
            "Export to scikit-learn, SHAP, ONNX, treelite",
            "export-to-scikit-learn-shap-onnx-treelite",
        ),
        ("per_run client_state", "per_run-client_state"),
    ],
)
def test_slug_follows_github(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_repeated_headings_are_numbered(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# A\n\n## Notes\n\n```python\n# Notes\n```\n\n## Notes\n")
    assert anchors(page) == {"a", "notes", "notes-1"}


def test_repository_paths_the_docs_name_exist() -> None:
    named = re.compile(
        r"(?<![\w/])(?:benchmarks|tests|tools|src)/[\w./-]+\.(?:py|json|md)"
    )
    missing = [
        f"{path.relative_to(PROJECT_ROOT)}: {name}"
        for path in doc_files()
        for name in named.findall(path.read_text(encoding="utf-8"))
        if not (PROJECT_ROOT / name).exists()
    ]
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize(
    ("source", "problems"),
    [
        ('(docs/runtime.md, "Per-run client state")', 0),
        ('docs/runtime.md §"Per-run client\n    # state"', 0),  # wrapped in a comment
        ("(docs/runtime.md#per-run-client-state)", 0),
        ('(docs/runtime.md, "Per-run state")', 1),  # no such heading
        ("(docs/nowhere.md)", 1),
        ("(§1.3)", 1),  # a section number of no file here
        ('(README, "Methods")', 0),
    ],
)
def test_citations_are_checked(source: str, problems: int) -> None:
    assert len(list(citation_problems(source, "example.py"))) == problems
