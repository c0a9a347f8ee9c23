"""A request checked against a catalog before any model runs: clean text, a caller, known filters.

:func:`prepare_request` is the one check of what a caller sends (the library's :meth:`ToolRetriever.search`,
the CLI before it loads a model, the app): text no encoder can read is replaced and said so, a query above
:data:`MAX_QUERY_CHARS` characters is cut and said so (and never echoed whole), an unknown role or category is
a :class:`toolrag.errors.QueryError` naming the value and the valid ones, and a permission code that no tool
or role of the catalog uses is a note (a warning on ``toolrag search``, an error in ``toolrag eval``).
Nothing here needs a model, so a bad request is refused in milliseconds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from toolrag.catalog.caller import Caller, closest
from toolrag.catalog.profile import Catalog
from toolrag.errors import QueryError
from toolrag.search.query import MAX_QUERY_CHARS
from toolrag.text import clean_text

__all__ = ["MAX_QUERY_CHARS", "Request", "prepare_request", "unknown_codes"]


@dataclass(frozen=True)
class Request:
    """A checked request: cleaned (and cut) text, the caller and what to tell them."""

    query: str
    history: tuple[str, ...]
    caller: Caller
    notes: tuple[str, ...] = ()


def prepare_request(catalog: Catalog, query: Any = "", *, image: Any = None, history: Sequence[str] = (),
                    caller: Caller | None = None, permissions: Collection[str] | None = None,
                    role: str | None = None, categories: Collection[str] | None = None,
                    include_deprecated: bool = False) -> Request:
    """Check a request against ``catalog``; raise QueryError (CatalogError for an unknown role) naming the
    bad value, or return the cleaned request with notes on what was cleaned, cut or not recognised. The caller is
    ``caller``, else the one ``role``, ``permissions``, ``categories`` and ``include_deprecated`` describe
    (:meth:`toolrag.catalog.caller.Caller.of`); ``include_deprecated=True`` also widens a given ``caller``."""
    if not isinstance(query, str):
        raise QueryError(f"query must be text, got {type(query).__name__}", field="query")
    if history is None or isinstance(history, str | bytes) or not isinstance(history, Sequence):
        raise QueryError(f"history must be a list of earlier user turns (text), got {type(history).__name__}",
                         field="history")
    if caller is not None and not isinstance(caller, Caller):
        raise TypeError(f"caller is a {type(caller).__name__}, not toolrag.Caller: for a role give role={caller!r}"
                        if isinstance(caller, str) else
                        f"caller is a {type(caller).__name__}, not toolrag.Caller: give Caller.of(catalog, "
                        "role=...), or role= / permissions= / categories=")
    if caller is not None and (permissions is not None or role is not None or categories is not None):
        raise TypeError("give either caller or role / permissions / categories, not both")
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
    if caller is None:
        caller = Caller.of(catalog, role=role, permissions=permissions, categories=categories,
                           include_deprecated=include_deprecated)
    elif include_deprecated and not caller.include_deprecated:
        caller = dataclasses.replace(caller, include_deprecated=True)
    for code in unknown_codes(catalog, caller.codes):  # given as codes or held by a caller made elsewhere
        notes.append(f"permission code {code!r} is used by no tool or role of this catalog"
                     f"{closest(code, catalog.known_codes)}; it grants nothing")
    return Request(cleaned.text, tuple(turns), caller, tuple(notes))


def unknown_codes(catalog: Catalog, permissions: Iterable[str]) -> list[str]:
    """The given permission codes that no tool requires and no role of ``catalog`` holds (sorted)."""
    return sorted(set(permissions) - catalog.known_codes)
