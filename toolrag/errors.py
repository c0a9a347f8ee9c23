"""Exception types raised by toolrag.

Every error a user can cause derives from :class:`ToolragError`, so the CLI and the app can turn it into a
one-line message (exit 2 / a toast) instead of a traceback. Messages name the file, field or value at fault and
say how to fix it.
"""

from __future__ import annotations


class ToolragError(Exception):
    """Base class of every error that toolrag raises on purpose."""


class ProfileError(ToolragError):
    """A tool profile or catalog file is invalid (names the file, line where known, tool id and field)."""


class CatalogError(ToolragError):
    """A catalog as a whole is invalid: duplicate ids, unreadable folder, unknown format."""


class QueryError(ToolragError):
    """A search request is invalid (empty query without an image, unknown role or category, ...)."""


class ImageError(ToolragError):
    """An image cannot be used: unreadable, truncated, not an image, or too large."""


class ModelUnavailable(ToolragError):
    """A model cannot be loaded here; the message names the setting that enables it."""


class StoreError(ToolragError):
    """The vector index cannot be opened or written (Chroma path, server URL, ...)."""


class SettingsError(ToolragError):
    """A setting has a value outside its valid choices or range."""
