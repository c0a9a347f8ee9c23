"""The catalog report: retrievability (no labels needed), the labelled requests and, on request, tuning.

One code path for the app's Evaluate tab, ``toolrag report`` and library users::

    retriever = ToolRetriever.from_catalog("sample_tools")
    report = build_report(retriever, rows=load_queries(Path("sample_tools/queries.yaml")))
    report.figures()["found_first"], report.to_json()
    Path("report.html").write_text(render_html(report))      # toolrag.evaluation.html_report

:meth:`CatalogReport.figures` holds every figure a ``--fail-under`` gate can name: the health figures of
:data:`toolrag.evaluation.retrievability.HEALTH_FIGURES` and the labelled metrics (``recall@5``, ...).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from toolrag.catalog.profile import Catalog
from toolrag.errors import QueryError
from toolrag.evaluation.changes import failing, gold_rank
from toolrag.evaluation.evaluator import EvalReport, Evaluator
from toolrag.evaluation.loo import RetrievabilityChecker
from toolrag.evaluation.queries import QueryRow
from toolrag.evaluation.retrievability import RetrievabilityReport
from toolrag.evaluation.tune import ThresholdResult, TuneResult, calibrate_no_tool, tune_weights
from toolrag.evaluation.visibility import caller_codes, evaluation_for, retrievability_for, visible_rows
from toolrag.progress import Progress
from toolrag.search.results import Decision
from toolrag.search.retriever import ToolRetriever
from toolrag.settings import Settings

__all__ = ["CatalogReport", "build_report", "report_for", "tune_with_threshold"]


@dataclass(frozen=True)
class CatalogReport:
    """Everything ``toolrag report`` writes: the same data as the app's Evaluate tab."""

    catalog: str
    settings: Settings
    retrievability: RetrievabilityReport
    evaluation: EvalReport | None = None
    tuning: TuneResult | None = None
    threshold: ThresholdResult | None = None
    created: str = ""

    def figures(self) -> dict[str, float]:
        """Health figures and labelled metrics by name (shares in [0, 1])."""
        out = dict(self.retrievability.health.figures())
        if self.evaluation is not None:
            out.update(self.evaluation.metrics)
        return out

    def to_json(self) -> dict[str, Any]:
        ev = self.evaluation
        return {
            "catalog": self.catalog,
            "created": self.created,
            "settings": self.settings.to_dict(),
            "figures": {k: round(v, 6) for k, v in self.figures().items()},
            "retrievability": self.retrievability.to_json(),
            "evaluation": None if ev is None else {
                **ev.to_json(n_tools=self.retrievability.health.n_tools + len(self.retrievability.health.skipped)),
                "failing": [{"query": o.row.query, "gold": list(o.row.gold), "returned": list(o.returned[:5]),
                             "rank": gold_rank(o), "decision": o.decision.value,
                             "expect": o.row.expect.value if o.row.expect else None} for o in failing(ev)],
            },
            "tuning": None if self.tuning is None else {
                "summary": self.tuning.summary(), "metric": self.tuning.metric, "changed": self.tuning.changed,
                "base_score": self.tuning.base_score, "best_score": self.tuning.best_score,
                "weights": dict(self.tuning.settings.weights),
                "grid": [{"weights": c.weights, "score": c.score} for c in self.tuning.candidates]},
            "no_tool_threshold": None if self.threshold is None else {
                "summary": self.threshold.summary(), "threshold": self.threshold.threshold,
                "base_threshold": self.threshold.base_threshold, "changed": self.threshold.changed,
                "curve": [p.__dict__ for p in self.threshold.curve]},
        }


def tune_with_threshold(retriever: ToolRetriever, rows: Sequence[QueryRow], *, base: Settings | None = None,
                        step: float = 0.1, metric: str = "ndcg@10", progress: Progress | None = None
                        ) -> tuple[TuneResult, ThresholdResult | None]:
    """What ``toolrag tune`` does: the text weights, then the NO_TOOL threshold when the rows hold both kinds
    (rows that need no tool and rows with gold tools; otherwise ``None``)."""
    result = tune_weights(retriever, rows, base=base, step=step, metric=metric, progress=progress)
    kinds = {r.expect is Decision.NO_TOOL for r in rows if r.gold or r.expect is Decision.NO_TOOL}
    threshold = calibrate_no_tool(retriever, rows, base=result.settings) if kinds == {True, False} else None
    return result, threshold


def build_report(retriever: ToolRetriever, *, rows: Sequence[QueryRow] | None = None,
                 checker: RetrievabilityChecker | None = None, settings: Settings | None = None,
                 tune: bool = False, step: float = 0.1, progress: Progress | None = None, role: str | None = None,
                 permissions: Collection[str] | None = None) -> CatalogReport:
    """Check retrievability, evaluate ``rows`` (when given) and tune on them (when ``tune``).

    ``checker`` keeps its caches between reports (a new one otherwise); ``settings`` default to the
    retriever's. Tuning tries every weighting of the grid on every labelled row: ``rows x 66`` searches at
    step 0.1 (no encoding). ``role`` / ``permissions``: the report as that caller sees it, every section
    naming only the tools it may use (:mod:`toolrag.evaluation.visibility`)."""
    say = progress or (lambda f, m: None)
    cfg = settings or retriever.settings
    codes = caller_codes(retriever.catalog, role=role, permissions=permissions)
    if codes is not None and rows:
        rows = visible_rows(rows, retriever.catalog, codes, role=role, permissions=permissions)
    if tune and not rows:
        raise QueryError("tuning needs labelled requests: give queries (YAML, JSON Lines or CSV)")
    share = 0.6 if rows else 1.0
    checker = checker or RetrievabilityChecker()
    retrievability = checker.check(retriever, settings=cfg, progress=lambda f, m: say(share * f, m))
    if codes is not None:
        retrievability = retrievability_for(retrievability, retriever.catalog, codes,
                                            vectors=retriever.tool_vectors(), threshold=checker.threshold)
    evaluation = tuning = threshold = None
    if rows:
        later = 0.2 if tune else 0.4
        evaluation = Evaluator(rows)(retriever, settings=cfg, progress=lambda f, m: say(share + later * f, m))
        if tune:
            tuning, threshold = tune_with_threshold(retriever, rows, base=cfg, step=step,
                                                    progress=lambda f, m: say(0.8 + 0.2 * f, m))
    say(1.0, "report ready")
    return CatalogReport(retriever.catalog.name, cfg, retrievability, evaluation, tuning, threshold,
                         _dt.datetime.now().isoformat(timespec="seconds"))


def report_for(report: CatalogReport, catalog: Catalog, codes: Collection[str], *,
               vectors: tuple[Sequence[str], np.ndarray] | None = None, threshold: float) -> CatalogReport:
    """``report`` as a caller holding ``codes`` sees it: its retrievability (:func:`retrievability_for`) and its
    labelled requests (:func:`evaluation_for`)."""
    evaluation = None if report.evaluation is None else evaluation_for(report.evaluation, catalog, codes)
    return replace(report, evaluation=evaluation, retrievability=retrievability_for(
        report.retrievability, catalog, codes, vectors=vectors, threshold=threshold))
