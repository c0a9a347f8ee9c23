"""Who is asking: the one answer to "may this caller see this tool?" and "which tool does this name mean?".

A :class:`Caller` is made once per request (:meth:`Caller.of` checks the role, the categories and the tool ids
against the catalog) and handed to every surface: the library's search, the CLI, the app, the report, the MCP
server, the gateway's ``call_tool`` and the agent adapters. No other code compares permission sets: a tool is
visible when the caller holds every code it requires (:meth:`Caller.permits`), passes the caller's category
and tool filters, and is not deprecated (unless asked for). A tool the caller cannot see is absent for it:
never scored, named, counted or resolved, and every figure of a search is computed over the visible tools only.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Hashable, Iterable
from dataclasses import dataclass

from toolrag.catalog.profile import Catalog, ToolProfile
from toolrag.errors import QueryError, ToolNotFound

__all__ = ["Caller"]


@dataclass(frozen=True)
class Caller:
    """The permission codes a caller holds (its role's and any given), and what it narrows the catalog to.

    ``categories``: only tools of these categories; ``tools``: only these tool ids (a client that sends its own
    function list); ``include_deprecated``: deprecated tools too (``rank_of`` for authors). ``None`` means no
    such filter. ``everything`` marks the catalog's author, who holds every code of the catalog."""

    codes: frozenset[str] = frozenset()
    role: str | None = None
    categories: frozenset[str] | None = None
    tools: frozenset[str] | None = None
    include_deprecated: bool = False

    @classmethod
    def of(cls, catalog: Catalog, *, role: str | None = None, permissions: Collection[str] | None = None,
           categories: Collection[str] | None = None, tools: Collection[str] | None = None,
           include_deprecated: bool = False) -> Caller:
        """The caller with ``role`` (a role of ``catalog``: its codes) and ``permissions`` (codes it holds
        besides), filtered to ``categories`` and ``tools``. An unknown role is a ``CatalogError``, an unknown
        category or tool id a :class:`toolrag.errors.QueryError`, each naming the value and the valid ones."""
        if isinstance(permissions, str) or isinstance(categories, str) or isinstance(tools, str):
            raise QueryError("permissions, categories and tools take a list of strings, not one string",
                             field="permissions" if isinstance(permissions, str) else
                             "categories" if isinstance(categories, str) else "tools")
        codes = set(_texts(permissions, "permission code"))
        if role is not None and not isinstance(role, str):
            raise QueryError(f"role must be a role name, got {type(role).__name__}", field="role")
        if role:
            codes |= set(catalog.role_codes(role))
        wanted = None
        if categories:
            wanted = frozenset(_texts(categories, "category"))
            unknown = sorted(wanted - set(catalog.categories))
            if unknown:
                raise QueryError(f"unknown category {unknown[0]!r}{closest(unknown[0], catalog.categories)}; "
                                 f"categories: {', '.join(catalog.categories)}", field="categories")
        only = None
        if tools is not None:
            only = frozenset(_texts(tools, "tool id"))
            missing = sorted(i for i in only if catalog.get(i) is None)
            if missing:
                raise QueryError(f"unknown tool id {missing[0]!r}{closest(missing[0], catalog.ids)}: give ids of "
                                 "the catalog's tools", field="tools")
        return cls(frozenset(codes), role or None, wanted, only, bool(include_deprecated))

    @classmethod
    def author(cls, catalog: Catalog, *, include_deprecated: bool = False) -> Caller:
        """The catalog's author: holds every permission code the catalog uses, so it sees every tool."""
        return cls(frozenset(catalog.permission_codes), include_deprecated=include_deprecated)

    # ------------------------------------------------------------------------------------------ seeing
    def permits(self, required: Iterable[str]) -> bool:
        """Whether the caller holds every code in ``required`` (a tool's permissions): the one comparison of
        permission sets in toolrag (the index's vectorised filter calls it once per distinct set)."""
        return set(required) <= self.codes

    def sees(self, tool: ToolProfile) -> bool:
        """Whether ``tool`` exists for this caller: permitted, in its categories and tools, and not deprecated
        unless deprecated tools were asked for."""
        return (self.permits(tool.permissions)
                and (self.categories is None or tool.category in self.categories)
                and (self.tools is None or tool.id in self.tools)
                and (self.include_deprecated or not tool.deprecated))

    def may_use(self, tool: ToolProfile) -> bool:
        """Whether the caller may call ``tool``: permitted (filters and deprecation narrow a search, not a call)."""
        return self.permits(tool.permissions)

    def visible(self, catalog: Catalog) -> list[ToolProfile]:
        """The tools of ``catalog`` this caller sees, in catalog order."""
        return [t for t in catalog.tools if self.sees(t)]

    @property
    def key(self) -> Hashable:
        """The identity of what this caller sees: callers with equal keys see the same tools (for caches of
        values derived from the visible tools)."""
        return self.codes, self.categories, self.tools, self.include_deprecated

    # --------------------------------------------------------------------------------------- resolving
    def resolve(self, catalog: Catalog, name: str) -> ToolProfile:
        """The tool ``name`` means for this caller: its id, else the function name a model called, else its
        original name. One rule for every surface: a name that more than one tool of the catalog answers to
        (as a function name or an original name) is refused for every caller, whatever each may see, so a call
        never goes to another tool by role; the id still works, and the refusal names only the ids of those
        tools this caller may use (none: answered as an unknown name). A tool the caller may not use is answered
        exactly as a name no tool has, so nothing hidden is revealed."""
        if not isinstance(name, str) or not name.strip():
            raise QueryError(f"a tool name must be non-empty text, got {name!r}", field="name")
        tool = catalog.get(name)
        if tool is None:
            matches = catalog.tools_named(name)
            usable = [t.id for t in matches if self.may_use(t)]
            if len(matches) > 1 and usable:
                raise QueryError(f"call {name!r} by its id: a name is not enough to tell the tool here; the ids you "
                                 f"may use for it: {', '.join(usable)}", field="name")
            tool = matches[0] if len(matches) == 1 else None
        if tool is None or not self.may_use(tool):
            raise ToolNotFound(f"no tool named {name!r} is available to this caller; search_tools lists the tools "
                               "you may use", tool=name)
        return tool


def _texts(values: Iterable[object] | None, what: str) -> list[str]:
    out = []
    for value in values or ():
        if not isinstance(value, str):
            raise QueryError(f"a {what} must be text, got {value!r}")
        out.append(value)
    return out


def closest(value: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, else empty."""
    close = difflib.get_close_matches(value, sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
