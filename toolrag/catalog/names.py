"""Tool names: the original name a server answers to, and the function name a model API accepts.

MCP tool names (SEP-986) use letters, digits, ``_``, ``-``, ``.`` and ``/`` and real servers go beyond them
(leading underscores, spaces, 200 characters); OpenAI function names must match ``^[A-Za-z0-9_-]{1,64}$``.
A profile keeps the original name (it is what ``tools/call`` needs); the OpenAI ``tools`` JSON uses a
function name derived from it. The derivation is deterministic (the same tools always give the same names) and
collision-free among the tools it is given: one caller's visible tools
(:meth:`toolrag.catalog.caller.Caller.function_names`, which also maps a name back to its tool). Free text names
a tool by a whole identifier-like token (:func:`mention_index`, :func:`mentions`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping

__all__ = ["FUNCTION_NAME", "NAME_TOKEN", "assign_function_names", "derive_function_name", "humanize",
           "is_function_name", "mention_index", "mentions"]

#: What OpenAI accepts as a function name.
FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_OUTSIDE = re.compile(r"[^A-Za-z0-9_-]+")
_HASH_CHARS = 8
_MAX = 64


_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS_RE = re.compile(r"[_\-./:]+")


def humanize(identifier: str) -> str:
    """``get_weatherForecast`` -> ``get weather Forecast``, ``github/create_issue`` -> ``github create issue``:
    function names read as words."""
    return _SEPARATORS_RE.sub(" ", _CAMEL_RE.sub(" ", identifier)).strip()


def is_function_name(name: str) -> bool:
    return bool(FUNCTION_NAME.match(name))


def derive_function_name(name: str, *, salt: str = "") -> str:
    """A valid function name for ``name``: ``name`` itself when it is valid (and no ``salt``), else the name
    with every run of other characters turned into ``_`` (trimmed to 55 characters), ``_`` and the first 8
    hex digits of the SHA-256 of the name (and salt). The hash keeps two names that differ only in the
    replaced characters apart (``get.rates`` and ``get_rates`` -> ``get_rates_1f0c...``, ``get_rates``)."""
    if not salt and is_function_name(name):
        return name
    base = _OUTSIDE.sub("_", name).strip("_") or "tool"
    digest = hashlib.sha256(f"{name}\x00{salt}".encode()).hexdigest()[:_HASH_CHARS]
    return f"{base[: _MAX - _HASH_CHARS - 1]}_{digest}"


def assign_function_names(tools: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Function names for ``(tool_id, original_name)`` pairs, unique across them, as ``{tool_id: name}``.

    Valid names keep themselves, the first tool (in the given order) winning when two tools share one;
    every other tool gets :func:`derive_function_name` of its name, salted with its id and a counter until
    the result is free. The same input in the same order always gives the same names."""
    pairs = list(tools)
    out: dict[str, str] = {}
    taken: set[str] = set()
    pending: list[tuple[str, str]] = []
    for tool_id, name in pairs:
        if is_function_name(name) and name not in taken:
            out[tool_id] = name
            taken.add(name)
        else:
            pending.append((tool_id, name))
    for tool_id, name in pending:
        candidate = derive_function_name(name) if not is_function_name(name) else derive_function_name(
            name, salt=tool_id)
        n = 0
        while candidate in taken:
            n += 1
            candidate = derive_function_name(name, salt=f"{tool_id}\x00{n}")
        out[tool_id] = candidate
        taken.add(candidate)
    return out


#: What may be a tool's id or name inside free text (trailing punctuation is not part of it).
NAME_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@+\-]*[A-Za-z0-9]")
#: A name that reads as an identifier: a separator, a digit or an inner capital (``get_weather``, ``v2``).
_NAME_LIKE = re.compile(r"[_.\-/:@]|\d|[a-z][A-Z]")


def names_a_tool(value: str) -> bool:
    """Whether ``value`` can name one tool inside free text: identifier-like and 4+ characters (a tool named
    "search" or "Now" must not be named by every request or description that uses the word)."""
    return len(value) >= 4 and bool(_NAME_LIKE.search(value)) and bool(NAME_TOKEN.fullmatch(value))


def mention_index(names: Iterable[tuple[str, Iterable[str]]]) -> dict[str, str]:
    """Lower-cased names -> tool id, from each tool's ``(id, its names)`` (id, original name, function name):
    only names that :func:`names_a_tool`, compared without case; a name two tools share names neither."""
    out: dict[str, str] = {}
    clash: set[str] = set()
    for tool_id, values in names:
        for value in dict.fromkeys(values):
            if not names_a_tool(value):
                continue
            key = value.lower()
            if out.get(key, tool_id) != tool_id:
                clash.add(key)
            out[key] = tool_id
    for key in clash:
        del out[key]
    return out


def mentions(text: str, index: Mapping[str, str]) -> list[str]:
    """Ids of the tools whose name or id appears in ``text`` as a whole identifier-like token (without case), in
    order of appearance, each once (``index``: :func:`mention_index`)."""
    found: dict[str, None] = {}
    for match in NAME_TOKEN.finditer(text):
        tool_id = index.get(match.group(0).lower())
        if tool_id is not None:
            found.setdefault(tool_id, None)
    return list(found)
