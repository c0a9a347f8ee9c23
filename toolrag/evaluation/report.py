"""The catalog report: retrievability (no labels needed), the labelled requests and, on request, tuning.

Tools without example requests (most imported catalogs) get the label-free estimate instead
(:mod:`toolrag.evaluation.label_free`, ``label_free=LabelFreeScope.AUTO``): a figure with nothing behind it is
``None`` with its reason (:meth:`CatalogReport.unmeasured`), never 0.0.

One code path for the app's Evaluate tab, ``toolrag report`` and library users::

    retriever = ToolRetriever.from_catalog("sample_tools")
    report = build_report(retriever, rows=load_queries(Path("sample_tools/queries.yaml")))
    report.figures()["found_first"], report.to_json()
    Path("report.html").write_text(render_html(report))      # toolrag.evaluation.html_report

:meth:`CatalogReport.figures` holds every figure a ``--fail-under`` gate can name: the health figures of
:data:`toolrag.evaluation.retrievability.HEALTH_FIGURES`, the label-free estimates
(:data:`ESTIMATE_FIGURES`) and the labelled metrics (``recall@5``, ...).
"""

from __future__ import annotations

import datetime as _dt
import enum
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from toolrag.catalog.caller import Caller
from toolrag.catalog.profile import Catalog
from toolrag.errors import QueryError, SettingsError
from toolrag.evaluation.changes import failing, gold_rank
from toolrag.evaluation.evaluator import EvalReport, Evaluator
from toolrag.evaluation.label_free import LabelFreeChecker
from toolrag.evaluation.loo import RetrievabilityChecker
from toolrag.evaluation.metrics import METRIC_NAMES
from toolrag.evaluation.queries import QueryRow
from toolrag.evaluation.retrievability import RetrievabilityReport
from toolrag.evaluation.risk import LabelFreeReport
from toolrag.evaluation.tune import ThresholdResult, TuneResult, calibrate_target, tune_weights
from toolrag.evaluation.visibility import estimate_for, evaluation_for, report_caller, retrievability_for, visible_rows
from toolrag.progress import Progress
from toolrag.search.results import Decision
from toolrag.search.retriever import ToolRetriever
from toolrag.settings import Settings

__all__ = ["ESTIMATE_FIGURES", "CatalogReport", "LabelFreeScope", "build_report", "report_for", "tune_with_threshold"]

#: The label-free figures a gate can name (means of the estimate over the tools it checked).
ESTIMATE_FIGURES = ("estimated_found_first", "estimated_found_top5")


class LabelFreeScope(str, enum.Enum):
    """Which tools the label-free estimate checks: those without example requests (``auto``), every tool
    (``all``: compare it with the leave-one-out check) or none (``off``)."""

    AUTO = "auto"
    ALL = "all"
    OFF = "off"


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
    label_free: LabelFreeReport | None = None

    def figures(self) -> dict[str, float | None]:
        """Health figures, label-free estimates and labelled metrics by name (shares in [0, 1]); ``None`` for a
        figure with nothing behind it (its reason in :meth:`unmeasured`)."""
        out: dict[str, float | None] = dict(self.retrievability.health.figures())
        out.update(self.label_free.figures() if self.label_free is not None
                   else dict.fromkeys(ESTIMATE_FIGURES))
        if self.evaluation is not None:
            out.update(self.evaluation.metrics)
        return out

    def unmeasured(self) -> dict[str, str]:
        """Why each figure that is ``None`` (or that a gate may name but the report lacks) was not measured."""
        out = dict(self.retrievability.health.unmeasured())
        if self.label_free is None or not self.label_free.tools:
            why = ("not estimated: every tool has example requests (the leave-one-out figures measure them; "
                   "--label-free all estimates every tool)" if not self.retrievability.health.no_examples
                   else "not estimated: the label-free check was off (--label-free auto or all)")
            out.update(dict.fromkeys(ESTIMATE_FIGURES, why))
        for name in METRIC_NAMES:
            if self.evaluation is None:
                out[name] = "not measured: no labelled requests (give --queries FILE)"
            elif name not in self.evaluation.metrics:
                out[name] = self.evaluation.unmeasured(name)
        return out

    def gate(self, name: str, value: float) -> str | None:
        """The failure of ``--fail-under name=value`` (``None``: it passes); raises ``SettingsError`` with the
        reason when the figure was not measured (a gate on nothing neither passes nor fails silently)."""
        figure = self.figures().get(name)
        if figure is None:
            reason = self.unmeasured().get(name) or (self.evaluation.unmeasured(name) if self.evaluation is not None
                                                     else "not measured by this report")
            raise SettingsError(f"--fail-under {name}: {reason}")
        return None if figure >= value else f"{name} = {figure:.4f} < {value:.4f}"

    def to_json(self) -> dict[str, Any]:
        ev = self.evaluation
        return {
            "catalog": self.catalog,
            "created": self.created,
            "settings": self.settings.to_dict(),
            "figures": {k: None if v is None else round(v, 6) for k, v in self.figures().items()},
            "unmeasured": {k: v for k, v in self.unmeasured().items() if k in self.figures()},
            "retrievability": self.retrievability.to_json(),
            "label_free": None if self.label_free is None else self.label_free.to_json(),
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
            "precision_target": None if self.threshold is None else {
                "summary": self.threshold.summary(), "target": self.threshold.target,
                "base_target": self.threshold.base_target, "changed": self.threshold.changed,
                "curve": [p.__dict__ for p in self.threshold.curve]},
        }


def tune_with_threshold(retriever: ToolRetriever, rows: Sequence[QueryRow], *, base: Settings | None = None,
                        step: float = 0.1, metric: str = "ndcg@10", progress: Progress | None = None
                        ) -> tuple[TuneResult, ThresholdResult | None]:
    """What ``toolrag tune`` does: the text weights, then the decision's precision target when the rows hold both
    kinds (rows that need no tool and rows with gold tools; otherwise ``None``)."""
    result = tune_weights(retriever, rows, base=base, step=step, metric=metric, progress=progress)
    kinds = {r.expect is Decision.NO_TOOL for r in rows if r.gold or r.expect is Decision.NO_TOOL}
    threshold = calibrate_target(retriever, rows, base=result.settings) if kinds == {True, False} else None
    return result, threshold


def build_report(retriever: ToolRetriever, *, rows: Sequence[QueryRow] | None = None,
                 checker: RetrievabilityChecker | None = None, settings: Settings | None = None,
                 tune: bool = False, step: float = 0.1, label_free: LabelFreeScope | str = LabelFreeScope.AUTO,
                 label_free_checker: LabelFreeChecker | None = None, progress: Progress | None = None,
                 role: str | None = None, permissions: Collection[str] | None = None) -> CatalogReport:
    """Check retrievability, estimate the tools without examples (``label_free``), evaluate ``rows`` (when
    given) and tune on them (when ``tune``).

    ``checker`` and ``label_free_checker`` keep their caches between reports (new ones otherwise);
    ``settings`` default to the retriever's. Tuning tries every weighting of the grid on every labelled row:
    ``rows x 66`` searches at step 0.1 (no encoding). ``role`` / ``permissions``: the report as that caller
    sees it, every section computed as if the tools it may not use were not in the catalog (searched as that
    caller: :mod:`toolrag.evaluation.visibility`)."""
    say = progress or (lambda f, m: None)
    cfg = settings or retriever.settings
    scope = LabelFreeScope(label_free)
    caller = report_caller(retriever.catalog, role=role, permissions=permissions)
    if caller is not None and rows:
        rows = visible_rows(rows, retriever.catalog, caller, role=role, permissions=permissions)
    if tune and not rows:
        raise QueryError("tuning needs labelled requests: give queries (YAML, JSON Lines or CSV)")
    share = 0.6 if rows else 1.0
    checker = checker or RetrievabilityChecker()
    retrievability = checker.check(retriever, settings=cfg, caller=caller,
                                   progress=lambda f, m: say(0.5 * share * f, m))
    estimate = None
    wanted = (set(retrievability.health.no_examples) if scope is LabelFreeScope.AUTO
              else {t.tool_id for t in retrievability.tools} if scope is LabelFreeScope.ALL else set())
    if wanted:
        estimate = (label_free_checker or LabelFreeChecker()).check(
            retriever, settings=cfg, tools=wanted, caller=caller, progress=lambda f, m: say(share * (0.5 + 0.5 * f), m))
    evaluation = tuning = threshold = None
    if rows:
        later = 0.2 if tune else 0.4
        evaluation = Evaluator(rows)(retriever, settings=cfg, progress=lambda f, m: say(share + later * f, m))
        if tune:
            tuning, threshold = tune_with_threshold(retriever, rows, base=cfg, step=step,
                                                    progress=lambda f, m: say(0.8 + 0.2 * f, m))
    say(1.0, "report ready")
    return CatalogReport(retriever.catalog.name, cfg, retrievability, evaluation, tuning, threshold,
                         _dt.datetime.now().isoformat(timespec="seconds"), estimate)


def report_for(report: CatalogReport, catalog: Catalog, codes: Caller | Collection[str], *,
               vectors: tuple[Sequence[str], np.ndarray] | None = None, threshold: float) -> CatalogReport:
    """``report`` (the author's) as a caller (or one holding ``codes``) sees it: its retrievability
    (:func:`retrievability_for`), its label-free estimate (:func:`estimate_for`) and its labelled requests
    (:func:`evaluation_for`). :func:`build_report` with a role searches as the caller instead."""
    evaluation = None if report.evaluation is None else evaluation_for(report.evaluation, catalog, codes)
    estimate = None if report.label_free is None else estimate_for(report.label_free, catalog, codes)
    return replace(report, evaluation=evaluation, label_free=estimate, retrievability=retrievability_for(
        report.retrievability, catalog, codes, vectors=vectors, threshold=threshold))
