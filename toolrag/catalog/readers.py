"""Reading catalog files into plain records, with the line each record and key comes from.

YAML goes through a SafeLoader whose mappings remember their lines (errors then point at ``file:line``); JSON
Lines, JSON, OpenAI ``tools`` lists and MCP ``tools/list`` results become the same plain profile mappings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolrag.errors import Problem
from toolrag.yamlio import YamlSyntaxError, read_yaml

__all__ = ["JsonRecord", "from_foreign", "is_blank", "read_records", "yaml_load"]


class JsonRecord(dict[str, Any]):
    """A profile record read from a JSON or JSON Lines file. Everything in it came out of ``json.loads``
    (dicts with string keys, lists, strings, numbers, booleans, null) and nothing else refers to it, so the
    loader keeps its schemas as they are instead of deep-copying them (:func:`toolrag.catalog.fields.plain`):
    about a seventh of loading a 100,000-tool JSON Lines catalog."""


def _from_json(item: Any, *, mcp: bool = False) -> Any:
    record = from_foreign(item, mcp=mcp)
    return JsonRecord(record) if type(record) is dict else record


def yaml_load(text: str, file: Path, problems: list[Problem]) -> Any:
    """:func:`read_yaml` for catalog files: a syntax error becomes a located entry in ``problems``."""
    try:
        return read_yaml(text)
    except YamlSyntaxError as exc:
        where = f"{file}:{exc.line}" if exc.line else str(file)
        problems.append(Problem(f"{where}: invalid YAML: {exc.problem}; fix the syntax (indentation, quotes, colons)",
                                str(file), exc.line or None))
        return None


def read_records(file: Path, problems: list[Problem]) -> list[tuple[Any, int | None]]:
    """The raw profile records of one file, converted from OpenAI/MCP shapes where needed; what cannot be
    read becomes a located entry in ``problems``."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(Problem(f"{file}: cannot read the file ({exc}); check it is UTF-8 text", str(file)))
        return []
    suffix = file.suffix.lower()
    if suffix == ".jsonl":
        records: list[tuple[Any, int | None]] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append((_from_json(json.loads(line)), number))
            except json.JSONDecodeError as exc:
                problems.append(Problem(f"{file}:{number}: invalid JSON: {exc.msg}; each line must be one JSON "
                                        "object", str(file), number))
        return records
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(Problem(f"{file}:{exc.lineno}: invalid JSON: {exc.msg}", str(file), exc.lineno))
            return []
    else:
        data = yaml_load(text, file, problems)
    if data is None:
        return []
    mcp = isinstance(data, dict) and "tools" in data
    if mcp:
        data = data["tools"]
        if not isinstance(data, list):
            problems.append(Problem(f"{file}: 'tools' must be a list of tools, got {type(data).__name__}", str(file),
                                    field="tools"))
            return []
    items = data if isinstance(data, list) else [data]
    convert = _from_json if suffix == ".json" else from_foreign
    return [(convert(item, mcp=mcp), getattr(item, "line", None)) for item in items]


def from_foreign(item: Any, *, mcp: bool = False) -> Any:
    """Turn an OpenAI tool entry (nested ``function`` or flat) or an MCP tool into a profile mapping; leave
    profiles as they are. The tool's name is both the id and the original name. ``mcp``: the item comes from a
    ``tools/list`` result, so a tool without ``inputSchema`` is still an MCP tool."""
    if not isinstance(item, dict):
        return item
    if item.get("type") == "function":
        nested = isinstance(item.get("function"), dict)
        fn = item["function"] if nested else item
        out = {"id": fn.get("name"), "name": fn.get("name"), "description": fn.get("description")}
        if fn.get("parameters") is not None:
            out["parameters"] = fn["parameters"]
        return out if fn.get("name") is not None else _Unnamed(out, "function.name" if nested else "name")
    if "id" not in item and ("inputSchema" in item or (mcp and "name" in item)):
        description = item.get("description")
        title = item.get("title")
        if is_blank(description) and isinstance(title, str) and title.strip():
            description = title  # MCP's human-readable title, when a tool has no description
        out = {"id": item.get("name"), "name": item.get("name"), "description": description}
        if item.get("inputSchema") is not None:
            out["parameters"] = item["inputSchema"]
        annotations = item.get("annotations") or {}
        if isinstance(annotations, dict) and annotations.get("destructiveHint"):
            out["mutation"] = True
        return out if item.get("name") is not None else _Unnamed(out, "name")
    return item


class _Unnamed(dict[str, Any]):
    """An OpenAI or MCP tool without a name, converted: its problems name the field of its own shape (the id is
    read from ``function.name`` or ``name``)."""

    def __init__(self, record: dict[str, Any], name_field: str) -> None:
        super().__init__(record)
        self.field_names = {"id": name_field}


def is_blank(value: Any) -> bool:
    """A missing or empty text (a description MCP and OpenAI let a tool leave out), not one of another type."""
    return value is None or (isinstance(value, str) and not value.strip())
