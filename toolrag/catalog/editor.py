"""Editing a catalog in place (the app's Profiles tab): safe, atomic, re-indexing only what changed.

Every change follows one path, under one lock that every process respects (a file lock on
``<catalog>/.toolrag-edit.lock``: the app, a second app process and a script editing the same catalog take
turns; a lock held longer than the timeout is an error saying so):

0. if the catalog's files changed on disk since this process last read them (another process saved), reload
   them first; a save *based on* an older version of the tool than the one on disk is refused: no silent
   last-writer-wins. The version is ``base_version`` (from :meth:`CatalogEditor.read_profile`); without one,
   the version this editor last read (or wrote) of the tool. A save of a text for a tool this editor never
   read is refused without one (the text may have been copied before another process saved the tool); a
   delete or an added image is then checked against the tool as this process held it;
1. parse the new profile text (:func:`toolrag.catalog.loader.parse_profile_yaml`): a bad field names itself;
2. build the new text of the one file concerned by replacing exactly that tool's list item (its span is
   found from the YAML node marks, so comments and formatting of every other tool survive);
3. validate the whole catalog as it would be after the change, in a temporary copy, before touching the real
   file (duplicate ids, dangling ``replaced_by``, broken YAML, an unusable example image all fail here and
   nothing changes);
4. keep the previous file under ``<catalog>/.history/`` (timestamped; hidden folders are never loaded), write
   the new text atomically (temp file in the same folder, fsync, ``os.replace``);
5. ``retriever.reload`` re-encodes only the changed tool; if that fails the file is restored.

The rank of the edited tool for a probe query is measured before and after, so the effect of an edit shows.
What a killed save leaves behind (temp files of the atomic write, the validation copy in the temp folder) is
removed when the next editor of the catalog starts.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import shutil
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from toolrag.catalog.edit_types import EditTarget, ProfileText, RankProbe, SaveOutcome
from toolrag.catalog.extra_examples import EXTRA_EXAMPLES_FILE, dump_examples, file_examples, merged_examples
from toolrag.catalog.history import HISTORY_DIR, history, keep_backup
from toolrag.catalog.loader import load_catalog, parse_profile_yaml
from toolrag.catalog.profile import Catalog, ToolProfile
from toolrag.catalog.staging import catalog_state, check_in_copy, remove_copies, version
from toolrag.catalog.tool_text import (
    file_for_new_tool,
    located_span,
    new_tool_template,
    profile_text,
    source_file,
)
from toolrag.catalog.yaml_spans import (
    append_item,
    category_of,
    item_text,
    profile_data,
    replace_span,
    text_lines_before,
    with_image,
)
from toolrag.errors import CatalogError, ProfileError, QueryError
from toolrag.files import FileLock, write_atomic
from toolrag.images import check_example_image

__all__ = ["HISTORY_DIR", "LOCK_FILE", "CatalogEditor", "EditTarget", "ProfileText", "RankProbe", "SaveOutcome",
           "profile_text"]

log = logging.getLogger(__name__)

#: The lock file every editing process takes (hidden: never read as a catalog file).
LOCK_FILE = ".toolrag-edit.lock"
#: Seconds an edit waits for another process's edit before giving up with a message.
LOCK_TIMEOUT = 30.0


_IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp"}


class CatalogEditor:
    """Edits the YAML files behind ``target``'s catalog and keeps its index in step."""

    def __init__(self, target: EditTarget, *, lock: threading.Lock | None = None,
                 catalog_path: str | Path | None = None, keep_versions: int = 20,
                 disk_state: tuple[Any, ...] | None = None, lock_timeout: float = LOCK_TIMEOUT) -> None:
        """``disk_state``: :func:`catalog_state` taken right before the target's catalog was loaded (default:
        now), so files another process changed in between are reloaded before the first edit."""
        self.target = target
        self._lock = lock or threading.Lock()
        root = self.catalog.root
        if catalog_path is None and root is None:
            raise CatalogError("this catalog was not loaded from files, so it cannot be edited; "
                               "load it with load_catalog(folder)")
        self.path = Path(catalog_path) if catalog_path is not None else Path(root)  # type: ignore[arg-type]
        self.folder = self.path if self.path.is_dir() else self.path.parent
        self.keep_versions = keep_versions
        self._file_lock = FileLock(self.folder / LOCK_FILE, timeout=lock_timeout, what=f"catalog {self.folder}",
                                   error=CatalogError)
        self._disk = disk_state if disk_state is not None else catalog_state(self.path)
        #: The version of each tool's text this editor last handed out (read_profile) or wrote: a change without
        #: ``base_version`` is checked against it (a save of a tool not in it is refused).
        self._read: dict[str, str] = {}
        #: Every tool id this editor has seen in the catalog: an id never seen was never there (not "deleted").
        self._seen: set[str] = {t.id for t in self.catalog.tools}
        self._clean_leftovers()

    @property
    def catalog(self) -> Catalog:
        return self.target.catalog

    # ---------------------------------------------------------------------------------------------- reading

    def profile_yaml(self, tool_id: str) -> str:
        """The YAML of one tool as written in its file (dedented list item), or a re-dump if not locatable."""
        return self.read_profile(tool_id).text

    def read_profile(self, tool_id: str) -> ProfileText:
        """The YAML of one tool as its file holds it now, with its version (reloads files changed on disk)."""
        with self._lock:
            self._refresh()
            text = self._text_of(self._tool(tool_id))
            self._read[tool_id] = version(text)
            return ProfileText(tool_id, text, version(text))

    def new_tool_template(self, category: str) -> str:
        """A valid starting profile for ``category`` with a free id (edit, then save)."""
        return new_tool_template(self.catalog, category)

    def history(self, file: str | Path) -> list[Path]:
        """Saved previous versions of a catalog file, oldest first."""
        return history(self.folder, file)

    # ---------------------------------------------------------------------------------------------- changes

    def validate(self, tool_id: str | None, yaml_text: str) -> ToolProfile:
        """Parse ``yaml_text`` and check the whole catalog as it would be after saving it; write nothing."""
        with self._editing():
            profile, file, new_text = self._prepare(tool_id, yaml_text)
            self._check_catalog(file, new_text, profile)
            return profile

    def save(self, tool_id: str | None, yaml_text: str, *, probe: RankProbe | None = None,
             base_version: str | None = None) -> SaveOutcome:
        """Replace tool ``tool_id`` (``None``: add a new tool) with the profile in ``yaml_text``.

        ``base_version`` (from :meth:`read_profile`): refuse the save when the tool's text on disk is no longer
        the one the edit started from; ``None``: the version this editor last read or wrote of the tool; a tool
        it never read is refused (pass the version :meth:`read_profile` gave)."""
        with self._editing(tool_id, base_version, text=True):
            return self._save(tool_id, yaml_text, probe)

    def delete(self, tool_id: str, *, probe: RankProbe | None = None,
               base_version: str | None = None) -> SaveOutcome:
        """Remove a tool from its file (validated first: a tool named by another's ``replaced_by`` stays)."""
        with self._editing(tool_id, base_version):
            tool = self._tool(tool_id)
            file, span = source_file(tool), located_span(tool)
            new_text = replace_span(file.read_text(encoding="utf-8"), span, None)
            before = self._rank(probe, tool_id)
            self._check_catalog(file, new_text, None)
            backup, encoded = self._commit(file, new_text)
            return SaveOutcome("deleted", tool_id, file, backup, encoded, before, None, _q(probe))

    def add_examples(self, tool_id: str, queries: Sequence[str], *, probe: RankProbe | None = None) -> SaveOutcome:
        """Add example requests to ``tool_id`` in the catalog's ``extra_examples.yaml``
        (:mod:`toolrag.catalog.extra_examples`): any tool, imported ones too (their files are rewritten by the
        next import); backed up, written atomically and re-indexed like a save (restored if that fails)."""
        with self._editing():
            self._tool(tool_id)
            file = self.folder / EXTRA_EXAMPLES_FILE
            new_text = dump_examples(merged_examples(file_examples(file), {tool_id: list(queries)}))
            before = self._rank(probe, tool_id)
            if file.is_file() and file.read_text(encoding="utf-8") == new_text:
                return SaveOutcome("unchanged", tool_id, file, None, 0, before, before, _q(probe))
            backup, encoded = self._commit(file, new_text)
            return SaveOutcome("saved", tool_id, file, backup, encoded, before, self._rank(probe, tool_id),
                               _q(probe))

    def add_image(self, tool_id: str, image_path: str | Path, caption: str, *, replace: str | None = None,
                  probe: RankProbe | None = None, base_version: str | None = None) -> SaveOutcome:
        """Validate an image, copy it into the assets folder under a content-hash name and add it to the
        tool's ``images`` (replacing the entry whose path is ``replace``, if given), then save."""
        with self._editing(tool_id, base_version):
            tool = self._tool(tool_id)
            assets = self.catalog.assets_dir or self.folder
            image = check_example_image(image_path)
            data = Path(image_path).read_bytes()
            suffix = Path(image_path).suffix.lower()
            digest = hashlib.sha256(data).hexdigest()[:16]
            if suffix not in _IMAGE_SUFFIXES:
                suffix = ".png"
            target = assets / f"{digest}{suffix}"
            created = not target.exists()
            if created:
                assets.mkdir(parents=True, exist_ok=True)
                if suffix == Path(image_path).suffix.lower():
                    shutil.copyfile(image_path, target)
                else:
                    image.save(target, format="PNG")
            rel = target.relative_to(assets).as_posix()
            try:
                text = with_image(self._text_of(tool), tool, rel, caption.strip(), replace)
                return self._save(tool_id, text, probe)
            except BaseException:
                if created:
                    target.unlink(missing_ok=True)
                raise

    # ------------------------------------------------------------------------------------------- internals

    @contextlib.contextmanager
    def _editing(self, tool_id: str | None = None, base_version: str | None = None, *, text: bool = False
                 ) -> Iterator[None]:
        """This process's lock, then the catalog's file lock (other processes), then files changed on disk
        reloaded: every change starts from the files as they are. A change of ``tool_id`` is then checked
        against the version it was based on (:meth:`save`); ``text``: the change is a text the caller wrote,
        refused without a version when this editor never read the tool."""
        with self._lock, self._file_lock:
            held = self.catalog.get(tool_id) if tool_id and base_version is None else None
            self._refresh()
            if tool_id:
                if tool_id not in self._seen:
                    self._tool(tool_id)  # an id that was never in the catalog says so
                base = base_version if base_version is not None else self._read.get(tool_id)
                self._read.pop(tool_id, None)  # used once: the next change compares with what it reads or writes
                if base is not None:
                    self._check_version(tool_id, base)
                elif text:
                    raise _unread(self._tool(tool_id))
                elif held is not None:
                    self._check_unchanged(held)
            try:
                yield
            finally:
                self._seen.update(t.id for t in self.catalog.tools)

    def _refresh(self) -> None:
        state = catalog_state(self.path)
        if state != self._disk:
            log.info("the files of catalog %s changed on disk (another process saved): reloading", self.folder)
            self.target.reload(load_catalog(self.path, cache=False))  # kept again at the next start
            self._disk = state
            self._seen.update(t.id for t in self.catalog.tools)

    def _check_version(self, tool_id: str, base_version: str) -> None:
        tool = self.catalog.get(tool_id)
        if tool is None:
            raise CatalogError(f"tool {tool_id!r} was deleted after you opened it (by another editor or "
                               "process); nothing was saved: copy your text, add it as a new tool if needed")
        if version(self._text_of(tool)) != base_version:
            raise _changed(tool, source_file(tool))

    def _check_unchanged(self, held: ToolProfile) -> None:
        """Refuse a change of ``held`` (the tool as this process held it before reloading the files) when the
        files now hold another version of it: another process saved it meanwhile."""
        now = self.catalog.get(held.id)
        if now is None:
            raise CatalogError(f"tool {held.id!r} was deleted after you opened it (by another editor or "
                               "process); nothing was saved: copy your text, add it as a new tool if needed")
        if now is not held and profile_data(now) != profile_data(held):
            raise _changed(now, source_file(now))

    def _clean_leftovers(self) -> None:
        """Remove what killed saves left (skipped while another process edits: its files are in use)."""
        try:
            if not self._file_lock.acquire(timeout=0):
                return
        except CatalogError as exc:  # a read-only folder: nothing of ours can be there
            log.debug("no leftovers removed: %s", exc)
            return
        try:
            remove_copies(self.folder)
        finally:
            self._file_lock.release()

    def _remember(self, tool_id: str) -> None:
        """The tool's text on disk after this editor saved it: the base of its next change without a version."""
        tool = self.catalog.get(tool_id)
        if tool is not None:
            self._read[tool_id] = version(self._text_of(tool))

    def _text_of(self, tool: ToolProfile) -> str:
        return profile_text(tool)

    def _tool(self, tool_id: str) -> ToolProfile:
        tool = self.catalog.get(tool_id)
        if tool is None:
            raise CatalogError(f"no tool has id {tool_id!r}; pick one from the catalog table")
        return tool

    def _prepare(self, tool_id: str | None, yaml_text: str) -> tuple[ToolProfile, Path, str]:
        """Parse the edit and build the new text of the file it lands in."""
        if not yaml_text or not yaml_text.strip():
            raise ProfileError("the profile is empty; write the tool's YAML (id, name, description, ...)")
        old = self._tool(tool_id) if tool_id else None
        assets = self.catalog.assets_dir or self.folder
        source = source_file(old) if old else file_for_new_tool(self.path, self.folder, category_of(yaml_text))
        item = item_text(yaml_text)
        current = source.read_text(encoding="utf-8") if source.exists() else ""
        span = located_span(old) if old is not None else None
        new_text = append_item(current, item) if span is None else replace_span(current, span, item)
        # the line of the file the text's first line lands on, so a problem names the file's line
        start = new_text.count("\n") - item.count("\n") + 1 if span is None else span.start + 1
        before = text_lines_before(yaml_text, item)
        profile = parse_profile_yaml(yaml_text, source=source, assets_dir=assets,
                                     shift=0 if before is None else start - 1 - before)
        clash = self.catalog.get(profile.id)
        if clash is not None and (old is None or clash.id != old.id):
            raise ProfileError(f"id {profile.id!r} is already used by another tool ({clash.source}:"
                               f"{clash.line}); ids must be unique: pick another id", tool=profile.id, field="id")
        return profile, source, new_text

    def _check_catalog(self, file: Path, new_text: str, profile: ToolProfile | None) -> Catalog:
        """Load the catalog with ``file`` replaced by ``new_text`` in a temporary copy; raise on problems."""
        return check_in_copy(self.path, self.catalog, file, new_text, profile)

    def _save(self, tool_id: str | None, yaml_text: str, probe: RankProbe | None) -> SaveOutcome:
        profile, file, new_text = self._prepare(tool_id, yaml_text)
        current = file.read_text(encoding="utf-8") if file.exists() else None
        before = self._rank(probe, tool_id) if tool_id else None
        if current == new_text:
            self._remember(profile.id)
            return SaveOutcome("unchanged", profile.id, file, None, 0, before, before, _q(probe))
        self._check_catalog(file, new_text, profile)
        backup, encoded = self._commit(file, new_text)
        self._remember(profile.id)
        after = self._rank(probe, profile.id)
        return SaveOutcome("saved" if tool_id else "added", profile.id, file, backup, encoded, before, after,
                           _q(probe))

    def _commit(self, file: Path, new_text: str) -> tuple[Path | None, int]:
        """Back up, write atomically, reload the index; restore the file if the reload fails."""
        old_text = file.read_text(encoding="utf-8") if file.exists() else None
        backup = keep_backup(self.folder, file, self.keep_versions) if old_text is not None else None
        write_atomic(file, new_text, error=CatalogError)
        try:
            # cache=False: keeping a large catalog's copy would add ~1.4 s to every save; the next start keeps it
            encoded = int(self.target.reload(load_catalog(self.path, cache=False)))
            self._disk = catalog_state(self.path)
            return backup, encoded
        except BaseException:
            log.exception("re-indexing after editing %s failed; restoring the file", file)
            if old_text is None:
                file.unlink(missing_ok=True)
            else:
                write_atomic(file, old_text, error=CatalogError)
            raise

    def _rank(self, probe: RankProbe | None, tool_id: str | None) -> int | None:
        """1-based rank of ``tool_id`` for the probe over the whole permitted catalog (None: unranked)."""
        if probe is None or tool_id is None or not (probe.query.strip() or probe.image is not None):
            return None
        try:
            return self.target.rank_of(tool_id, probe.query, image=probe.image, role=probe.role,
                                       settings=probe.settings)
        except QueryError:
            return None


def _changed(tool: ToolProfile, file: Path) -> CatalogError:
    return CatalogError(f"tool {tool.id!r} was changed in {file.name} after you opened it (by another editor or "
                        "process); nothing was saved: reload the tool, apply your change again and save")


def _unread(tool: ToolProfile) -> CatalogError:
    return CatalogError(f"tool {tool.id!r}: this editor never read it, so a save without base_version cannot know "
                        "what your text was based on (another process may have saved the tool since the text was "
                        f"copied); nothing was saved: call read_profile({tool.id!r}), apply your change to its "
                        "text and save with base_version=<its version>")


def _q(probe: RankProbe | None) -> str | None:
    return probe.query if probe is not None and probe.query.strip() else None
