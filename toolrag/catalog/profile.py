"""Tool profiles: the typed, immutable model of a tool and of a catalog (built by ``toolrag.catalog.loader``).

A ``ToolProfile`` is only ever built from validated input, so the rest of toolrag never re-checks one. It
knows the texts derived from it: what is embedded (:meth:`ToolProfile.document_text`), what BM25 indexes
(:meth:`ToolProfile.lexical_text`) and the OpenAI ``tools`` entry injected into a prompt.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import re
import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

from toolrag.catalog.names import assign_function_names, derive_function_name, humanize
from toolrag.catalog.report import LoadReport
from toolrag.errors import CatalogError
from toolrag.text import has_cjk

__all__ = ["PERMISSION_CODE", "Catalog", "Endpoint", "Example", "ToolImage", "ToolProfile", "codes_of", "perm_key"]

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


@dataclass(frozen=True)
class Catalog:
    """A validated set of tool profiles plus the catalog's roles (name -> permission codes) and the report of
    how it was loaded (:class:`toolrag.catalog.report.LoadReport`)."""

    tools: tuple[ToolProfile, ...]
    name: str = "catalog"
    root: Path | None = None
    assets_dir: Path | None = None
    roles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    report: LoadReport = field(default_factory=LoadReport, compare=False)

    def function_name(self, tool_id: str) -> str:
        """The OpenAI function name of tool ``tool_id`` among every tool of the catalog (as its author sees it);
        a caller's names are :meth:`toolrag.catalog.caller.Caller.function_names`."""
        return self.function_names(None, lambda tool: True)[tool_id]

    def function_names(self, key: Hashable, sees: Callable[[ToolProfile], bool],
                       among: Iterable[str] | None = None) -> Mapping[str, str]:
        """Tool id -> function name among the tools ``sees`` keeps (what one caller sees; ``key`` identifies
        it, computed once per catalog and key): valid, unique among those tools and deterministic
        (:func:`toolrag.catalog.names.assign_function_names`). A tool's name depends only on the tools kept, so a
        tool the caller cannot see never changes a name it gets; where two kept tools share a name, the one
        needing fewer permission codes keeps it (then catalog order), so a tool everyone may use is called
        the same by every caller. ``among``: ids the kept tools are among (a tool allow-list), when known."""
        def build() -> Mapping[str, str]:
            rows = self._position()
            tools = self.tools if among is None else [self.tools[rows[i]] for i in sorted(
                (i for i in among if i in rows), key=rows.__getitem__)]  # an allow-list: only its tools are read
            kept = sorted((t for t in tools if sees(t)), key=lambda t: len(set(t.permissions)))  # stable
            return assign_function_names((t.id, t.name) for t in kept)
        return self.memo(("function names", key), build)

    def memo(self, key: Hashable, build: Callable[[], _T]) -> _T:
        """``build()``, computed once per catalog and ``key``: what one caller's view of the tools derives
        (its function names, its name index). It holds values that depend on the tools' names, permissions,
        categories and deprecation only (a copy made by :meth:`with_tool` keeps it when those are unchanged);
        past 64 keys it starts over, so a stream of distinct tool allow-lists cannot grow it without bound."""
        memo: dict[Hashable, Any] | None = self.__dict__.get("_memo")
        if memo is None:
            memo = {}
            object.__setattr__(self, "_memo", memo)
        try:
            return memo[key]
        except KeyError:
            pass
        value = build()
        if len(memo) >= 64:
            memo.clear()
        memo[key] = value
        return value

    def __len__(self) -> int:
        return len(self.tools)

    def __iter__(self) -> Iterator[ToolProfile]:
        return iter(self.tools)

    def get(self, tool_id: str) -> ToolProfile | None:
        return self._lookup().get(tool_id)

    @property
    def ids(self) -> list[str]:
        return list(self.id_order)

    @property
    def id_order(self) -> tuple[str, ...]:
        """The tool ids in catalog order, computed once per catalog (an index compares them on every sync)."""
        return self._cached("_ids", lambda: tuple(t.id for t in self.tools))

    @property
    def chinese_tools(self) -> tuple[bool, ...]:
        """Per tool (catalog order), whether its embedded text holds any Chinese (computed once per catalog): the
        decision's language match reads it for the top tool."""
        cached: tuple[bool, ...] | None = self.__dict__.get("_chinese_tools")
        if cached is None:
            cached = tuple(has_cjk(t.document_text()) for t in self.tools)
            object.__setattr__(self, "_chinese_tools", cached)
        return cached

    def tools_named(self, name: str) -> tuple[ToolProfile, ...]:
        """The tools whose original name is ``name``, in catalog order (the name index is built once per
        catalog, so resolving a model's call does not scan the catalog)."""
        index: dict[str, tuple[ToolProfile, ...]] | None = self.__dict__.get("_by_name")
        if index is None:
            found: dict[str, list[ToolProfile]] = {}
            for tool in self.tools:
                found.setdefault(tool.name, []).append(tool)
            index = {key: tuple(tools) for key, tools in found.items()}
            object.__setattr__(self, "_by_name", index)
        return index.get(name, ())

    @property
    def image_rows(self) -> tuple[tuple[int, Path], ...]:
        """(row of the tool, image file) of every example image, in catalog order (computed once)."""
        cached: tuple[tuple[int, Path], ...] | None = self.__dict__.get("_image_rows")
        if cached is None:
            cached = tuple((row, img.file) for row, t in enumerate(self.tools) for img in t.images)
            object.__setattr__(self, "_image_rows", cached)
        return cached

    def rows_changed_since(self, earlier: Catalog) -> list[int] | None:
        """Rows whose profile is not ``earlier``'s very object, when both catalogs hold the same ids in the same
        order (``None`` otherwise). Profiles are immutable, so an index re-checks only these rows; a copy made
        by :meth:`with_tool` knows its one replaced row without looking at the others."""
        parent: tuple[weakref.ref[Catalog], int] | None = self.__dict__.get("_parent")
        if parent is not None and parent[0]() is earlier:
            return [parent[1]]
        if self.id_order != earlier.id_order:
            return None
        return [n for n, (t, e) in enumerate(zip(self.tools, earlier.tools, strict=True)) if t is not e]

    def _lookup(self) -> dict[str, ToolProfile]:
        by_id: dict[str, ToolProfile] | None = self.__dict__.get("_by_id")
        if by_id is None:
            by_id = {t.id: t for t in self.tools}
            object.__setattr__(self, "_by_id", by_id)
        return by_id

    @property
    def categories(self) -> list[str]:
        """The tools' categories, sorted (computed once per catalog: every search with a category filter
        checks against them)."""
        return list(self._cached("_categories", lambda: tuple(sorted({t.category for t in self.tools}))))

    @property
    def permission_codes(self) -> list[str]:
        """The permission codes the tools require, sorted (computed once per catalog)."""
        return list(self._cached("_codes", lambda: tuple(sorted({c for t in self.tools for c in t.permissions}))))

    def _cached(self, name: str, compute: Callable[[], tuple[str, ...]]) -> tuple[str, ...]:
        value: tuple[str, ...] | None = self.__dict__.get(name)
        if value is None:
            value = compute()
            object.__setattr__(self, name, value)
        return value

    @property
    def known_codes(self) -> frozenset[str]:
        """Every permission code a tool requires or a role holds: a code outside them grants nothing."""
        return frozenset(self.permission_codes) | {c for codes in self.roles.values() for c in codes}

    def role_codes(self, *roles: str) -> tuple[str, ...]:
        """The permission codes the named roles hold together (the one way from a role to its codes); an unknown
        role is an error listing the known ones."""
        for role in roles:
            if role not in self.roles:
                known = ", ".join(sorted(self.roles)) or "(this catalog defines no roles)"
                raise CatalogError(f"unknown role {role!r}; roles of catalog {self.name!r}: {known}")
        if len(roles) == 1:
            return tuple(self.roles[roles[0]])
        return tuple(dict.fromkeys(c for role in roles for c in self.roles[role]))

    def with_tool(self, profile: ToolProfile) -> Catalog:
        """A copy with ``profile`` added or replacing the tool with the same id. The other profiles are the
        same objects (an index re-checks only the new one), and what this catalog computed once (categories,
        permission codes, function names) carries over when the new profile leaves it unchanged."""
        old = self.get(profile.id)
        if old is None:
            return Catalog((*self.tools, profile), self.name, self.root, self.assets_dir, self.roles, self.report)
        row = self._position()[profile.id]
        tools = list(self.tools)
        tools[row] = profile
        out = Catalog(tuple(tools), self.name, self.root, self.assets_dir, self.roles, self.report)
        by_id = dict(self._lookup())
        by_id[profile.id] = profile
        for name, value in (("_by_id", by_id), ("_positions", self.__dict__["_positions"]),
                            ("_ids", self.id_order), ("_parent", (weakref.ref(self), row))):
            object.__setattr__(out, name, value)
        same_codes = set(old.permissions) == set(profile.permissions)
        kept = {"_categories": old.category == profile.category, "_codes": same_codes,
                "_memo": (old.name, old.category, old.deprecated) == (profile.name, profile.category,
                                                                       profile.deprecated) and same_codes,
                "_by_name": old.name == profile.name,
                "_image_rows": old.images == profile.images}
        for name, unchanged in kept.items():
            if unchanged and name in self.__dict__:
                object.__setattr__(out, name, self.__dict__[name])
        return out

    def _position(self) -> dict[str, int]:
        """Row of each tool id (computed once per catalog, shared by the copies :meth:`with_tool` makes)."""
        positions: dict[str, int] | None = self.__dict__.get("_positions")
        if positions is None:
            positions = {t.id: n for n, t in enumerate(self.tools)}
            object.__setattr__(self, "_positions", positions)
        return positions

    def without_tool(self, tool_id: str) -> Catalog:
        tools = tuple(t for t in self.tools if t.id != tool_id)
        return Catalog(tools, self.name, self.root, self.assets_dir, self.roles, self.report)


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
