"""A tool's YAML text in its catalog file: where it stands (its list item's span), the text as the file holds it,
which file a new tool of a category lands in, and the template a new tool starts from.

Read-only: :class:`toolrag.catalog.editor.CatalogEditor` writes, through :mod:`toolrag.catalog.yaml_spans`.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

import yaml

from toolrag.catalog.edit_types import NEW_TOOL_TEMPLATE
from toolrag.catalog.profile import Catalog, ToolProfile
from toolrag.catalog.yaml_spans import ItemSpan, dump_yaml, find_span, profile_data
from toolrag.errors import CatalogError

__all__ = ["file_for_new_tool", "item_span", "located_span", "new_tool_template", "profile_text", "source_file"]


def profile_text(tool: ToolProfile) -> str:
    """The YAML of one tool as its file holds it now (the dedented list item, comments included), or a
    re-dump of its fields when it is not a locatable YAML item (a JSON source). Reads, never writes."""
    span = item_span(tool)
    return span.text if span is not None else dump_yaml(profile_data(tool))


def item_span(tool: ToolProfile) -> ItemSpan | None:
    """The span of the tool's list item in its YAML file; ``None`` for another source or an item not found."""
    file = tool.source
    if file is None or file.suffix.lower() not in (".yaml", ".yml") or tool.line is None:
        return None
    return find_span(Path(file).read_text(encoding="utf-8"), tool.line, tool.id)


def source_file(tool: ToolProfile) -> Path:
    """The file the tool was read from; CatalogError for a tool without one (it cannot be edited)."""
    if tool.source is None:
        raise CatalogError(f"tool {tool.id!r} has no source file, so it cannot be edited")
    return Path(tool.source)


def located_span(tool: ToolProfile) -> ItemSpan:
    """:func:`item_span`, or CatalogError saying the tool is to be edited by hand."""
    source_file(tool)
    span = item_span(tool)
    if span is None:
        raise CatalogError(f"cannot locate tool {tool.id!r} as a YAML list item in {tool.source}: edit "
                           "that file by hand (JSON sources and flow-style lists are not edited here)")
    return span


def file_for_new_tool(path: Path, folder: Path, category: str) -> Path:
    """The file a new tool of ``category`` is added to: the catalog file itself (a one-file catalog), else
    ``<category>.yaml`` in ``folder`` (or ``<category>-N.yaml``), a new file or one holding a YAML list."""
    if path.is_file():
        return path
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", category).strip("_") or "general"
    for n in range(1, 100):
        candidate = folder / (f"{slug}.yaml" if n == 1 else f"{slug}-{n}.yaml")
        if not candidate.exists():
            return candidate
        with contextlib.suppress(yaml.YAMLError, OSError, UnicodeDecodeError):
            if isinstance(yaml.safe_load(candidate.read_text(encoding="utf-8")), list | None):
                return candidate
    raise CatalogError(f"no free file name for category {category!r} in {folder}")


def new_tool_template(catalog: Catalog, category: str) -> str:
    """A valid starting profile for ``category`` with an id no tool of ``catalog`` has (edit, then save)."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", category.strip()).strip("_") or "general"
    tool_id, n = f"{slug}.new_tool", 2
    while catalog.get(tool_id) is not None:
        tool_id, n = f"{slug}.new_tool_{n}", n + 1
    name = re.sub(r"[^A-Za-z0-9_-]", "_", tool_id)[:64]
    return NEW_TOOL_TEMPLATE.format(id=tool_id, name=name,
                                    category=json.dumps(category.strip() or "general", ensure_ascii=False))
