"""Retrievability results: per example, per tool and per catalog, built from leave-one-out searches.

A tool's example requests are the author's own statement of what it is for. Searched with the example left
out of the tool's document (:mod:`toolrag.evaluation.loo`), each one asks: would a user who phrases the
request this way find the tool? Nothing here needs labelled queries, models or an index: these are pure
summaries of :class:`ExampleOutcome` rows, so they are tested on small hand-made rows.

- :class:`ToolSummary`: one tool's ranks, how often it came first / in the top 5, the tools that won its
  examples instead, its lint warnings and look-alikes, and a status (``ok``, ``weak``, ``at risk``,
  ``no examples``).
- :class:`ConfusionPair`: "requests for A went to B", with the text cosine of A and B (a look-alike pair of
  the map when it reaches the threshold).
- :class:`Health`: the catalog's summary: share of examples found first and in the top 5, MRR, tools never
  first ("at risk"); :meth:`Health.figures` are what ``toolrag report --fail-under`` gates on. A figure with
  nothing behind it (no tool has example requests) is ``None`` with its reason in :meth:`Health.unmeasured`,
  never 0.0: nothing measured is not "nothing found".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolrag.catalog.lint import LintWarning
from toolrag.catalog.profile import Catalog
from toolrag.search.results import Decision

__all__ = ["HEALTH_FIGURES", "NO_EXAMPLES_REASON", "NO_TOOLS_REASON", "ConfusionPair", "ExampleOutcome", "Health",
           "RetrievabilityReport", "ToolSummary", "summarize"]

#: The health figures a gate can name (each a share in [0, 1]; higher is better).
HEALTH_FIGURES = ("found_first", "found_top5", "mrr", "tools_found")
_TOP = 5
#: Why the health figures of a catalog without example requests are not measured.
NO_EXAMPLES_REASON = ("not measured: no tool has example requests to search (see the label-free estimate, "
                      "made from the descriptions alone)")
#: Why they are not measured where there is no tool at all (a report as a caller who sees none).
NO_TOOLS_REASON = "not measured: there is no tool to search for"


@dataclass(frozen=True)
class ExampleOutcome:
    """One example request of a tool, searched with that example left out of the tool's document."""

    tool_id: str
    position: int
    """Index of the example among the tool's examples (0-based)."""
    query: str
    rank: int | None
    """1-based rank of the tool among every tool a user may be shown (None: not returned at all)."""
    above: tuple[str, ...]
    """The tools ranked above the example's own tool, best first (empty when it came first)."""
    decision: Decision
    own: Mapping[str, float] = field(default_factory=dict)
    """The tool's raw score for each signal present (what the incremental update compares)."""
    margin: float = 0.0
    """Fused score of the tool minus that of the first tool (0 when the tool came first; negative otherwise)."""

    @property
    def winner(self) -> str | None:
        """The tool that came first (the example's own tool when it was found first)."""
        if self.above:
            return self.above[0]
        return self.tool_id if self.rank == 1 else None

    @property
    def found_first(self) -> bool:
        return self.rank == 1

    def to_json(self) -> dict[str, Any]:
        return {"tool_id": self.tool_id, "position": self.position, "query": self.query, "rank": self.rank,
                "winner": self.winner, "above": list(self.above[:10]), "decision": self.decision.value,
                "margin": round(self.margin, 6)}


@dataclass(frozen=True)
class ToolSummary:
    """One tool's retrievability over its examples."""

    tool_id: str
    name: str
    category: str
    ranks: tuple[int | None, ...]
    queries: tuple[str, ...]
    first: int
    top5: int
    stolen_by: tuple[tuple[str, int], ...]
    """The tools that came first for this tool's examples instead, with how often (most often first)."""
    lint: tuple[str, ...] = ()
    lookalikes: tuple[str, ...] = ()

    @property
    def n_examples(self) -> int:
        return len(self.ranks)

    @property
    def status(self) -> str:
        """``no examples``, ``at risk`` (never first), ``weak`` (first for under half) or ``ok``."""
        if not self.ranks:
            return "no examples"
        if self.first == 0:
            return "at risk"
        return "weak" if 2 * self.first < len(self.ranks) else "ok"

    def to_json(self) -> dict[str, Any]:
        return {"tool_id": self.tool_id, "name": self.name, "category": self.category, "status": self.status,
                "ranks": list(self.ranks), "queries": list(self.queries), "first": self.first, "top5": self.top5,
                "stolen_by": [{"tool_id": t, "count": n} for t, n in self.stolen_by], "lint": list(self.lint),
                "lookalikes": list(self.lookalikes)}


@dataclass(frozen=True)
class ConfusionPair:
    """Examples of ``expected`` on which ``winner`` came first; ``cosine`` of their text vectors."""

    expected: str
    winner: str
    count: int
    queries: tuple[str, ...]
    cosine: float
    lookalike: bool

    def to_json(self) -> dict[str, Any]:
        return {"expected": self.expected, "winner": self.winner, "count": self.count, "queries": list(self.queries),
                "cosine": round(self.cosine, 6), "lookalike": self.lookalike}


@dataclass(frozen=True)
class Health:
    """The catalog's retrievability at a glance (shares in [0, 1] over the examples or the tools)."""

    n_tools: int
    n_examples: int
    found_first: float | None
    """Share of the example requests whose tool came first (``None``: no example was searched)."""
    found_top5: float | None
    mrr: float | None
    tools_found: float | None
    """Share of the tools with examples that come first for at least one of them (``None``: no tool has any)."""
    at_risk: tuple[str, ...]
    """Tools with examples that never come first for any of them."""
    no_examples: tuple[str, ...]
    skipped: tuple[str, ...] = ()
    """Deprecated tools: not searched for, and never shown to users."""

    def figures(self) -> dict[str, float | None]:
        """The gateable figures by name (see :data:`HEALTH_FIGURES`); ``None`` for one not measured."""
        return {"found_first": self.found_first, "found_top5": self.found_top5, "mrr": self.mrr,
                "tools_found": self.tools_found}

    def unmeasured(self) -> dict[str, str]:
        """The figures that could not be measured, with the reason (empty when every one was)."""
        why = NO_EXAMPLES_REASON if self.n_tools else NO_TOOLS_REASON
        return {name: why for name, value in self.figures().items() if value is None}

    def to_json(self) -> dict[str, Any]:
        return {"n_tools": self.n_tools, "n_examples": self.n_examples,
                **{k: None if v is None else round(v, 6) for k, v in self.figures().items()},
                "unmeasured": self.unmeasured(), "at_risk": list(self.at_risk),
                "no_examples": list(self.no_examples), "skipped": list(self.skipped)}


@dataclass(frozen=True)
class RetrievabilityReport:
    """Everything the retrievability check found, and what it cost."""

    health: Health
    tools: tuple[ToolSummary, ...]
    outcomes: tuple[ExampleOutcome, ...]
    confusions: tuple[ConfusionPair, ...]
    lookalikes: tuple[tuple[str, str, float], ...]
    lint: tuple[LintWarning, ...]
    searched: int = 0
    """Examples searched for this report (all of them, or after an edit only those the edit can move)."""
    encoded: int = 0
    """Leave-one-out documents and requests encoded for this report (the rest came from the cache)."""
    seconds: float = 0.0

    def tool(self, tool_id: str) -> ToolSummary | None:
        return next((t for t in self.tools if t.tool_id == tool_id), None)

    def failures(self) -> list[ExampleOutcome]:
        """Examples whose tool did not come first, worst rank first."""
        failed = [o for o in self.outcomes if not o.found_first]
        return sorted(failed, key=lambda o: (-(o.rank or 10**9), o.tool_id, o.position))

    def to_json(self) -> dict[str, Any]:
        return {"health": self.health.to_json(), "tools": [t.to_json() for t in self.tools],
                "examples": [o.to_json() for o in self.outcomes],
                "confusions": [c.to_json() for c in self.confusions],
                "lookalikes": [{"a": a, "b": b, "cosine": round(s, 6)} for a, b, s in self.lookalikes],
                "lint": [w.to_json() for w in self.lint],
                "cost": {"searched": self.searched, "encoded": self.encoded, "seconds": round(self.seconds, 3)}}


def summarize(outcomes: Sequence[ExampleOutcome], catalog: Catalog, *, cosine: Mapping[tuple[str, str], float],
              lookalikes: Sequence[tuple[str, str, float]], lint: Sequence[LintWarning], threshold: float,
              skipped: Sequence[str] = (), searched: int = 0, encoded: int = 0, seconds: float = 0.0
              ) -> RetrievabilityReport:
    """Aggregate the outcomes (any order) of the catalog's tools into a report.

    ``cosine`` gives the text cosine of each (expected, winner) pair that occurs; a pair at or above
    ``threshold`` is flagged as a look-alike. Tools in ``skipped`` (deprecated) get no summary. Shares:
    found_first = examples with rank 1 / examples; found_top5 = rank <= 5 / examples; mrr = mean of 1/rank
    (0 when not returned); tools_found = tools with at least one rank-1 example / tools with examples; each
    is ``None`` (not measured) when its denominator is 0.
    """
    by_tool: dict[str, list[ExampleOutcome]] = {}
    for o in outcomes:
        by_tool.setdefault(o.tool_id, []).append(o)
    lint_codes: dict[str, list[str]] = {}
    for w in lint:
        lint_codes.setdefault(w.tool_id, []).append(w.code)
    alike: dict[str, list[str]] = {}
    for a, b, _ in lookalikes:
        alike.setdefault(a, []).append(b)
        alike.setdefault(b, []).append(a)
    skip = set(skipped)
    tools: list[ToolSummary] = []
    pairs: dict[tuple[str, str], list[str]] = {}
    for t in catalog.tools:
        if t.id in skip:
            continue
        rows = sorted(by_tool.get(t.id, []), key=lambda o: o.position)
        winners = Counter(o.winner for o in rows if not o.found_first and o.winner is not None)
        for o in rows:
            if not o.found_first and o.winner is not None:
                pairs.setdefault((t.id, o.winner), []).append(o.query)
        tools.append(ToolSummary(
            t.id, t.name, t.category, tuple(o.rank for o in rows), tuple(o.query for o in rows),
            sum(o.rank == 1 for o in rows), sum(o.rank is not None and o.rank <= _TOP for o in rows),
            tuple(sorted(winners.items(), key=lambda kv: (-kv[1], kv[0]))), tuple(lint_codes.get(t.id, ())),
            tuple(alike.get(t.id, ()))))
    confusions = [ConfusionPair(a, b, len(qs), tuple(qs), float(cosine.get((a, b), float("nan"))),
                                bool(cosine.get((a, b), -1.0) >= threshold)) for (a, b), qs in pairs.items()]
    confusions.sort(key=lambda c: (-c.count, c.expected, c.winner))
    counted = [o for t in tools for o in sorted(by_tool.get(t.tool_id, []), key=lambda o: o.position)]
    with_examples = [t for t in tools if t.ranks]
    n = len(counted)
    health = Health(
        n_tools=len(tools), n_examples=n,
        found_first=sum(o.rank == 1 for o in counted) / n if n else None,
        found_top5=sum(o.rank is not None and o.rank <= _TOP for o in counted) / n if n else None,
        mrr=sum(1.0 / o.rank for o in counted if o.rank) / n if n else None,
        tools_found=sum(t.first > 0 for t in with_examples) / len(with_examples) if with_examples else None,
        at_risk=tuple(t.tool_id for t in with_examples if t.first == 0),
        no_examples=tuple(t.tool_id for t in tools if not t.ranks),
        skipped=tuple(t.id for t in catalog.tools if t.id in skip),
    )
    return RetrievabilityReport(health, tuple(tools), tuple(counted), tuple(confusions), tuple(lookalikes),
                                tuple(lint), searched, encoded, seconds)


def decision_counts(outcomes: Sequence[ExampleOutcome]) -> dict[str, int]:
    """How many examples ended in each decision (EXECUTE / CLARIFY / NO_TOOL)."""
    counts = Counter(o.decision.value for o in outcomes)
    return {d.value: counts.get(d.value, 0) for d in Decision}
