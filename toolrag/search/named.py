"""The tools a request names exactly: "use get_weather_forecast for Paris" calls that tool, whatever the scores.

Only identifier-like names count (a ``_ . - / : @``, a digit or an inner capital, 4+ characters): a tool named
"search" or "Now" is not named by every request that uses the word. The lookup is built over the tools a caller
sees (the retriever keeps it per snapshot and caller), so a hidden tool is never named and its name cannot take
a visible tool's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["name_lookup", "named_tools"]

_IDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@+\-]*[A-Za-z0-9]")
_NAME_LIKE = re.compile(r"[_.\-/:@]|\d|[a-z][A-Z]")


def name_lookup(names_and_ids: Sequence[tuple[str, ...]]) -> dict[str, int]:
    """Lower-cased identifier-like names and ids -> row, from each row's names (original name, function name,
    id). Only names that look like identifiers count (with ``_ . - / : @``, a digit or an inner capital, 4+
    characters): a tool named "search" or "Now" must not be "named" by every request that uses the word. A name
    two tools share is dropped (it names neither)."""
    out: dict[str, int] = {}
    clash: set[str] = set()
    for row, names in enumerate(names_and_ids):
        for value in dict.fromkeys(names):
            if len(value) < 4 or not _NAME_LIKE.search(value) or not _IDENT.fullmatch(value):
                continue
            key = value.lower()
            if key in out and out[key] != row:
                clash.add(key)
            out[key] = row
    for key in clash:
        out.pop(key, None)
    return out


def named_tools(query: str, lookup: dict[str, int]) -> list[int]:
    """Rows of the tools whose exact name or id appears in ``query``, in order of appearance, distinct.

    ``lookup`` maps a lower-cased name or id to its row (see :func:`name_lookup`). A span counts when it is a
    whole identifier-like token of the request ("use get_weather_forecast for Paris"), compared without case.
    """
    rows: list[int] = []
    for match in _IDENT.finditer(query):
        row = lookup.get(match.group(0).lower())
        if row is not None and row not in rows:
            rows.append(row)
    return rows
