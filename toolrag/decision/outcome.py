"""What a decision is: call a tool, ask the user, or use none; who made it; the numbers it read.

A search result carries a :class:`Decision`, the :class:`DecisionScores` of the decision model (the
probabilities an agent reads: ``right``, ``ambiguous``, ``no_tool``), the :class:`DecisionSource` that decided
and a reason in words and numbers (docs/decisions.md says how to read them).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["Decision", "DecisionOutcome", "DecisionScores", "DecisionSource"]


class Decision(str, Enum):
    """What the agent should do with the retrieved tools."""

    EXECUTE = "EXECUTE"  # a listed tool very likely serves the request: call it
    CLARIFY = "CLARIFY"  # a tool fits, but the request or the top two leave open which, or what to pass: ask
    NO_TOOL = "NO_TOOL"  # no listed tool serves the request: answer directly


class DecisionSource(str, Enum):
    """What made the decision: the decision model (its probabilities against the operating point), or one of
    the few invariants that hold whatever it says. When an invariant decided, the probabilities a result
    carries are the model's view only."""

    MODEL = "model"
    NAMED_TOOL = "named_tool"  # the request names a permitted tool exactly: it is called
    NO_PERMITTED_TOOL = "no_permitted_tool"  # no tool is available to this caller
    NO_MEANINGFUL_TEXT = "no_meaningful_text"  # only symbols, emoji or invisible characters, and no image
    FALLBACK = "fallback"  # the decision model could not be loaded: the top tool's standing decides

    def view_note(self) -> str:
        """What to print beside the probabilities: nothing when the model decided, else that they are its view
        only (the CLI and the app's banner)."""
        if self is DecisionSource.MODEL:
            return ""
        return f"the model's view only: decided by the {self.value.replace('_', ' ')} rule"


@dataclass(frozen=True)
class DecisionScores:
    """The decision model's distribution for one result (one model learned across many catalogs,
    docs/decisions.md); the three sum to one. ``right``: the top tool serves the request and the request says
    enough to call it; ``ambiguous``: a listed tool serves it but the call is open (which of the candidates, or
    what the request leaves out); ``no_tool``: no listed tool serves the request."""

    right: float
    ambiguous: float
    no_tool: float

    def to_json(self) -> dict[str, float]:
        return {"right": round(self.right, 4), "ambiguous": round(self.ambiguous, 4),
                "no_tool": round(self.no_tool, 4)}


@dataclass(frozen=True)
class DecisionOutcome:
    """The decision of one search: what to do, the question to ask (CLARIFY), why, the model's scores, the
    positions of the candidates to inject (best first), and what decided."""

    decision: Decision
    clarification: str | None
    reason: str = ""
    scores: DecisionScores | None = None
    selected: tuple[int, ...] = ()
    source: DecisionSource = DecisionSource.MODEL
