""":class:`Studio`: the process-wide state of the tool author's studio (the Evaluate tab and the effect of an
edit), shared by every session like :class:`toolrag.ui.backend.Backend`; it imports no gradio.

It owns one :class:`toolrag.evaluation.loo.RetrievabilityChecker` (its leave-one-out vectors are cached on
disk under the data folder, and it updates its last report incrementally after edits), one
:class:`toolrag.evaluation.label_free.LabelFreeChecker` (the estimate of tools without examples, and the
example requests it suggests), a few recent
evaluations of labelled rows (keyed by the index snapshot, the rows and the settings, so a second look
costs nothing) and the *baseline*: the index snapshot of the last evaluation or edit (or of the page load),
searched again to tell what the next edit changed. Every computation is a library call
(:mod:`toolrag.evaluation`), the same as ``toolrag report`` and ``toolrag eval``.
"""

from __future__ import annotations

import datetime as _dt
import json
import threading
from collections import OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolrag.config import data_dir as default_data_dir
from toolrag.errors import QueryError
from toolrag.evaluation.changes import EvalChanges, compare_reports
from toolrag.evaluation.evaluator import EvalReport, Evaluator
from toolrag.evaluation.label_free import LabelFreeChecker
from toolrag.evaluation.loo import RetrievabilityChecker
from toolrag.evaluation.queries import QueryRow, load_queries
from toolrag.evaluation.report import CatalogReport, tune_with_threshold
from toolrag.evaluation.retrievability import RetrievabilityReport, ToolSummary
from toolrag.evaluation.risk import LabelFreeReport, Suggestion
from toolrag.evaluation.tune import ThresholdResult, TuneResult
from toolrag.index.snapshot import IndexSnapshot
from toolrag.progress import Progress
from toolrag.search.results import SearchResult
from toolrag.search.retriever import ToolRetriever
from toolrag.settings import Settings
from toolrag.ui.backend import Backend

__all__ = ["DEFAULT_QUERIES", "EditEffect", "Studio"]

#: The labelled requests a catalog folder may ship (the Evaluate tab's default).
DEFAULT_QUERIES = "queries.yaml"
_EVAL_CACHE = 6


class _Pinned:
    """A retriever that searches one fixed snapshot of its index (what an :class:`Evaluator` needs)."""

    def __init__(self, retriever: ToolRetriever, snapshot: IndexSnapshot) -> None:
        self._retriever, self._snapshot = retriever, snapshot
        self.settings = retriever.settings

    def search(self, query: str = "", **kwargs: Any) -> SearchResult:
        return self._retriever.search(query, snapshot=self._snapshot, **kwargs)


@dataclass(frozen=True)
class EditEffect:
    """What an edit did: every labelled row before → after, and the edited tool's retrievability."""

    changes: EvalChanges
    tool_id: str | None
    before: ToolSummary | None
    after: ToolSummary | None
    after_report: EvalReport


class Studio:
    """Evaluation, retrievability, tuning and edit effects for every session of one app."""

    def __init__(self, backend: Backend) -> None:
        self.b = backend
        folder = (backend.data_dir or default_data_dir()) / "retrievability"
        self.checker = RetrievabilityChecker(cache_dir=folder)
        self.label_free_checker = LabelFreeChecker(cache_dir=folder.parent / "label_free")
        self.last_label_free: LabelFreeReport | None = None
        self._lock = threading.Lock()
        self._evals: OrderedDict[tuple[int, int, str], tuple[IndexSnapshot, EvalReport]] = OrderedDict()
        self._baseline: IndexSnapshot | None = None
        self.tuned: tuple[TuneResult, ThresholdResult | None, Settings] | None = None
        self.last_retrievability: RetrievabilityReport | None = None
        self.last_evaluation: EvalReport | None = None

    # -------------------------------------------------------------------------------------------- rows

    def default_queries(self) -> Path | None:
        """The catalog's own labelled requests (``queries.yaml`` in the catalog folder), if it has them."""
        path = self.b.catalog_path
        if path is None:  # a replica of a published index: no catalog folder
            return None
        folder = path if path.is_dir() else path.parent
        file = folder / DEFAULT_QUERIES
        return file if file.is_file() else None

    def rows(self, file: str | None) -> tuple[list[QueryRow], str]:
        """The labelled rows of an uploaded file, else of the catalog's ``queries.yaml``; and their name."""
        path = Path(file) if file else self.default_queries()
        if path is None:
            raise QueryError(f"this catalog has no {DEFAULT_QUERIES}: upload labelled requests (YAML, JSON Lines "
                             "or CSV with the columns query,gold)")
        return load_queries(path), path.name

    # ------------------------------------------------------------------------------------------ actions

    def remember(self) -> IndexSnapshot:
        """The snapshot an edit will be compared with: the live one when nothing is remembered yet."""
        with self._lock:
            if self._baseline is None:
                self._baseline = self.b.require().snapshot
            return self._baseline

    def evaluate(self, rows: Sequence[QueryRow], settings: Settings, *, snapshot: IndexSnapshot | None = None,
                 progress: Progress | None = None) -> EvalReport:
        """Every row through the real search on ``snapshot`` (default: the live index); recent runs are reused."""
        retriever = self.b.require()
        snap = snapshot if snapshot is not None else retriever.snapshot
        key = (id(snap), hash(tuple(rows)), json.dumps(settings.to_dict(), sort_keys=True, default=str))
        with self._lock:
            hit = self._evals.get(key)
            if hit is not None and hit[0] is snap:
                if snapshot is None:
                    self.last_evaluation, self._baseline = hit[1], snap
                return hit[1]
        report = Evaluator(rows)(_Pinned(retriever, snap), settings=settings, progress=progress)
        with self._lock:
            self._evals[key] = (snap, report)
            while len(self._evals) > _EVAL_CACHE:
                self._evals.popitem(last=False)
            if snapshot is None:  # what the author looks at now: the next edit is compared with it
                self.last_evaluation, self._baseline = report, snap
        return report

    def retrievability(self, settings: Settings, *, tools: Collection[str] | None = None,
                       progress: Progress | None = None) -> RetrievabilityReport:
        """The catalog's retrievability (``tools``: only these), updated incrementally after edits."""
        report = self.checker.check(self.b.require(), settings=settings, tools=tools, progress=progress)
        self.last_retrievability = report
        self.remember()
        return report

    def effect(self, rows: Sequence[QueryRow] | None, settings: Settings, tool_id: str | None, *,
               progress: Progress | None = None) -> EditEffect:
        """Compare the labelled rows and ``tool_id``'s retrievability before the last edit and now; the
        current index becomes the baseline of the next edit."""
        say = progress or (lambda f, m: None)
        retriever = self.b.require()
        before_snap, now = self.remember(), retriever.snapshot
        changes = EvalChanges(())
        after = None
        if rows:
            before = self.evaluate(rows, settings, snapshot=before_snap, progress=lambda f, m: say(0.3 * f, m))
            after = self.evaluate(rows, settings, progress=lambda f, m: say(0.3 + 0.4 * f, m))  # the live index
            changes = compare_reports(before, after)
        tool_before = tool_after = None
        if tool_id:
            last = self.checker.last_report
            if last is not None and last.tool(tool_id) is not None and self.checker.last_settings == settings:
                tool_before = last.tool(tool_id)
                self.last_retrievability = self.checker.check(retriever, settings=settings)  # incremental
                tool_after = self.last_retrievability.tool(tool_id)
            else:
                tool_before = self._tool(retriever, settings, tool_id, before_snap)
                tool_after = self._tool(retriever, settings, tool_id, now)
        with self._lock:
            self._baseline = now
        say(1.0, "done")
        if after is None:
            after = EvalReport({}, 0, [])
        return EditEffect(changes, tool_id, tool_before, tool_after, after)

    def _tool(self, retriever: ToolRetriever, settings: Settings, tool_id: str, snap: IndexSnapshot
              ) -> ToolSummary | None:
        tool = snap.catalog.get(tool_id)
        if tool is None or tool.deprecated:
            return None
        return self.checker.check(retriever, settings=settings, snapshot=snap, tools=[tool_id]).tool(tool_id)

    def tune(self, rows: Sequence[QueryRow], settings: Settings, *, step: float, progress: Progress | None = None
             ) -> tuple[TuneResult, ThresholdResult | None]:
        """The text weights (and the NO_TOOL threshold) chosen on ``rows``, as ``toolrag tune`` chooses them."""
        result, threshold = tune_with_threshold(self.b.require(), rows, base=settings, step=step, progress=progress)
        self.tuned = (result, threshold, settings)
        return result, threshold

    def label_free(self, settings: Settings, *, progress: Progress | None = None) -> LabelFreeReport:
        """The label-free estimate of the tools without example requests (of every tool when all have some)."""
        retriever = self.b.require()
        bare = [t.id for t in retriever.catalog.tools if not t.deprecated and not t.examples]
        report = self.label_free_checker.check(retriever, settings=settings, tools=bare or None, progress=progress)
        self.last_label_free = report
        return report

    def suggestions(self, tool_id: str, settings: Settings) -> tuple[Suggestion, ...]:
        """Example requests of the bank that the search sends to ``tool_id`` (searched now: the catalog may have
        changed since the last estimate)."""
        return self.label_free_checker.suggest(self.b.require(), tool_id, settings=settings)

    def catalog_report(self, settings: Settings) -> CatalogReport:
        """The last retrievability check, evaluation and tuning of this app as one report (the HTML export)."""
        retrievability = self.last_retrievability
        if retrievability is None:
            raise QueryError("check retrievability first: the report starts with it")
        tuning, threshold = (self.tuned[0], self.tuned[1]) if self.tuned else (None, None)
        return CatalogReport(self.b.require().catalog.name, settings, retrievability, self.last_evaluation, tuning,
                             threshold, _dt.datetime.now().isoformat(timespec="seconds"), self.last_label_free)
