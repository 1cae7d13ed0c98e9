"""Every relative link of README.md and docs/**/*.md reaches a file that exists, and its #anchor a heading there
(anchors as GitHub makes them from headings); links inside code are not links."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[1]

_FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def _prose(text: str) -> str:
    """The text without fenced code blocks and code spans (blanked, so that line numbers stay)."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731
    return _CODE_SPAN.sub(blank, _FENCE.sub(blank, text))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text (links and emphasis reduced to their words), lower case, anything but
    letters, digits, `_`, `-` and spaces dropped, spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set(_HTML_ANCHOR.findall(text))
    for heading in _HEADING.findall(text):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    text = _prose(path.read_text(encoding="utf-8"))
    broken = []
    for match in _LINK.finditer(text):
        target = match.group(1)
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # https:, mailto:…: not ours to check
            continue
        file_part, _, anchor = target.partition("#")
        where = f"{path.relative_to(root)}:{text.count(chr(10), 0, match.start()) + 1}: {target}"
        linked = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{where} (no such file)")
        elif anchor and linked.suffix == ".md" and unquote(anchor) not in anchors(linked):
            broken.append(f"{where} (no such heading)")
    return broken


def test_every_relative_link_reaches_a_file_and_a_heading():
    assert [link for doc in documents() for link in broken_links(doc)] == []


def test_the_checker_sees_broken_links_and_skips_code(tmp_path):
    (tmp_path / "b.md").write_text("# Install it\n\n## Then — run *it*\n\n## Then — run *it*\n")
    doc = tmp_path / "a.md"
    doc.write_text(
        "[ok](b.md#install-it) [ok](b.md#then--run-it-1) ![ok](b.md) [ok](#top) [ext](https://x.invalid/y)\n"
        "# Top\n"
        "[gone](c.md) [no heading](b.md#install) `[code](d.md)`\n"
        "```\n[fenced](e.md)\n```\n"
    )
    found = [line.split(": ", 1)[1] for line in broken_links(doc, tmp_path)]
    assert found == ["c.md (no such file)", "b.md#install (no such heading)"]
