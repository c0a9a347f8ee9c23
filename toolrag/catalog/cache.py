"""A large catalog's validated profiles kept in the data folder, so a restart with unchanged files does not parse
and validate them again.

Why: loading and validating a 100,000-tool JSON Lines catalog takes 2.9-3.8 s on this 2-core CPU, most of a
restart (docs/benchmarks.md); reading the same profiles back from a pickle takes 0.7-0.8 s. Catalogs of at
least :data:`CACHE_MIN_TOOLS` tools are kept (smaller ones load in well under a second anyway).

Never trusted when anything it came from changed: the key covers the content (SHA-256) of every file the loader
reads (the profile files, ``catalog.yaml``), the catalog's path, the load mode, the Python version and the
source of the code that parses and validates (the ``toolrag.catalog`` package and every toolrag module it
imports, found by reading its imports: :func:`code_files`), so a new toolrag version or a local change to the
loader starts afresh. The example images a profile points to are checked again (still files, same size and
modification time), because the loader refuses a missing one. A cache file is written beside its final name
and renamed into place, so a crash leaves no half file in use; one that cannot be read is ignored and
replaced. ``TOOLRAG_CATALOG_CACHE=off`` turns it off.

The cache is a pickle in the data folder (``$TOOLRAG_DATA_DIR``, else ``~/.cache/toolrag``): whoever can write
there can also replace the models and the index, so it is trusted like them.
"""

from __future__ import annotations

import ast
import hashlib
import logging
import pickle
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolrag.catalog.profile import Catalog
from toolrag.config import data_dir, switch_setting
from toolrag.env_vars import CATALOG_CACHE_ENV
from toolrag.errors import SettingsError, ToolragError
from toolrag.files import write_atomic
from toolrag.gcpause import paused_gc

__all__ = ["CACHE_MIN_TOOLS", "cached"]

log = logging.getLogger(__name__)

#: Catalogs with at least this many tools are kept.
CACHE_MIN_TOOLS = 5_000
#: Bumped when what the cache file holds changes shape.
_FORMAT = 1
_code_digest: str | None = None


def cached(root: Path, files: Sequence[Path], mode: str, load: Callable[[], Catalog], *,
           folder: Path | None = None) -> Catalog:
    """The catalog ``load()`` gives, read from the cache when its key matches; written there after a load of
    a catalog of :data:`CACHE_MIN_TOOLS` tools or more. ``files``: every file the loader reads."""
    if not switch_setting(CATALOG_CACHE_ENV, meaning="read the catalog's files at every start"):
        return load()
    try:
        key = _key(root, files, mode)
        where = (folder if folder is not None else _default_folder()) / f"catalog-{_name(root, mode)}.pickle"
    except OSError as exc:  # a file vanished between listing and reading: the loader reports it
        log.debug("catalog cache skipped: %s", exc)
        return load()
    except SettingsError as exc:  # no usable data folder: the catalog loads as without a cache
        log.warning("catalog cache off: %s", exc)
        return load()
    catalog = _read(where, key)
    if catalog is not None:
        return catalog
    catalog = load()
    if len(catalog) >= CACHE_MIN_TOOLS:
        _write(where, key, catalog)
    return catalog


def _default_folder() -> Path:
    return data_dir() / "catalogs"


def _name(root: Path, mode: str) -> str:
    """One cache file per catalog path and mode (a changed catalog replaces its file)."""
    return hashlib.sha256(f"{root.resolve()}|{mode}".encode()).hexdigest()[:20]


def _key(root: Path, files: Sequence[Path], mode: str) -> str:
    digest = hashlib.sha256(f"{_FORMAT}|{sys.version_info[:2]}|{_code()}|{root.resolve()}|{mode}".encode())
    meta = (root if root.is_dir() else root.parent) / "catalog.yaml"
    for file in [*files, meta]:
        if file.is_file():
            digest.update(f"|{file.resolve()}|".encode())
            digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def _code() -> str:
    """Digest of the source of the code that parses and validates catalogs (:func:`code_files`)."""
    global _code_digest
    if _code_digest is None:
        digest = hashlib.sha256()
        for file in code_files():
            digest.update(file.name.encode() + b"\0" + file.read_bytes())
        _code_digest = digest.hexdigest()
    return _code_digest


def code_files() -> list[Path]:
    """The ``toolrag.catalog`` package's files and every toolrag module they import, directly or not (lazy
    imports included), read from their source: the code a cached catalog depends on, listed by no one by hand."""
    toolrag = Path(__file__).resolve().parent.parent
    todo = sorted(toolrag.joinpath("catalog").glob("*.py"))
    seen: set[Path] = set()
    while todo:
        file = todo.pop()
        if file in seen:
            continue
        seen.add(file)
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else (
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
            if isinstance(node, ast.ImportFrom) and node.module == "toolrag":
                names = [f"toolrag.{alias.name}" for alias in node.names]
            for name in names:
                if name.startswith("toolrag."):
                    base = toolrag.parent.joinpath(*name.split("."))
                    todo += [p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()]
    return sorted(seen)


def _images(catalog: Catalog) -> list[tuple[str, int, int]]:
    """(path, size, modification time) of every example image the catalog points to."""
    out = []
    for tool in catalog.tools:
        paths = [img.file for img in tool.images] + [ex.image for ex in tool.examples if ex.image is not None]
        for path in paths:
            stat = path.stat()
            out.append((str(path), stat.st_size, stat.st_mtime_ns))
    return out


def _read(where: Path, key: str) -> Catalog | None:
    if not where.is_file():
        return None
    try:
        with where.open("rb") as fh, paused_gc():
            stored_key, images, catalog = pickle.load(fh)
        if stored_key != key or not isinstance(catalog, Catalog):
            return None
        if _images(catalog) != images:  # an example image changed or is gone: the loader must see it
            return None
    except (OSError, EOFError, ValueError, TypeError, AttributeError, ImportError, IndexError,
            pickle.UnpicklingError) as exc:
        log.warning("catalog cache %s cannot be read (%s); loading the catalog instead", where, exc)
        return None
    log.debug("catalog %s read from the cache %s", catalog.name, where)
    return catalog


def _write(where: Path, key: str, catalog: Catalog) -> None:
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        payload: Any = (key, _images(catalog), catalog)
        write_atomic(where, pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
    except (OSError, ToolragError, pickle.PicklingError, TypeError, AttributeError) as exc:
        log.warning("catalog cache %s not written (%s); the next start loads the catalog again", where, exc)
