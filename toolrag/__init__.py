"""toolrag: retrieval-augmented tool selection with explained, multi-signal scores.

Typical use::

    from toolrag import ToolRetriever
    retriever = ToolRetriever.from_catalog("sample_tools")
    result = retriever.search("帮我报销这张餐饮发票", image="assets/queries/receipt_dinner.png")
    result.decision, result.candidates[0].id, result.tools   # decision, best tool, OpenAI tools JSON

Importing toolrag loads no model and changes no environment variable; call
:func:`toolrag.config.configure_environment` for the set-up the CLI and the app use (telemetry off, the Hub
offline unless online). The package map is in ``docs/architecture.md``.
"""

from __future__ import annotations

from toolrag.catalog.caller import Caller
from toolrag.catalog.loader import load_catalog
from toolrag.catalog.profile import Catalog, ToolProfile
from toolrag.encode.models import ModelSet, load_models
from toolrag.errors import (
    CatalogError,
    HubModelUnavailable,
    ImageError,
    ModelUnavailable,
    Problem,
    ProfileError,
    QueryError,
    SettingsError,
    StoreError,
    ToolNotFound,
    ToolragError,
)
from toolrag.evaluation.evaluator import EvalReport, Evaluator
from toolrag.evaluation.loo import RetrievabilityChecker
from toolrag.evaluation.queries import QueryRow, load_queries
from toolrag.evaluation.report import CatalogReport, build_report
from toolrag.evaluation.retrievability import RetrievabilityReport
from toolrag.index.client import StoreConfig
from toolrag.search.results import (
    Candidate,
    Decision,
    DecisionScores,
    DecisionSource,
    SearchResult,
    SignalScore,
    TokenReport,
)
from toolrag.search.retriever import ToolRetriever
from toolrag.settings import Fusion, Normalization, Settings
from toolrag.signals import SIGNALS
from toolrag.version import __version__

__all__ = [
    "SIGNALS",
    "Caller",
    "Candidate",
    "Catalog",
    "CatalogError",
    "CatalogReport",
    "Decision",
    "DecisionScores",
    "DecisionSource",
    "EvalReport",
    "Evaluator",
    "Fusion",
    "HubModelUnavailable",
    "ImageError",
    "ModelSet",
    "ModelUnavailable",
    "Normalization",
    "Problem",
    "ProfileError",
    "QueryError",
    "QueryRow",
    "RetrievabilityChecker",
    "RetrievabilityReport",
    "SearchResult",
    "Settings",
    "SettingsError",
    "SignalScore",
    "StoreConfig",
    "StoreError",
    "TokenReport",
    "ToolNotFound",
    "ToolProfile",
    "ToolRetriever",
    "ToolragError",
    "__version__",
    "build_report",
    "load_catalog",
    "load_models",
    "load_queries",
]
