"""What the documentation tests check: code blocks, links, headings, citations.

Markdown headings become anchors by GitHub's rule: the heading's text (inline code
and link text kept, markup dropped), lower-cased, every character that is not a
letter, digit, space, ``-`` or ``_`` removed, spaces turned into ``-``; a repeated
heading gets ``-1``, ``-2``, … An explicit ``<a id="..."></a>`` is an anchor too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import PROJECT_ROOT

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", flags=re.DOTALL | re.MULTILINE)
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", flags=re.DOTALL | re.MULTILINE)
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", flags=re.MULTILINE)
EXPLICIT_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
# A citation of a page, optionally naming one of its sections: `docs/runtime.md`,
# `docs/runtime.md, "Per-run client state"` or `docs/runtime.md §"Per-run client state"`.
CITATION = re.compile(
    r"(?<![\w/.-])(?P<page>docs/[\w.-]+\.md|README(?:\.md)?)\b"
    r"(?:#(?P<anchor>[\w-]+))?"
    r"(?:(?:,\s*|\s*§\s*)\"(?P<title>[^\"]+)\")?"
)
SECTION_SIGN = "§"


def doc_files() -> list[Path]:
    """README.md and every page of docs/."""
    return [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]


def python_blocks(path: Path) -> list[str]:
    """The ```python blocks of a Markdown file, in order."""
    return PYTHON_BLOCK.findall(path.read_text(encoding="utf-8"))


def without_code(text: str) -> str:
    """Markdown text with its fenced blocks blanked (line count kept)."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()  # inline HTML
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def headings(path: Path) -> list[str]:
    """The text of every heading of a Markdown file, code blocks left out."""
    text = without_code(path.read_text(encoding="utf-8"))
    return [m.group(2) for m in HEADING.finditer(text)]


def anchors(path: Path) -> set[str]:
    """Every anchor a link may name in a Markdown file."""
    seen: dict[str, int] = {}
    found = set()
    for heading in headings(path):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    text = without_code(path.read_text(encoding="utf-8"))
    found.update(EXPLICIT_ANCHOR.findall(text))
    return found


def plain_title(heading: str) -> str:
    """A heading as a citation quotes it: markup dropped, case and spaces normalised."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[`*_]", "", text)
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class Problem:
    """One reference that does not resolve."""

    where: str
    reference: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reference!r}: {self.reason}"


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def broken_links(path: Path) -> Iterator[Problem]:
    """Relative links of a Markdown file whose file or anchor does not exist."""
    raw = path.read_text(encoding="utf-8")
    text = without_code(raw)
    for match in LINK.finditer(text):
        target = match.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
            continue
        where = f"{path.relative_to(PROJECT_ROOT)}:{_line(text, match.start())}"
        file_part, _, fragment = target.partition("#")
        destination = (path.parent / file_part).resolve() if file_part else path
        if not destination.exists():
            yield Problem(where, target, "no such file")
            continue
        if fragment:
            if destination.suffix != ".md":
                yield Problem(
                    where, target, "an anchor into a file that is not Markdown"
                )
            elif fragment not in anchors(destination):
                yield Problem(where, target, f"no heading or anchor {fragment!r}")


def _flattened(text: str) -> str:
    """Source text with line breaks (and comment markers after them) as spaces."""
    return re.sub(r"[ \t]*\n[ \t]*(?:#+[ \t]+)?", " ", text)


def broken_citations(path: Path) -> Iterator[Problem]:
    """Citations of README.md / docs/*.md, and § references, that do not resolve.

    A cited page must exist; a quoted section title after it (``, "Title"`` or
    ``§"Title"``), or an ``#anchor``, must be one of that page's headings. Every
    ``§`` must be such a reference: a bare section number points to no file here.
    """
    where = str(path.relative_to(PROJECT_ROOT))
    yield from citation_problems(path.read_text(encoding="utf-8"), where)


def citation_problems(source: str, where: str) -> Iterator[Problem]:
    """The citations of ``source`` (text of the file ``where``) that do not resolve."""
    text = _flattened(source)
    resolved_signs: set[int] = set()
    for match in CITATION.finditer(text):
        page = match.group("page")
        target = PROJECT_ROOT / ("README.md" if page.startswith("README") else page)
        reference = match.group(0)
        if SECTION_SIGN in reference:
            resolved_signs.add(match.start() + reference.index(SECTION_SIGN))
        if not target.is_file():
            yield Problem(where, reference, "no such file in the repository")
            continue
        title = match.group("title")
        if title and plain_title(title) not in {
            plain_title(h) for h in headings(target)
        }:
            yield Problem(where, reference, f"{page} has no heading {title!r}")
        anchor = match.group("anchor")
        if anchor and anchor not in anchors(target):
            yield Problem(where, reference, f"{page} has no anchor {anchor!r}")
    for offset in (m.start() for m in re.finditer(SECTION_SIGN, text)):
        if offset not in resolved_signs:
            context = text[max(0, offset - 30) : offset + 30]
            yield Problem(where, context, "a § that names no docs page and heading")


def cited_files() -> list[Path]:
    """Every file whose citations are checked: code, tests, scripts and docs."""
    roots = ("src", "tests", "benchmarks", "tools")
    files = [p for root in roots for p in (PROJECT_ROOT / root).rglob("*.py")]
    files += list((PROJECT_ROOT / "src").rglob("*.toml"))
    files += [PROJECT_ROOT / "conftest.py", PROJECT_ROOT / "hatch_build.py"]
    files += doc_files()
    this = {Path(__file__).resolve(), (PROJECT_ROOT / "tests" / "test_docs.py")}
    return sorted(p for p in files if p.resolve() not in this and p.is_file())
