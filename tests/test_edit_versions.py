"""Saves without a version, in the quick tier: two editors of one catalog (two processes as far as the editor
knows: each holds its own view of the files) that save without ``base_version`` refuse each other's stale text
instead of overwriting it (the probe lost 40 of 80 such edits), and an id that never existed is called unknown,
not "deleted". The editors' target holds the catalog only (no index, no model); test_edit_processes.py runs the
same with real processes and the real retriever."""

from __future__ import annotations

from pathlib import Path

import pytest
from edit_worker import CatalogOnly

from toolrag.catalog.editor import CatalogEditor
from toolrag.catalog.loader import load_catalog
from toolrag.errors import CatalogError

TOOLS = """\
- id: shared.tool
  name: shared_tool
  description: A tool two editors change at the same time; no edit of either may be lost.
  examples:
    - query: the first example
- id: other.tool
  name: other_tool
  description: A tool in the same file that only the second editor changes.
  examples:
    - query: another example
"""


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "tools.yaml").write_text(TOOLS, encoding="utf-8")
    return tmp_path / "cat"


def editor(folder: Path) -> CatalogEditor:
    return CatalogEditor(CatalogOnly(load_catalog(folder, cache=False)))


def queries(folder: Path, tool_id: str) -> list[str]:
    return [e.query for e in load_catalog(folder, cache=False).get(tool_id).examples]  # type: ignore[union-attr]


def add(text: str, query: str) -> str:
    return text.replace("examples:\n", f"examples:\n  - query: {query}\n", 1)


def test_a_save_without_a_version_is_compared_with_what_was_read(folder: Path) -> None:
    a, b = editor(folder), editor(folder)
    mine, theirs = a.read_profile("shared.tool"), b.read_profile("shared.tool")
    b.save("shared.tool", add(theirs.text, "their edit"))
    with pytest.raises(CatalogError, match="was changed in tools.yaml after you opened it.*nothing was saved"):
        a.save("shared.tool", add(mine.text, "my edit"))  # no version: the one a read is compared
    again = a.read_profile("shared.tool")
    a.save("shared.tool", add(again.text, "my edit"))
    assert queries(folder, "shared.tool")[:2] == ["my edit", "their edit"]


def test_a_save_of_a_tool_never_read_without_a_version_is_refused_with_the_fix(folder: Path) -> None:
    """A script loads the catalog and copies a tool's text, another process saves that tool, then the script makes
    an editor and saves its copy without base_version: the editor cannot know what the text was based on, so it
    refuses (saying to pass read_profile's version) instead of overwriting the other edit."""
    copied = load_catalog(folder, cache=False)
    blind = TOOLS.split("- id: other.tool")[0].removeprefix("- ").replace("\n  ", "\n")
    b = editor(folder)
    b.save("shared.tool", add(b.read_profile("shared.tool").text, "their edit"))
    a = CatalogEditor(CatalogOnly(copied))  # made after the other save: its view of the files is "now"
    fix = r"never read it.*nothing was saved: call read_profile\('shared.tool'\).*base_version=<its version>"
    with pytest.raises(CatalogError, match=fix):
        a.save("shared.tool", add(blind, "blind edit"))
    with pytest.raises(CatalogError, match="'other.tool': this editor never read it"):
        a.save("other.tool", "id: other.tool\nname: x\ndescription: A text copied from nowhere.\n")
    assert queries(folder, "shared.tool")[0] == "their edit" and queries(folder, "other.tool") == ["another example"]
    # read, then saved twice without a version: the second save is based on what this editor wrote
    read = a.read_profile("shared.tool")
    a.save("shared.tool", add(read.text, "mine"))
    a.save("shared.tool", add(add(read.text, "mine"), "mine again"))
    assert queries(folder, "shared.tool")[:3] == ["mine again", "mine", "their edit"]
    # a tool above another one changed meanwhile (the other's lines moved, its text did not): a save of the other
    # one read before goes through
    other = a.read_profile("other.tool")
    b.save("shared.tool", add(b.read_profile("shared.tool").text, "more"))
    a.save("other.tool", add(other.text, "other edit"))
    assert queries(folder, "other.tool") == ["other edit", "another example"]


def test_an_id_that_never_existed_is_unknown_not_deleted(folder: Path) -> None:
    a, b = editor(folder), editor(folder)
    text = a.read_profile("other.tool").text
    for call in (lambda: a.save("no.such.tool", text, base_version="0123456789abcdef"),
                 lambda: a.delete("no.such.tool", base_version="0123456789abcdef"),
                 lambda: a.save("no.such.tool", text)):
        with pytest.raises(CatalogError, match="no tool has id 'no.such.tool'"):
            call()
    b.delete("other.tool", base_version=b.read_profile("other.tool").version)
    with pytest.raises(CatalogError, match="'other.tool' was deleted after you opened it"):
        a.save("other.tool", text)
