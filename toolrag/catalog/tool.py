"""One tool: the typed, immutable ``ToolProfile`` (built by ``toolrag.catalog.loader``), its examples, images and
endpoint, and the permission key its codes are stored as.

A ``ToolProfile`` is only ever built from validated input, so the rest of toolrag never re-checks one. It
knows the texts derived from it: what is embedded (:meth:`ToolProfile.document_text`), what BM25 indexes
(:meth:`ToolProfile.lexical_text`) and the OpenAI ``tools`` entry injected into a prompt. The catalog that holds
the profiles is :class:`toolrag.catalog.profile.Catalog`.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

from toolrag.catalog.names import derive_function_name, humanize

__all__ = ["PERMISSION_CODE", "Endpoint", "Example", "ToolImage", "ToolProfile", "codes_of", "perm_key"]

_T = TypeVar("_T")
#: A permission code: no commas (a tool's codes are stored comma-joined as its ``perm_key``) and no spaces.
PERMISSION_CODE = re.compile(r"^[^,\s]{1,200}$")


class _derived(Generic[_T]):
    """``functools.cached_property`` without its per-class lock (Python 3.11 takes it on every first read: a
    restart at 100,000 tools made 400,000 such reads). The value lands in the instance ``__dict__``, outside
    the dataclass fields, so equality, ``repr`` and ``dataclasses.replace`` ignore it and later reads are plain
    attribute lookups. Two threads may both compute a missing value; both results are equal."""

    def __init__(self, make: Callable[[Any], _T]) -> None:
        self._make = make
        self._name = make.__name__

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> _derived[_T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> _T: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> _T | _derived[_T]:
        if instance is None:  # read on the class (introspection, documentation tools)
            return self
        value = instance.__dict__[self._name] = self._make(instance)
        return value


def perm_key(codes: Iterable[str]) -> str:
    """A tool's permission key: its codes (valid :data:`PERMISSION_CODE`), distinct, sorted, comma-joined;
    "" = everyone may use the tool. :func:`codes_of` reads it back."""
    return ",".join(sorted(set(codes)))


def codes_of(key: str) -> tuple[str, ...]:
    """The permission codes of a :func:`perm_key` (the one parser of it; "" = no code)."""
    return tuple(key.split(",")) if key else ()


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
    """One tool as the retriever sees it. Built only by the loader, so every instance is valid.

    ``name`` is the original name, exactly as the tool's server knows it (what ``tools/call`` needs, any
    characters); :attr:`function_name` is the name a model API accepts (see :mod:`toolrag.catalog.names`).
    """

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

    @classmethod
    def from_checked(cls, values: Mapping[str, Any]) -> ToolProfile:
        """A profile from field values the loader has already validated, without the frozen dataclass's
        ``__init__``, which sets each of the 19 fields through ``object.__setattr__``: 0.64 s for 100,000
        profiles against 0.18 s for one dict update (a catalog load at 100,000 tools, with the collector paused).
        Fields not given take their defaults; the result equals ``ToolProfile(**values)``."""
        if not _REQUIRED.issubset(values) or not _FIELD_NAMES.issuperset(values):
            return cls(**values)  # the dataclass names what is missing or unknown
        profile = object.__new__(cls)
        state = profile.__dict__
        state.update(_DEFAULTS)
        for name, factory in _FACTORIES:  # a fresh default per profile, as the dataclass makes it
            if name not in values:
                state[name] = factory()
        state.update(values)
        return profile

    # Derived texts are computed once per profile (profiles are immutable): re-syncing or reopening the index
    # reads these for every tool of the catalog (100,000 tools, several times on a restart).
    @_derived
    def perm_key(self) -> str:
        """The permission codes this tool requires, sorted and comma-joined ("" = everyone)."""
        return perm_key(self.permissions)

    def document_text(self) -> str:
        """The text that is embedded: name, description, tags, example queries and image captions.

        The raw parameter schema is left out on purpose (JSON noise dilutes the vector). ``embedding_text``,
        when set, replaces the whole document so a catalog owner has full control.
        """
        return self._document

    @_derived
    def _document(self) -> str:
        if self.embedding_text:
            return self.embedding_text
        parts = [f"{humanize(self.name)}: {self.description}"]
        if self.tags:
            parts.append("Tags: " + ", ".join(self.tags) + ".")
        parts.extend(ex.query for ex in self.examples if ex.query)
        parts.extend(img.caption for img in self.images if img.caption)
        return "\n".join(p.strip() for p in parts if p and p.strip())

    def lexical_text(self) -> str:
        """The text BM25 indexes: the embedded text plus id, category and parameter names/descriptions."""
        return self._lexical

    @_derived
    def _lexical(self) -> str:
        parts = [self.id, self.category, self._document]
        if self.embedding_text:
            parts.append(self.description)
        for pname, pdesc in _schema_fields(self.parameters):
            parts.append(f"{pname} {pdesc}".strip())
        return "\n".join(parts)

    def text_hash(self) -> str:
        """Hash of what gets embedded: a changed hash means the text vector must be re-encoded."""
        return self._text_hash

    @_derived
    def _text_hash(self) -> str:
        return hashlib.sha256(self._document.encode("utf-8")).hexdigest()

    @property
    def function_name(self) -> str:
        """A valid OpenAI function name for this tool on its own: ``name`` when valid, else derived from it.
        Within a catalog use :meth:`Catalog.function_name`, which also keeps names unique."""
        return derive_function_name(self.name)

    def openai_tool(self, function_name: str | None = None) -> dict[str, Any]:
        """The OpenAI ``tools`` entry for this tool (what gets injected into the LLM prompt), under
        ``function_name`` (default :attr:`function_name`)."""
        return {
            "type": "function",
            "function": {
                "name": function_name or self.function_name,
                "description": self.description,
                "parameters": copy.deepcopy(dict(self.parameters)),
            },
        }


_FIELDS = dataclasses.fields(ToolProfile)
_FIELD_NAMES = frozenset(f.name for f in _FIELDS)
_REQUIRED = frozenset(f.name for f in _FIELDS
                      if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
_DEFAULTS = {f.name: f.default for f in _FIELDS if f.default is not dataclasses.MISSING}
_FACTORIES = tuple((f.name, f.default_factory) for f in _FIELDS if f.default_factory is not dataclasses.MISSING)



#: Parameter names repeat across a catalog's tools (``limit``, ``user_id``): humanised once each.
_humanize_name = functools.lru_cache(maxsize=4096)(humanize)


def _schema_fields(schema: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    for pname, pschema in properties.items():
        desc = pschema.get("description", "") if isinstance(pschema, dict) else ""
        yield _humanize_name(str(pname)), str(desc)
        if isinstance(pschema, dict) and isinstance(pschema.get("properties"), dict):
            yield from _schema_fields(pschema)
