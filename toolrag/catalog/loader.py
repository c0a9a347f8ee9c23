"""Catalog loading: the one place where catalog files are turned into validated ``ToolProfile`` objects.

A catalog is a folder (or a single file) of tool profiles. Accepted formats:

- YAML: one profile (a mapping) or a list of profiles per file (``*.yaml``/``*.yml``);
- JSON Lines: one profile per line (``*.jsonl``);
- an OpenAI ``tools`` list: ``[{"type": "function", "function": {name, description, parameters}}]``;
- an MCP ``tools/list`` result: ``{"tools": [{name, description, inputSchema}]}``.

In a folder, ``catalog.yaml`` holds catalog metadata (``name``, ``assets_dir``, ``roles``), ``provenance.json``
records where an imported catalog came from, files named ``queries.*`` hold labelled queries and
``extra_examples.yaml`` example requests added to the tools' own (:mod:`toolrag.catalog.extra_examples`); none is
read as profiles. YAML is read strictly and imports (``.json``/``.jsonl``) leniently unless a :class:`LoadMode`
says otherwise (:mod:`toolrag.catalog.report`); a catalog that fails strict validation is never returned, so
it is never indexed, and a catalog without any tool is an error.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from toolrag.catalog.cache import cached
from toolrag.catalog.extra_examples import EXTRA_EXAMPLES_FILE, apply_extra_examples
from toolrag.catalog.fields import (
    CONVERTERS,
    FIELDS,
    FieldProblem,
    derived_description,
    suggest,
    tool_description,
    tool_id,
    tool_name,
)
from toolrag.catalog.meta import META_FILE, read_meta
from toolrag.catalog.profile import Catalog, ToolProfile
from toolrag.catalog.readers import from_foreign, is_blank, read_records, yaml_load
from toolrag.catalog.report import LoadMode, LoadReport, raise_problems
from toolrag.errors import CatalogError, Problem
from toolrag.gcpause import paused_gc
from toolrag.paths import path_problem, shown

__all__ = ["META_FILE", "PROFILE_SUFFIXES", "PROVENANCE_FILE", "catalog_files", "load_catalog", "load_records",
           "parse_profile_yaml"]

_KNOWN = frozenset(FIELDS)  # the keys a profile may have, for a set lookup per key

log = logging.getLogger(__name__)

PROFILE_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")
PROVENANCE_FILE = "provenance.json"


def load_catalog(path: str | Path, *, mode: LoadMode | str = LoadMode.AUTO, cache: bool = True) -> Catalog:
    """Load and validate a catalog folder or file; ``catalog.report`` says what was loaded, skipped, degraded.

    A large catalog is kept, validated, in the data folder and read back from there while its files are
    unchanged (:mod:`toolrag.catalog.cache`; ``cache=False`` reads the files).

    Raises ``ProfileError`` listing every problem found in strictly read files, ``CatalogError`` for a missing
    path, a bad ``catalog.yaml`` or a catalog without any tool."""
    root = Path(path)
    if (problem := path_problem(root)) is not None:
        raise CatalogError(f"catalog path {shown(root)} {problem}; pass a folder of YAML profiles or a file")
    if not root.exists():
        raise CatalogError(f"catalog {str(root)!r} does not exist; pass a folder of YAML profiles or a file")
    folder = root if root.is_dir() else root.parent
    meta = read_meta(folder / META_FILE) if (folder / META_FILE).is_file() else {}
    assets = (folder / str(meta.get("assets_dir", "."))).resolve()
    chosen = _mode(mode)
    files = catalog_files(root)
    extras = folder / EXTRA_EXAMPLES_FILE

    def load() -> Catalog:
        builder = _Builder(chosen, assets)
        with paused_gc():  # millions of lasting small objects: see toolrag.gcpause
            for file in files:
                builder.add_file(file)
            roles = dict(meta.get("roles") or {})
            if not builder.errors and not builder.profiles:
                raise CatalogError(_empty_message(root, files, builder))
            catalog = builder.finish(str(meta.get("name", folder.resolve().name)), folder, roles)
        if extras.is_file():
            catalog, warnings = apply_extra_examples(catalog, extras, strict=chosen is LoadMode.STRICT)
            for warning in warnings:
                log.warning("catalog %s: %s", catalog.name, warning)
        return catalog

    read = [*files, extras] if extras.is_file() else files
    return cached(root, read, chosen.value, load) if cache else load()


def load_records(records: Iterable[Any], *, name: str, mode: LoadMode | str = LoadMode.LENIENT,
                 where: str | None = None, roles: Mapping[str, tuple[str, ...]] | None = None,
                 root: Path | None = None) -> Catalog:
    """A catalog from records already in memory (profiles, OpenAI entries or MCP tools, e.g. a live server's
    ``tools/list``), validated like files; ``where`` names their origin in messages (default ``name``)."""
    builder = _Builder(_mode(mode), (root or Path.cwd()).resolve())
    with paused_gc():
        builder.add_records(records, where or name, lenient=builder.mode is not LoadMode.STRICT)
    if not builder.errors and not builder.profiles:
        raise CatalogError(f"{where or name}: no tools to load ({builder.skipped} skipped"
                           + (f": {builder.warnings[0]}" if builder.warnings else "") + ")")
    return builder.finish(name, root, dict(roles or {}))


def catalog_files(path: str | Path) -> list[Path]:
    """The profile files of a catalog: a file is itself; a folder gives its ``.yaml``/``.yml``/``.json``/
    ``.jsonl`` files at any depth, sorted, except ``catalog.yaml``, ``provenance.json``, labelled queries
    (``queries*``), ``extra_examples.yaml`` and anything under a hidden component (``.history/``, ``.git/``)
    *inside* the folder. Hidden folders above the catalog (``~/.config/tools``, ``../tools``) do not count."""
    root = Path(path)
    if root.is_file():
        return [root]
    return sorted(
        p for p in root.rglob("*")
        if p.is_file() and p.suffix.lower() in PROFILE_SUFFIXES
        and p.name not in (META_FILE, PROVENANCE_FILE, EXTRA_EXAMPLES_FILE)
        and not p.stem.startswith("queries")
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def parse_profile_yaml(text: str, *, source: Path, assets_dir: Path, shift: int = 0) -> ToolProfile:
    """Parse one profile from YAML text (the app's editor), strictly; raise ``ProfileError`` naming every
    problem. ``shift``: how many lines of ``source`` stand before the text's first line where the text will land,
    so a problem names the line of the file, not of the text."""
    problems: list[Problem] = []
    data = yaml_load(text, source, problems)
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    if not problems and not isinstance(data, dict):
        problems.append(Problem(f"{source}: expected one tool profile (a YAML mapping with id, description, ...)",
                                str(source)))
    if problems:
        raise_problems(_shifted(problems, source, shift))
    builder = _Builder(LoadMode.STRICT, assets_dir)
    profile = builder.build(data, where=str(source), source=source, line=getattr(data, "line", 1), lenient=False)
    if builder.errors or profile is None:
        raise_problems(_shifted(builder.errors or [Problem(f"{source}: invalid profile", str(source))], source, shift))
    return profile  # type: ignore[return-value]


def _shifted(problems: list[Problem], source: Path, shift: int) -> list[Problem]:
    """``problems`` with their lines (and the ``file:line`` their messages start with) moved down ``shift`` lines."""
    if not shift:
        return problems
    head = f"{source}:"
    return [dataclasses.replace(p, line=p.line + shift, message=p.message.replace(f"{head}{p.line}:",
                                                                                 f"{head}{p.line + shift}:", 1))
            if p.line else p for p in problems]


def _mode(mode: LoadMode | str) -> LoadMode:
    try:
        return LoadMode(mode)
    except ValueError:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(m.value for m in LoadMode)}") from None


class _Builder:
    """Collects profiles, errors (strict problems: the catalog is refused) and warnings (lenient drops)."""

    def __init__(self, mode: LoadMode, assets: Path) -> None:
        self.mode, self.assets = mode, assets
        self.profiles: list[ToolProfile] = []
        self.errors: list[Problem] = []
        self.warnings: list[str] = []
        self.skipped = 0
        self._degraded: set[int] = set()
        self._lenient: dict[int, bool] = {}

    def add_file(self, file: Path) -> None:
        lenient = self.mode.lenient_for(file)
        problems: list[Problem] = []
        records = read_records(file, problems)
        self._unreadable(problems, lenient)
        if not records and not problems:  # an emptied file would drop its tools without a word
            self.warnings.append(f"{file}: holds no tool profile (empty, or only comments); add its profiles or "
                                 "delete the file")
        for raw, line in records:
            self._keep(self.build(raw, where=str(file), source=file, line=line, lenient=lenient), lenient)

    def add_records(self, records: Iterable[Any], where: str, *, lenient: bool) -> None:
        for number, raw in enumerate(records, start=1):
            self._keep(self.build(from_foreign(raw, mcp=True), where=f"{where} #{number}", source=None, line=None,
                                  lenient=lenient), lenient)

    def _unreadable(self, problems: list[Problem], lenient: bool) -> None:
        if lenient:
            self.warnings.extend(f"{p}; skipped" for p in problems)
            self.skipped += len(problems)
        else:
            self.errors.extend(problems)

    def _keep(self, profile: ToolProfile | None, lenient: bool) -> None:
        if profile is not None:
            self.profiles.append(profile)
            self._lenient[id(profile)] = lenient

    def build(self, raw: Any, *, where: str, source: Path | None, line: int | None,
              lenient: bool) -> ToolProfile | None:
        """One profile from one raw record, or ``None`` (its problems recorded)."""
        here = f"{where}:{line}" if line else where
        if not isinstance(raw, dict):
            self._unreadable([Problem(f"{here}: expected a tool profile mapping, got {type(raw).__name__}", where,
                                      line)], lenient)
            return None
        raw_id = raw.get("id")
        label = "tool without id" if raw_id is None else f"tool {raw_id!r}"
        key_lines: dict[str, int] = getattr(raw, "key_lines", {})
        fatal: list[Problem] = []
        notes: list[str] = []
        tool = None if raw_id is None else str(raw_id)

        shown: dict[str, str] = getattr(raw, "field_names", {})  # an OpenAI/MCP tool's own field names

        def message(field_name: str, text: str) -> Problem:
            at = key_lines.get(field_name, line)
            named = shown.get(field_name, field_name)
            said = f"{where}:{at}: {label}: field {named!r}: {text}" if at else \
                f"{where}: {label}: field {named!r}: {text}"
            return Problem(said, where, at or None, tool, field_name)

        def problem(field_name: str, text: str, *, required: bool = False) -> None:
            if not lenient:
                fatal.append(message(field_name, text))
            elif required:
                fatal.append(message(field_name, f"{text}; tool skipped"))
            else:
                notes.append(str(message(field_name, f"{text}; field dropped")))

        for key in raw:
            if key not in _KNOWN:
                problem(str(key), f"unknown key{suggest(str(key), FIELDS)}")
        values: dict[str, Any] = {}
        for key, read in (("id", tool_id), ("description", tool_description)):
            try:
                values[key] = read(raw)
            except FieldProblem as exc:
                if key == "description" and lenient and "id" in values and is_blank(raw.get("description")):
                    # MCP and OpenAI make the description optional: a published tool without one is kept,
                    # findable by its name, instead of vanishing from the catalog
                    values[key] = derived_description(raw, values["id"])
                    notes.append(str(message(key, f"{exc}; using {values[key]!r} (its name and parameters) so "
                                                  "requests can still find the tool: write a description")))
                else:
                    problem(key, str(exc), required=True)
        if "id" in values:
            try:
                values["name"] = tool_name(raw, values["id"])
            except FieldProblem as exc:
                problem("name", str(exc))
                values["name"] = tool_name({}, values["id"])

        def warn(field_name: str, text: str) -> None:
            notes.append(str(message(field_name, text)))

        for key in raw:
            convert = CONVERTERS.get(key)
            if convert is not None:
                try:
                    values[key] = convert(raw, self.assets, lenient, warn)
                except FieldProblem as exc:
                    problem(exc.field_name, str(exc))
        if fatal:
            if lenient:
                self.warnings.append(str(fatal[0]))
                self.skipped += 1
            else:
                self.errors.extend(fatal)
            return None
        profile = ToolProfile.from_checked({**values, "source": source, "line": line})
        if notes:
            self.warnings.extend(notes)
            self._degraded.add(id(profile))
        return profile

    def finish(self, name: str, root: Path | None, roles: dict[str, tuple[str, ...]]) -> Catalog:
        """Catalog-wide checks (unique ids, ``replaced_by`` targets), then the catalog with its report."""
        seen: dict[str, ToolProfile] = {}
        kept: list[ToolProfile] = []
        for profile in self.profiles:
            first = seen.get(profile.id)
            if first is None:
                seen[profile.id] = profile
                kept.append(profile)
                continue
            where = f"twice in {_at(first)}" if _at(first) == _at(profile) else f"in {_at(first)} and {_at(profile)}"
            text = f"duplicate tool id {profile.id!r} {where}; ids must be unique across the catalog"
            if self._lenient[id(profile)]:
                self.warnings.append(f"{text}; kept the first, skipped the second")
                self.skipped += 1
            else:
                self.errors.append(_problem(text, profile, "id"))
        for i, profile in enumerate(kept):
            if profile.replaced_by and profile.replaced_by not in seen:
                text = f"{_at(profile)}: tool {profile.id!r}: field 'replaced_by': no tool has id " \
                       f"{profile.replaced_by!r}"
                if self._lenient[id(profile)]:
                    self.warnings.append(f"{text}; field dropped")
                    kept[i] = dataclasses.replace(profile, replaced_by=None)
                    self._degraded.add(id(kept[i]))
                else:
                    self.errors.append(_problem(text, profile, "replaced_by"))
        if self.errors:
            raise_problems(self.errors)
        report = LoadReport(len(kept), self.skipped, sum(1 for p in kept if id(p) in self._degraded),
                            tuple(self.warnings))
        if not report.clean:
            log.warning("catalog %s: %s; first warning: %s", name, report.summary(), report.warnings[0])
            for warning in report.warnings:
                log.debug("%s", warning)
        folder = root if root is None or root.is_dir() else root.parent
        assets = self.assets if root is not None else None
        return Catalog(tuple(kept), name, folder, assets, roles, report=report)


def _problem(text: str, profile: ToolProfile, field: str) -> Problem:
    """A problem of one loaded profile: where it was read, its id and the field at fault."""
    return Problem(text, str(profile.source) if profile.source is not None else None, profile.line, profile.id, field)


def _at(profile: ToolProfile) -> str:
    if profile.source is None:
        return f"tool {profile.id!r}"
    return f"{profile.source}:{profile.line}" if profile.line is not None else str(profile.source)


def _empty_message(root: Path, files: list[Path], builder: _Builder) -> str:
    if builder.skipped:
        return (f"catalog {str(root)!r} has no usable tool: all {builder.skipped} records were skipped; first: "
                f"{builder.warnings[0]}")
    if files:
        return (f"catalog {str(root)!r} has no tools: {len(files)} profile file(s) hold none (e.g. "
                f"{files[0].name}); add profiles with at least an id and a description")
    held = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
    what = "is empty" if not held else f"holds no profile file (only {', '.join(held[:5])})"
    return (f"catalog {str(root)!r} has no tools: the folder {what}; add .yaml, .json or .jsonl profiles "
            "(see docs/profiles.md)")
