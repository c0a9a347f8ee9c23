"""The decision: call the top tool, ask the user to choose between look-alikes, or use no tool.

Rules, in order (thresholds come from ``Settings``, calibrated per model in ``docs/benchmarks.md``):

1. NO_TOOL when there is no candidate, or ``confidence < no_tool_threshold``. ``confidence`` is an absolute
   similarity (the best raw cosine of the query against the top candidates' texts), because fused scores are
   normalised per query and cannot say whether anything fits at all.
2. CLARIFY when the top two fused scores differ by less than ``clarify_gap`` (relative to the top score),
   with a question naming both tools.
3. EXECUTE otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from toolrag.search.results import Decision
from toolrag.text import has_cjk

__all__ = ["DecisionOutcome", "clarification_question", "decide"]

@dataclass(frozen=True)
class DecisionOutcome:
    decision: Decision
    clarification: str | None


def decide(
    *,
    scores: Sequence[float],
    names: Sequence[str],
    summaries: Sequence[str],
    confidence: float,
    no_tool_threshold: float,
    clarify_gap: float,
    query: str = "",
) -> DecisionOutcome:
    """Decide from the fused ``scores`` of the ranked candidates (best first) and the ``confidence``.

    The gap is relative: ``(s1 - s2) / s1 < clarify_gap`` (s1 > 0), so it means the same whatever the
    scale of the fusion (late fusion in [0, 1], RRF around 1/60).
    """
    if not scores or confidence < no_tool_threshold:
        return DecisionOutcome(Decision.NO_TOOL, None)
    if len(scores) >= 2 and scores[0] > 0 and (scores[0] - scores[1]) / scores[0] < clarify_gap:
        question = clarification_question(names[:2], summaries[:2], query=query)
        return DecisionOutcome(Decision.CLARIFY, question)
    return DecisionOutcome(Decision.EXECUTE, None)


def clarification_question(names: Sequence[str], summaries: Sequence[str], *, query: str = "") -> str:
    """A question naming both look-alike tools, in Chinese when the query is Chinese."""
    a, b = (f"{n} ({_short(s)})" if s else n for n, s in zip(names, summaries, strict=True))
    if has_cjk(query):
        return f"您是想用 {a}，还是 {b}？"
    return f"Do you want {a} or {b}?"


def _short(text: str, limit: int = 60) -> str:
    first = re.split(r"(?<=[.。!！?？;；])\s*", text.strip(), maxsplit=1)[0]
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"
