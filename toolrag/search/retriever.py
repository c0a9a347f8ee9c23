"""``ToolRetriever``: filter, score each signal, fuse, rerank, decide; returns an explained ``SearchResult``.

One retriever per catalog, shared by every caller (CLI, app sessions, ``evaluate``). Models and the index
are built once; query vectors are cached, so re-ranking the same query with other weights encodes nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from toolrag.audit import AuditLog
from toolrag.catalog.caller import Caller
from toolrag.catalog.lint import refuse_unusable_images
from toolrag.catalog.loader import load_catalog
from toolrag.catalog.profile import Catalog
from toolrag.config import data_dir as default_data_dir
from toolrag.config import is_off
from toolrag.decision.decider import Decider
from toolrag.decision.outcome import DecisionOutcome
from toolrag.decision.view import DecisionView
from toolrag.encode.fallback import load_or_fall_back
from toolrag.encode.models import ModelSet, get_reranker, load_models
from toolrag.encode.protocols import Reranker
from toolrag.encode.rerank import default_rerank_setting
from toolrag.env_vars import RERANK_ENV
from toolrag.errors import ModelUnavailable
from toolrag.index.client import StoreConfig, open_client
from toolrag.index.replica import ReplicaIndex
from toolrag.index.snapshot import IndexSnapshot
from toolrag.index.tool_index import ToolIndex
from toolrag.observe import search_done
from toolrag.progress import Progress
from toolrag.search.assemble import ResultParts, assemble_result, top_cosine
from toolrag.search.auditing import search_record
from toolrag.search.fuse_step import fuse_signals, top_positions
from toolrag.search.no_tool_bank import bank_decider, bank_folder
from toolrag.search.prompting import schema_tokens
from toolrag.search.query import MAX_QUERY_CHARS, QueryAnalyzer, QueryFeatures
from toolrag.search.request import prepare_request
from toolrag.search.results import Candidate, SearchResult, SignalScore
from toolrag.search.scoring import RawScores, score_signals
from toolrag.search.warmup import warm_up, warm_up_in_background
from toolrag.settings import Settings, settings_or
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
                 decider: Decider | None = None) -> None:
        self.index = index
        self.audit = audit
        """Where every search is recorded (``None``: nowhere); see :mod:`toolrag.audit`."""
        self.settings = settings_or(settings)
        self.analyzer = QueryAnalyzer(index.models)
        #: The decision: the shipped model (one for every catalog) and the no-tool requests (toolrag.decision).
        self.decider = decider or bank_decider(self.analyzer, folder=None)
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
        settings = settings_or(settings)
        audit = audit if audit is not None else AuditLog.from_env()
        cat = catalog if isinstance(catalog, Catalog) else load_catalog(catalog)
        refuse_unusable_images(cat)  # file:line as `toolrag lint` says it, before any model or file
        if chroma_url:
            open_client(StoreConfig(url=chroma_url))  # a closed port fails here, not after the models load
        models = models or load_models(settings, progress=progress)
        folder = Path(data_dir) if data_dir else default_data_dir()
        store = StoreConfig(url=chroma_url) if chroma_url else StoreConfig(path=folder / "chroma")
        index = ToolIndex(cat, models, store=store, progress=progress)
        decider = bank_decider(QueryAnalyzer(models), folder=bank_folder(folder))
        return cls.around(index, settings=settings, audit=audit, decider=decider)

    @classmethod
    def around(cls, index: ToolIndex | ReplicaIndex, *, settings: Settings, audit: AuditLog | None,
               decider: Decider | None = None) -> ToolRetriever:
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
                            decider=decider)
        else:
            note = (f"reranker off: no cross-encoder weights ship in a package; set {RERANK_ENV} "
                    "(or --rerank-model) to a cross-encoder path or Hub id")
            retriever = cls(index, settings=settings, reranker_note=note, audit=audit, decider=decider)
        return retriever

    def reload(self, catalog: Catalog, progress: Progress | None = None) -> int:
        """Re-index after the catalog changed (an edit, an addition, a removal); only changed tools are
        re-encoded. Returns how many texts/images were encoded. Searches in flight keep their snapshot. Nothing
        of the decision depends on the catalog, so nothing is refitted."""
        return self.index.update(catalog, progress)

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
        """Load and run every model once (OCR, image, text, jieba's dictionary, the schema token counter) and read
        the decision's no-tool bank, so the first request pays no load; returns what was warmed. The app and
        ``toolrag serve`` do this in the background; a library caller can too:
        ``threading.Thread(target=retriever.warm_up).start()``."""
        return warm_up(self.models, decision=self.decider.bank)

    def warm_up_in_background(self) -> threading.Thread | None:
        """:meth:`warm_up` in a background thread, as the app and ``toolrag serve`` start it once their index is
        open; ``None`` where ``TOOLRAG_WARMUP=off``."""
        return warm_up_in_background(self.models, decision=self.decider.bank)

    def health(self) -> dict[str, Any]:
        """What ``/readyz`` answers for this retriever (``toolrag serve`` and the app alike): ready (a replica: its
        version loaded and its store answering), the index, its version and tools, the decision model's version."""
        index = self.index
        out = index.health().to_json() if isinstance(index, ReplicaIndex) else {
            "ready": True, "index": None, "version": index.snapshot.version, "serial": 0,
            "tools": len(index.snapshot.ids)}
        return {**out, "decision_model": self.decider.version}

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
        features = self.analyzer.analyze(query, image=image, settings=settings_or(settings, self.settings))
        return next((features.vectors[k] for k in ("dense", "ocr", "concepts") if k in features.vectors), None)

    def rank_of(self, tool_id: str, query: str, *, image: Any = None, role: str | None = None,
                settings: Settings | None = None) -> int | None:
        """1-based rank of ``tool_id`` for a request over the whole permitted catalog, deprecated tools
        included (``None`` when the caller cannot see it). Without a role every permission code is held, so
        a tool author sees the rank of any tool."""
        catalog = self.catalog
        caller = Caller.of(catalog, role=role, include_deprecated=True) if role else \
            Caller.author(catalog, include_deprecated=True)
        result = self.search(query, image=image, caller=caller, settings=settings,
                             top_k=max(1, min(len(catalog), 1000)), audited=False)
        ids = result.ids
        return ids.index(tool_id) + 1 if tool_id in ids else None

    # ---------------------------------------------------------------------------------------------- search

    def search(
        self,
        query: str = "",
        *,
        image: Any = None,
        history: Sequence[str] = (),
        caller: Caller | None = None,
        permissions: Collection[str] | None = None,
        role: str | None = None,
        categories: Collection[str] | None = None,
        include_deprecated: bool = False,
        top_k: int | None = None,
        settings: Settings | None = None,
        audited: bool = True,
        snapshot: IndexSnapshot | None = None,
    ) -> SearchResult:
        """Rank the tools for ``query`` (and ``image``) that the caller may use; explain every score; decide.
        ``audited=False`` keeps an internal probe (:meth:`rank_of`, an evaluation, the retrievability
        report) out of the audit log.

        The caller is ``caller`` (:class:`toolrag.catalog.caller.Caller`), else the one ``role``, ``permissions``
        (codes), ``categories`` and ``include_deprecated`` describe; a caller with no codes sees only unrestricted
        tools. A tool the caller cannot see is absent: never scored, named or counted, and every figure of the
        result (normalisation, BM25 statistics, the decision's features) is computed over the visible tools
        only, so it is what a catalog without the hidden tools gives. ``snapshot``: search this view of the index
        instead of the live one (the retrievability report searches views where one tool's document leaves one
        example out; up to ``EXACT_LIMIT`` tools).
        """
        t0, started_ns = time.perf_counter(), time.time_ns()
        cfg = settings_or(settings, self.settings)
        if top_k is not None:
            cfg = cfg.with_overrides(top_k=top_k)
        snap = snapshot if snapshot is not None else self.index.snapshot
        request = prepare_request(snap.catalog, query, image=image, history=history, caller=caller,
                                  permissions=permissions, role=role, categories=categories,
                                  include_deprecated=include_deprecated)
        query, history, who = request.query, request.history, request.caller
        timing: dict[str, float] = {}
        features = self.analyzer.analyze(query, image=image, history=history, settings=cfg)
        timing.update(features.timing_ms)
        t1 = time.perf_counter()
        mask, filtered_out = snap.allowed(who)
        visible = None if mask.all() else mask
        rows = self._candidates(snap, mask, features, cfg, who, timing)
        # the tools the request names (Caller.mentioned: ids, original and function names the caller sees)
        named = [snap.row_of[i] for i in who.mentioned(snap.catalog, query)]
        if named and not np.isin(named, rows).all():
            rows = np.union1d(rows, np.asarray(named, dtype=np.int64))
        t2 = time.perf_counter()
        scores = score_signals(snap, rows, features, history_weight=cfg.history_weight, visible=visible)
        timing["score"] = (time.perf_counter() - t2) * 1000
        t3 = time.perf_counter()
        fused, explained, absent = fuse_signals(scores, features, cfg, snap, rows, mask, filter_id=who.key)
        order = top_positions(fused, rows, snap, max(cfg.top_k, 3))
        if named:  # the tools the request names come first, in the order it names them
            first = np.searchsorted(rows, np.asarray(named))
            order = np.concatenate([first, order[~np.isin(order, first)]])
        timing["fusion"] = (time.perf_counter() - t3) * 1000
        candidates = [self._candidate(snap, rows[i], float(fused[i]), {k: v[i] for k, v in explained.items()},
                                      who) for i in order[: cfg.top_k]]
        notes = [*request.notes, *self.models.fallbacks.values()]
        if explained and all(absent.get(s) == "weight is 0" for s in explained):
            notes.append(f"every signal that could score this request has weight 0 ({', '.join(explained)}): every "
                         "tool scored 0.0 and they are listed in catalog order; give one of them a weight above 0")
        if cfg.rerank:
            candidates = self._rerank(snap, features, candidates, cfg, timing, notes)
        best = top_cosine(scores, order[: cfg.top_k])
        if not self.decider.bank_loaded:  # once per retriever: read from its cache, or encoded on a new machine
            tb = time.perf_counter()
            self.decider.bank()
            timing["decision_bank"] = (time.perf_counter() - tb) * 1000
        t4 = time.perf_counter()
        outcome, view = self._decide(snap, query, features, rows, scores, mask, order, candidates, cfg, len(named))
        timing["decision"] = (time.perf_counter() - t4) * 1000
        parts = ResultParts(query, filtered_out, absent, mask, best, who, who.key)
        result = assemble_result(snap, parts, features, candidates, outcome, view, self._tool_tokens(snap), timing,
                                 notes)
        timing["retrieval"] = (t3 - t1) * 1000 + timing["fusion"] + timing["decision"]
        timing["total"] = (time.perf_counter() - t0) * 1000
        if self.audit is not None and audited:
            self.audit.write(search_record(result, audit=self.audit, role=who.role, image=image is not None,
                                           n_tools=len(snap.catalog), n_permitted=int(mask.sum())))
        if audited:  # metrics and traces (toolrag.observe; no-ops without the observe extra)
            search_done(result, role=who.role, started_ns=started_ns,
                        redact=getattr(self.audit, "hash_requests", None))
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

    def _candidates(self, snap: IndexSnapshot, mask: np.ndarray, q: QueryFeatures, cfg: Settings, caller: Caller,
                    timing: dict[str, float]) -> np.ndarray:
        """The rows to score exactly: every permitted tool up to ``EXACT_LIMIT`` (a matrix product over vectors
        already in memory beats any index there), else the union of each signal's nearest neighbours."""
        allowed = snap.memo(("rows", caller.key), lambda: np.flatnonzero(mask))
        if len(allowed) <= max(EXACT_LIMIT, cfg.candidates):
            return allowed
        start = time.perf_counter()
        found: list[np.ndarray] = [
            self.index.query_rows(kind, q.vectors[probe], k=cfg.candidates, mask=mask, caller=caller, snapshot=snap)
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
                   signals: dict[str, SignalScore], caller: Caller) -> Candidate:
        tool = snap.catalog.tools[row]
        kept = {k: v for k, v in signals.items() if v.rank > 0}
        return Candidate(tool.id, tool.name, score, kept, tool.description, tool.category, tool.mutation,
                         tool.deprecated, caller.successor(snap.catalog, tool),
                         function_name=caller.function_names(snap.catalog)[tool.id])

    def _rerank(self, snap: IndexSnapshot, q: QueryFeatures, candidates: list[Candidate], cfg: Settings,
                timing: dict[str, float], notes: list[str]) -> list[Candidate]:
        reranker = self._get_reranker()
        if reranker is None:
            notes.append(self.reranker_note)
            return candidates
        start = time.perf_counter()
        head = candidates[: cfg.rerank_top_n]
        docs = [snap.catalog.tools[snap.row_of[c.id]].document_text() for c in head]  # the search's own snapshot
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

    def _decide(self, snap: IndexSnapshot, query: str, q: QueryFeatures, rows: np.ndarray, scores: RawScores,
                mask: np.ndarray, order: np.ndarray, candidates: list[Candidate], cfg: Settings,
                named: int) -> tuple[DecisionOutcome, DecisionView | None]:
        """The decision (toolrag.decision, called once) over the visible tools: the ranking's head is the final
        candidates, and at least three tools when there are."""
        head = [snap.row_of[c.id] for c in candidates]
        if head:
            head += [int(rows[i]) for i in order if int(rows[i]) not in head][: max(0, 3 - len(head))]
        return self.decider.decide(snap, query=query, request=q, rows=rows, raw=scores.raw, present=scores.present,
                                   mask=mask, head=head, shown=len(candidates), named=named,
                                   target=cfg.precision_target, clean=cfg.clean_target)

    def _tool_tokens(self, snap: IndexSnapshot) -> np.ndarray:
        """Schema tokens of every tool, computed once per catalog (for the whole-catalog count)."""
        cached = self._tokens_cache
        if cached is None or cached[0] is not snap.catalog:
            counts = np.array([schema_tokens([t.openai_tool()]) for t in snap.catalog.tools], dtype=np.int64)
            cached = self._tokens_cache = (snap.catalog, counts)
        return cached[1]
