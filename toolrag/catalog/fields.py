"""One converter per profile field: raw value (YAML / JSON) -> the typed value a ``ToolProfile`` holds.

Each converter raises :class:`FieldProblem` naming what is wrong and how to fix it; the loader decides what a
problem means (strict: the catalog is refused; lenient: the field is dropped with a warning). Converters are
independent of each other, so a lenient load keeps every field that is fine.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from toolrag.catalog.names import humanize
from toolrag.catalog.profile import PERMISSION_CODE, Endpoint, Example, ToolImage
from toolrag.catalog.readers import JsonRecord
from toolrag.catalog.schema import check_schema
from toolrag.paths import path_problem, shown

__all__ = ["CONVERTERS", "FIELDS", "FieldProblem", "derived_description", "plain", "suggest", "tool_description",
           "tool_id", "tool_name"]

FIELDS = (
    "id", "name", "description", "category", "tags", "parameters", "examples", "negative_examples", "images",
    "permissions", "mutation", "priority", "version", "deprecated", "replaced_by", "endpoint", "embedding_text",
)
_HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: Ids and names keep whatever characters real catalogs use (``getPM2.5Level``, ``get_rates.``, ``___x``,
#: ``Sales Excl. Tax``), within this length, without control characters or surrounding spaces.
MAX_NAME_CHARS = 1024


class FieldProblem(Exception):
    """One field's value is unusable: ``field_name`` and a message saying what is wrong and how to fix it."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field_name = field_name


Warn = Callable[[str, str], None]
Converter = Callable[[Mapping[str, Any], Path, bool, Warn], Any]


def tool_id(raw: Mapping[str, Any]) -> str:
    return _identifier(raw, "id", required=True)  # type: ignore[return-value]


def tool_name(raw: Mapping[str, Any], tool_id_value: str) -> str:
    """The original name (what the tool answers to); without one, a function-name-safe form of the id."""
    name = _identifier(raw, "name", required=False)
    return name if name is not None else re.sub(r"[^A-Za-z0-9_-]", "_", tool_id_value)[:64]


def _identifier(raw: Mapping[str, Any], key: str, *, required: bool) -> str | None:
    value = raw.get(key)
    if value is None:
        if required:
            raise FieldProblem(key, "is required")
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)  # YAML reads `id: 404` as a number
    if not isinstance(value, str) or not value.strip():
        raise FieldProblem(key, f"expected a non-empty string, got {value!r}")
    if _CONTROL.search(value) or value != value.strip() or len(value) > MAX_NAME_CHARS:
        raise FieldProblem(key, f"{value[:80]!r} is not a valid {key}: up to {MAX_NAME_CHARS} characters without "
                                "line breaks, tabs or surrounding spaces")
    return value


def derived_description(raw: Mapping[str, Any], tool_id_value: str) -> str:
    """A stand-in description for a tool that has none (MCP and OpenAI make it optional, and published servers
    leave it out): its name as words, and its parameters' names ("list files (path, recursive)"). The tool
    stays findable by what it is called; a real description finds it far better."""
    name = raw.get("name") if isinstance(raw.get("name"), str) and raw["name"].strip() else tool_id_value
    words = humanize(str(name)) or str(name)
    schema = raw.get("parameters")
    props = schema.get("properties") if isinstance(schema, dict) else None
    params = [humanize(str(k)) for k in props][:8] if isinstance(props, dict) else []
    return f"{words[:1].upper()}{words[1:]}" + (f" ({', '.join(p for p in params if p)})" if any(params) else "")


def tool_description(raw: Mapping[str, Any]) -> str:
    value = raw.get("description")
    if value is None:
        raise FieldProblem("description", "is required")
    if not isinstance(value, str) or not value.strip():
        raise FieldProblem("description", f"expected a non-empty string, got {value!r}")
    return value.strip()


def _opt_str(key: str) -> Converter:
    def convert(raw: Mapping[str, Any], *_: Any) -> str | None:
        value = raw.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise FieldProblem(key, f"expected a string, got {type(value).__name__} {value!r}")
        return value.strip() or None
    return convert


def _list(raw: Mapping[str, Any], key: str) -> list[Any]:
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise FieldProblem(key, f"expected a list, got {type(value).__name__}")
    return value


def _str_list(key: str) -> Converter:
    def convert(raw: Mapping[str, Any], *_: Any) -> tuple[str, ...]:
        out = []
        for item in _list(raw, key):
            text = item.strip() if isinstance(item, str) else ""
            if not text:
                raise FieldProblem(key, f"expected a list of non-empty strings, found {item!r}")
            out.append(text)
        return tuple(out)
    return convert


def _negative_examples(raw: Mapping[str, Any], *_: Any) -> tuple[str, ...]:
    """Strings, or ``- query: ...`` items like ``examples`` (the two shapes a catalog author reaches for)."""
    out = []
    for i, item in enumerate(_list(raw, "negative_examples")):
        if isinstance(item, dict):
            unknown = set(item) - {"query"}
            if unknown:
                key = sorted(unknown)[0]
                raise FieldProblem("negative_examples", f"item {i}: unknown key {key!r}; a negative example is a "
                                                        "string or {query: ...}")
            item = item.get("query")
        if not isinstance(item, str) or not item.strip():
            raise FieldProblem("negative_examples", f"item {i}: expected a request (a string or {{query: ...}}), "
                                                    f"got {item!r}")
        out.append(item.strip())
    return tuple(out)


def _permissions(raw: Mapping[str, Any], *args: Any) -> tuple[str, ...]:
    codes: tuple[str, ...] = _str_list("permissions")(raw, *args)
    for code in codes:
        if not PERMISSION_CODE.match(code):
            raise FieldProblem("permissions", f"permission code {code!r} is not valid: a code may not contain a "
                                              "comma or a space (list several codes as separate items)")
    return codes


def _flag(key: str) -> Converter:
    def convert(raw: Mapping[str, Any], *_: Any) -> bool:
        value = raw.get(key, False)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise FieldProblem(key, f"expected true or false, got {value!r}")
        return value
    return convert


def _priority(raw: Mapping[str, Any], *_: Any) -> int:
    priority = raw.get("priority", 0)
    if priority is None:
        return 0
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise FieldProblem("priority", f"expected an integer, got {priority!r}")
    return priority


def _version(raw: Mapping[str, Any], *_: Any) -> str | None:
    version = raw.get("version")
    if version is not None and not isinstance(version, str | int | float):
        raise FieldProblem("version", f"expected a version string such as \"2.1\", got {version!r}")
    return None if version is None else str(version)


def _parameters(raw: Mapping[str, Any], _assets: Path, lenient: bool, warn: Warn) -> dict[str, Any]:
    value = raw.get("parameters")
    if value is None:
        return {"type": "object", "properties": {}}
    if not isinstance(value, dict):
        raise FieldProblem("parameters", f"expected a JSON Schema object such as {{type: object, properties: "
                                         f"{{...}}}}, got {type(value).__name__}")
    schema = value if isinstance(raw, JsonRecord) else plain(value)
    try:
        checked = check_schema(schema, lenient=lenient)
    except (TypeError, ValueError) as exc:  # YAML-only values: dates, timestamps, sets...
        raise FieldProblem("parameters", f"must be plain JSON (strings, numbers, booleans, lists, mappings): "
                                         f"{exc}; quote dates and other YAML-only values") from None
    if checked.schema is None:
        raise FieldProblem("parameters", "; ".join(checked.problems))
    for problem in checked.problems:  # lenient: the parts dropped to make the schema valid
        warn("parameters", problem)
    top = checked.schema.get("type", "object")
    if top != "object":
        raise FieldProblem("parameters", f"the top level must be {{type: object}}, got type {top!r}")
    return checked.schema


def plain(value: Any) -> Any:
    """Deep copy into plain dicts and lists (drops the YAML reader's line bookkeeping)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _asset(path_value: Any, field_name: str, assets: Path) -> Path:
    if not isinstance(path_value, str) or not path_value.strip():
        raise FieldProblem(field_name, f"expected an image path relative to {assets}, got {path_value!r}")
    if (problem := path_problem(path_value)) is not None:
        raise FieldProblem(field_name, f"image path {shown(path_value)} {problem}; give a path relative to {assets}")
    resolved = (assets / path_value).resolve()
    if not resolved.is_relative_to(assets):
        raise FieldProblem(field_name, f"image path {path_value!r} resolves outside the catalog's assets folder "
                                       f"{assets}; keep images inside it")
    if not resolved.is_file():
        raise FieldProblem(field_name, f"image {path_value!r} not found in {assets}")
    return resolved


def _examples(raw: Mapping[str, Any], assets: Path, *_: Any) -> tuple[Example, ...]:
    out = []
    for index, item in enumerate(_list(raw, "examples")):
        if isinstance(item, str):
            item = {"query": item}
        if not isinstance(item, dict):
            raise FieldProblem("examples", f"item {index} must be a mapping {{query, arguments?, image?}}")
        unknown = set(item) - {"query", "arguments", "image"}
        if unknown:
            key = sorted(unknown)[0]
            raise FieldProblem("examples", f"item {index}: unknown key {key!r}"
                                           f"{suggest(key, ['query', 'arguments', 'image'])}")
        query = item.get("query")
        if not isinstance(query, str) or not query.strip():
            raise FieldProblem("examples", f"item {index}: 'query' must be a non-empty string")
        arguments = item.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise FieldProblem("examples", f"item {index}: 'arguments' must be a mapping of argument values")
        image = _asset(item["image"], "examples", assets) if item.get("image") is not None else None
        kept = arguments if isinstance(raw, JsonRecord) or arguments is None else plain(arguments)
        out.append(Example(query.strip(), kept, image))
    return tuple(out)


def _images(raw: Mapping[str, Any], assets: Path, *_: Any) -> tuple[ToolImage, ...]:
    out = []
    for index, item in enumerate(_list(raw, "images")):
        if not isinstance(item, dict) or "path" not in item:
            raise FieldProblem("images", f"item {index} must be a mapping {{path, caption}}")
        unknown = set(item) - {"path", "caption"}
        if unknown:
            key = sorted(unknown)[0]
            raise FieldProblem("images", f"item {index}: unknown key {key!r}{suggest(key, ['path', 'caption'])}")
        caption = item.get("caption") or ""
        if not isinstance(caption, str):
            raise FieldProblem("images", f"item {index}: 'caption' must be a string")
        out.append(ToolImage(str(item["path"]), caption.strip(), _asset(item["path"], "images", assets)))
    return tuple(out)


def _endpoint(raw: Mapping[str, Any], *_: Any) -> Endpoint | None:
    value = raw.get("endpoint")
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("url"), str):
        raise FieldProblem("endpoint", "expected {url: https://..., method: POST}")
    method = str(value.get("method", "POST")).upper()
    if method not in _HTTP_METHODS:
        raise FieldProblem("endpoint", f"method {method!r} is not one of {', '.join(_HTTP_METHODS)}")
    return Endpoint(value["url"], method)


_category_text = _opt_str("category")


def _category(raw: Mapping[str, Any], *args: Any) -> str:
    return _category_text(raw, *args) or "general"


#: The optional fields, each with its converter (``id``, ``name`` and ``description`` are read first).
CONVERTERS: dict[str, Converter] = {
    "category": _category,
    "tags": _str_list("tags"),
    "negative_examples": _negative_examples,
    "permissions": _permissions,
    "parameters": _parameters,
    "examples": _examples,
    "images": _images,
    "mutation": _flag("mutation"),
    "deprecated": _flag("deprecated"),
    "priority": _priority,
    "version": _version,
    "replaced_by": _opt_str("replaced_by"),
    "embedding_text": _opt_str("embedding_text"),
    "endpoint": _endpoint,
}


def suggest(key: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, list(choices), n=1, cutoff=0.5)
    if close:
        return f"; did you mean {close[0]!r}?"
    return "; valid keys: " + ", ".join(choices)
