"""``ToolRetriever``: filter, score each signal, fuse, rerank, decide; returns an explained ``SearchResult``.

One retriever per catalog, shared by every caller (CLI, app sessions, ``evaluate``). Models and the index
are built once; query vectors are cached, so re-ranking the same query with other weights encodes nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Hashable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from toolrag.audit import AuditLog
from toolrag.catalog.lint import refuse_unusable_images
from toolrag.catalog.loader import load_catalog
from toolrag.catalog.profile import Catalog
from toolrag.config import RERANK_ENV, is_off
from toolrag.config import data_dir as default_data_dir
from toolrag.encode.fallback import load_or_fall_back
from toolrag.encode.models import ModelSet, get_reranker, load_models
from toolrag.encode.protocols import Reranker
from toolrag.encode.rerank import default_rerank_setting
from toolrag.errors import ModelUnavailable
from toolrag.index.client import StoreConfig, open_client
from toolrag.index.replica import ReplicaIndex
from toolrag.index.snapshot import IndexSnapshot, filter_key
from toolrag.index.tool_index import ToolIndex
from toolrag.observe import search_done
from toolrag.progress import Progress
from toolrag.search.assemble import ResultParts, assemble_result, top_confidence
from toolrag.search.auditing import search_record
from toolrag.search.calibration import DecisionCalibrator
from toolrag.search.decide import DecisionOutcome, name_lookup, named_tools
from toolrag.search.decision_step import DecisionStep
from toolrag.search.features import FEATURES
from toolrag.search.fuse_step import fuse_signals, top_positions
from toolrag.search.model_fit import LabelledCase
from toolrag.search.prompting import schema_tokens
from toolrag.search.query import MAX_QUERY_CHARS, QueryAnalyzer, QueryFeatures
from toolrag.search.request import prepare_request, visible_successor
from toolrag.search.results import Candidate, Decision, SearchResult, SignalScore
from toolrag.search.scoring import score_signals
from toolrag.search.warmup import warm_up
from toolrag.settings import Settings
from toolrag.signals import SIGNAL_SPECS
from toolrag.text import clean_text

__all__ = ["EXACT_LIMIT", "ToolRetriever"]

log = logging.getLogger(__name__)
R = TypeVar("R")

#: Below this many permitted tools every tool is scored exactly; above it Chroma and BM25 propose candidates.
EXACT_LIMIT = 20_000


class ToolRetriever:
    """Finds the tools that fit a request. Build with :meth:`from_catalog` or inject an index."""

    def __init__(self, index: ToolIndex | ReplicaIndex, *, settings: Settings | None = None,
                 reranker: Reranker | None = None, reranker_note: str | None = None,
                 reranker_factory: Callable[[], Reranker] | None = None, audit: AuditLog | None = None,
                 decisions: DecisionCalibrator | None = None) -> None:
        self.index = index
        self.audit = audit
        """Where every search is recorded (``None``: nowhere); see :mod:`toolrag.audit`."""
        self.settings = settings or Settings()
        #: The catalog's decision model (fitted on first need; see toolrag.search.calibration).
        self.decisions = decisions or DecisionCalibrator(index.models)
        self.analyzer = QueryAnalyzer(index.models)
        self.reranker = reranker
        self._reranker_factory = reranker_factory
        self._reranker_lock = threading.Lock()
        self.reranker_note = reranker_note or (
            "no reranker configured" if reranker is None and reranker_factory is None else "")
        #: The note of an opt-in Hub reranker that could not be loaded (set on the first reranked search).
        self.reranker_fallback: str | None = None
        self._tokens_cache: tuple[Catalog, np.ndarray] | None = None
        self._names_cache: tuple[Catalog, dict[str, int]] | None = None

    @classmethod
    def from_catalog(
        cls,
        catalog: str | Path | Catalog,
        *,
        settings: Settings | None = None,
        data_dir: str | Path | None = None,
        chroma_url: str | None = None,
        progress: Progress | None = None,
        models: ModelSet | None = None,
        audit: AuditLog | None = None,
    ) -> ToolRetriever:
        """Load and validate the catalog, load the models, sync the index (encoding only what changed).

        What can be checked without a model is checked first (the catalog, its example images' headers, a
        Chroma server's heartbeat), so a mistake there is reported in well under a second, before the models
        load and before anything is written. ``audit`` records every
        search (default: the log ``TOOLRAG_AUDIT_LOG`` names, if any)."""
        settings = settings or Settings()
        audit = audit if audit is not None else AuditLog.from_env()
        cat = catalog if isinstance(catalog, Catalog) else load_catalog(catalog)
        refuse_unusable_images(cat)  # file:line as `toolrag lint` says it, before any model or file
        if chroma_url:
            open_client(StoreConfig(url=chroma_url))  # a closed port fails here, not after the models load
        models = models or load_models(settings, progress=progress)
        folder = Path(data_dir) if data_dir else default_data_dir()
        store = StoreConfig(url=chroma_url) if chroma_url else StoreConfig(path=folder / "chroma")
        index = ToolIndex(cat, models, store=store, progress=progress)
        decisions = DecisionCalibrator(models, folder=folder / "decisions")
        retriever = cls.around(index, settings=settings, audit=audit, decisions=decisions)
        if progress is not None:
            progress(1.0, "calibrating the decision model")
        retriever.decision_model()
        return retriever

    @classmethod
    def around(cls, index: ToolIndex | ReplicaIndex, *, settings: Settings, audit: AuditLog | None,
               decisions: DecisionCalibrator) -> ToolRetriever:
        """A retriever over an index already open (a catalog's, or a replica's of a published index), with the
        reranker the settings ask for (loaded on the first reranked search)."""
        setting = settings.rerank_model if settings.rerank_model is not None else default_rerank_setting()
        if not is_off(setting):
            def load_reranker() -> Reranker:
                reranker, note = load_or_fall_back("rerank_model", setting, get_reranker)
                retriever.reranker_fallback = note
                if reranker is None:
                    raise ModelUnavailable(note or f"reranker {setting!r} cannot be loaded")
                return reranker

            # Loaded on the first reranked search: a cross-encoder is large and reranking is off by default.
            retriever = cls(index, settings=settings, reranker_factory=load_reranker, audit=audit,
                            decisions=decisions)
        else:
            note = (f"reranker off: no cross-encoder weights ship in a package; set {RERANK_ENV} "
                    "(or --rerank-model) to a cross-encoder path or Hub id")
            retriever = cls(index, settings=settings, reranker_note=note, audit=audit, decisions=decisions)
        return retriever

    def reload(self, catalog: Catalog, progress: Progress | None = None) -> int:
        """Re-index after the catalog changed (an edit, an addition, a removal); only changed tools are
        re-encoded. Returns how many texts/images were encoded. Searches in flight keep their snapshot.
        The decision model is refitted for the new catalog in the background (query vectors of unchanged
        examples are cached); until it is, the previous model decides. ``decisions.wait()`` joins the refit."""
        encoded = self.index.update(catalog, progress)
        snap = self.index.snapshot
        if self.decisions.current is None:
            self.decision_model()  # nothing to answer with meanwhile: fit now
        elif int(np.count_nonzero(~snap.deprecated)) >= 2:
            self.decisions.refit_soon(snap, self.settings)
        return encoded

    def decision_model(self, settings: Settings | None = None) -> Any:
        """The catalog's :class:`toolrag.search.decision_model.DecisionModel`: loaded from the data folder or
        fitted now (simulated requests of this catalog, see docs/decisions.md). ``None`` for an empty catalog."""
        snap = self.index.snapshot
        if int(np.count_nonzero(~snap.deprecated)) < 2:
            return None
        return self.decisions.model_for(snap, settings or self.settings)

    @property
    def catalog(self) -> Catalog:
        """The catalog the index serves now (it changes after :meth:`reload`)."""
        return self.index.catalog

    @property
    def models(self) -> ModelSet:
        return self.index.models

    @property
    def snapshot(self) -> IndexSnapshot:
        """The index as searches see it now: an immutable view that an edit replaces, never changes (what
        :meth:`search` takes as ``snapshot=`` to search an earlier or a modified view)."""
        return self.index.snapshot

    def warm_up(self) -> list[str]:
        """Load and run every model once (OCR, image, text, jieba's dictionary), so the first request with an
        image or Chinese text pays no load; returns what was warmed. The app and ``toolrag serve`` do this in
        the background; a library caller can too: ``threading.Thread(target=retriever.warm_up).start()``."""
        return warm_up(self.models)

    def model_notes(self) -> list[str]:
        """Opt-in Hub models that could not be loaded, each with the packaged model (or none) used instead
        (:mod:`toolrag.encode.fallback`): what the app's status line and the CLI's stderr show."""
        return [*self.models.fallbacks.values(), *([self.reranker_fallback] if self.reranker_fallback else [])]

    def signal_notes(self) -> dict[str, str]:
        """Why each signal that cannot run here is off (signal -> reason), from the models' roles."""
        notes = {s.name: reason for s in SIGNAL_SPECS if (reason := self.models.signal_reason(s.name))}
        return notes

    def tool_vectors(self) -> tuple[tuple[str, ...], np.ndarray]:
        """The tools' ids and their multilingual text vectors (unit rows, catalog order): the tool map."""
        snap = self.index.snapshot
        return snap.ids, snap.vectors["dense"]

    def request_vector(self, query: str, *, image: Any = None, settings: Settings | None = None
                       ) -> np.ndarray | None:
        """Where a request lands in the multilingual text space (the map's star): its text vector, else the
        vector of the text read in its image, else of its image concepts; ``None`` when it has none."""
        features = self.analyzer.analyze(query, image=image, settings=settings or self.settings)
        return next((features.vectors[k] for k in ("dense", "ocr", "concepts") if k in features.vectors), None)

    def refine_decisions(self, rows: Sequence[Any], *, settings: Settings | None = None) -> Any:
        """Refit the decision model with labelled requests besides the simulated ones (``rows``: objects with
        ``query``, ``image``, ``permissions``, ``role``, ``history``, ``gold`` and ``expect``, e.g.
        :class:`toolrag.evaluation.queries.QueryRow`; rows without ``expect`` are skipped). The refined model
        is stored in place of the catalog's automatic one until the catalog or the models change."""
        cfg = settings or self.settings
        cases = []
        for row in rows:
            if getattr(row, "expect", None) is None:
                continue
            result = self.search(row.query, image=row.image, permissions=row.permissions, role=row.role,
                                 history=row.history, settings=cfg)
            if not result.decision_features:
                continue
            x = np.array([result.decision_features[f] for f in FEATURES], dtype=np.float64)
            label = {Decision.EXECUTE: 0, Decision.CLARIFY: 1, Decision.NO_TOOL: 2}[Decision(row.expect)]
            cases.append(LabelledCase(x, label, bool(result.ids) and result.ids[0] in set(row.gold)))
        if not cases:
            raise ValueError("no labelled row with an expected decision (expect: EXECUTE | CLARIFY | NO_TOOL)")
        return self.decisions.fit(self.index.snapshot, cfg, labelled=cases)

    def rank_of(self, tool_id: str, query: str, *, image: Any = None, role: str | None = None,
                settings: Settings | None = None) -> int | None:
        """1-based rank of ``tool_id`` for a request over the whole permitted catalog, deprecated tools
        included (``None`` when the caller cannot see it). Without a role every permission code is held, so
        a tool author sees the rank of any tool."""
        catalog = self.catalog
        permissions = None if role else catalog.permission_codes
        result = self.search(query, image=image, role=role, permissions=permissions, settings=settings,
                             top_k=max(1, min(len(catalog), 1000)), include_deprecated=True, audited=False)
        ids = result.ids
        return ids.index(tool_id) + 1 if tool_id in ids else None

    # ---------------------------------------------------------------------------------------------- search

    def search(
        self,
        query: str = "",
        *,
        image: Any = None,
        history: Sequence[str] = (),
        permissions: Collection[str] | None = None,
        role: str | None = None,
        categories: Collection[str] | None = None,
        include_deprecated: bool = False,
        top_k: int | None = None,
        settings: Settings | None = None,
        audited: bool = True,
        snapshot: IndexSnapshot | None = None,
    ) -> SearchResult:
        """Rank the tools for ``query`` (and ``image``) that the caller may use; explain every score.
        ``audited=False`` keeps an internal probe (:meth:`rank_of`, an evaluation, the retrievability
        report) out of the audit log.

        ``permissions`` are the caller's codes (``role`` adds a catalog role's codes); a caller with no codes
        sees only unrestricted tools. Restricted tools the caller lacks are never scored, named or counted.
        ``snapshot``: search this view of the index instead of the live one (the retrievability report
        searches views where one tool's document leaves one example out; up to ``EXACT_LIMIT`` tools).
        """
        t0, started_ns = time.perf_counter(), time.time_ns()
        cfg = settings or self.settings
        if top_k is not None:
            cfg = cfg.with_overrides(top_k=top_k)
        snap = snapshot if snapshot is not None else self.index.snapshot
        request = prepare_request(snap.catalog, query, image=image, history=history, permissions=permissions,
                                  role=role, categories=categories)
        query, history, codes = request.query, request.history, set(request.codes)
        timing: dict[str, float] = {}
        features = self.analyzer.analyze(query, image=image, history=history, settings=cfg)
        timing.update(features.timing_ms)
        t1 = time.perf_counter()
        key = filter_key(codes, categories=categories, include_deprecated=include_deprecated)
        mask, filtered_out = snap.allowed(codes, categories=categories, include_deprecated=include_deprecated)
        rows = self._candidates(snap, mask, features, cfg, codes, categories, include_deprecated, timing, key)
        named = [r for r in named_tools(query, self._name_lookup(snap)) if mask[r]]  # hidden tools stay hidden
        if named and not np.isin(named, rows).all():
            rows = np.union1d(rows, np.asarray(named, dtype=np.int64))
        t2 = time.perf_counter()
        scores = score_signals(snap, rows, features, history_weight=cfg.history_weight)
        timing["score"] = (time.perf_counter() - t2) * 1000
        t3 = time.perf_counter()
        fused, explained, absent = fuse_signals(scores, features, cfg, snap, rows, mask, filter_id=key)
        order = top_positions(fused, rows, snap, max(cfg.top_k, 3))
        if named:  # the tools the request names come first, in the order it names them
            first = np.searchsorted(rows, np.asarray(named))
            order = np.concatenate([first, order[~np.isin(order, first)]])
        timing["fusion"] = (time.perf_counter() - t3) * 1000
        candidates = [self._candidate(snap, rows[i], float(fused[i]), {k: v[i] for k, v in explained.items()},
                                      codes) for i in order[: cfg.top_k]]
        notes = [*request.notes, *self.models.fallbacks.values()]
        if explained and all(absent.get(s) == "weight is 0" for s in explained):
            notes.append(f"every signal that could score this request has weight 0 ({', '.join(explained)}): every "
                         "tool scored 0.0 and they are listed in catalog order; give one of them a weight above 0")
        if cfg.rerank:
            candidates = self._rerank(features, candidates, cfg, timing, notes)
        sure = top_confidence(scores, order[: cfg.top_k])
        t4 = time.perf_counter()
        outcome = self._decide(snap, query, history, features, rows, fused, explained, order, candidates, cfg,
                               sure, len(named))
        timing["decision"] = (time.perf_counter() - t4) * 1000
        parts = ResultParts(query, filtered_out, absent, mask, sure, codes, key)
        result = assemble_result(snap, parts, features, candidates, outcome, self._tool_tokens(snap), timing, notes)
        timing["retrieval"] = (t3 - t1) * 1000 + timing["fusion"] + timing["decision"]
        timing["total"] = (time.perf_counter() - t0) * 1000
        if self.audit is not None and audited:
            self.audit.write(search_record(result, audit=self.audit, role=role, image=image is not None,
                                           n_tools=len(snap.catalog), n_permitted=int(mask.sum())))
        if audited:  # metrics and traces (toolrag.observe; no-ops without the observe extra)
            search_done(result, role=role, started_ns=started_ns, redact=getattr(self.audit, "hash_requests", None))
        return result

    def prepare(self, queries: Sequence[str], *, histories: Sequence[Sequence[str]] | None = None) -> int:
        """Encode many requests' texts at once (one pass per model) so the searches that follow encode
        nothing; results are exactly those of searching without it. Returns how many vectors were encoded.
        Texts are cleaned as :func:`prepare_request` cleans them, so the searches find their vectors."""
        def clean(text: Any) -> str:
            return clean_text(text, limit=MAX_QUERY_CHARS).text if isinstance(text, str) else ""

        return self.analyzer.prepare([clean(q) for q in queries],
                                     histories=None if histories is None else [[clean(h) for h in turns]
                                                                                for turns in histories])

    def evaluate(self, evaluator: Callable[[ToolRetriever], R]) -> R:
        """Run an evaluator (e.g. :class:`toolrag.evaluation.Evaluator`) on this retriever: the manner of
        sentence-transformers' ``model.evaluate(evaluator)``; evaluators call :meth:`search` like users do."""
        return evaluator(self)

    # ------------------------------------------------------------------------------------------ internals

    def _candidates(self, snap: IndexSnapshot, mask: np.ndarray, q: QueryFeatures, cfg: Settings,
                    codes: set[str], categories: Collection[str] | None, include_deprecated: bool,
                    timing: dict[str, float], key: Hashable) -> np.ndarray:
        """The rows to score exactly: every permitted tool up to ``EXACT_LIMIT`` (a matrix product over vectors
        already in memory beats any index there), else the union of each signal's nearest neighbours."""
        allowed = snap.memo(("rows", key), lambda: np.flatnonzero(mask))
        if len(allowed) <= max(EXACT_LIMIT, cfg.candidates):
            return allowed
        start = time.perf_counter()
        filters = {"permissions": codes, "categories": categories, "include_deprecated": include_deprecated,
                   "k": cfg.candidates, "mask": mask, "snapshot": snap}
        found: list[np.ndarray] = [
            self.index.query_rows(kind, q.vectors[probe], **filters)  # type: ignore[arg-type]
            for spec in SIGNAL_SPECS if cfg.weights.get(spec.name, 0.0) > 0
            for probe, kind in spec.probes if probe in q.vectors]
        timing["index_search"] = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
        lexical = " ".join(t for t in (q.lexical, *q.history) if t)
        if lexical:
            every = None if len(allowed) == len(mask) else mask
            found.append(np.array([snap.row_of[i] for i, _ in snap.bm25.top(lexical, k=cfg.candidates, mask=every)],
                                  dtype=np.int64))
        timing["bm25"] = (time.perf_counter() - start) * 1000
        rows = np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)
        return rows[mask[rows]] if len(rows) else rows

    def _candidate(self, snap: IndexSnapshot, row: int, score: float,
                   signals: dict[str, SignalScore], codes: Collection[str]) -> Candidate:
        tool = snap.catalog.tools[row]
        kept = {k: v for k, v in signals.items() if v.rank > 0}
        return Candidate(tool.id, tool.name, score, kept, tool.description, tool.category, tool.mutation,
                         tool.deprecated, visible_successor(snap.catalog, tool, codes),
                         function_name=snap.catalog.function_name(tool.id))

    def _rerank(self, q: QueryFeatures, candidates: list[Candidate], cfg: Settings,
                timing: dict[str, float], notes: list[str]) -> list[Candidate]:
        reranker = self._get_reranker()
        if reranker is None:
            notes.append(self.reranker_note)
            return candidates
        start = time.perf_counter()
        head = candidates[: cfg.rerank_top_n]
        snap = self.index.snapshot
        docs = [snap.catalog.get(c.id).document_text() for c in head]  # type: ignore[union-attr]
        logits = np.asarray(reranker.score(q.text or q.ocr_text, docs), dtype=np.float64)
        probs = 1.0 / (1.0 + np.exp(-logits))
        reranked = [Candidate(**{**c.__dict__, "rerank_score": float(p)}) for c, p in zip(head, probs, strict=True)]
        reranked.sort(key=lambda c: (-(c.rerank_score or 0.0), c.id))
        timing["rerank"] = (time.perf_counter() - start) * 1000
        return reranked + candidates[cfg.rerank_top_n:]

    def _get_reranker(self) -> Reranker | None:
        with self._reranker_lock:
            if self.reranker is None and self._reranker_factory is not None:
                factory, self._reranker_factory = self._reranker_factory, None
                try:
                    self.reranker = factory()
                except ModelUnavailable as exc:
                    self.reranker_note = self.reranker_fallback or f"reranker off: {exc}"
            return self.reranker

    def _name_lookup(self, snap: IndexSnapshot) -> dict[str, int]:
        """Lower-cased identifier-like tool names, function names and ids -> row, built once per catalog."""
        cached = self._names_cache
        if cached is None or cached[0] is not snap.catalog:
            cat = snap.catalog
            lookup = name_lookup([(t.name, cat.function_name(t.id), t.id) for t in cat.tools])
            cached = self._names_cache = (cat, lookup)
        return cached[1]

    def _decide(self, snap: IndexSnapshot, query: str, history: Sequence[str], q: QueryFeatures, rows: np.ndarray,
                fused: np.ndarray, explained: dict[str, Any], order: np.ndarray, candidates: list[Candidate],
                cfg: Settings, confidence: float, named: int) -> DecisionOutcome:
        """The decision step (toolrag.search.decision_step): features of the permitted tools' scores only."""
        model = self.decision_model() if candidates else None
        # the bundled no-tool requests: the model reads how close the request comes to them, and where it cannot
        # decide the top tool is judged against them (toolrag.search.decision_step)
        chat = self.decisions.chat_vectors() if candidates else {}
        step = DecisionStep(snap, rows, fused, {k: v.arrays for k, v in explained.items()}, order, cfg)
        return step.decide(query, history, q, candidates, model, chat, confidence=confidence, named=named,
                           chat_cjk=self.decisions.chat_cjk() if candidates else None)

    def _tool_tokens(self, snap: IndexSnapshot) -> np.ndarray:
        """Schema tokens of every tool, computed once per catalog (for the whole-catalog count)."""
        cached = self._tokens_cache
        if cached is None or cached[0] is not snap.catalog:
            counts = np.array([schema_tokens([t.openai_tool()]) for t in snap.catalog.tools], dtype=np.int64)
            cached = self._tokens_cache = (snap.catalog, counts)
        return cached[1]
