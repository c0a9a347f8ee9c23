"""What a search returns: candidates with per-signal explanations, a decision and the prompt material.

``SearchResult.to_json()`` is exactly what ``toolrag search --json`` prints and what the app's API returns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolrag.decision.outcome import Decision, DecisionScores, DecisionSource

__all__ = ["Candidate", "Decision", "DecisionScores", "DecisionSource", "SearchResult", "SignalScore",
           "TokenReport"]


@dataclass(frozen=True)
class SignalScore:
    """One signal's view of one candidate.

    ``raw`` is the signal's own score (cosine similarity, BM25 score); ``norm`` the score fusion used (with
    the default normalisation a z-score against the permitted catalog: unbounded, 0 = the catalog's mean);
    ``rank`` the candidate's rank under this signal (1 = best, competition ranking); ``weight`` the effective
    weight after redistributing absent signals; ``contribution`` its share of the fused score.
    """

    raw: float
    norm: float
    rank: int
    weight: float
    contribution: float

    def to_json(self) -> dict[str, float | int]:
        return {
            "raw": round(self.raw, 6),
            "norm": round(self.norm, 6),
            "rank": self.rank,
            "weight": round(self.weight, 6),
            "contribution": round(self.contribution, 6),
        }


@dataclass(frozen=True)
class Candidate:
    id: str
    name: str
    score: float
    signals: Mapping[str, SignalScore]
    description: str = ""
    category: str = ""
    mutation: bool = False
    deprecated: bool = False
    replaced_by: str | None = None
    rerank_score: float | None = None
    function_name: str = ""
    """The name the model calls in the OpenAI ``tools`` JSON (valid, unique in the catalog); ``name`` is the
    original name the tool's server answers to."""

    def top_signal(self) -> str | None:
        """The signal that contributed most to this candidate's score."""
        if not self.signals:
            return None
        return max(self.signals, key=lambda name: self.signals[name].contribution)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "function_name": self.function_name or self.name,
            "score": round(self.score, 6),
            "signals": {name: s.to_json() for name, s in self.signals.items()},
            "category": self.category,
            "mutation": self.mutation,
        }
        if self.rerank_score is not None:
            out["rerank_score"] = round(self.rerank_score, 6)
        if self.deprecated:
            out["deprecated"] = True
            out["replaced_by"] = self.replaced_by
        return out


@dataclass(frozen=True)
class TokenReport:
    """Schema tokens injected for the selected tools against injecting every permitted tool, and against
    injecting every returned candidate (``candidates``, the top-k)."""

    selected: int
    all: int
    tokenizer: str
    candidates: int = 0

    @property
    def saving(self) -> float:
        """Fraction of schema tokens saved (0.0 when the catalog is empty)."""
        return 0.0 if self.all == 0 else 1.0 - self.selected / self.all


@dataclass(frozen=True)
class SearchResult:
    query: str
    decision: Decision
    clarification: str | None
    candidates: tuple[Candidate, ...]
    filtered_out: int
    absent_signals: Mapping[str, str]
    tokens: TokenReport
    timing_ms: Mapping[str, float]
    top_cosine: float
    """The best raw multilingual cosine among the top candidates (1.0 when an example image of one is nearly the
    request's image): a similarity, not a probability and not the decision's; ``scores`` is the decision's."""
    tools: tuple[Mapping[str, Any], ...] = ()
    """OpenAI ``tools`` entries of the selected candidates (empty for NO_TOOL)."""
    prompt: str = ""
    """The prompt block to inject into the LLM's system prompt."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    decision_reason: str = ""
    """Why this decision, in words and numbers (the probabilities, the look-alikes, the named tool...)."""
    scores: DecisionScores | None = None
    """The decision model's probabilities (``None`` when no tool is visible or no model could be read)."""
    decided_by: DecisionSource = DecisionSource.MODEL
    """The model, or the rule that decided without reading ``scores`` (see :class:`DecisionSource`)."""
    decision_features: Mapping[str, float] = field(default_factory=dict)
    """The features the decision model read (:data:`toolrag.decision.view.FEATURES`; NaN = missing)."""
    candidate_features: tuple[Mapping[str, float], ...] = ()
    """Per candidate after the first, what the selection read (:data:`toolrag.decision.view.SELECTION_FEATURES`)."""
    selected: tuple[str, ...] = ()
    """Ids of the candidates to inject (1..top_k for EXECUTE and CLARIFY, none for NO_TOOL): ``tools`` and
    ``prompt`` hold exactly these."""
    index_version: str | None = None
    """The version of the published index searched (``None``: a catalog's own index; docs/deploy.md)."""
    language: str = "und"
    """The request's language, an ISO 639-1 code (:func:`toolrag.language.detect_language`; ``und``: no letters)."""

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.candidates]

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "language": self.language,
            "decision": self.decision.value,
            "decision_reason": self.decision_reason,
            "decided_by": self.decided_by.value,
            "probabilities": self.scores.to_json() if self.scores is not None else None,
            "clarification": self.clarification,
            "top_cosine": round(self.top_cosine, 6),
            "selected": list(self.selected),
            "candidates": [c.to_json() for c in self.candidates],
            "filtered_out": self.filtered_out,
            "absent_signals": dict(self.absent_signals),
            "tokens": {"selected": self.tokens.selected, "candidates": self.tokens.candidates,
                       "all": self.tokens.all, "tokenizer": self.tokens.tokenizer},
            "timing_ms": {k: round(v, 3) for k, v in self.timing_ms.items()},
            "tools": list(self.tools),
            "notes": list(self.notes),
            "index_version": self.index_version,
        }

    def to_json_str(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, indent=2)
