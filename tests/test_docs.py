"""The README and docs/: every relative link leads to a file that exists (and to a heading in it, when
it names one), every page of docs/ can be reached from the README, and the README stays a newcomer's
page (at most 250 lines)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_DIR = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"(`+).*?\1")
HEADING = re.compile(r"^(#{1,6}) +(.*?) *#*$")


def pages() -> list[Path]:
    return [REPO_DIR / "README.md", *sorted((REPO_DIR / "docs").glob("*.md"))]


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, inline code removed (a link in code is no link)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(CODE_SPAN.sub("", line))
    return lines


def relative_links(page: Path) -> list[str]:
    links = LINK.findall("\n".join(prose_lines(page.read_text(encoding="utf-8"))))  # a link's text may wrap
    return [target for target in links if not re.match(r"[a-z][a-z0-9+.-]*:", target)]  # http:, mailto:, …


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a Markdown page's headings: lower case, punctuation dropped, spaces as
    hyphens, a repeated one numbered (-1, -2, …)."""
    found: set[str] = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or not (match := HEADING.match(line)):
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(2)).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        numbered, n = slug, 0
        while numbered in found:
            n += 1
            numbered = f"{slug}-{n}"
        found.add(numbered)
    return found


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in relative_links(page):
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no such heading in {path_part or page.name}")
    return broken


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(REPO_DIR)))
def test_every_relative_link_resolves(page):
    assert broken_links(page) == []


def test_a_broken_link_or_anchor_is_reported(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "b.md").write_text("# B\n\n## Two words, `code`\n\n## Two words, code\n")
    page = tmp_path / "a.md"
    page.write_text(
        "# A\n\n[fine](docs/b.md#two-words-code) [second](docs/b.md#two-words-code-1) [self](#a)\n"
        "[gone](docs/c.md) [no\nheading](docs/b.md#three-words) [web](https://example.com/x.md)\n"
        "`[in code](nowhere.md)`\n\n```\n[in a block](nowhere.md)\n```\n"
    )
    assert broken_links(page) == [
        "docs/c.md: no such file",
        "docs/b.md#three-words: no such heading in docs/b.md",
    ]


def test_every_page_of_docs_is_reachable_from_the_readme():
    reached, todo = set(), [REPO_DIR / "README.md"]
    while todo:
        page = todo.pop()
        if page in reached or page.suffix != ".md" or not page.exists():
            continue
        reached.add(page)
        todo += [(page.parent / target.partition("#")[0]).resolve() for target in relative_links(page)]
    assert sorted(set(pages()) - reached) == []


def test_the_readme_is_a_newcomers_page():
    readme = (REPO_DIR / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    for command in ("make run", "make test"):
        assert f"\n{command}  " in readme or f"\n{command} " in readme
