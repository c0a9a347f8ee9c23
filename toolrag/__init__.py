"""toolrag: retrieval-augmented tool selection with explained, multi-signal scores.

Typical use::

    from toolrag import ToolRetriever
    retriever = ToolRetriever.from_catalog("sample_tools")
    result = retriever.search("帮我报销这张餐饮发票", image="assets/queries/receipt_lunch.png")
    result.decision, result.candidates[0].id, result.tools   # decision, best tool, OpenAI tools JSON
"""

from __future__ import annotations

import importlib
from typing import Any

from toolrag.models import configure_environment

configure_environment()

# Public names -> defining module. Imported on first use, so ``import toolrag`` stays cheap and a CLI call
# pays only for what it uses.
_EXPORTS = {
    "Decision": "toolrag.decision",
    "CatalogError": "toolrag.errors",
    "ImageError": "toolrag.errors",
    "ModelUnavailable": "toolrag.errors",
    "ProfileError": "toolrag.errors",
    "QueryError": "toolrag.errors",
    "SettingsError": "toolrag.errors",
    "StoreError": "toolrag.errors",
    "ToolragError": "toolrag.errors",
    "EvalReport": "toolrag.evaluate",
    "QueryRow": "toolrag.evaluate",
    "load_queries": "toolrag.evaluate",
    "Catalog": "toolrag.profile",
    "ToolProfile": "toolrag.profile",
    "load_catalog": "toolrag.loader",
    "Candidate": "toolrag.results",
    "SearchResult": "toolrag.results",
    "SignalScore": "toolrag.results",
    "TokenReport": "toolrag.results",
    "ToolRetriever": "toolrag.retriever",
    "SIGNALS": "toolrag.settings",
    "Fusion": "toolrag.settings",
    "Settings": "toolrag.settings",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'toolrag' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "SIGNALS",
    "Candidate",
    "Catalog",
    "CatalogError",
    "Decision",
    "EvalReport",
    "Fusion",
    "ImageError",
    "ModelUnavailable",
    "ProfileError",
    "QueryError",
    "QueryRow",
    "SearchResult",
    "Settings",
    "SettingsError",
    "SignalScore",
    "StoreError",
    "TokenReport",
    "ToolProfile",
    "ToolRetriever",
    "ToolragError",
    "__version__",
    "load_catalog",
    "load_queries",
]
