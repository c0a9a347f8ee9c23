"""The catalog: a validated set of tool profiles (built by ``toolrag.catalog.loader``), its roles, the report of how
it was loaded, and what is computed once per catalog (lookups by id and name, categories, permission codes,
function names, a copy with one tool replaced).

One tool's typed model is :mod:`toolrag.catalog.tool` (``ToolProfile`` and its parts, re-exported here).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from toolrag.catalog.names import assign_function_names
from toolrag.catalog.report import LoadReport
from toolrag.catalog.tool import PERMISSION_CODE, Endpoint, Example, ToolImage, ToolProfile, codes_of, perm_key
from toolrag.errors import CatalogError
from toolrag.text import has_cjk

__all__ = ["PERMISSION_CODE", "Catalog", "Endpoint", "Example", "ToolImage", "ToolProfile", "codes_of", "perm_key"]

_T = TypeVar("_T")


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
