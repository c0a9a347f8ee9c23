"""Every relative link of the README and of docs/ resolves: the file exists and, for a link with ``#anchor``, the
Markdown page has a heading with that anchor (GitHub's rule: lower case, punctuation dropped, spaces as hyphens)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: ``[text](target)`` and ``![alt](target)``, outside code; the target ends at a space (a title) or ``)``.
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"`[^`\n]*`")


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the headings of ``page`` (a repeated heading gets -1, -2, ...), and explicit
    ``id``/``name`` anchors."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", CODE.sub(lambda m: m.group(0).strip("`"), heading).lower()).replace(" ", "-")
        n, candidate = 0, slug
        while candidate in found:
            n += 1
            candidate = f"{slug}-{n}"
        found.add(candidate)
    found |= set(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    return found


def links(page: Path) -> list[str]:
    text = CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    return [t for t in LINK.findall(text) if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]  # not http:, mailto:, ...


def test_the_checker_sees_links_and_anchors(tmp_path: Path) -> None:
    page = tmp_path / "a.md"
    page.write_text("# Who may edit (local, shared)\n## `toolrag tune`: weights\n## Who may edit (local, shared)\n"
                    "See [b](b.md#x), ![pic](img/p.png \"title\"), [web](https://example.org) and `[no](code.md)`.\n"
                    "```\n[not a link](fenced.md)\n```\n", encoding="utf-8")
    assert anchors(page) == {"who-may-edit-local-shared", "toolrag-tune-weights", "who-may-edit-local-shared-1"}
    assert links(page) == ["b.md#x", "img/p.png"]


@pytest.mark.parametrize("doc", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    broken = []
    for target in links(doc):
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            broken.append(f"{target}: no file {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: {file.name} has no heading with the anchor #{anchor}")
    assert not broken, f"{doc.relative_to(ROOT)}: broken links: {broken}"


def test_the_readme_indexes_every_page_of_docs() -> None:
    """A newcomer reaches every page from the README's documentation index."""
    readme = set(links(ROOT / "README.md"))
    missing = [p.name for p in PAGES[1:] if f"docs/{p.name}" not in readme]
    assert not missing, f"add these pages to the README's documentation index: {missing}"
