"""A validated catalog as plain JSON and back, for an index published on a Chroma server: a replica without
the catalog's files rebuilds the very profiles the publisher loaded (same texts, same hashes, same schemas).

Only what a search and its answer read travels: every profile field, the roles, the name and the load report.
Paths of this machine do not: an example image keeps the path written in the profile (relative to the catalog's
assets), so two machines holding the same catalog in different folders write the same JSON (and so the same
version, :mod:`toolrag.index.published`). A replica never opens those files; images are read only when indexing.
JSON, never pickle: a shared store must not be able to run code in the processes that read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolrag.catalog.profile import Catalog, Endpoint, Example, ToolImage, ToolProfile
from toolrag.catalog.report import LoadReport

__all__ = ["WIRE_FORMAT", "catalog_from_json", "catalog_to_json"]

#: Bumped when the JSON's shape changes; a reader refuses another one with a clear error.
WIRE_FORMAT = 1


def _image_path(path: Path | None, assets: Path | None) -> str | None:
    if path is None:
        return None
    if assets is not None:
        try:
            return path.relative_to(assets).as_posix()
        except ValueError:
            pass
    return path.name


def _tool(t: ToolProfile, assets: Path | None) -> dict[str, Any]:
    return {
        "id": t.id, "name": t.name, "description": t.description, "category": t.category, "tags": list(t.tags),
        "parameters": t.parameters,
        "examples": [{"query": e.query, "arguments": e.arguments, "image": _image_path(e.image, assets)}
                     for e in t.examples],
        "negative_examples": list(t.negative_examples),
        "images": [{"path": i.path, "caption": i.caption} for i in t.images],
        "permissions": list(t.permissions), "mutation": t.mutation, "priority": t.priority, "version": t.version,
        "deprecated": t.deprecated, "replaced_by": t.replaced_by,
        "endpoint": {"url": t.endpoint.url, "method": t.endpoint.method} if t.endpoint is not None else None,
        "embedding_text": t.embedding_text,
    }


def catalog_to_json(catalog: Catalog) -> dict[str, Any]:
    """The catalog as JSON-ready values (profiles in catalog order, roles, name, load report)."""
    return {"format": WIRE_FORMAT, "name": catalog.name,
            "roles": {role: list(codes) for role, codes in sorted(catalog.roles.items())},
            "report": catalog.report.to_json(),
            "tools": [_tool(t, catalog.assets_dir) for t in catalog.tools]}


def _profile(raw: Mapping[str, Any]) -> ToolProfile:
    values = dict(raw)
    values["tags"] = tuple(values.get("tags", ()))
    values["examples"] = tuple(Example(e["query"], e.get("arguments"), Path(e["image"]) if e.get("image") else None)
                               for e in values.get("examples", ()))
    values["negative_examples"] = tuple(values.get("negative_examples", ()))
    values["images"] = tuple(ToolImage(i["path"], i["caption"], Path(i["path"])) for i in values.get("images", ()))
    values["permissions"] = tuple(values.get("permissions", ()))
    endpoint = values.get("endpoint")
    values["endpoint"] = Endpoint(endpoint["url"], endpoint["method"]) if endpoint else None
    return ToolProfile.from_checked(values)


def catalog_from_json(data: Mapping[str, Any]) -> Catalog:
    """The catalog :func:`catalog_to_json` wrote (no root folder: it lives in the store, not on this disk).
    ValueError when the JSON is of another format or shape."""
    if data.get("format") != WIRE_FORMAT:
        raise ValueError(f"catalog JSON of format {data.get('format')!r}, this toolrag reads format {WIRE_FORMAT}: "
                         "push the index again with this toolrag version")
    try:
        tools = tuple(_profile(raw) for raw in data["tools"])
        report = data.get("report") or {}
        return Catalog(tools, str(data["name"]), None, None,
                       {role: tuple(codes) for role, codes in dict(data.get("roles") or {}).items()},
                       LoadReport(int(report.get("loaded", len(tools))), int(report.get("skipped", 0)),
                                  int(report.get("degraded", 0)), tuple(report.get("warnings", ()))))
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"catalog JSON is malformed ({type(exc).__name__}: {exc})") from None
