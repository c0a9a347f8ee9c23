"""Evaluation: metrics, labelled query files, the evaluator, weight and threshold tuning, and the tool map."""

from toolrag.evaluation.evaluator import EvalReport, Evaluator, QueryOutcome
from toolrag.evaluation.queries import QueryRow, load_queries

__all__ = ["EvalReport", "Evaluator", "QueryOutcome", "QueryRow", "load_queries"]
