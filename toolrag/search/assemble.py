"""The last steps of a search: the best raw cosine of the top candidates, and the ``SearchResult`` built
from the ranked candidates and the decision (the tools to inject, their prompt block and the token report)."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from toolrag.catalog.caller import Caller
from toolrag.decision.outcome import Decision, DecisionOutcome
from toolrag.decision.view import SELECTION_FEATURES, DecisionView
from toolrag.index.snapshot import IndexSnapshot
from toolrag.search.prompting import openai_tools, prompt_block, tokenizer_name
from toolrag.search.query import QueryFeatures
from toolrag.search.results import Candidate, SearchResult, TokenReport
from toolrag.search.scoring import RawScores

__all__ = ["VISUAL_MATCH", "ResultParts", "assemble_result", "top_cosine"]

#: An example image this similar to the query image vouches for its tool even without text evidence.
VISUAL_MATCH = 0.85


def top_cosine(scores: RawScores, order: np.ndarray) -> float:
    """Best raw cosine in the multilingual space among the top candidates (positions ``order`` into the scored
    rows): an absolute measure, 1.0 when an example image of one of them is at least ``VISUAL_MATCH`` alike."""
    best = -1.0
    for s in ("dense", "ocr", "concepts"):
        if s in scores.raw and len(order):
            best = max(best, float(np.max(scores.raw[s][order])))
    if "visual" in scores.raw and len(order):
        vis = scores.raw["visual"][order][scores.present["visual"][order]]
        if len(vis) and float(vis.max()) >= VISUAL_MATCH:
            best = max(best, 1.0)
    return best


@dataclass(frozen=True)
class ResultParts:
    """What the search loop hands over besides the candidates and the decision."""

    query: str
    filtered_out: int
    absent: dict[str, str]
    mask: np.ndarray
    """The permitted tools (bool per snapshot row)."""
    top_cosine: float
    caller: Caller
    key: Hashable
    """The caller's memo key of the snapshot (:attr:`toolrag.catalog.caller.Caller.key`)."""


def assemble_result(snap: IndexSnapshot, parts: ResultParts, q: QueryFeatures, candidates: list[Candidate],
                    outcome: DecisionOutcome, view: DecisionView | None, per_tool: np.ndarray,
                    timing: dict[str, float], notes: list[str]) -> SearchResult:
    """The explained result: the decision's selection as OpenAI tools and a prompt block, and the schema
    tokens of the selection, of the candidates and of every permitted tool (``per_tool``: each tool's count,
    in snapshot rows)."""
    chosen = [] if outcome.decision is Decision.NO_TOOL else [candidates[i] for i in outcome.selected
                                                                if i < len(candidates)]
    # A successor the caller may not see is not named in the prompt either.
    profiles = [dataclasses.replace(p, replaced_by=parts.caller.successor(snap.catalog, p))
                if p.replaced_by else p for c in chosen if (p := snap.catalog.get(c.id)) is not None]
    names = [parts.caller.function_names(snap.catalog)[p.id] for p in profiles]
    mask = parts.mask
    # Every count is a sum of per-tool counts, so selected <= candidates <= all holds exactly.
    permitted = snap.memo(("tokens", parts.key), lambda: int(per_tool[mask].sum()))
    tokens = TokenReport(int(sum(per_tool[snap.row_of[c.id]] for c in chosen)), permitted,
                         tokenizer_name(), int(sum(per_tool[snap.row_of[c.id]] for c in candidates)))
    if q.gloss:  # how the English model and BM25 read a Chinese request (toolrag.search.gloss)
        notes.append(f"English gloss: {q.gloss[:200]}")
    if q.ocr_text:
        notes.append(f"OCR read: {q.ocr_text[:200]}")
    if q.concepts:
        notes.append("image concepts: " + ", ".join(f"{label} {p:.2f}" for label, p in q.concepts))
    return SearchResult(
        query=parts.query, decision=outcome.decision, clarification=outcome.clarification,
        candidates=tuple(candidates), filtered_out=parts.filtered_out, absent_signals=parts.absent, tokens=tokens,
        timing_ms=timing, top_cosine=parts.top_cosine, tools=tuple(openai_tools(profiles, names=names)),
        prompt=prompt_block(profiles, clarification=outcome.clarification, names=names), notes=tuple(notes),
        decision_reason=outcome.reason, scores=outcome.scores, decided_by=outcome.source,
        selected=tuple(c.id for c in chosen), index_version=snap.version, language=q.language,
        decision_features=view.named() if view is not None else {},
        candidate_features=tuple(dict(zip(SELECTION_FEATURES, (float(v) for v in row), strict=True))
                                 for row in view.candidates[: max(len(candidates) - 1, 0)]) if view is not None else (),
    )
