"""Who is asking: the one answer to "may this caller see this tool?" and "which tool does this name mean?".

A :class:`Caller` is made once per request (:meth:`Caller.of` checks the role, the categories and the tool ids
against the catalog) and handed to every surface: the library's search, the CLI, the app, the report, the MCP
server, the gateway's ``call_tool`` and the agent adapters. No other code compares permission sets: a tool is
visible when the caller holds every code it requires (:meth:`Caller.lacks`, the one comparison), passes the
caller's category and tool filters, and is not deprecated (unless asked for) (:meth:`Caller.passes`). The
index's vectorised mask (:meth:`Caller.mask`), the store's filter (``toolrag.index.filters.build_where``) and
every check of one tool (:meth:`Caller.sees`, :meth:`Caller.may_use`) are built from these two. A tool the
caller cannot see is absent for it: never scored, named, counted or resolved, and every figure of a search,
its function names included (:meth:`Caller.function_names`), is computed over the visible tools only.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from toolrag.catalog.names import mention_index, mentions
from toolrag.catalog.profile import Catalog, ToolProfile, codes_of
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
        if role is not None and not role.strip():
            raise QueryError(f"role {role!r} is blank: give a role of the catalog ({', '.join(sorted(catalog.roles))}) "
                             "or leave it out (None) for a caller with no role", field="role")
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
    def lacks(self, required: Iterable[str]) -> tuple[str, ...]:
        """The codes of ``required`` (a tool's permissions, a role's codes) this caller does not hold, sorted:
        the one comparison of permission sets in toolrag."""
        return tuple(sorted(set(required) - self.codes))

    def permits(self, required: Iterable[str]) -> bool:
        """Whether the caller holds every code in ``required`` (:meth:`lacks` is empty)."""
        return not self.lacks(required)

    def permitted_keys(self, keys: Iterable[str]) -> frozenset[str]:
        """The permission keys (:func:`toolrag.catalog.profile.perm_key`) among ``keys`` this caller holds every
        code of: what the index's mask and the store's filter keep (each distinct key compared once)."""
        return frozenset(k for k in set(keys) if self.permits(codes_of(k)))

    def passes(self, category: str, tool_id: str, deprecated: bool) -> bool:
        """Whether a tool of ``category`` with ``tool_id`` passes the caller's narrowing filters: its categories,
        its tool allow-list and deprecation (deprecated tools only when asked for)."""
        return ((self.categories is None or category in self.categories)
                and (self.tools is None or tool_id in self.tools)
                and (self.include_deprecated or not deprecated))

    def sees(self, tool: ToolProfile) -> bool:
        """Whether ``tool`` exists for this caller: permitted, in its categories and tools, and not deprecated
        unless deprecated tools were asked for."""
        return self.may_use(tool) and self.passes(tool.category, tool.id, tool.deprecated)

    def may_use(self, tool: ToolProfile) -> bool:
        """Whether the caller may call ``tool``: permitted (filters and deprecation narrow a search, not a call)."""
        return self.permits(tool.permissions)

    def mask(self, *, perm_keys: Sequence[str], key_of_row: np.ndarray, categories: np.ndarray,
             ids: Sequence[str], deprecated: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`sees` over an index's columns at once: ``perm_keys`` the distinct permission keys and
        ``key_of_row`` each row's index among them, then each row's category, id and deprecation. Returns the
        rows the caller may use (its permissions) and the rows it sees (its filters too), as boolean arrays."""
        allowed = self.permitted_keys(perm_keys)
        ok = np.fromiter((k in allowed for k in perm_keys), bool, len(perm_keys))
        permitted = ok[key_of_row] if len(ok) else np.zeros(len(ids), dtype=bool)
        seen = permitted.copy()
        if self.categories is not None:
            seen &= np.isin(categories, list(self.categories))
        if self.tools is not None:
            seen &= np.fromiter((i in self.tools for i in ids), bool, len(ids))
        if not self.include_deprecated:
            seen &= ~np.asarray(deprecated, dtype=bool)
        return permitted, seen

    def visible(self, catalog: Catalog) -> list[ToolProfile]:
        """The tools of ``catalog`` this caller sees, in catalog order."""
        return [t for t in catalog.tools if self.sees(t)]

    def successor(self, catalog: Catalog, tool: ToolProfile) -> str | None:
        """``tool.replaced_by`` when this caller may use that successor, else ``None``: a successor the caller
        lacks permission for is never named (in results, the prompt, JSON or the app's profile)."""
        successor = catalog.get(tool.replaced_by) if tool.replaced_by else None
        return successor.id if successor is not None and self.may_use(successor) else None

    @property
    def key(self) -> Hashable:
        """The identity of what this caller sees: callers with equal keys see the same tools (for caches of
        values derived from the visible tools)."""
        return self.codes, self.categories, self.tools, self.include_deprecated

    # --------------------------------------------------------------------------------------- resolving
    def function_names(self, catalog: Catalog) -> Mapping[str, str]:
        """Tool id -> the function name this caller's model is given, for the tools it sees: valid, unique among
        them, and what a catalog without the tools it cannot see would give (a hidden tool never renames a
        visible one; :meth:`toolrag.catalog.profile.Catalog.function_names`)."""
        return catalog.function_names(self.key, self.sees, among=self.tools)

    def name_index(self, catalog: Catalog) -> Mapping[str, str]:
        """Lower-cased ids, original names and function names of the tools this caller sees -> tool id, only
        the names that can name one tool inside free text (:func:`toolrag.catalog.names.names_a_tool`); a name
        two visible tools share names neither. Kept per catalog and caller."""
        names = self.function_names(catalog)
        return catalog.memo(("name index", self.key), lambda: mention_index(
            (tool_id, (tool.name, name, tool_id)) for tool_id, name in names.items()
            if (tool := catalog.get(tool_id)) is not None))

    def mentioned(self, catalog: Catalog, text: str) -> list[str]:
        """Ids of the tools this caller sees that ``text`` names (an id, original name or function name as a
        whole identifier-like token, without case), in order of appearance: how a request names a tool and how
        a tool's text names another (``lint``)."""
        return mentions(text, self.name_index(catalog))

    def resolve(self, catalog: Catalog, name: str) -> ToolProfile:
        """The tool ``name`` means for this caller, exactly (with case): its id, else its original name, else a
        function name this caller was given (:meth:`function_names`: unique among the tools it sees). One rule for
        every surface: an original name that more than one tool of the catalog has is refused for every caller,
        whatever each may see, so a call by a bare name never goes to another tool by role; the id still works,
        and the refusal names only the ids of those tools this caller may use (none: answered as an unknown
        name). A tool the caller may not use is answered exactly as a name no tool has, so nothing hidden is
        revealed."""
        if not isinstance(name, str) or not name.strip():
            raise QueryError(f"a tool name must be non-empty text, got {name!r}", field="name")
        tool = catalog.get(name)
        if tool is None:
            matches = catalog.tools_named(name)
            usable = [t.id for t in matches if self.may_use(t)]
            if len(matches) > 1 and usable:
                raise QueryError(f"call {name!r} by its id: a name is not enough to tell the tool here; the ids you "
                                 f"may use for it: {', '.join(usable)}", field="name")
            if matches:
                tool = matches[0] if len(matches) == 1 else None
            else:
                by_function = catalog.memo(("function name -> id", self.key), lambda: {
                    fn: tool_id for tool_id, fn in self.function_names(catalog).items()})
                tool = catalog.get(by_function.get(name, ""))
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
