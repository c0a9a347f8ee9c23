"""Tool profiles: the typed model and the one place where catalog files are parsed.

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
import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from toolrag.errors import CatalogError, ProfileError

__all__ = ["Catalog", "Endpoint", "Example", "ToolImage", "ToolProfile", "load_catalog", "parse_profile_yaml"]

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@+\-]{0,199}$")
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_PROFILE_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")
_META_FILE = "catalog.yaml"
_MAX_PROBLEMS_SHOWN = 1


@dataclass(frozen=True)
class Example:
    """An example request the tool serves; ``image`` is an absolute path inside the catalog's assets."""

    query: str
    arguments: Mapping[str, Any] | None = None
    image: Path | None = None


@dataclass(frozen=True)
class ToolImage:
    """An example image of a tool: ``path`` as written (relative), ``file`` resolved inside the assets folder."""

    path: str
    caption: str
    file: Path


@dataclass(frozen=True)
class Endpoint:
    url: str
    method: str = "POST"


@dataclass(frozen=True)
class ToolProfile:
    """One tool as the retriever sees it. Built only by the loader, so every instance is valid."""

    id: str
    name: str
    description: str
    category: str = "general"
    tags: tuple[str, ...] = ()
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    examples: tuple[Example, ...] = ()
    negative_examples: tuple[str, ...] = ()
    images: tuple[ToolImage, ...] = ()
    permissions: tuple[str, ...] = ()
    mutation: bool = False
    priority: int = 0
    version: str | None = None
    deprecated: bool = False
    replaced_by: str | None = None
    endpoint: Endpoint | None = None
    embedding_text: str | None = None
    source: Path | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)

    @property
    def perm_key(self) -> str:
        """The permission codes this tool requires, sorted and comma-joined ("" = everyone)."""
        return self._memo("perm_key", lambda: ",".join(sorted(set(self.permissions))))

    def _memo(self, key: str, make: Callable[[], str]) -> str:
        """Derived text computed once per profile (profiles are immutable): re-syncing the index after one
        edit reads these for every tool of the catalog. Kept in ``__dict__``, outside the dataclass fields,
        so equality, ``repr`` and ``dataclasses.replace`` ignore it."""
        cache: dict[str, str] = self.__dict__.setdefault("_derived", {})
        if key not in cache:
            cache[key] = make()
        return cache[key]

    def document_text(self) -> str:
        """The text that is embedded: name, description, tags, example queries and image captions.

        The raw parameter schema is left out on purpose (JSON noise dilutes the vector). ``embedding_text``,
        when set, replaces the whole document so a catalog owner has full control.
        """
        return self._memo("document", self._document_text)

    def _document_text(self) -> str:
        if self.embedding_text:
            return self.embedding_text
        parts = [f"{_humanize(self.name)}: {self.description}"]
        if self.tags:
            parts.append("Tags: " + ", ".join(self.tags) + ".")
        parts.extend(ex.query for ex in self.examples if ex.query)
        parts.extend(img.caption for img in self.images if img.caption)
        return "\n".join(p.strip() for p in parts if p and p.strip())

    def lexical_text(self) -> str:
        """The text BM25 indexes: the embedded text plus id, category and parameter names/descriptions."""
        return self._memo("lexical", self._lexical_text)

    def _lexical_text(self) -> str:
        parts = [self.id, self.category, self.document_text()]
        if self.embedding_text:
            parts.append(self.description)
        for pname, pdesc in _schema_fields(self.parameters):
            parts.append(f"{pname} {pdesc}".strip())
        return "\n".join(parts)

    def text_hash(self) -> str:
        """Hash of what gets embedded: a changed hash means the text vector must be re-encoded."""
        return self._memo("hash", lambda: hashlib.sha256(self.document_text().encode("utf-8")).hexdigest())

    def openai_tool(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry for this tool (what gets injected into the LLM prompt)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": _plain(self.parameters),
            },
        }


@dataclass(frozen=True)
class Catalog:
    """A validated set of tool profiles plus the catalog's roles (name -> permission codes)."""

    tools: tuple[ToolProfile, ...]
    name: str = "catalog"
    root: Path | None = None
    assets_dir: Path | None = None
    roles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {t.id: t for t in self.tools})

    def __len__(self) -> int:
        return len(self.tools)

    def __iter__(self) -> Iterator[ToolProfile]:
        return iter(self.tools)

    def get(self, tool_id: str) -> ToolProfile | None:
        return self._by_id.get(tool_id)  # type: ignore[attr-defined]

    @property
    def ids(self) -> list[str]:
        return [t.id for t in self.tools]

    @property
    def categories(self) -> list[str]:
        return sorted({t.category for t in self.tools})

    @property
    def permission_codes(self) -> list[str]:
        return sorted({code for t in self.tools for code in t.permissions})

    def role_codes(self, role: str) -> tuple[str, ...]:
        """The permission codes of a named role; an unknown role is an error listing the known ones."""
        if role not in self.roles:
            known = ", ".join(sorted(self.roles)) or "(this catalog defines no roles)"
            raise CatalogError(f"unknown role {role!r}; roles of catalog {self.name!r}: {known}")
        return self.roles[role]

    def with_tool(self, profile: ToolProfile) -> Catalog:
        """A copy with ``profile`` added or replacing the tool with the same id."""
        tools = [profile if t.id == profile.id else t for t in self.tools]
        if profile.id not in self._by_id:  # type: ignore[attr-defined]
            tools.append(profile)
        return Catalog(tuple(tools), self.name, self.root, self.assets_dir, self.roles)

    def without_tool(self, tool_id: str) -> Catalog:
        tools = tuple(t for t in self.tools if t.id != tool_id)
        return Catalog(tools, self.name, self.root, self.assets_dir, self.roles)


# ----------------------------------------------------------------------------------------------- loading


def load_catalog(path: str | Path) -> Catalog:
    """Load and validate a catalog folder or file; raise ``ProfileError``/``CatalogError`` listing problems."""
    root = Path(path)
    if not root.exists():
        raise CatalogError(f"catalog {str(root)!r} does not exist; pass a folder of YAML profiles or a file")
    folder = root if root.is_dir() else root.parent
    meta = _load_meta(folder / _META_FILE) if (folder / _META_FILE).is_file() else {}
    assets = (folder / str(meta.get("assets_dir", "."))).resolve()
    if root.is_dir():
        files = sorted(
            p
            for p in root.rglob("*")
            if p.is_file() and p.suffix.lower() in _PROFILE_SUFFIXES and p.name != _META_FILE
            and not p.stem.startswith("queries") and not any(part.startswith(".") for part in p.parts)
        )
    else:
        files = [root]
    problems: list[str] = []
    profiles: list[ToolProfile] = []
    for file in files:
        for raw, line in _read_records(file, problems):
            profile = _build_profile(raw, file=file, line=line, assets=assets, problems=problems)
            if profile is not None:
                profiles.append(profile)
    _check_catalog(profiles, problems)
    if problems:
        _raise(problems)
    roles = _parse_roles(meta.get("roles", {}), folder / _META_FILE)
    return Catalog(tuple(profiles), str(meta.get("name", folder.name)), folder, assets, roles)


def parse_profile_yaml(text: str, *, source: Path, assets_dir: Path) -> ToolProfile:
    """Parse one profile from YAML text (the app's editor); raise ``ProfileError`` naming the problem."""
    problems: list[str] = []
    data = _yaml_load(text, source, problems)
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
    err = ProfileError(message)
    err.problems = list(problems)  # type: ignore[attr-defined]
    raise err


class _LineDict(dict[str, Any]):
    """A dict that remembers the line of the mapping and of each key."""

    line: int = 0
    key_lines: dict[str, int]


class _LineLoader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _LineDict:
    loader.flatten_mapping(node)
    out = _LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[str(key)] = key_node.start_mark.line + 1
    return out


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _yaml_load(text: str, file: Path, problems: list[str]) -> Any:
    try:
        return yaml.load(text, Loader=_LineLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{file}:{mark.line + 1}" if mark is not None else str(file)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        problems.append(f"{where}: invalid YAML: {problem}; fix the syntax (indentation, quotes, colons)")
        return None


def _load_meta(file: Path) -> dict[str, Any]:
    problems: list[str] = []
    data = _yaml_load(file.read_text(encoding="utf-8"), file, problems)
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
        roles[str(name)] = tuple(codes)
    return roles


def _read_records(file: Path, problems: list[str]) -> list[tuple[Any, int | None]]:
    """The raw profile records of one file, converted from OpenAI/MCP shapes where needed."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{file}: cannot read the file ({exc}); check it is UTF-8 text")
        return []
    suffix = file.suffix.lower()
    if suffix == ".jsonl":
        records: list[tuple[Any, int | None]] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append((_from_foreign(json.loads(line)), number))
            except json.JSONDecodeError as exc:
                problems.append(f"{file}:{number}: invalid JSON: {exc.msg}; each line must be one JSON object")
        return records
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(f"{file}:{exc.lineno}: invalid JSON: {exc.msg}")
            return []
    else:
        data = _yaml_load(text, file, problems)
    if data is None:
        return []
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data = data["tools"]
    items = data if isinstance(data, list) else [data]
    return [(_from_foreign(item), getattr(item, "line", None)) for item in items]


def _from_foreign(item: Any) -> Any:
    """Turn an OpenAI tool entry or an MCP tool into a profile mapping; leave profiles as they are."""
    if not isinstance(item, dict):
        return item
    if item.get("type") == "function" and isinstance(item.get("function"), dict):
        fn = item["function"]
        out = {"id": fn.get("name"), "name": fn.get("name"), "description": fn.get("description")}
        if fn.get("parameters") is not None:
            out["parameters"] = fn["parameters"]
        return out
    if "inputSchema" in item and "id" not in item:
        out = {"id": item.get("name"), "name": item.get("name"), "description": item.get("description")}
        out["parameters"] = item["inputSchema"]
        annotations = item.get("annotations") or {}
        if isinstance(annotations, dict) and annotations.get("destructiveHint"):
            out["mutation"] = True
        return out
    return item


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
    values["permissions"] = _str_list(raw, "permissions")
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


def _schema(value: Any) -> dict[str, Any]:
    if value is None:
        return {"type": "object", "properties": {}}
    if not isinstance(value, dict):
        raise _Problem("parameters", "expected a JSON Schema object such as {type: object, properties: {...}}")
    plain = _plain(value)
    problem = _schema_problem(json.dumps(plain, sort_keys=True, ensure_ascii=False))
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


def _humanize(identifier: str) -> str:
    """``get_weatherForecast`` -> ``get weather Forecast``: function names read as words."""
    return re.sub(r"[_\-.]+", " ", _CAMEL_RE.sub(" ", identifier)).strip()


def _schema_fields(schema: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    for pname, pschema in properties.items():
        desc = pschema.get("description", "") if isinstance(pschema, dict) else ""
        yield _humanize(str(pname)), str(desc)
        if isinstance(pschema, dict) and isinstance(pschema.get("properties"), dict):
            yield from _schema_fields(pschema)
