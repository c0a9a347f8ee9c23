"""The label-free check: how findable each tool is from its descriptions alone, through the real search.

Most catalogs users bring (an MCP server's ``tools/list``, an OpenAI ``tools`` file) have no example requests,
so the leave-one-out check of :mod:`toolrag.evaluation.loo` has nothing to search. :class:`LabelFreeChecker`
searches, for every tool, requests that were not written for it, with :meth:`ToolRetriever.search` itself:

- the tool's own text (name, description, tags) on the index as it is: does the tool stand out from its
  nearest neighbour, by how much in the fused score and in every signal (:class:`toolrag.evaluation.risk.Probe`);
- each of the first sentences of its description, left out of the tool's document (its text vectors and BM25
  text replaced, as :mod:`~toolrag.evaluation.loo` leaves an example out): does the rest of the profile still
  bring a request phrased like that sentence to the tool?

:mod:`toolrag.evaluation.risk` turns the outcomes into a risk per tool (found first / top five / lost to which
tool), the words it shares with that rival, its missing or generic fields; for the tools at risk, requests of
the bundled bank (:mod:`toolrag.evaluation.request_bank`) that the real search sends to the tool are suggested
as examples. The caller is the catalog's author (every tool) unless one is given (``check(..., caller=...)``:
the estimate as a role sees it, as if the tools it cannot see were not in the catalog); deprecated tools are
neither checked nor counted. Where the caller sees one tool, that tool is found first by any request; where it
sees at most five, every tool is in the top five: the estimate says so (1.0) instead of reading the probes.

Cost: one search per tool and one more per description sentence (at most ``sentences``, 2 by default), each
left-out document encoded once per text model (cached by content in ``cache_dir``); for the ``suggest_for``
tools most at risk (40), up to ``candidates`` bank requests (16) encoded by the text models and the four that
stand out most for the tool searched.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np

from toolrag.catalog.caller import Caller
from toolrag.catalog.lint import lint_profile
from toolrag.catalog.profile import ToolProfile
from toolrag.decision.nulls import standing
from toolrag.encode.protocols import TextModel
from toolrag.errors import QueryError
from toolrag.evaluation.loo import document_view
from toolrag.evaluation.request_bank import RequestBank
from toolrag.evaluation.risk import (
    OWN_TEXT,
    SENTENCE,
    LabelFreeReport,
    Probe,
    RiskModel,
    Suggestion,
    ToolRisk,
    estimate,
    features,
    likely_rival,
    risk_model,
)
from toolrag.evaluation.vector_cache import VectorCache, prime_queries
from toolrag.index.snapshot import IndexSnapshot
from toolrag.index.text_sync import tool_text
from toolrag.progress import Progress
from toolrag.search.query import TEXT_READING
from toolrag.search.results import Decision, SearchResult
from toolrag.search.retriever import ToolRetriever
from toolrag.settings import Settings
from toolrag.text import is_mostly_cjk

__all__ = ["FIELD_CODES", "LabelFreeChecker", "own_text", "sentences"]

#: The lint codes that name a missing or generic field (what the report lists as "fields" of a tool).
FIELD_CODES = ("description-repeats-name", "short-description", "undocumented-parameters")
_DEPTH = 10
_SENTENCE = re.compile(r"(?<=[.;!?。；！？])\s*|\n+")
_MIN_SENTENCE = 8
#: Bank requests searched for one tool at risk (the nearest by the multilingual model among the BM25 candidates).
_TRIED = 4
#: How far (in standard deviations, averaged over the text models) a suggested request must stand out for the
#: tool from unrelated real requests (the bank's sample of :data:`_NULL`); below it, suggestions that only share
#: a word ("get therapist details" for get_issue) came through the search's test.
_MIN_Z = 4.5
_NULL = 256


def own_text(tool: ToolProfile) -> str:
    """The tool's own words as a request: its document without examples or image captions."""
    return replace(tool, examples=(), images=(), embedding_text=None).document_text()


def sentences(description: str) -> list[str]:
    """The sentences of a description (split after . ; ! ? and their full-width forms, and at line breaks),
    those of at least 8 characters (4 when mostly Chinese: a Chinese word is a character or two)."""
    parts = (s.strip() for s in _SENTENCE.split(description) if s)
    return [s for s in parts if len(s) >= (_MIN_SENTENCE // 2 if is_mostly_cjk(s) else _MIN_SENTENCE)]


class LabelFreeChecker:
    """Estimates every tool's findability without labels (see the module docstring). Thread-safe."""

    def __init__(self, *, cache_dir: str | Path | None = None, bank: RequestBank | None = None,
                 sentences: int = 2, suggestions: int = 3, candidates: int = 16, suggest_for: int = 40,
                 model: RiskModel | None = None) -> None:
        for name, value in (("sentences", sentences), ("suggestions", suggestions), ("candidates", candidates),
                            ("suggest_for", suggest_for)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        self.n_sentences, self.n_suggestions, self.n_candidates = sentences, suggestions, candidates
        self.suggest_for = suggest_for
        self._model = model
        self._bank = bank
        self._cache = VectorCache(Path(cache_dir).expanduser() if cache_dir is not None else None)
        self._lock = threading.Lock()

    @property
    def model(self) -> RiskModel:
        """The risk model of the estimate: the one given, else the shipped one (read when first needed)."""
        return self._model if self._model is not None else risk_model()

    @property
    def bank(self) -> RequestBank:
        if self._bank is None:
            self._bank = RequestBank.bundled()
        return self._bank

    def check(self, retriever: ToolRetriever, *, settings: Settings | None = None,
              tools: Collection[str] | None = None, suggest: bool = True,
              progress: Progress | None = None, caller: Caller | None = None) -> LabelFreeReport:
        """The label-free report of ``tools`` (default: every tool users may be shown); ``suggest``: look for
        example requests in the bank for the tools at risk; ``caller``: as this caller sees the catalog
        (default: its author, who sees every tool)."""
        if not isinstance(retriever, ToolRetriever):
            raise TypeError(f"LabelFreeChecker needs a ToolRetriever, got {type(retriever).__name__}")
        say = progress or (lambda f, m: None)
        cfg = settings or retriever.settings
        with self._lock:
            start = time.perf_counter()
            base = retriever.snapshot
            who = caller if caller is not None else Caller.author(base.catalog)
            seen = [t for t in base.catalog.tools if who.sees(t)]
            visible = [t for t in seen if tools is None or t.id in tools]
            own = {t.id: own_text(t) for t in visible}
            self._prime(retriever, list(own.values()))
            probes: dict[str, list[Probe]] = {}
            for n, tool in enumerate(visible):
                result = self._search(retriever, base, cfg, own[tool.id], who)
                probes[tool.id] = [_probe(tool.id, OWN_TEXT, own[tool.id], result)]
                if n % 16 == 15:
                    say(0.3 * (n + 1) / len(visible), f"label-free: own texts {n + 1}/{len(visible)}")
            encoded = self._sentence_probes(retriever, base, cfg, visible, probes, say, who)
            feats = features(probes)
            mask = base.allowed(who)[0]
            risks = [self._risk(base, tool, probes[tool.id], feats[tool.id], mask, len(seen)) for tool in visible]
            searched = sum(len(p) for p in probes.values())
            if suggest and self.n_suggestions:
                position = {r.tool_id: i for i, r in enumerate(risks)}
                at_risk = sorted((r for r in risks if r.at_risk), key=lambda r: r.p_first)[:self.suggest_for]
                for n, risk in enumerate(at_risk):
                    say(0.8 + 0.2 * n / max(len(at_risk), 1), f"label-free: suggestions {n + 1}/{len(at_risk)}")
                    found, tried = self._suggest(retriever, base, cfg, base.catalog.get(risk.tool_id),
                                                 own[risk.tool_id], who)
                    risks[position[risk.tool_id]] = replace(risk, suggestions=found)
                    searched += tried
            self._cache.save()
            risks.sort(key=lambda r: (r.p_first, r.tool_id))
            say(1.0, f"label-free: {len(visible)} tool(s) checked")
            return LabelFreeReport(tuple(risks), fitted_on=self.model.fitted_on, searched=searched, encoded=encoded,
                                   seconds=time.perf_counter() - start)

    def suggest(self, retriever: ToolRetriever, tool_id: str, *, settings: Settings | None = None
                ) -> tuple[Suggestion, ...]:
        """Example requests of the bank for one tool, at risk or not (what the app's Profiles tab offers)."""
        base = retriever.snapshot
        tool = base.catalog.get(tool_id)
        if tool is None or tool.deprecated:
            raise QueryError(f"no tool {tool_id!r} to suggest examples for: pick one of the catalog's tools")
        with self._lock:
            found, _ = self._suggest(retriever, base, settings or retriever.settings, tool, own_text(tool),
                                     Caller.author(base.catalog))
            self._cache.save()
            return found

    # ------------------------------------------------------------------------------------------- internals

    def _prime(self, retriever: ToolRetriever, queries: Sequence[str]) -> None:
        """Every request's text vectors (:func:`toolrag.evaluation.vector_cache.prime_queries`)."""
        prime_queries(retriever, self._cache, queries)

    def _vectors(self, retriever: ToolRetriever, kind: str, queries: Sequence[str]) -> dict[str, np.ndarray]:
        """One text model's vectors of ``queries`` (``dense``: multilingual, ``dense_en``: English), cached with
        the searches' own, encoded in batches of 32."""
        model = _model(retriever, kind)
        if model is None:
            return {}
        space = f"query|{model.fingerprint}|reading {TEXT_READING}"
        found = self._cache.lookup(space, queries)
        todo = [q for q in dict.fromkeys(queries) if q not in found]
        for start in range(0, len(todo), 32):
            batch = todo[start:start + 32]
            fresh = dict(zip(batch, np.asarray(model.encode_queries(batch), dtype=np.float32), strict=True))
            self._cache.store(space, fresh)
            found.update(fresh)
        return found

    def _null(self, retriever: ToolRetriever, kind: str, lang: str) -> np.ndarray:
        """The ``kind`` vectors of a fixed sample of the bank's requests in ``lang`` (every n-th, at most
        :data:`_NULL` of them): what an unrelated real request looks like to a tool."""
        rows = [r.query for r in self.bank.requests if r.lang == lang]
        sample = rows[::max(len(rows) // _NULL, 1)][:_NULL]
        vectors = self._vectors(retriever, kind, sample)
        return np.stack([vectors[q] for q in sample]) if sample else np.zeros((0, 1), dtype=np.float32)

    @staticmethod
    def _search(retriever: ToolRetriever, base: IndexSnapshot, cfg: Settings, query: str, caller: Caller
                ) -> SearchResult:
        return retriever.search(query, caller=caller, top_k=_DEPTH, settings=cfg, snapshot=base, audited=False)

    def _sentence_probes(self, retriever: ToolRetriever, base: IndexSnapshot, cfg: Settings,
                         visible: Sequence[ToolProfile], probes: dict[str, list[Probe]], say: Progress,
                         caller: Caller) -> int:
        """Search each tool's first description sentences, each left out of its document; the number of
        documents encoded."""
        items: list[tuple[ToolProfile, str, str, str]] = []  # tool, sentence, document and BM25 text without it
        for tool in visible:
            parts = sentences(tool.description)
            row = base.row_of[tool.id]
            full_lexical = base.bm25_texts[row] if base.bm25_texts else tool.lexical_text()
            for k, sentence in enumerate(parts[:self.n_sentences]):
                rest = replace(tool, description=" ".join(parts[:k] + parts[k + 1:]))
                lexical = rest.lexical_text()
                if full_lexical.startswith(tool.lexical_text()):  # keep the text read in its example images
                    lexical += full_lexical[len(tool.lexical_text()):]
                items.append((tool, sentence, rest.document_text(), lexical))
        if not items:
            return 0
        self._prime(retriever, [i[1] for i in items])
        kinds = [(kind, model) for kind, model in (("dense", retriever.models.text),
                                                   ("dense_en", retriever.models.english))
                 if model is not None and kind in base.vectors and cfg.weights.get(kind, 0.0) > 0]
        docs: dict[str, dict[str, np.ndarray]] = {}
        encoded = 0
        with ThreadPoolExecutor(max_workers=max(len(kinds), 1), thread_name_prefix="toolrag-label-free") as pool:
            futures = {kind: pool.submit(self._cache.passages, model,
                                         [tool_text(kind, d) for _, _, d, _ in items if tool_text(kind, d)])
                       for kind, model in kinds}
            for kind, future in futures.items():
                docs[kind], n = future.result()
                encoded += n
        for n, (tool, sentence, doc, lexical) in enumerate(items):
            view = document_view(base, tool.id, doc=doc, lexical=lexical,
                                 vectors={kind: docs[kind][tool_text(kind, doc)] for kind, _ in kinds
                                          if tool_text(kind, doc) in docs[kind]})
            result = retriever.search(sentence, caller=caller, top_k=_DEPTH, settings=cfg, snapshot=view,
                                      audited=False)
            probes[tool.id].append(_probe(tool.id, SENTENCE, sentence, result))
            if n % 16 == 15:
                say(0.3 + 0.5 * (n + 1) / len(items), f"label-free: description sentences {n + 1}/{len(items)}")
        return encoded

    def _risk(self, base: IndexSnapshot, tool: ToolProfile, rows: list[Probe], feats: dict[str, float],
              mask: np.ndarray, shown: int) -> ToolRisk:
        """``mask``: the rows the caller sees; ``shown``: how many tools its searches rank (the one tool it sees is
        found first whatever the request; with at most five, each is in the top five)."""
        p_first, p_top5 = estimate(feats, self.model)
        if shown <= 5:
            p_top5 = 1.0
        if shown <= 1:
            p_first = 1.0
        rival = likely_rival(rows)
        cosine = words = None
        if rival is not None and rival in base.row_of:
            dense = base.vectors.get("dense")
            if dense is not None:
                a, b = dense[base.row_of[tool.id]], dense[base.row_of[rival]]
                cosine = float(a @ b) / max(float(np.linalg.norm(a) * np.linalg.norm(b)), 1e-12)
            scores = _term_scores(base, own_text(tool), rival, mask)
            words = tuple(w for w, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:6])
        fields = tuple(w.code for w in lint_profile(tool) if w.code in FIELD_CODES)
        return ToolRisk(tool.id, tool.name, p_first, p_top5, rival, cosine, words or (), fields, tuple(rows))

    def _suggest(self, retriever: ToolRetriever, base: IndexSnapshot, cfg: Settings, tool: ToolProfile | None,
                 text: str, caller: Caller) -> tuple[tuple[Suggestion, ...], int]:
        """Bank requests the real search would call ``tool`` for (first, decision EXECUTE): among the BM25
        candidates, those that stand out most for the tool are searched; and how many were searched."""
        if tool is None:
            return (), 0
        lang = "zh" if is_mostly_cjk(text) else "en"
        known = {ex.query.casefold() for ex in tool.examples}
        pool = [r for r in self.bank.sharing_words(text, lang=lang, k=self.n_candidates)
                if r.query.casefold() not in known]
        if not pool:
            return (), 0
        # a floor on relevance: the request stands out for the tool from real requests written for other tools (z
        # of its cosine with the tool against a fixed sample of the bank in its language, averaged over the text
        # models that read both); the nearest of those are searched
        row = base.row_of[tool.id]
        kinds = [k for k in ("dense", "dense_en") if k in base.vectors and _model(retriever, k) is not None
                 and (k == "dense" or (lang == "en" and bool(base.english[row])))]
        zs = np.zeros(len(pool))
        for kind in kinds:
            vectors = self._vectors(retriever, kind, [r.query for r in pool])
            null = self._null(retriever, kind, lang)
            zs += [standing(base.vectors[kind][row], vectors[r.query], null) for r in pool]
        zs /= max(len(kinds), 1)
        tried = [pool[i] for i in np.argsort(-zs, kind="stable") if zs[i] >= _MIN_Z][:_TRIED]
        self._prime(retriever, [r.query for r in tried])
        found: list[Suggestion] = []
        for request in tried:
            result = self._search(retriever, base, cfg, request.query, caller)
            probe = _probe(tool.id, "bank", request.query, result)
            # kept only when the search would call this tool for it: first, and decided EXECUTE
            if probe.rank == 1 and probe.margin is not None and result.decision is Decision.EXECUTE \
                    and tool.id in result.selected:
                found.append(Suggestion(request.query, request.source, probe.margin))
        found.sort(key=lambda s: -s.margin)
        return tuple(found[:self.n_suggestions]), len(tried)


def _term_scores(base: IndexSnapshot, text: str, doc_id: str, mask: np.ndarray) -> dict[str, float]:
    """Per term of ``text``, its BM25 contribution to ``doc_id``'s score, with the statistics of the tools the
    caller sees (``mask``): as an index of those tools alone would give them."""
    bm25 = base.bm25
    if mask.all():
        return bm25.term_scores(text, doc_id)
    row = base.row_of[doc_id]
    document = bm25.term_set(doc_id)
    out = {}
    for term in dict.fromkeys(bm25.terms(text)):
        if term in document:
            score = float(bm25.scores(term, mask)[row])
            if score > 0:
                out[term] = score
    return out


def _model(retriever: ToolRetriever, kind: str) -> TextModel | None:
    return retriever.models.text if kind == "dense" else retriever.models.english


def _probe(tool_id: str, kind: str, query: str, result: SearchResult) -> Probe:
    """Where ``tool_id`` landed for ``query``: rank, winner, best other tool and the margins over it."""
    candidates = list(result.candidates)
    own = next((c for c in candidates if c.id == tool_id), None)
    other = next((c for c in candidates if c.id != tool_id), None)
    rank = candidates.index(own) + 1 if own is not None else None
    margin = own.score - other.score if own is not None and other is not None else None
    signals = ({s: own.signals[s].norm - other.signals[s].norm for s in own.signals if s in other.signals}
               if own is not None and other is not None else {})
    return Probe(tool_id, kind, query, rank, candidates[0].id if candidates else None,
                 other.id if other is not None else None, margin, signals)
