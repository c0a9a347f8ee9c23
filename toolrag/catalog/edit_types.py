"""The values the catalog editor (:mod:`toolrag.catalog.editor`) takes and returns, what it edits through, and
the template of a new tool."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from toolrag.catalog.profile import Catalog
from toolrag.settings import Settings

__all__ = ["NEW_TOOL_TEMPLATE", "EditTarget", "ProfileText", "RankProbe", "SaveOutcome"]


#: The profile a new tool starts from in the app (every field shown, each with a hint).
NEW_TOOL_TEMPLATE = """\
id: {id}
name: {name}
description: >-
  Say what the tool does, for whom and its limits (what it does NOT do), in one or two sentences.
category: {category}
tags: [keyword, 关键词]
parameters:
  type: object
  properties:
    text: {{type: string, description: "What the tool works on."}}
  required: [text]
examples:
  - query: an everyday way to ask for it
  - query: 用中文怎么说这个请求
  - query: a formal or detailed request
negative_examples:
  - a similar request that another tool serves
permissions: []
mutation: false
"""


@dataclass(frozen=True)
class RankProbe:
    """The query whose ranking shows the effect of an edit (the app passes the session's last search)."""

    query: str
    image: Any = None
    role: str | None = None
    settings: Settings | None = None


@dataclass(frozen=True)
class ProfileText:
    """One tool's YAML as written in its file and its ``version`` (a hash of that text): pass the version
    back as ``base_version`` when saving, so a save over someone else's newer edit is refused."""

    tool_id: str
    text: str
    version: str


@dataclass(frozen=True)
class SaveOutcome:
    """What a save/delete did: the file, its backup, what was re-encoded and the tool's rank shift."""

    action: Literal["saved", "added", "deleted", "unchanged"]
    tool_id: str
    file: Path
    backup: Path | None
    encoded: int
    rank_before: int | None
    rank_after: int | None
    query: str | None

    @property
    def message(self) -> str:
        head = {"saved": "Saved", "added": "Added", "deleted": "Deleted", "unchanged": "No change to"}
        text = f"{head[self.action]} `{self.tool_id}` in {self.file.name}"
        if self.action != "unchanged":
            text += f" (re-encoded {self.encoded} text/image{'s' if self.encoded != 1 else ''})"
        if self.query:
            before, after = (f"#{r}" if r else "not ranked" for r in (self.rank_before, self.rank_after))
            text += f". Rank for “{self.query}”: {before} → {after}"
        return text + "."


class EditTarget(Protocol):
    """What the editor keeps in step with the files (a :class:`toolrag.search.retriever.ToolRetriever`)."""

    @property
    def catalog(self) -> Catalog: ...

    def reload(self, catalog: Catalog) -> int: ...

    def rank_of(self, tool_id: str, query: str, *, image: Any = None, role: str | None = None,
                settings: Settings | None = None) -> int | None: ...
