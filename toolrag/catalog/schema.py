"""Parameter schemas: which JSON Schema draft a tool's schema is written in, whether it is valid, and (for
imported catalogs) the valid part of one that is not.

Real MCP servers emit draft-4 forms (``exclusiveMinimum: true``) without declaring ``$schema``, and public
catalogs carry keywords no draft knows (``type: str``). The draft comes from ``$schema`` when declared, else
from the forms used (:func:`detect_draft`); the schema is checked against that draft's meta-schema. Checks are
cached per distinct schema text: large catalogs repeat the same few schemas, and loading 100,000 tools must
not check each one.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from toolrag.jsonio import canonical

__all__ = ["DRAFTS", "SchemaCheck", "argument_problems", "check_schema", "detect_draft"]

#: The drafts recognised, oldest first.
DRAFTS = ("4", "6", "7", "2019-09", "2020-12")
_DECLARED = (("draft-04", "4"), ("draft-06", "6"), ("draft-07", "7"), ("2019-09", "2019-09"),
             ("2020-12", "2020-12"))
_DEFAULT_DRAFT = "7"  # what function-calling APIs document; its meta-schema also checks ~3x faster than 2020-12
_MAX_REPAIRS = 5


@dataclass(frozen=True)
class SchemaCheck:
    """The outcome of checking one schema: ``schema`` to use (``None``: nothing usable), its ``draft``, and
    ``problems``: in strict mode why it is invalid, in lenient mode what was dropped to make it valid."""

    schema: dict[str, Any] | None
    draft: str
    problems: tuple[str, ...]


def detect_draft(schema: Mapping[str, Any]) -> str:
    """The draft of ``schema``: from ``$schema`` when it names one, else from the forms it uses.

    Boolean ``exclusiveMinimum``/``exclusiveMaximum`` (or a root ``id`` without ``$id``) mean draft 4;
    ``prefixItems`` or ``$dynamicRef`` mean 2020-12; ``$recursiveRef`` means 2019-09; ``$defs``,
    ``dependentRequired``, ``dependentSchemas`` or ``unevaluated*`` mean 2020-12 (which reads them the same as
    2019-09); anything else is read as draft 7, which also validates draft-6 schemas."""
    declared = schema.get("$schema")
    if isinstance(declared, str):
        for marker, draft in _DECLARED:
            if marker in declared:
                return draft
    keys: set[str] = set()
    for node in _nodes(schema):
        for key, value in node.items():
            if key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
                return "4"
            keys.add(key)
    if isinstance(schema.get("id"), str) and "$id" not in schema:
        return "4"
    if "$recursiveRef" in keys or "$recursiveAnchor" in keys:
        return "2019-09"
    if keys & {"prefixItems", "$dynamicRef", "$dynamicAnchor", "$defs", "dependentRequired", "dependentSchemas",
               "unevaluatedProperties", "unevaluatedItems"}:
        return "2020-12"
    return _DEFAULT_DRAFT


def check_schema(schema: Mapping[str, Any], *, lenient: bool) -> SchemaCheck:
    """Check a plain-JSON schema against its draft's meta-schema (cached per distinct schema).

    Strict: ``schema`` back when valid, else ``None`` and the first problem with its path. Lenient: every
    keyword the meta-schema rejects is dropped (``properties/x/type: 'str'`` loses only that ``type``), up to
    five rounds; ``None`` when the root itself is wrong. Raises ``TypeError`` for values that are not plain
    JSON (the caller names the field)."""
    draft, repaired, problems = _check(canonical(schema), lenient)
    if not problems:
        return SchemaCheck(dict(schema), draft, ())
    return SchemaCheck(json.loads(repaired) if repaired is not None else None, draft, problems)


def argument_problems(schema: Mapping[str, Any], arguments: Mapping[str, Any], *, limit: int = 3) -> list[str]:
    """What is wrong with ``arguments`` for a tool whose input schema is ``schema`` (read as its draft), as
    ``path: message`` lines (at most ``limit``; empty when they match). A schema whose references cannot be
    resolved here checks nothing (empty): the server that owns the tool still checks the call."""
    import jsonschema
    import referencing.exceptions

    validator = _instance_validator(canonical(schema))
    try:
        errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: [str(p) for p in e.absolute_path])
    except (jsonschema.exceptions.SchemaError, referencing.exceptions.Unresolvable):
        return []
    out = []
    for error in errors[:limit]:
        path = ".".join(str(p) for p in error.absolute_path)
        out.append(f"{path or '(the arguments)'}: {_short(error.message)}")
    return out


@functools.lru_cache(maxsize=1024)
def _instance_validator(text: str) -> Any:
    """A validator of arguments against one schema (by its draft), built once per distinct schema."""
    schema = json.loads(text)
    cls = type(_validator(detect_draft(schema)))
    return cls(schema)


@functools.lru_cache(maxsize=8192)
def _check(text: str, lenient: bool) -> tuple[str, str | None, tuple[str, ...]]:
    value = json.loads(text)
    draft = detect_draft(value)
    validator = _validator(draft)
    errors = _errors(validator, value)
    if not errors:
        return draft, text, ()
    if not lenient:
        path, message = errors[0]
        return draft, None, (f"not a valid JSON Schema at {path or '(root)'}: {message} (read as draft {draft})",)
    dropped: list[str] = []
    for _ in range(_MAX_REPAIRS):
        if not errors:
            return draft, json.dumps(value, sort_keys=True, ensure_ascii=False), tuple(dropped)
        if any(not path for path, _ in errors):
            message = next(m for p, m in errors if not p)
            return draft, None, (*dropped, f"not a valid JSON Schema at (root): {message} (read as draft {draft})")
        for path, message in sorted(errors, key=lambda e: e[0], reverse=True):
            if _delete(value, path.split("/")):
                dropped.append(f"dropped {path} ({message})")
        errors = _errors(validator, value)
    return draft, None, (*dropped, f"not a valid JSON Schema (read as draft {draft}) after {_MAX_REPAIRS} repairs")


@functools.cache
def _validator(draft: str) -> Any:
    """A validator of schemas of ``draft`` (the draft's meta-schema as the schema), built once."""
    import jsonschema

    cls = {"4": jsonschema.Draft4Validator, "6": jsonschema.Draft6Validator, "7": jsonschema.Draft7Validator,
           "2019-09": jsonschema.Draft201909Validator, "2020-12": jsonschema.Draft202012Validator}[draft]
    return cls(cls.META_SCHEMA)


def _errors(validator: Any, value: Any) -> list[tuple[str, str]]:
    out = []
    for error in validator.iter_errors(value):
        path = "/".join(str(p) for p in error.absolute_path)
        out.append((path, _short(error.message)))
    return sorted(set(out))


def _short(message: str) -> str:
    return message if len(message) <= 160 else message[:157] + "..."


def _delete(value: Any, parts: list[str]) -> bool:
    """Delete the key or list item at ``parts`` from ``value``; False when it is not there any more."""
    node = value
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    last = parts[-1]
    if isinstance(node, dict) and last in node:
        del node[last]
        return True
    if isinstance(node, list) and last.isdigit() and int(last) < len(node):
        del node[int(last)]
        return True
    return False


def _nodes(value: Any) -> Iterator[dict[str, Any]]:
    """Every mapping inside ``value`` (depth first)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
