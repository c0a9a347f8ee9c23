"""Checking an edit before it touches a catalog's files, and what several processes editing one catalog need.

- :func:`check_in_copy`: the whole catalog as it would be after an edit, loaded from a temporary copy (the
  real files are never touched by a refused edit);
- :func:`catalog_state`: how the files are on disk now, so an editor notices that another process saved;
- :func:`version`: the version of one tool's text, so a save based on an older version is refused;
- :func:`remove_copies`: what killed saves left behind (temp files of atomic writes, validation copies).
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from toolrag.catalog.extra_examples import EXTRA_EXAMPLES_FILE
from toolrag.catalog.lint import image_problems
from toolrag.catalog.loader import META_FILE, catalog_files, load_catalog
from toolrag.catalog.profile import Catalog, ToolProfile
from toolrag.errors import CatalogError, ProfileError
from toolrag.files import remove_leftovers

__all__ = ["catalog_state", "check_in_copy", "remove_copies", "version"]

#: Validation copies named the old way (no catalog hash) older than this are removed at start.
_STALE_COPY_S = 3600.0
_OLD_PREFIX = "toolrag-edit-"


def check_in_copy(path: Path, catalog: Catalog, file: Path, new_text: str, profile: ToolProfile | None) -> Catalog:
    """Load the catalog at ``path`` with ``file`` replaced by ``new_text`` in a temporary copy and return it;
    raise ProfileError/CatalogError (naming the real files) for anything the loader, the index or the editor
    would refuse, including an unusable example image of the edited ``profile``."""
    folder = path if path.is_dir() else path.parent
    tmp = Path(tempfile.mkdtemp(prefix=_copy_prefix(folder)))
    try:
        for src in catalog_files(path):
            dst = tmp / src.relative_to(folder)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
        dst = tmp / file.relative_to(folder)
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(new_text, encoding="utf-8")
        meta_file = folder / META_FILE
        meta = yaml.safe_load(meta_file.read_text(encoding="utf-8")) if meta_file.is_file() else None
        meta = dict(meta or {})
        meta["assets_dir"] = str(catalog.assets_dir or folder)
        (tmp / META_FILE).write_text(yaml.safe_dump(meta, allow_unicode=True), encoding="utf-8")
        try:
            # a throw-away copy: never kept in the data folder (toolrag.catalog.cache)
            checked = load_catalog(tmp / path.name if path.is_file() else tmp, cache=False)
        except (ProfileError, CatalogError) as exc:
            message = str(exc).replace(str(tmp), str(folder))
            if isinstance(exc, ProfileError):
                raise ProfileError(message, [p.relocated(str(tmp), str(folder)) for p in exc.problems]) from None
            raise CatalogError(message) from None
        if profile is not None and checked.get(profile.id) != profile:
            raise CatalogError(f"the edited profile of {profile.id!r} does not read back the same from "
                               f"{file.name}; check its indentation (start keys at column 0)")
        edited = checked.get(profile.id) if profile is not None else None
        problems = [p.relocated(str(tmp), str(folder)) for p in image_problems(checked, [edited])] if edited else []
        if problems:  # what the index would refuse is refused before the file is touched
            raise ProfileError(str(problems[0]), problems)
        return checked
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def catalog_state(path: str | Path) -> tuple[Any, ...]:
    """What identifies the catalog's files as they are on disk now (each file's path, mtime, size and inode,
    ``catalog.yaml`` and ``extra_examples.yaml`` included): a different state means another process (or a
    person) changed them."""
    root = Path(path)
    folder = root if root.is_dir() else root.parent
    state = []
    for file in [*catalog_files(root), folder / META_FILE, folder / EXTRA_EXAMPLES_FILE]:
        with contextlib.suppress(OSError):
            st = file.stat()
            state.append((str(file), st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(state)


def version(text: str) -> str:
    """The version of one tool's text as its file holds it (16 hex characters of its sha256)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def remove_copies(folder: Path) -> None:
    """Remove what killed saves of the catalog in ``folder`` left: temp files of atomic writes under it and
    its validation copies in the temp folder (and old-style copies abandoned for an hour). Call it holding
    the catalog's edit lock, so no live save's files are removed."""
    remove_leftovers(folder)
    temp = Path(tempfile.gettempdir())
    for copy in temp.glob(_copy_prefix(folder) + "*"):
        shutil.rmtree(copy, ignore_errors=True)
    for copy in temp.glob(_OLD_PREFIX + "*"):
        with contextlib.suppress(OSError):
            if len(copy.name) == len(_OLD_PREFIX) + 8 and time.time() - copy.stat().st_mtime > _STALE_COPY_S:
                shutil.rmtree(copy, ignore_errors=True)


def _copy_prefix(folder: Path) -> str:
    """Name prefix of the validation copies of the catalog in ``folder``."""
    return f"{_OLD_PREFIX}{hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:12]}-"
