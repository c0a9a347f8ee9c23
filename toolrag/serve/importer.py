"""``toolrag import mcp``: a live MCP server's tools as a catalog folder, with provenance and a diff.

The folder holds ``tools.json`` (the server's ``tools/list`` exactly as listed, read by the loader's lenient
MCP path), ``provenance.json`` (server name and version, where it was reached, when, how many pages, what
could not be read) and ``catalog.yaml`` (written once; your roles and name in it are kept). Importing again
compares the new list with the old one by tool name and reports what was added, removed and changed; the
index then re-encodes only the changed tools (its cache is keyed by content). Nothing is written when the
server's tools do not load, so a failed import never replaces a good catalog.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from toolrag.catalog.loader import META_FILE, PROVENANCE_FILE, load_catalog, load_records
from toolrag.catalog.profile import Catalog
from toolrag.catalog.report import LoadMode
from toolrag.errors import CatalogError
from toolrag.files import write_atomic
from toolrag.serve.upstream import Listing, ServerSpec, UpstreamError, connect, list_all_tools

__all__ = ["TOOLS_FILE", "ImportResult", "fetch_listing", "import_listing", "import_server"]

TOOLS_FILE = "tools.json"


@dataclass(frozen=True)
class ImportResult:
    """What an import did: the catalog as now loaded, and the names added, removed and changed since the
    previous import (all new on the first one)."""

    folder: Path
    catalog: Catalog
    listing: Listing
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: int = 0

    def summary(self) -> str:
        return (f"{self.listing.server_name} {self.listing.server_version}: {len(self.listing.tools)} tools in "
                f"{self.listing.pages} page(s); {len(self.added)} added, {len(self.removed)} removed, "
                f"{len(self.changed)} changed, {self.unchanged} unchanged")


def import_server(spec: ServerSpec, folder: str | Path, *, mode: LoadMode | str = LoadMode.AUTO) -> ImportResult:
    """Read ``spec``'s tools and write them to ``folder`` (see the module docstring)."""
    return import_listing(fetch_listing(spec), spec, folder, mode=mode)


def fetch_listing(spec: ServerSpec) -> Listing:
    """Connect to the server, page through ``tools/list`` and disconnect; :class:`UpstreamError` when it cannot
    be reached or does not answer in time."""
    import anyio

    async def read() -> Listing:
        async with connect(spec) as (session, info):
            tools, pages, warnings = await list_all_tools(session, where=f"MCP server {spec.name!r}",
                                                          timeout=spec.timeout)
            return Listing(info.name, info.version, tools, pages, warnings)

    try:
        return anyio.run(read)  # connect and list_all_tools map the SDK's errors; a bug here stays itself
    except UpstreamError as exc:  # the operator reads where the server runs too
        reason = str(exc).removeprefix(f"MCP server {spec.name!r} ")
        raise UpstreamError(f"cannot read MCP server {spec.name!r} ({_where(spec)}): {reason}", lost=exc.lost,
                            cause=exc.cause) from None


def import_listing(listing: Listing, spec: ServerSpec, folder: str | Path, *,
                   mode: LoadMode | str = LoadMode.AUTO) -> ImportResult:
    """Write a listing as a catalog folder, after checking it loads; the diff is against the folder's previous
    ``tools.json``."""
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise CatalogError(f"{out} is a file; give a folder for the imported catalog")
    strict = LoadMode(mode) is LoadMode.STRICT
    load_records(listing.tools, name=listing.server_name, where=f"MCP server {spec.name!r}",
                 mode=LoadMode.STRICT if strict else LoadMode.LENIENT)  # refuses before anything is written
    old = _previous(out / TOOLS_FILE)
    new = {t["name"]: t for t in listing.tools if isinstance(t.get("name"), str)}
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / TOOLS_FILE, json.dumps({"tools": listing.tools}, ensure_ascii=False, indent=1) + "\n",
                 error=CatalogError)
    provenance = {"server": {"name": listing.server_name, "version": listing.server_version},
                  "source": spec.describe(), "imported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  "pages": listing.pages, "tools": len(listing.tools), "warnings": listing.warnings}
    write_atomic(out / PROVENANCE_FILE, json.dumps(provenance, ensure_ascii=False, indent=1) + "\n",
                 error=CatalogError)
    if not (out / META_FILE).exists():
        write_atomic(out / META_FILE, f"name: {json.dumps(listing.server_name)}\n", error=CatalogError)
    catalog = load_catalog(out, mode=mode)
    changed = sorted(n for n in new.keys() & old.keys() if _canonical(new[n]) != _canonical(old[n]))
    return ImportResult(out, catalog, listing, added=sorted(new.keys() - old.keys()),
                        removed=sorted(old.keys() - new.keys()), changed=changed,
                        unchanged=len(new.keys() & old.keys()) - len(changed))


def _previous(file: Path) -> dict[str, Any]:
    if not file.is_file():
        return {}
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    tools = data.get("tools") if isinstance(data, dict) else None
    return {t["name"]: t for t in tools or [] if isinstance(t, dict) and isinstance(t.get("name"), str)}


def _canonical(tool: Any) -> str:
    return json.dumps(tool, sort_keys=True, ensure_ascii=False)


def _where(spec: ServerSpec) -> str:
    return spec.url or " ".join([spec.command or "", *spec.args]).strip()
