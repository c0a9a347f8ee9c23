"""The errors toolrag raises for mistakes a user can make and fix.

Every one derives from :class:`ToolragError`, so the CLI turns it into a one-line message (exit 2) and the app
into a toast, never a traceback. Messages name the file, field or value at fault and say how to fix it.
Misuse of the Python API (a wrong type, an array of the wrong shape) raises ``TypeError``/``ValueError``
instead: that is a bug in the calling code, not something a user of the CLI or the app can fix.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "CatalogError",
    "HubModelUnavailable",
    "ImageError",
    "ModelUnavailable",
    "ProfileError",
    "QueryError",
    "SettingsError",
    "StoreError",
    "ToolragError",
]


class ToolragError(Exception):
    """Base class of every error that toolrag raises on purpose."""


class CatalogError(ToolragError):
    """A catalog as a whole cannot be used: missing folder, duplicate ids, unknown role, an edit that cannot
    be saved."""


class ProfileError(CatalogError):
    """One or more tool profiles are invalid. The message names the first problem (file, line, tool id,
    field); :attr:`problems` lists them all (``toolrag lint`` prints them)."""

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems: list[str] = list(problems) or [message]


class QueryError(ToolragError):
    """A request or a labelled query file is invalid (empty request, unknown role or category, bad row)."""


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
