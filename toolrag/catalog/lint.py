"""Catalog checks before any model runs: what the index would refuse, and what makes a tool hard to find or
leaks a restricted tool's name.

:func:`image_problems` lists every example image the index or the editor would refuse (not an image,
truncated, too large, a degenerate shape: :func:`toolrag.images.check_example_image`), so ``toolrag lint``
refuses a catalog that ``toolrag index`` would refuse. :func:`lint_catalog` gives quality warnings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from toolrag.catalog.profile import Catalog, ToolProfile
from toolrag.errors import ImageError
from toolrag.images import check_example_image

__all__ = ["LintWarning", "image_problems", "lint_catalog", "lint_profile", "repeats_name", "restricted_mentions"]

MIN_DESCRIPTION_CHARS = 40
MIN_EXAMPLES = 3


@dataclass(frozen=True)
class LintWarning:
    tool_id: str
    code: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"tool_id": self.tool_id, "code": self.code, "message": self.message}


_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def repeats_name(tool: ToolProfile) -> bool:
    """Whether the description holds no word beyond the tool's name, id and parameter names (``List files
    (path)`` for ``list_files``: what an import derives when a tool has no description, or a hasty author
    writes)."""
    def words(text: str) -> set[str]:
        spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
        return {w.lower() for w in _WORD.findall(spaced)}

    own = words(tool.description)
    known = words(tool.name) | words(tool.id) | {w for p in tool.parameters.get("properties") or {} for w in words(p)}
    return bool(own) and own <= known


def lint_profile(tool: ToolProfile) -> list[LintWarning]:
    """Warnings for one profile: short description, few examples, no negatives, undocumented parameters."""
    out: list[LintWarning] = []

    def warn(code: str, message: str) -> None:
        out.append(LintWarning(tool.id, code, message))

    if repeats_name(tool):
        warn("description-repeats-name", "the description only repeats the tool's name and parameter names; "
                                         "say what it does, on what, and what it returns")
    elif len(tool.description) < MIN_DESCRIPTION_CHARS:
        warn("short-description", f"description has {len(tool.description)} characters; say what the tool "
                                  f"does, for whom and its limits (at least {MIN_DESCRIPTION_CHARS})")
    if len(tool.examples) < MIN_EXAMPLES:
        warn("few-examples", f"{len(tool.examples)} example queries; add at least {MIN_EXAMPLES} varied ones "
                             "(colloquial, formal, other language)")
    if not tool.negative_examples:
        warn("no-negative-examples", "no negative examples; add requests this tool must not serve")
    properties = tool.parameters.get("properties") or {}
    missing = [name for name, schema in properties.items()
               if not (isinstance(schema, dict) and str(schema.get("description", "")).strip())]
    if missing:
        warn("undocumented-parameters", "parameters without a description: " + ", ".join(missing))
    if tool.deprecated and not tool.replaced_by:
        warn("deprecated-without-successor", "deprecated but replaced_by names no successor")
    return out


def lint_catalog(catalog: Catalog) -> list[LintWarning]:
    """Every profile's warnings, then the tools whose text names a tool with stricter permissions."""
    return [*(w for tool in catalog for w in lint_profile(tool)), *restricted_mentions(catalog)]


def image_problems(catalog: Catalog, tools: list[ToolProfile] | None = None) -> list[str]:
    """``file:line: tool 'id': problem`` for each example image (``images`` and ``examples[].image``) of
    ``tools`` (default: all) that the index or the editor would refuse."""
    problems: list[str] = []
    checked: dict[Path, str | None] = {}
    for tool in tools if tools is not None else catalog.tools:
        for file in dict.fromkeys([*(i.file for i in tool.images), *(e.image for e in tool.examples if e.image)]):
            if file not in checked:
                try:
                    check_example_image(file)
                    checked[file] = None
                except ImageError as exc:
                    checked[file] = str(exc)
            if checked[file]:
                where = f"{tool.source}:{tool.line}" if tool.source else catalog.name
                problems.append(f"{where}: tool {tool.id!r}: {checked[file]}")
    return problems


#: What may be a tool id or function name inside free text (trailing punctuation is not part of it).
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@+\-]*[A-Za-z0-9]")


def restricted_mentions(catalog: Catalog) -> list[LintWarning]:
    """Warnings for tools whose text (description, embedding text, examples, parameter descriptions) names
    the id or function name of a tool needing permission codes this tool does not: a caller who may see this
    tool but not that one would read the restricted tool's name in the prompt."""
    restricted: dict[str, ToolProfile] = {}
    for tool in catalog.tools:
        if tool.permissions:
            restricted[tool.id] = tool
            if not tool.name.isalpha():  # a plain word ("search") names no tool in particular
                restricted.setdefault(tool.name, tool)
    if not restricted:
        return []
    out: list[LintWarning] = []
    for tool in catalog.tools:
        named: dict[str, ToolProfile] = {}
        for text in _texts(tool):
            for token in _TOKEN.findall(text):
                other = restricted.get(token)
                if other is not None and other.id != tool.id and set(other.permissions) - set(tool.permissions):
                    named.setdefault(other.id, other)
        for other in named.values():
            codes = ", ".join(sorted(set(other.permissions) - set(tool.permissions)))
            out.append(LintWarning(tool.id, "names-restricted-tool",
                                   f"its text names {other.id!r} ({other.name}), which needs {codes} that this "
                                   "tool does not: callers who may use this tool but not that one would read "
                                   "its name in the prompt; leave it out or give this tool the same permissions"))
    return out


def _texts(tool: ToolProfile) -> Iterator[str]:
    yield tool.description
    if tool.embedding_text:
        yield tool.embedding_text
    yield from (e.query for e in tool.examples)
    yield from _schema_texts(tool.parameters)


def _schema_texts(schema: object) -> Iterator[str]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "description" and isinstance(value, str):
                yield value
            else:
                yield from _schema_texts(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _schema_texts(item)
