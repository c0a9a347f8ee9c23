"""Leave-one-out searches of every tool's example requests, through :meth:`ToolRetriever.search` itself.

A tool's document embeds its example requests, so searching an example as it is would find the tool
trivially. :class:`RetrievabilityChecker` searches each example against a view of the index
(:class:`toolrag.index.snapshot.IndexSnapshot`) in which only that tool's document lacks that example: its
text vectors (one per text model) and its BM25 text are replaced, the BM25 statistics follow exactly, and the
search, normalisation, fusion and decision are the retriever's own (``search(..., snapshot=view)``). The
caller is the catalog's author (every tool) unless one is given (``check(..., caller=...)``: the report as a
role sees it, computed as if the tools it cannot see were not in the catalog: searched as that caller, counted,
linted and compared among its tools only); deprecated tools are neither searched for nor shown, as for users.
Examples are matched by their text: example images are often the tools' own example pictures, so sending them
would find the tool by its own image.

Cost: one leave-one-out document per example and text model, encoded in batches and cached by
(model fingerprint, text hash), in memory and, with ``cache_dir``, on disk; the requests are encoded in
batches too. The searches are the retriever's exact path (up to ``EXACT_LIMIT`` tools).

Incremental: after an edit, :meth:`RetrievabilityChecker.check` searches again only what the edit can move:

1. every example of a changed (edited, added, removed) tool;
2. examples on which a changed tool ranked above the example's own tool (it may fall back);
3. examples on which a changed tool's new document is not beaten by the own tool on every active signal's
   raw score. Fusion is monotone in each raw score (every normalisation is an increasing map shared by all
   tools of one query; late fusion and RRF add them with non-negative weights), so a tool beaten on every
   signal, with the same signals present, cannot overtake;
4. examples sharing a word with the text the edit added to or removed from a BM25 document (the word's
   document frequency, hence its idf for every tool, moved).

Exact up to the catalog-wide statistics an edit nudges for everyone by about 1/n (the BM25 average document
length and the mean and spread of the z-scores): they can only swap near-ties. ``full=True`` searches
everything again (the query and document vectors still come from the cache).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from toolrag.catalog.caller import Caller
from toolrag.catalog.lint import lint_catalog
from toolrag.catalog.profile import Catalog, ToolProfile
from toolrag.evaluation import projection
from toolrag.evaluation.retrievability import ExampleOutcome, RetrievabilityReport, summarize
from toolrag.evaluation.vector_cache import VectorCache, prime_queries
from toolrag.index.snapshot import IndexSnapshot
from toolrag.index.text_sync import tool_text
from toolrag.index.tokenize import tokenize
from toolrag.progress import Progress
from toolrag.search.retriever import ToolRetriever
from toolrag.settings import Settings
from toolrag.signals import COLLECTIONS, SIGNAL_SPECS

__all__ = ["REPORT_DEPTH", "RetrievabilityChecker", "document_view", "left_out_examples"]

log = logging.getLogger(__name__)

#: How many results of each leave-one-out search are kept (the example's own rank is always exact).
REPORT_DEPTH = 10
_CHUNK = 128
#: Tool-document collections a text-only request reads (dense, dense_en): these get leave-one-out vectors.
_TEXT_KINDS = tuple(dict.fromkeys(kind for s in SIGNAL_SPECS if not s.needs_image and s.model is not None
                                  for key, kind in s.probes if key == kind))


@dataclass(frozen=True)
class _Item:
    """One example to search: its tool's row in the base snapshot and the tool's leave-one-out texts."""

    tool_id: str
    position: int
    query: str
    row: int
    doc: str
    lexical: str


class RetrievabilityChecker:
    """Checks that every tool is found by its own example requests, each left out of the tool's document.

    Keep one checker per catalog and call :meth:`check` again after edits: it remembers the last report and
    re-searches only what an edit can move (see the module docstring). ``cache_dir`` keeps the encoded
    leave-one-out documents and requests between processes. Thread-safe (one check at a time).
    """

    def __init__(self, *, cache_dir: str | Path | None = None, depth: int = REPORT_DEPTH,
                 lookalike_threshold: float = projection.LOOKALIKE_THRESHOLD) -> None:
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be an integer >= 1, got {depth!r}")
        self.depth = depth
        self.threshold = float(lookalike_threshold)
        self._cache = VectorCache(Path(cache_dir).expanduser() if cache_dir is not None else None)
        self._lock = threading.Lock()
        self._last: tuple[IndexSnapshot, Settings, Any, dict[tuple[str, int], ExampleOutcome]] | None = None
        self.last_report: RetrievabilityReport | None = None

    def check(self, retriever: ToolRetriever, *, settings: Settings | None = None,
              snapshot: IndexSnapshot | None = None, tools: Collection[str] | None = None, full: bool = False,
              progress: Progress | None = None, caller: Caller | None = None) -> RetrievabilityReport:
        """The retrievability report of ``retriever``'s catalog (or of ``snapshot``, a view of its index).

        ``tools``: check only these tool ids (a partial report, not remembered); ``full``: search every
        example again even when the last report could be updated. ``settings`` default to the retriever's.
        ``caller``: the report as this caller sees it (default: the catalog's author, who sees every tool).
        """
        if not isinstance(retriever, ToolRetriever):
            raise TypeError(f"RetrievabilityChecker needs a ToolRetriever, got {type(retriever).__name__}")
        say = progress or (lambda f, m: None)
        cfg = settings or retriever.settings
        with self._lock:
            start = time.perf_counter()
            base = snapshot if snapshot is not None else retriever.snapshot
            who = caller if caller is not None else Caller.author(base.catalog)
            visible = [t for t in base.catalog.tools if who.sees(t) and (tools is None or t.id in tools)]
            items = _items(base, visible)
            kept: dict[tuple[str, int], ExampleOutcome] = {}
            if tools is None and not full and self._last is not None and self._last[1] == cfg \
                    and self._last[2] == who.key:
                kept = self._reusable(retriever, base, cfg)
                items = [i for i in items if (i.tool_id, i.position) not in kept]
            outcomes, encoded = self._search(retriever, base, cfg, items, say, who)
            self._cache.save()
            merged = {**kept, **{(o.tool_id, o.position): o for o in outcomes}}
            report = self._summarize(base, merged, searched=len(items), encoded=encoded,
                                     seconds=time.perf_counter() - start, only=tools, caller=who)
            if tools is None:
                self._last = (base, cfg, who.key, merged)
                self.last_report = report
            say(1.0, f"retrievability: {len(items)} example(s) searched")
            return report

    @property
    def last_settings(self) -> Settings | None:
        """The settings of the remembered report (an update after an edit reuses it only under them)."""
        return self._last[1] if self._last is not None else None

    # ------------------------------------------------------------------------------------------- internals

    def _summarize(self, base: IndexSnapshot, outcomes: dict[tuple[str, int], ExampleOutcome], *, searched: int,
                   encoded: int, seconds: float, only: Collection[str] | None, caller: Caller
                   ) -> RetrievabilityReport:
        catalog = base.catalog
        usable = tuple(t for t in catalog.tools if caller.may_use(t))
        if len(usable) < len(catalog.tools):  # as if the tools the caller may not use were not in the catalog
            catalog = Catalog(usable, catalog.name, catalog.root, catalog.assets_dir, catalog.roles, catalog.report)
        dense = base.vectors.get("dense")
        wanted = set(only) if only is not None else None
        ids = [t.id for t in catalog.tools]
        lookalikes = (projection.lookalike_pairs(dense[[base.row_of[i] for i in ids]], ids, threshold=self.threshold)
                      if dense is not None else [])
        cosine: dict[tuple[str, str], float] = {}
        for o in outcomes.values():
            if dense is not None and o.winner is not None and o.winner != o.tool_id:
                a, b = dense[base.row_of[o.tool_id]], dense[base.row_of[o.winner]]
                cosine[(o.tool_id, o.winner)] = float(a @ b) / max(float(np.linalg.norm(a) * np.linalg.norm(b)),
                                                                    1e-12)
        skipped = [t.id for t in catalog.tools if t.deprecated or (wanted is not None and t.id not in wanted)]
        if wanted is not None:
            lookalikes = [p for p in lookalikes if p[0] in wanted or p[1] in wanted]
        lint = [w for w in lint_catalog(catalog) if wanted is None or w.tool_id in wanted]
        return summarize(list(outcomes.values()), catalog, cosine=cosine, lookalikes=lookalikes, lint=lint,
                         threshold=self.threshold, skipped=skipped, searched=searched, encoded=encoded,
                         seconds=seconds)

    def _query_vectors(self, retriever: ToolRetriever, queries: Sequence[str]) -> dict[tuple[str, str], np.ndarray]:
        """Every request's text vectors (:func:`toolrag.evaluation.vector_cache.prime_queries`)."""
        return prime_queries(retriever, self._cache, queries)

    def _search(self, retriever: ToolRetriever, base: IndexSnapshot, cfg: Settings, items: Sequence[_Item],
                say: Progress, caller: Caller) -> tuple[list[ExampleOutcome], int]:
        kinds = [(spec.kind, getattr(retriever.models, spec.model.value)) for spec in COLLECTIONS
                 if spec.kind in _TEXT_KINDS and spec.kind in base.vectors]
        out: list[ExampleOutcome] = []
        encoded = 0
        for start in range(0, len(items), _CHUNK):
            chunk = items[start:start + _CHUNK]
            say(start / max(len(items), 1), f"encoding leave-one-out documents {start + len(chunk)}/{len(items)}")
            vectors = self._query_vectors(retriever, [i.query for i in chunk])
            # A leave-one-out vector is encoded only where the search reads it: a signal with a weight, a
            # request that has a vector of that kind (the English model skips Chinese requests) and, for the
            # English model, a tool document it reads (toolrag.index.text_sync.tool_text: what the index embeds).
            needed = {kind: [i for i in chunk if cfg.weights.get(kind, 0.0) > 0 and (kind, i.query) in vectors
                             and tool_text(kind, i.doc)] for kind, _ in kinds}
            # One thread per text model: each runs its own encoder, so two models keep two cores busy.
            with ThreadPoolExecutor(max_workers=max(len(kinds), 1), thread_name_prefix="toolrag-loo") as pool:
                futures = {kind: pool.submit(self._cache.passages, model,
                                             [tool_text(kind, i.doc) for i in needed[kind]]) for kind, model in kinds}
                docs: dict[str, dict[str, np.ndarray]] = {}
                for kind, future in futures.items():
                    docs[kind], n = future.result()
                    encoded += n
            for n, item in enumerate(chunk):
                loo = {kind: docs[kind][tool_text(kind, item.doc)] for kind, _ in kinds
                       if tool_text(kind, item.doc) in docs[kind]}
                view = _leave_one_out(base, item, loo)
                result = retriever.search(item.query, caller=caller, top_k=self.depth, settings=cfg,
                                          snapshot=view, audited=False)
                ids = list(result.ids)
                rank = ids.index(item.tool_id) + 1 if item.tool_id in ids else None
                out.append(ExampleOutcome(
                    item.tool_id, item.position, item.query, rank, tuple(ids[:rank - 1] if rank else ids),
                    result.decision, own=_raw_scores(view, vectors, item.query, item.row),
                    margin=result.candidates[rank - 1].score - result.candidates[0].score if rank else float("-inf")))
                if n % 16 == 15:
                    say((start + n + 1) / len(items), f"searched {start + n + 1}/{len(items)} examples")
        return out, encoded

    def _reusable(self, retriever: ToolRetriever, base: IndexSnapshot, cfg: Settings
                  ) -> dict[tuple[str, int], ExampleOutcome]:
        """The outcomes of the last report that the changes since then cannot move."""
        old, _, _, outcomes = self._last  # type: ignore[misc]
        now, before = base.catalog, old.catalog
        changed = {t.id for t in now.tools if before.get(t.id) is not t and before.get(t.id) != t}
        changed |= {t.id for t in before.tools if now.get(t.id) is None}
        if not changed:
            return dict(outcomes)
        if retriever.models.clip is not None and cfg.weights.get("clip", 0.0) > 0:
            return {}  # CLIP scores text requests against example images too: this screen does not model it
        # (snapshot, row) of each changed tool where users could see it: before the edit and after it.
        rivals = [(snap, snap.row_of[t]) for snap in (old, base) for t in sorted(changed)
                  if t in snap.row_of and not snap.deprecated[snap.row_of[t]]]
        terms: set[str] = set()
        for tool_id in changed:
            texts = [snap.bm25_texts[snap.row_of[tool_id]] if tool_id in snap.row_of and snap.bm25_texts else ""
                     for snap in (old, base)]
            terms |= set(tokenize(texts[0])) ^ set(tokenize(texts[1]))
        candidates = {k: o for k, o in outcomes.items() if o.tool_id not in changed and now.get(o.tool_id) is not None
                      and not now.get(o.tool_id).deprecated}  # type: ignore[union-attr]
        vectors = self._query_vectors(retriever, [o.query for o in candidates.values()]) if rivals else {}
        kept: dict[tuple[str, int], ExampleOutcome] = {}
        for key, o in candidates.items():
            if terms and terms & set(tokenize(o.query)):
                continue  # a word of the request changed its document frequency: every BM25 score moved
            if any(_may_overtake(_raw_scores(snap, vectors, o.query, row), o.own, cfg) for snap, row in rivals):
                continue
            kept[key] = o
        return kept


def _raw_scores(snap: IndexSnapshot, vectors: dict[tuple[str, str], np.ndarray], query: str, row: int
                ) -> dict[str, float]:
    """One tool's raw score on each text signal present for ``query`` (as :mod:`toolrag.search.scoring`
    computes them: cosine, BM25)."""
    scores: dict[str, float] = {}
    for kind in _TEXT_KINDS:
        vec = vectors.get((kind, query))
        if vec is not None and kind in snap.vectors and (kind != "dense_en" or snap.english[row]):
            scores[kind] = float(snap.vectors[kind][row] @ vec)
    if query.strip():
        scores["bm25"] = float(snap.bm25.scores(query)[row])
    return scores


def _may_overtake(rival: dict[str, float], own: dict[str, float] | Any, cfg: Settings) -> bool:
    """Whether a tool with raw scores ``rival`` could rank above one with raw scores ``own`` for one request.

    False only when both are present on the same weighted signals, ``rival`` is below ``own`` by more than
    1e-6 on at least one of them and not above it (beyond that margin) on any, equal scores counting only when
    exactly equal (two BM25 scores of 0: no shared word). Why that suffices: every normalisation maps one
    signal's raw scores of one request through one increasing function, late fusion is a weighted mean with
    the same effective weights for the same presence, RRF a weighted sum of ranks, so the rival's fused score
    is then strictly lower. Signals outside the text ones count as a possible overtake when weighted and
    present (an image-side signal this screen does not see)."""
    below = False
    for signal, weight in cfg.weights.items():
        if weight <= 0:
            continue
        if signal not in rival and signal not in own:
            continue
        if signal not in rival or signal not in own or signal not in (*_TEXT_KINDS, "bm25"):
            return True
        if rival[signal] == own[signal]:
            continue
        if rival[signal] > own[signal] - 1e-6:
            return True
        below = True
    return not below


def _items(base: IndexSnapshot, tools: Sequence[ToolProfile]) -> list[_Item]:
    """Every example with text of ``tools``, with the tool's document and BM25 text minus that example."""
    items: list[_Item] = []
    for tool in tools:
        row = base.row_of[tool.id]
        full_lexical = base.bm25_texts[row] if base.bm25_texts else tool.lexical_text()
        own_lexical = tool.lexical_text()
        for position, example in enumerate(tool.examples):
            if not example.query.strip():
                continue  # an image-only example: the report matches examples by their text
            rest = replace(tool, examples=tool.examples[:position] + tool.examples[position + 1:])
            lexical = rest.lexical_text()
            if full_lexical.startswith(own_lexical):  # keep the text read in the tool's example images
                lexical += full_lexical[len(own_lexical):]
            items.append(_Item(tool.id, position, example.query, row, rest.document_text(), lexical))
    return items


def _leave_one_out(base: IndexSnapshot, item: _Item, vectors: dict[str, np.ndarray]) -> IndexSnapshot:
    """``base`` with one tool's text vectors, English flag and BM25 text replaced (a new snapshot)."""
    replaced = dict(base.vectors)
    for kind, vec in vectors.items():
        matrix = replaced[kind].copy()
        matrix[item.row] = vec
        replaced[kind] = matrix
    english = base.english.copy()
    english[item.row] = bool(tool_text("dense_en", item.doc))
    texts = list(base.bm25_texts)
    if texts:
        texts[item.row] = item.lexical
    return replace(base, vectors=replaced, english=english, bm25=base.bm25.update({item.tool_id: item.lexical}, ()),
                   bm25_texts=tuple(texts))


def document_view(base: IndexSnapshot, tool_id: str, *, doc: str, lexical: str,
                  vectors: dict[str, np.ndarray]) -> IndexSnapshot:
    """``base`` with one tool's document replaced by ``doc`` (its text vectors of each kind in ``vectors``) and
    its BM25 text by ``lexical``: the view a leave-one-out search reads (the label-free check leaves a sentence
    of a description out this way)."""
    return _leave_one_out(base, _Item(tool_id, -1, "", base.row_of[tool_id], doc, lexical), vectors)


def left_out_examples(retriever: ToolRetriever) -> Iterator[tuple[str, str, IndexSnapshot]]:
    """Each text example of the catalog's tools in use, as ``(tool id, request, view)``: ``view`` is the index
    without that example, the snapshot its leave-one-out search reads (``retriever.search(request,
    snapshot=view)``). For a script that searches the examples its own way (``bench.example_points``); the report
    is :class:`RetrievabilityChecker`'s."""
    base = retriever.snapshot
    items = _items(base, [t for t in base.catalog.tools if not t.deprecated])
    cache = VectorCache(None)
    docs = {spec.kind: cache.passages(getattr(retriever.models, spec.model.value), [i.doc for i in items])[0]
            for spec in COLLECTIONS if spec.kind in _TEXT_KINDS and spec.kind in base.vectors}
    for item in items:
        yield item.tool_id, item.query, _leave_one_out(base, item, {k: v[item.doc] for k, v in docs.items()})
