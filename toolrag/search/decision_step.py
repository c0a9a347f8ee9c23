"""The decision step of one search: the result's features -> the catalog's decision model -> the decision.

The retriever hands over what it computed for the *permitted* tools only (raw scores, normalised scores and
presence per signal, fused scores, the ranking), so no score, name or count of a hidden tool can move the
decision. Here they become a :class:`toolrag.search.features.ResultView`, the model's probabilities, the
selection's probabilities and the :class:`toolrag.search.decide.DecisionOutcome`. No encoding: a few vector
operations over the permitted tools.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from toolrag.catalog.lint import STUFFING_THRESHOLD, keyword_stuffing
from toolrag.index.snapshot import IndexSnapshot
from toolrag.search import adaptive, fusion
from toolrag.search.actions import change_verb, reads_only, vague_word
from toolrag.search.addresses import has_web_address, takes_web_address
from toolrag.search.decide import DecisionInputs, DecisionOutcome, decide
from toolrag.search.decision_model import DecisionModel
from toolrag.search.features import (
    CROSS_LINGUAL_SHARE,
    FEW_TOOLS,
    ResultView,
    SignalArrays,
    candidate_row,
    coverage,
    feature_vector,
    lone_tool_z,
    meaningful_chars,
    novel_cover,
    word_count,
)
from toolrag.search.query import QueryFeatures
from toolrag.search.results import Candidate, DecisionScores
from toolrag.settings import Fusion, Normalization, Settings

__all__ = ["DecisionStep", "top_tool_z"]


def top_tool_z(snap: IndexSnapshot, row: int, q: QueryFeatures, chat: Mapping[str, np.ndarray],
               chat_cjk: np.ndarray, *, signals: Sequence[str] = ("dense_en", "dense")) -> float:
    """:func:`toolrag.search.features.lone_tool_z` of the tool at snapshot ``row`` for request ``q``, against the
    bundled no-tool requests (``chat`` per signal, ``chat_cjk`` which of them are Chinese) in the request's
    language; ``signals`` in order of preference (the English model first: its cosines spread), the English
    model for English tools only, as in scoring."""
    spaces = [s for s in signals if s in snap.vectors and (s != "dense_en" or bool(snap.english[row]))]
    return lone_tool_z({s: snap.vectors[s][row] for s in spaces}, q.vectors,
                       {s: chat[s][chat_cjk == q.cjk] for s in spaces if s in chat})


class DecisionStep:
    """One search's arrays over the scored (permitted) tools: ``rows`` are snapshot rows, every array is
    aligned to them, ``order`` holds positions into them, best first (named tools already moved first)."""

    def __init__(self, snap: IndexSnapshot, rows: np.ndarray, fused: np.ndarray,
                 arrays: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]], order: np.ndarray,
                 cfg: Settings) -> None:
        self.snap, self.rows, self.fused, self.arrays, self.order, self.cfg = snap, rows, fused, arrays, order, cfg

    def decide(self, query: str, history: Sequence[str], q: QueryFeatures, candidates: Sequence[Candidate],
               model: DecisionModel | None, chat: Mapping[str, np.ndarray], *, confidence: float,
               named: int, chat_cjk: np.ndarray | None = None) -> DecisionOutcome:
        """The decision for the final candidate list (after reranking); see :func:`toolrag.search.decide.decide`.
        ``chat``: the bundled no-tool requests' vectors per text signal; ``chat_cjk``: which of them are
        Chinese (for a few permitted tools, :data:`toolrag.search.features.FEW_TOOLS`)."""
        names = [c.name for c in candidates]
        summaries = [c.description for c in candidates]
        meaningful = meaningful_chars(" ".join((query, *history))) > 0
        if not candidates:
            return decide(DecisionInputs(names, summaries, query=query), None)
        position = {int(self.rows[i]): int(i) for i in self.order}
        head = [position[self.snap.row_of[c.id]] for c in candidates]
        head += [int(i) for i in self.order if int(i) not in head][: max(0, 3 - len(head))]
        verb = change_verb(q.text)
        view, novel = self.view(q, np.asarray(head, dtype=np.int64), chat, candidates=len(candidates),
                                change=verb is not None)
        scores, select = None, []
        x = feature_vector(view)
        if model is not None and len(head) >= 2:
            p_right, p_clarify, p_none = model.probabilities(x)
            scores = DecisionScores(p_right, p_clarify, p_none)
            select = [model.select_probability(candidate_row(view.fused, head, k, novel))
                      for k in range(2, len(candidates) + 1)]
        top = next((view.signals[s] for s in ("dense", "ocr", "concepts") if s in view.signals), None)
        lone_z = math.nan
        few = len(self.rows) <= FEW_TOOLS  # the scored rows: every permitted tool of a catalog this small
        cross = q.cjk and self.snap.catalog.chinese_share < CROSS_LINGUAL_SHARE
        if (few or cross or model is None) and chat_cjk is not None:
            row = int(self.rows[head[0]])
            if cross and q.gloss:
                # Read both ways, as typed (multilingual model) and through its English gloss (English model):
                # the gloss is word by word, so it must not carry the request alone; the lower z counts.
                both = [top_tool_z(self.snap, row, q, chat, chat_cjk, signals=(s,)) for s in ("dense_en", "dense")]
                lone_z = min((z for z in both if math.isfinite(z)), default=math.nan)
            else:
                lone_z = top_tool_z(self.snap, row, q, chat, chat_cjk)
        first = float(view.fused[head[0]])
        gap = first - float(view.fused[head[1]]) if len(head) > 1 else math.inf
        takers: tuple[bool, ...] = ()
        if has_web_address(query):
            tools = self.snap.catalog.tools
            takers = tuple(takes_web_address(tools[self.snap.row_of[c.id]].parameters) for c in candidates[:2])
        inputs = DecisionInputs(
            names, summaries, lookalike=view.lookalike,
            relative_gap=gap / abs(first) if first != 0 else 0.0,
            top_cosine=float(top.raw[head[0]]) if top is not None and top.present[head[0]] else math.nan,
            chat_sim=view.chat_sim, confidence=confidence, meaningful=meaningful, image=q.image_given,
            named=named, select=select, query=query, lone_z=lone_z,
            permitted=len(self.rows) if few else 0, cross_lingual=cross, glossed=bool(cross and q.gloss),
            address_takers=takers, stuffed=tuple(self._stuffed(c.id) for c in candidates),
            change_verb=(verb or "") if view.change_reader else "", vague=vague_word(q.text) or "")
        outcome = decide(inputs, scores, model=model, clarify_gap=self.cfg.clarify_gap,
                         no_tool_threshold=self.cfg.no_tool_threshold, execute_share=self.cfg.execute_share)
        return replace(outcome, features=tuple(float(v) for v in x))

    def _stuffed(self, tool_id: str) -> bool:
        """Whether a tool's description is keyword stuffing (:func:`toolrag.catalog.lint.keyword_stuffing`),
        computed once per tool and snapshot, only for the tools that reach a result."""
        known: dict[str, bool] = self.snap.memo(("stuffed",), dict)
        if tool_id not in known:
            tool = self.snap.catalog.get(tool_id)
            known[tool_id] = tool is not None and keyword_stuffing(tool.description) >= STUFFING_THRESHOLD
        return known[tool_id]

    def view(self, q: QueryFeatures, head: np.ndarray, chat: Mapping[str, np.ndarray], *, candidates: int = 2,
             change: bool = False) -> tuple[ResultView, list[float]]:
        """The :class:`toolrag.search.features.ResultView` of this search, and the
        :func:`toolrag.search.features.novel_cover` of the first ``candidates`` tools (``change``: the request
        asks for a change, :func:`toolrag.search.actions.change_verb`). The model is fitted on
        z-scores and late fusion (the shipped defaults); under another fusion or normalisation both are
        recomputed here, so the features mean the same whatever the ranking settings."""
        cfg, snap, rows = self.cfg, self.snap, self.rows
        shipped = cfg.normalization is Normalization.STANDARD and cfg.fusion is Fusion.LATE
        signals: dict[str, SignalArrays] = {}
        for name, (raw, norm, present) in self.arrays.items():
            signals[name] = SignalArrays(raw, norm if shipped else adaptive.standardize(raw, present), present)
        weights = {s: cfg.weights.get(s, 0.0) for s in signals if cfg.weights.get(s, 0.0) > 0}
        fused = self.fused
        if not shipped and weights:
            fused, _ = fusion.late_fusion({s: signals[s].z for s in weights},
                                          {s: signals[s].present for s in weights}, weights)
        dense = snap.vectors["dense"]
        look = float(dense[rows[head[0]]] @ dense[rows[head[1]]]) if len(head) > 1 else 0.0
        sims: dict[str, float] = {}
        for key in ("dense", "dense_en"):
            if key in q.vectors and key in chat:
                values = chat[key] @ q.vectors[key]
                sims[key] = float(np.nanmax(values)) if np.isfinite(values).any() else math.nan
        lexical = q.lexical
        terms = snap.bm25.terms(lexical) if lexical else []
        docs = [snap.bm25.term_set(snap.ids[rows[h]]) for h in head[: max(2, candidates)]]
        cover, unknown = coverage(terms, snap.bm25.has_term, docs[:2])
        padded = (*cover, math.nan, math.nan)
        top_tool = snap.catalog.get(snap.ids[rows[head[0]]]) if change and len(head) else None
        change_reader = top_tool is not None and reads_only(top_tool)
        view = ResultView(signals, fused, head, look, weights, q.image_given, q.cjk, word_count(q.text),
                          sims.get("dense", math.nan), sims.get("dense_en", math.nan), (padded[0], padded[1]),
                          unknown, change_reader)
        return view, novel_cover(terms, snap.bm25.has_term, docs)
