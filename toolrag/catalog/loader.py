"""Catalog loading: the one place where catalog files are turned into validated ``ToolProfile`` objects.

A catalog is a folder (or a single file) of tool profiles. Accepted formats:

- YAML: one profile (a mapping) or a list of profiles per file (``*.yaml``/``*.yml``);
- JSON Lines: one profile per line (``*.jsonl``);
- an OpenAI ``tools`` list: ``[{"type": "function", "function": {name, description, parameters}}]``;
- an MCP ``tools/list`` result: ``{"tools": [{name, description, inputSchema}]}``.

In a folder, ``catalog.yaml`` holds catalog metadata (``name``, ``assets_dir``, ``roles``) and files named
``queries.*`` hold labelled queries; neither is read as profiles. Everything is validated before anything is
returned, so a catalog that fails validation is never indexed.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolrag.catalog.profile import PERMISSION_CODE, Catalog, Endpoint, Example, ToolImage, ToolProfile
from toolrag.catalog.readers import read_records, yaml_load
from toolrag.errors import CatalogError, ProfileError

__all__ = ["META_FILE", "PROFILE_SUFFIXES", "catalog_files", "load_catalog", "parse_profile_yaml"]

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@+\-]{0,199}$")
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
PROFILE_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")
META_FILE = "catalog.yaml"
_MAX_PROBLEMS_SHOWN = 1


def load_catalog(path: str | Path) -> Catalog:
    """Load and validate a catalog folder or file; raise ``ProfileError``/``CatalogError`` listing problems."""
    root = Path(path)
    if not root.exists():
        raise CatalogError(f"catalog {str(root)!r} does not exist; pass a folder of YAML profiles or a file")
    folder = root if root.is_dir() else root.parent
    meta = _load_meta(folder / META_FILE) if (folder / META_FILE).is_file() else {}
    assets = (folder / str(meta.get("assets_dir", "."))).resolve()
    files = catalog_files(root)
    problems: list[str] = []
    profiles: list[ToolProfile] = []
    for file in files:
        for raw, line in read_records(file, problems):
            profile = _build_profile(raw, file=file, line=line, assets=assets, problems=problems)
            if profile is not None:
                profiles.append(profile)
    _check_catalog(profiles, problems)
    if problems:
        _raise(problems)
    roles = _parse_roles(meta.get("roles", {}), folder / META_FILE)
    return Catalog(tuple(profiles), str(meta.get("name", folder.name)), folder, assets, roles)


def catalog_files(path: str | Path) -> list[Path]:
    """The profile files of a catalog: a file is itself; a folder gives its ``.yaml``/``.yml``/``.json``/
    ``.jsonl`` files at any depth, sorted, except ``catalog.yaml``, labelled queries (``queries*``) and
    anything under a hidden component (``.history/``, ``.git/``) *inside* the folder. Hidden folders above
    the catalog (``~/.config/tools``, ``../tools``) do not count."""
    root = Path(path)
    if root.is_file():
        return [root]
    return sorted(
        p for p in root.rglob("*")
        if p.is_file() and p.suffix.lower() in PROFILE_SUFFIXES and p.name != META_FILE
        and not p.stem.startswith("queries")
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def parse_profile_yaml(text: str, *, source: Path, assets_dir: Path) -> ToolProfile:
    """Parse one profile from YAML text (the app's editor); raise ``ProfileError`` naming the problem."""
    problems: list[str] = []
    data = yaml_load(text, source, problems)
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    if not problems and not isinstance(data, dict):
        problems.append(f"{source}: expected one tool profile (a YAML mapping with id, description, ...)")
    profile = None
    if not problems:
        profile = _build_profile(data, file=source, line=getattr(data, "line", 1), assets=assets_dir,
                                 problems=problems)
    if problems or profile is None:
        _raise(problems or [f"{source}: invalid profile"])
    return profile  # type: ignore[return-value]


def _raise(problems: list[str]) -> None:
    extra = len(problems) - _MAX_PROBLEMS_SHOWN
    message = "; ".join(problems[:_MAX_PROBLEMS_SHOWN])
    if extra > 0:
        message += f" (+{extra} more problem{'s' if extra > 1 else ''}; `toolrag lint` lists them all)"
    raise ProfileError(message, problems)


_FIELDS = (
    "id", "name", "description", "category", "tags", "parameters", "examples", "negative_examples", "images",
    "permissions", "mutation", "priority", "version", "deprecated", "replaced_by", "endpoint", "embedding_text",
)


class _Problem(Exception):
    """Internal: one field problem, turned into a located message by ``_build_profile``."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field_name = field_name


def _build_profile(
    raw: Any, *, file: Path, line: int | None, assets: Path, problems: list[str]
) -> ToolProfile | None:
    where = f"{file}:{line}" if line else str(file)
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a tool profile mapping, got {type(raw).__name__}")
        return None
    tool_id = raw.get("id")
    label = f"tool {tool_id!r}" if isinstance(tool_id, str) else "tool without id"
    key_lines: dict[str, int] = getattr(raw, "key_lines", {})

    def report(field_name: str, message: str) -> None:
        at = key_lines.get(field_name, line)
        problems.append(f"{file}:{at}: {label}: field {field_name!r}: {message}" if at
                        else f"{file}: {label}: field {field_name!r}: {message}")

    before = len(problems)
    for key in raw:
        if key not in _FIELDS:
            report(str(key), f"unknown key{_suggest(str(key), _FIELDS)}")
    try:
        values = _convert(raw, assets)
    except _Problem as exc:
        report(exc.field_name, str(exc))
        return None
    if len(problems) > before:
        return None
    return ToolProfile(**values, source=file, line=line)


def _convert(raw: dict[str, Any], assets: Path) -> dict[str, Any]:
    tool_id = _required_str(raw, "id")
    if not _ID_RE.match(tool_id):
        raise _Problem("id", f"{tool_id!r} is not a valid id; use letters, digits and . _ - : / (no spaces)")
    name = raw.get("name")
    if name is None:
        name = re.sub(r"[^A-Za-z0-9_-]", "_", tool_id)[:64]
    elif not isinstance(name, str) or not _NAME_RE.match(name):
        raise _Problem("name", f"{name!r} is not a valid function name; use 1-64 of [A-Za-z0-9_-]")
    description = _required_str(raw, "description")
    values: dict[str, Any] = {"id": tool_id, "name": name, "description": description.strip()}
    values["category"] = _opt_str(raw, "category") or "general"
    values["tags"] = _str_list(raw, "tags")
    values["negative_examples"] = _str_list(raw, "negative_examples")
    values["permissions"] = _permissions(raw)
    values["parameters"] = _schema(raw.get("parameters"))
    values["examples"] = tuple(_example(item, i, assets) for i, item in enumerate(_list(raw, "examples")))
    values["images"] = tuple(_image(item, i, assets) for i, item in enumerate(_list(raw, "images")))
    for flag in ("mutation", "deprecated"):
        value = raw.get(flag, False)
        if not isinstance(value, bool):
            raise _Problem(flag, f"expected true or false, got {value!r}")
        values[flag] = value
    priority = raw.get("priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise _Problem("priority", f"expected an integer, got {priority!r}")
    values["priority"] = priority
    version = raw.get("version")
    if version is not None and not isinstance(version, str | int | float):
        raise _Problem("version", f"expected a version string such as \"2.1\", got {version!r}")
    values["version"] = None if version is None else str(version)
    values["replaced_by"] = _opt_str(raw, "replaced_by")
    values["embedding_text"] = _opt_str(raw, "embedding_text")
    values["endpoint"] = _endpoint(raw.get("endpoint"))
    return values


def _required_str(raw: Mapping[str, Any], key: str) -> str:
    value = raw.get(key)
    if value is None:
        raise _Problem(key, "is required")
    if not isinstance(value, str) or not value.strip():
        raise _Problem(key, f"expected a non-empty string, got {value!r}")
    return value


def _opt_str(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Problem(key, f"expected a string, got {type(value).__name__} {value!r}")
    return value.strip() or None


def _list(raw: Mapping[str, Any], key: str) -> list[Any]:
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Problem(key, f"expected a list, got {type(value).__name__}")
    return value


def _str_list(raw: Mapping[str, Any], key: str) -> tuple[str, ...]:
    items = _list(raw, key)
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise _Problem(key, f"expected a list of non-empty strings, found {item!r}")
    return tuple(item.strip() for item in items)


def _permissions(raw: Mapping[str, Any]) -> tuple[str, ...]:
    codes = _str_list(raw, "permissions")
    for code in codes:
        if not PERMISSION_CODE.match(code):
            raise _Problem("permissions", f"permission code {code!r} is not valid: a code may not contain a "
                                          "comma or a space (list several codes as separate items)")
    return codes


def _schema(value: Any) -> dict[str, Any]:
    if value is None:
        return {"type": "object", "properties": {}}
    if not isinstance(value, dict):
        raise _Problem("parameters", "expected a JSON Schema object such as {type: object, properties: {...}}")
    plain = _plain(value)
    try:
        canonical = json.dumps(plain, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as exc:  # YAML-only values: dates, timestamps, sets...
        raise _Problem("parameters", f"must be plain JSON (strings, numbers, booleans, lists, mappings): {exc}; "
                                     "quote dates and other YAML-only values") from None
    problem = _schema_problem(canonical)
    if problem:
        raise _Problem("parameters", problem)
    if value.get("type", "object") != "object":
        raise _Problem("parameters", f"the top level must be {{type: object}}, got type {value.get('type')!r}")
    return plain


@functools.lru_cache(maxsize=4096)
def _schema_problem(canonical: str) -> str:
    """Why a parameters schema is not valid JSON Schema ('' when it is), cached: catalogs repeat schemas.

    Checked against the meta-schema its ``$schema`` names, else draft 7 (what function-calling APIs
    document; its meta-schema checks about 3x faster than 2020-12's, which matters at 100,000 tools).
    """
    import jsonschema

    value = json.loads(canonical)
    try:
        jsonschema.validators.validator_for(value, default=jsonschema.Draft7Validator).check_schema(value)
    except jsonschema.SchemaError as exc:
        path = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return f"not a valid JSON Schema at {path}: {exc.message}"
    return ""


def _plain(value: Any) -> Any:
    """Deep copy into plain dicts and lists (drops the loader's line bookkeeping)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _asset(path_value: Any, field_name: str, assets: Path) -> Path:
    if not isinstance(path_value, str) or not path_value.strip():
        raise _Problem(field_name, f"expected an image path relative to {assets}, got {path_value!r}")
    resolved = (assets / path_value).resolve()
    if not resolved.is_relative_to(assets):
        raise _Problem(field_name, f"image path {path_value!r} resolves outside the catalog's assets folder "
                                   f"{assets}; keep images inside it")
    if not resolved.is_file():
        raise _Problem(field_name, f"image {path_value!r} not found in {assets}")
    return resolved


def _example(item: Any, index: int, assets: Path) -> Example:
    if isinstance(item, str):
        item = {"query": item}
    if not isinstance(item, dict):
        raise _Problem("examples", f"item {index} must be a mapping {{query, arguments?, image?}}")
    unknown = set(item) - {"query", "arguments", "image"}
    if unknown:
        key = sorted(unknown)[0]
        raise _Problem("examples", f"item {index}: unknown key {key!r}{_suggest(key, ['query', 'arguments', 'image'])}")
    query = item.get("query")
    if not isinstance(query, str) or not query.strip():
        raise _Problem("examples", f"item {index}: 'query' must be a non-empty string")
    arguments = item.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise _Problem("examples", f"item {index}: 'arguments' must be a mapping of argument values")
    image = _asset(item["image"], "examples", assets) if item.get("image") is not None else None
    return Example(query.strip(), _plain(arguments) if arguments is not None else None, image)


def _image(item: Any, index: int, assets: Path) -> ToolImage:
    if not isinstance(item, dict) or "path" not in item:
        raise _Problem("images", f"item {index} must be a mapping {{path, caption}}")
    unknown = set(item) - {"path", "caption"}
    if unknown:
        key = sorted(unknown)[0]
        raise _Problem("images", f"item {index}: unknown key {key!r}{_suggest(key, ['path', 'caption'])}")
    caption = item.get("caption") or ""
    if not isinstance(caption, str):
        raise _Problem("images", f"item {index}: 'caption' must be a string")
    return ToolImage(str(item["path"]), caption.strip(), _asset(item["path"], "images", assets))


def _endpoint(value: Any) -> Endpoint | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("url"), str):
        raise _Problem("endpoint", "expected {url: https://..., method: POST}")
    method = str(value.get("method", "POST")).upper()
    if method not in _HTTP_METHODS:
        raise _Problem("endpoint", f"method {method!r} is not one of {', '.join(_HTTP_METHODS)}")
    return Endpoint(value["url"], method)


def _check_catalog(profiles: Sequence[ToolProfile], problems: list[str]) -> None:
    seen: dict[str, ToolProfile] = {}
    for profile in profiles:
        first = seen.get(profile.id)
        if first is not None:
            problems.append(
                f"duplicate tool id {profile.id!r} in {first.source}:{first.line} and "
                f"{profile.source}:{profile.line}; ids must be unique across the catalog"
            )
        else:
            seen[profile.id] = profile
    for profile in profiles:
        if profile.replaced_by and profile.replaced_by not in seen:
            problems.append(
                f"{profile.source}:{profile.line}: tool {profile.id!r}: field 'replaced_by': "
                f"no tool has id {profile.replaced_by!r}"
            )


def _suggest(key: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, list(choices), n=1, cutoff=0.5)
    if close:
        return f"; did you mean {close[0]!r}?"
    return "; valid keys: " + ", ".join(choices)


def _load_meta(file: Path) -> dict[str, Any]:
    problems: list[str] = []
    data = yaml_load(file.read_text(encoding="utf-8"), file, problems)
    if problems:
        _raise(problems)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CatalogError(f"{file}: expected a mapping with name, assets_dir and roles")
    unknown = set(data) - {"name", "assets_dir", "roles", "description"}
    if unknown:
        key = sorted(unknown)[0]
        raise CatalogError(f"{file}: unknown key {key!r}{_suggest(key, ['name', 'assets_dir', 'roles'])}")
    return dict(data)


def _parse_roles(raw: Any, file: Path) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, dict):
        raise CatalogError(f"{file}: 'roles' must map a role name to a list of permission codes")
    roles: dict[str, tuple[str, ...]] = {}
    for name, codes in raw.items():
        if codes is None:
            codes = []
        if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
            raise CatalogError(f"{file}: role {name!r} must be a list of permission codes (strings)")
        bad = [c for c in codes if not PERMISSION_CODE.match(c.strip())]
        if bad:
            raise CatalogError(f"{file}: role {name!r}: permission code {bad[0]!r} is not valid: a code may "
                               "not contain a comma or a space (list several codes as separate items)")
        roles[str(name)] = tuple(c.strip() for c in codes)
    return roles
