"""Every relative link in the documentation leads somewhere: its file exists, and its anchor, if it
has one, names a heading of that file (as GitHub makes anchors of headings)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([*ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md"), *(ROOT / "deploy").glob("*.md")])

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*([^()\s]+)(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text: str) -> list[str]:
    """The lines of a markdown text outside fenced code blocks, with inline code spans blanked."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(_CODE_SPAN.sub("", line))
    return lines


def links(text: str) -> list[str]:
    """The targets of the inline links and images of a markdown text, in order."""
    return [m.group(1) for line in prose_lines(text) for m in _LINK.finditer(line)]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lowercased, without punctuation other than
    hyphens and underscores, spaces turned into hyphens."""
    text = _CODE_SPAN.sub(lambda m: m.group(2), heading).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading anchors by its text
    return "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor in a markdown text; a repeated one gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else _HEADING.match(line)
        if m:
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def is_relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) and not target.startswith("/")


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def broken_links(path: Path) -> list[str]:
    """The relative links of one markdown file that lead nowhere, each with the reason."""
    problems = []
    for target in links(path.read_text()):
        if not is_relative(target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            problems.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text()):
            problems.append(f"{target}: no heading with that anchor in {_shown(dest)}")
    return problems


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    assert broken_links(path) == []


def test_the_documentation_is_found() -> None:
    names = {str(p.relative_to(ROOT)) for p in DOCS}
    assert {"README.md", "docs/architecture.md", "deploy/README.md"} <= names


def test_every_page_of_docs_is_linked_from_the_readme() -> None:
    targets = {t.partition("#")[0] for t in links((ROOT / "README.md").read_text())}
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert pages - targets == set()


def test_slug_follows_github() -> None:
    assert slug("The rules engine (`bench_board.py`)") == "the-rules-engine-bench_boardpy"
    assert slug("Files: local disk or object storage") == "files-local-disk-or-object-storage"
    assert slug("The website's pages") == "the-websites-pages"
    assert slug("Proof that it learns: 7x7, 60 minutes") == "proof-that-it-learns-7x7-60-minutes"
    assert slug("See [the API](api.md)") == "see-the-api"


def test_repeated_headings_are_numbered() -> None:
    assert anchors("# A\n## B\n## B\n```\n# C\n```\n") == {"a", "b", "b-1"}


def test_links_skip_code() -> None:
    text = '[a](a.md) `[b](b.md)` ![c](c.png)\n```\n[d](d.md)\n```\n[e](e.md "title")'
    assert links(text) == ["a.md", "c.png", "e.md"]


def test_broken_links_are_reported(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Here\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Top\n[ok](other.md#here) [self](#top) [web](https://example.org/x) [server](/api/v1/docs/)\n"
        "[gone](missing.md) [bad anchor](other.md#there) [bad self](#nowhere)\n"
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        f"other.md#there: no heading with that anchor in {tmp_path / 'other.md'}",
        f"#nowhere: no heading with that anchor in {page}",
    ]
