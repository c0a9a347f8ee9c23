"""Evaluation: metrics, labelled query files, the evaluator, weight and threshold tuning, the tool map, the
retrievability check (leave-one-out searches) and the catalog report."""

from toolrag.evaluation.evaluator import EvalReport, Evaluator, QueryOutcome
from toolrag.evaluation.loo import RetrievabilityChecker
from toolrag.evaluation.queries import QueryRow, load_queries
from toolrag.evaluation.report import CatalogReport, build_report
from toolrag.evaluation.retrievability import RetrievabilityReport

__all__ = ["CatalogReport", "EvalReport", "Evaluator", "QueryOutcome", "QueryRow", "RetrievabilityChecker",
           "RetrievabilityReport", "build_report", "load_queries"]
