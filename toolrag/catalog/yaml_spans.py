"""YAML text surgery for the catalog editor: find one tool's list item in its file, replace, remove or append
it, and add an image entry, so comments and formatting of every other tool survive an edit.

Spans are found from the YAML node marks (``yaml.compose``), never by searching the text.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

from toolrag.catalog.profile import ToolProfile

__all__ = ["ItemSpan", "append_item", "category_of", "dump_yaml", "find_span", "item_text", "profile_data",
           "replace_span", "text_lines_before", "with_image"]


def item_text(yaml_text: str) -> str:
    """The editor's text as one mapping block (a one-item list or a ``---`` header is unwrapped)."""
    lines = [line.rstrip() for line in yaml_text.replace("\r\n", "\n").split("\n")]
    while lines and (not lines[0].strip() or lines[0].strip() == "---"):
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    text = "\n".join(lines)
    with contextlib.suppress(yaml.YAMLError):
        data = yaml.safe_load(text)
        if isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict):
            return dump_yaml(data[0])
    return text + "\n"


def text_lines_before(yaml_text: str, item: str) -> int | None:
    """How many lines of the editor's text stand before the first line of its :func:`item_text` ``item`` (blank
    lines, a ``---`` header); ``None`` where the item was rewritten (a one-item list, dumped again: its lines are
    not the text's)."""
    lines = [line.rstrip() for line in yaml_text.replace("\r\n", "\n").split("\n")]
    skipped = 0
    while skipped < len(lines) and (not lines[skipped].strip() or lines[skipped].strip() == "---"):
        skipped += 1
    return skipped if item.startswith(lines[skipped] if skipped < len(lines) else "") else None


def category_of(yaml_text: str) -> str:
    with contextlib.suppress(yaml.YAMLError):
        data = yaml.safe_load(yaml_text)
        if isinstance(data, list) and len(data) == 1:
            data = data[0]
        if isinstance(data, dict) and isinstance(data.get("category"), str):
            return str(data["category"])
    return "general"


def dump_yaml(data: Any) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=110)


def profile_data(tool: ToolProfile) -> dict[str, Any]:
    """A plain mapping of a profile (re-dumped when its text span can't be found, e.g. a JSON source)."""
    data: dict[str, Any] = {"id": tool.id, "name": tool.name, "description": tool.description,
                            "category": tool.category, "tags": list(tool.tags),
                            "parameters": json.loads(json.dumps(tool.parameters)),
                            "examples": [{"query": e.query} for e in tool.examples],
                            "negative_examples": list(tool.negative_examples),
                            "images": [{"path": i.path, "caption": i.caption} for i in tool.images],
                            "permissions": list(tool.permissions), "mutation": tool.mutation}
    return {k: v for k, v in data.items() if v not in ([], None)}


def with_image(item: str, tool: ToolProfile, path: str, caption: str, replace: str | None) -> str:
    """The item text with an ``images`` entry added (or replacing ``replace``); comments are kept when the
    entry can be appended as text, else the item is re-dumped from its parsed data."""
    entry = f"- path: {json.dumps(path)}\n  caption: {json.dumps(caption, ensure_ascii=False)}"
    if replace is None and not any(i.path == path for i in tool.images):
        lines = item.rstrip("\n").split("\n")
        keys = [n for n, line in enumerate(lines) if re.match(r"^images\s*:", line)]
        if not keys:
            return "\n".join([*lines, "images:", *("  " + e for e in entry.split("\n"))]) + "\n"
        start = keys[0]
        if re.fullmatch(r"images\s*:\s*(#.*)?", lines[start]):
            end = start + 1
            while end < len(lines) and (not lines[end].strip() or lines[end][0] in " -#"):
                end += 1
            while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
                end -= 1
            body = [ln for ln in lines[start + 1:end] if ln.lstrip().startswith("- ")]
            indent = (len(body[0]) - len(body[0].lstrip())) if body else 2
            new = [" " * indent + e for e in entry.split("\n")]
            return "\n".join([*lines[:end], *new, *lines[end:]]) + "\n"
    data = yaml.safe_load(item)
    images = [i for i in (data.get("images") or []) if isinstance(i, dict)]
    images = [i for i in images if i.get("path") not in {replace, path}]
    data["images"] = [*images, {"path": path, "caption": caption}]
    return dump_yaml(data)


@dataclass(frozen=True)
class ItemSpan:
    """Where one tool's mapping sits in its file: lines ``start:end`` (0-based, trailing blank and
    between-item comment lines excluded), the column of its keys and what precedes them ("- ")."""

    start: int
    end: int
    col: int
    prefix: str
    text: str


def find_span(text: str, line: int, tool_id: str) -> ItemSpan | None:
    """The span of the block mapping starting at 1-based ``line`` whose ``id`` is ``tool_id`` (a top-level
    list item, an item of a top-level ``tools:`` list, or the whole file's mapping); None if not found."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    items: list[Any] = []
    listed = True
    if isinstance(root, yaml.SequenceNode):
        items = root.value
    elif isinstance(root, yaml.MappingNode):
        nested = [v for k, v in root.value if k.value == "tools" and isinstance(v, yaml.SequenceNode)]
        items, listed = (nested[0].value, True) if nested else ([root], False)
    lines = text.split("\n")
    for n, node in enumerate(items):
        if not isinstance(node, yaml.MappingNode) or node.flow_style or node.start_mark.line + 1 != line:
            continue
        ids = [v.value for k, v in node.value if k.value == "id" and isinstance(v, yaml.ScalarNode)]
        start, col = node.start_mark.line, node.start_mark.column
        prefix = lines[start][:col]
        if ids != [tool_id] or prefix.strip() != ("-" if listed else ""):
            return None
        if n + 1 < len(items):
            nxt = items[n + 1]
            end = nxt.start_mark.line
            if end <= start or lines[end][:nxt.start_mark.column].strip() != "-":
                return None
        else:
            end = min(len(lines), node.end_mark.line + (1 if node.end_mark.column else 0))
        while end > start + 1 and (not lines[end - 1].strip() or (
                lines[end - 1].lstrip().startswith("#") and _indent(lines[end - 1]) < col)):
            end -= 1
        body = [lines[start][col:]] + [ln[col:] if not ln[:col].strip() else ln.lstrip()
                                       for ln in lines[start + 1:end]]
        return ItemSpan(start, end, col, prefix, "\n".join(ln.rstrip() for ln in body) + "\n")
    return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _indented(item: str, prefix: str, col: int) -> list[str]:
    first, *rest = item.rstrip("\n").split("\n")
    return [prefix + first] + [" " * col + ln if ln.strip() else "" for ln in rest]


def replace_span(text: str, span: ItemSpan, item: str | None) -> str:
    """``text`` with the span replaced by ``item`` (a dedented mapping), or removed when ``item`` is None."""
    lines = text.split("\n")
    if item is not None:
        return "\n".join([*lines[:span.start], *_indented(item, span.prefix, span.col), *lines[span.end:]])
    end = span.end
    if end < len(lines) and not lines[end].strip() and (span.start == 0 or not lines[span.start - 1].strip()):
        end += 1
    return "\n".join([*lines[:span.start], *lines[end:]])


def append_item(text: str, item: str) -> str:
    """``text`` (a YAML list of profiles, or empty) with ``item`` appended as a new list item."""
    prefix = "- "
    with contextlib.suppress(yaml.YAMLError):
        root = yaml.compose(text, Loader=yaml.SafeLoader) if text.strip() else None
        if isinstance(root, yaml.SequenceNode) and root.value and not root.flow_style:
            first = root.value[0]
            prefix = text.split("\n")[first.start_mark.line][:first.start_mark.column] or prefix
    block = "\n".join(_indented(item, prefix, len(prefix))) + "\n"
    if not text.strip():
        return text + block
    return text.rstrip("\n") + "\n\n" + block
