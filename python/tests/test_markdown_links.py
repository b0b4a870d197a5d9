"""Every relative link and anchor in README.md, ARCHITECTURE.md and docs/*.md resolves.

The README links to reference pages under docs/ and they link back and to each other;
a section renamed or moved must not leave a link pointing nowhere.
"""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# [text](target) and ![alt](target); the target ends at whitespace or the closing paren.
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+).*?\1")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def markdown_files() -> list[Path]:
    files = [REPO / "README.md", REPO / "ARCHITECTURE.md", *sorted((REPO / "docs").glob("*.md"))]
    return [f for f in files if f.exists()]


def prose_lines(path: Path):
    """(line number, line) outside fenced code blocks."""
    fence = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.lstrip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        yield number, line


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: code and links reduced to their text,
    lower case, punctuation dropped, spaces made hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose_lines(path):
        found.update(HTML_ANCHOR.findall(line))
        match = HEADING.match(line)
        if not match:
            continue
        slug = github_slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(path: Path):
    for number, line in prose_lines(path):
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            yield number, target


def broken_links(path: Path) -> list[str]:
    problems = []
    for number, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(REPO)}:{number}: link {target!r}"
        if not linked.exists():
            problems.append(f"{where}: no file {linked}")
            continue
        if anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            page = linked.relative_to(REPO)
            problems.append(f"{where}: {page} has no heading with anchor #{anchor}")
    return problems


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_and_anchors_resolve(path):
    assert broken_links(path) == []


def test_the_checker_finds_a_broken_anchor_and_file(tmp_path, monkeypatch):
    # The check itself: a good link passes, a missing file and a missing anchor are found.
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    (tmp_path / "other.md").write_text("# Other\n\n## `collect()` and to_pandas()\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n"
        "[ok](other.md#collect-and-to_pandas) [self](#page) [web](https://example.org/x#y)\n"
        "[gone](missing.md) [bad anchor](other.md#nothing)\n"
        "```\n[in code](nowhere.md)\n```\n"
        "`[in a span](nowhere.md)`\n"
    )
    assert broken_links(page) == [
        f"page.md:4: link 'missing.md': no file {tmp_path / 'missing.md'}",
        "page.md:4: link 'other.md#nothing': other.md has no heading with anchor #nothing",
    ]


def test_the_readme_stays_a_first_read():
    # Reference material belongs in docs/ (issue 24 item 6): the README stays under 500 lines.
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines < 500, f"README.md has {lines} lines; move reference material to docs/*.md"
