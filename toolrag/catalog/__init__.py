"""Catalogs: the typed tool profile, file readers with line numbers, loading and validation, lint, and the
editor that changes catalog files safely."""

from toolrag.catalog.loader import load_catalog
from toolrag.catalog.profile import Catalog, ToolProfile

__all__ = ["Catalog", "ToolProfile", "load_catalog"]
