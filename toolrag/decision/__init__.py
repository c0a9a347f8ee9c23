"""The decision: call a tool, ask the user, or use none (the search ranks; the decision decides).

One model learned across many catalogs (:mod:`toolrag.decision.model`) reads one view of a search
(:mod:`toolrag.decision.view`) computed over the caller's visible tools; :mod:`toolrag.decision.policy` holds the
invariants and the operating point. docs/decisions.md says how to read a decision and what it measured.
"""

from toolrag.decision.outcome import Decision, DecisionOutcome, DecisionScores, DecisionSource

__all__ = ["Decision", "DecisionOutcome", "DecisionScores", "DecisionSource"]
