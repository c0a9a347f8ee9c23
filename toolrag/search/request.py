"""A request checked against a catalog before any model runs: clean text, a caller, known filters.

:func:`prepare_request` is the one check of what a caller sends (the library's :meth:`ToolRetriever.search`,
the CLI before it loads a model, the app): text no encoder can read is replaced and said so, a query above
:data:`MAX_QUERY_CHARS` characters is cut and said so (and never echoed whole), an unknown role or category is
a :class:`toolrag.errors.QueryError` naming the value and the valid ones, and a permission code that no tool
or role of the catalog uses is a note (a warning on ``toolrag search``, an error in ``toolrag eval``).
Nothing here needs a model, so a bad request is refused in milliseconds.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from toolrag.catalog.profile import Catalog, ToolProfile
from toolrag.errors import QueryError
from toolrag.search.query import MAX_QUERY_CHARS
from toolrag.text import clean_text

__all__ = ["MAX_QUERY_CHARS", "Request", "prepare_request", "unknown_codes", "visible_successor"]


@dataclass(frozen=True)
class Request:
    """A checked request: cleaned (and cut) text, the caller's permission codes and what to tell them."""

    query: str
    history: tuple[str, ...]
    codes: frozenset[str]
    notes: tuple[str, ...] = ()


def prepare_request(catalog: Catalog, query: Any = "", *, image: Any = None, history: Sequence[str] = (),
                    permissions: Collection[str] | None = None, role: str | None = None,
                    categories: Collection[str] | None = None) -> Request:
    """Check a request against ``catalog``; raise QueryError (CatalogError for an unknown role) naming the
    bad value, or return the cleaned request with notes on what was cleaned, cut or not recognised."""
    if not isinstance(query, str):
        raise QueryError(f"query must be text, got {type(query).__name__}")
    if isinstance(history, str) or isinstance(permissions, str) or isinstance(categories, str):
        raise TypeError("history, permissions and categories take a list of strings, not one string")
    notes: list[str] = []
    cleaned = clean_text(query, limit=MAX_QUERY_CHARS)
    notes += cleaned.notes("the query")
    turns: list[str] = []
    for n, turn in enumerate(history or (), start=1):
        if not isinstance(turn, str):
            raise QueryError(f"history turn {n} must be text, got {type(turn).__name__}")
        clean_turn = clean_text(turn, limit=MAX_QUERY_CHARS)
        notes += clean_turn.notes(f"history turn {n}")
        turns.append(clean_turn.text)
    if not cleaned.text.strip() and image is None and not any(t.strip() for t in turns):
        if cleaned.removed:
            raise QueryError(f"the query holds no readable text ({notes[0].removeprefix('the query had ')}); "
                             "type the request as UTF-8 text")
        raise QueryError("empty query: type a request or give an image")
    codes = set(_texts(permissions, "permission code"))
    if role is not None:
        if not isinstance(role, str):
            raise QueryError(f"role must be a role name, got {type(role).__name__}")
        if role:
            codes |= set(catalog.role_codes(role))
    if categories:
        known = catalog.categories
        unknown = sorted(set(_texts(categories, "category")) - set(known))
        if unknown:
            raise QueryError(f"unknown category {unknown[0]!r}{_closest(unknown[0], known)}; categories: "
                             f"{', '.join(known)}")
    for code in unknown_codes(catalog, permissions) if permissions else ():
        notes.append(f"permission code {code!r} is used by no tool or role of this catalog"
                     f"{_closest(code, _all_codes(catalog))}; it grants nothing")
    return Request(cleaned.text, tuple(turns), frozenset(codes), tuple(notes))


def unknown_codes(catalog: Catalog, permissions: Iterable[str]) -> list[str]:
    """The given permission codes that no tool requires and no role of ``catalog`` holds (sorted)."""
    known = _all_codes(catalog)
    return sorted({c for c in permissions if c not in known})


def visible_successor(catalog: Catalog, tool: ToolProfile, codes: Collection[str]) -> str | None:
    """``tool.replaced_by`` when a caller holding ``codes`` may see that successor, else ``None``: a
    successor the caller lacks permission for is never named (in results, the prompt or JSON)."""
    successor = catalog.get(tool.replaced_by) if tool.replaced_by else None
    if successor is None or not set(successor.permissions) <= set(codes):
        return None
    return successor.id


def _all_codes(catalog: Catalog) -> set[str]:
    return set(catalog.permission_codes) | {c for codes in catalog.roles.values() for c in codes}


def _texts(values: Iterable[Any] | None, what: str) -> list[str]:
    out = []
    for value in values or ():
        if not isinstance(value, str):
            raise QueryError(f"a {what} must be text, got {value!r}")
        out.append(value)
    return out


def _closest(value: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(value, sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""

