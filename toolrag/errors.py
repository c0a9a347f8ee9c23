"""The errors toolrag raises for mistakes a user can make and fix.

Every one derives from :class:`ToolragError`, so the CLI turns it into a one-line message (exit 2) and the app
into a toast, never a traceback. Messages name the file, field or value at fault and say how to fix it; the
same facts are also fields of the error (``file``, ``line``, ``tool``, ``field``, ``None`` where they do not
apply), as an ``httpx`` error carries its request, so a caller can point at them without parsing the text.
Misuse of the Python API (a wrong type, an array of the wrong shape) raises ``TypeError``/``ValueError``
instead: that is a bug in the calling code, not something a user of the CLI or the app can fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

__all__ = [
    "CallRefused",
    "CatalogError",
    "HubModelUnavailable",
    "ImageError",
    "IncompatibleVersion",
    "ModelUnavailable",
    "Problem",
    "ProfileError",
    "QueryError",
    "SettingsError",
    "StoreError",
    "ToolNotFound",
    "ToolragError",
    "UpstreamError",
]


@dataclass(frozen=True)
class Problem:
    """One problem found in a catalog: its one-line ``message`` (``str(problem)``, what ``toolrag lint``
    prints) and the facts in it as fields: the ``file`` (or the origin of records read from memory, such as a
    live MCP server), the ``line`` there, the ``tool`` id and the ``field`` of the profile; ``None`` where one
    does not apply (a file that is not valid YAML has no tool)."""

    message: str
    file: str | None = None
    line: int | None = None
    tool: str | None = None
    field: str | None = None

    def __str__(self) -> str:
        return self.message

    def relocated(self, old: str, new: str) -> Problem:
        """The same problem with the path ``old`` read as ``new`` (a check made on a copy, reported on the
        original), in the message and the file."""
        file = self.file.replace(old, new) if self.file is not None else None
        return replace(self, message=self.message.replace(old, new), file=file)

    def to_json(self) -> dict[str, str | int | None]:
        """The problem as JSON: the message and every field."""
        return {"message": self.message, "file": self.file, "line": self.line, "tool": self.tool,
                "field": self.field}


class ToolragError(Exception):
    """Base class of every error that toolrag raises on purpose: the message, and as fields the ``file``,
    ``line``, ``tool`` and ``field`` it names (``None`` where it names none)."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None, tool: str | None = None,
                 field: str | None = None) -> None:
        super().__init__(message)
        self.file, self.line, self.tool, self.field = file, line, tool, field


class CatalogError(ToolragError):
    """A catalog as a whole cannot be used: missing folder, duplicate ids, unknown role, an edit that cannot
    be saved."""


class ProfileError(CatalogError):
    """One or more tool profiles are invalid. The message names the first problem (file, line, tool id,
    field); :attr:`problems` lists them all as :class:`Problem` records (``toolrag lint`` prints each one's
    message), and the error's own ``file``/``line``/``tool``/``field`` are the first problem's."""

    def __init__(self, message: str, problems: Sequence[Problem | str] = (), *, file: str | None = None,
                 line: int | None = None, tool: str | None = None, field: str | None = None) -> None:
        found = [p if isinstance(p, Problem) else Problem(p) for p in problems]
        self.problems: list[Problem] = found or [Problem(message, file, line, tool, field)]
        first = self.problems[0]
        super().__init__(message, file=first.file if file is None else file, line=first.line if line is None else line,
                         tool=first.tool if tool is None else tool, field=first.field if field is None else field)

class QueryError(ToolragError):
    """A request or a labelled query file is invalid (empty request, unknown role or category, bad row)."""


class ToolNotFound(QueryError):
    """A tool name that no tool the caller may use answers to (the same words for a hidden tool and for a name
    that does not exist, so nothing hidden is revealed); :attr:`tool` is the name as given."""


class ImageError(ToolragError):
    """An image cannot be used: missing, not an image, truncated, empty or too large."""


class SettingsError(ToolragError):
    """A setting (file, flag, environment variable) has a value outside its valid choices or range."""


class ModelUnavailable(SettingsError):
    """A configured model cannot be loaded here; the message names the setting that chooses another."""


class HubModelUnavailable(ModelUnavailable):
    """A model named by a Hub id cannot be loaded (the Hub unreachable or rate-limited, toolrag offline and the
    model not in the local cache, an id that does not exist). Model loading falls back to the packaged model of
    the same role (:mod:`toolrag.encode.fallback`) instead of failing. :attr:`reason` is why, without the
    setting's name (the fallback's note names the setting itself)."""

    def __init__(self, message: str, *, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


class StoreError(ToolragError):
    """The vector index cannot be opened or written (Chroma folder, server URL)."""


class IncompatibleVersion(StoreError):
    """A version built with other models or signals than this replica loads: refused until another is pushed."""


class CallRefused(ToolragError):
    """A ``call_tool`` the caller may not make: an unknown tool, a hidden one, an ambiguous name."""


class UpstreamError(ToolragError):
    """An MCP server cannot be reached, does not answer in time or answers something unusable. ``lost``: the
    connection itself failed (the process died, the connection dropped or was refused), so a new session may
    help; ``cause``: what failed, in one line; ``kind``: ``unavailable`` (default), ``timeout`` or ``error`` (the
    server answered a protocol error), for metrics."""

    def __init__(self, message: str, *, lost: bool = False, cause: str = "", kind: str = "unavailable",
                 file: str | None = None, line: int | None = None, tool: str | None = None,
                 field: str | None = None) -> None:
        super().__init__(message, file=file, line=line, tool=tool, field=field)
        self.lost, self.cause, self.kind = lost, cause or message, kind
