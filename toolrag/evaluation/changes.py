"""What an edit did to every labelled request: two evaluations of the same rows compared row by row.

An edit that helps the request its author had in mind and breaks three others is the common failure of
hand-tuned descriptions; :func:`compare_reports` shows both sides. Pure functions over
:class:`toolrag.evaluation.evaluator.EvalReport` (tested on hand-made outcomes).

A row's quality is ``(ndcg@10, decision right)``: NDCG@10 of its returned ids against its gold tools (rows
without gold tools: decision only), and whether the decision matched its ``expect`` (rows without
``expect``: not compared). A row *improved* when its NDCG@10 rose, or stayed and its decision became right;
*regressed* in the mirror cases; otherwise it *stayed*.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from toolrag.evaluation.evaluator import EvalReport, QueryOutcome
from toolrag.evaluation.metrics import ndcg_at

__all__ = ["EvalChanges", "QueryChange", "compare_reports", "failing", "gold_rank", "is_failing"]

_K = 10
_EPS = 1e-9


def gold_rank(outcome: QueryOutcome) -> int | None:
    """1-based rank of the best-placed gold tool in what the search returned (None: none returned)."""
    gold = set(outcome.row.gold)
    return next((i for i, tool_id in enumerate(outcome.returned, start=1) if tool_id in gold), None)


def is_failing(outcome: QueryOutcome) -> bool:
    """A row fails when a gold tool is not first, or its decision is not the expected one."""
    if outcome.row.gold and gold_rank(outcome) != 1:
        return True
    return outcome.row.expect is not None and outcome.decision != outcome.row.expect


def failing(report: EvalReport) -> list[QueryOutcome]:
    """The failing rows in input order."""
    return [o for o in report.per_query if is_failing(o)]


@dataclass(frozen=True)
class QueryChange:
    """One labelled row before and after."""

    before: QueryOutcome
    after: QueryOutcome
    verdict: str
    """``improved``, ``regressed`` or ``same``."""

    @property
    def query(self) -> str:
        return self.after.row.query

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "gold": list(self.after.row.gold), "verdict": self.verdict,
                "rank_before": gold_rank(self.before), "rank_after": gold_rank(self.after),
                "decision_before": self.before.decision.value, "decision_after": self.after.decision.value}


@dataclass(frozen=True)
class EvalChanges:
    """Every row's change, and the metrics before and after."""

    changes: tuple[QueryChange, ...]
    metrics_before: dict[str, float] = field(default_factory=dict)
    metrics_after: dict[str, float] = field(default_factory=dict)

    def of(self, verdict: str) -> list[QueryChange]:
        return [c for c in self.changes if c.verdict == verdict]

    @property
    def improved(self) -> list[QueryChange]:
        return self.of("improved")

    @property
    def regressed(self) -> list[QueryChange]:
        return self.of("regressed")

    @property
    def same(self) -> list[QueryChange]:
        return self.of("same")

    def summary(self) -> str:
        """E.g. ``2 improved, 1 regressed, 220 unchanged``."""
        return (f"{len(self.improved)} improved, {len(self.regressed)} regressed, {len(self.same)} unchanged "
                f"of {len(self.changes)} labelled requests")

    def to_json(self) -> dict[str, Any]:
        return {"improved": len(self.improved), "regressed": len(self.regressed), "same": len(self.same),
                "metrics_before": dict(self.metrics_before), "metrics_after": dict(self.metrics_after),
                "changes": [c.to_json() for c in self.changes if c.verdict != "same"]}


def _quality(o: QueryOutcome) -> tuple[float | None, bool | None]:
    ndcg = ndcg_at(o.returned, o.row.gold, _K) if o.row.gold else None
    right = o.decision == o.row.expect if o.row.expect is not None else None
    return ndcg, right


def _verdict(before: QueryOutcome, after: QueryOutcome) -> str:
    (n0, r0), (n1, r1) = _quality(before), _quality(after)
    if n0 is not None and n1 is not None and abs(n1 - n0) > _EPS:
        return "improved" if n1 > n0 else "regressed"
    if r0 is not None and r1 is not None and r0 != r1:
        return "improved" if r1 else "regressed"
    return "same"


def compare_reports(before: EvalReport, after: EvalReport) -> EvalChanges:
    """Row-by-row changes between two evaluations of the same rows (in the same order).

    Raises ValueError when the reports are not of the same rows."""
    b, a = before.per_query, after.per_query
    if len(b) != len(a) or any(x.row != y.row for x, y in zip(b, a, strict=True)):
        raise ValueError("compare_reports needs two evaluations of the same labelled rows, in the same order")
    changes = tuple(QueryChange(x, y, _verdict(x, y)) for x, y in zip(b, a, strict=True))
    return EvalChanges(changes, dict(before.metrics), dict(after.metrics))


def metric_deltas(before: dict[str, float] | None, after: dict[str, float], names: Sequence[str]
                  ) -> dict[str, float | None]:
    """``after - before`` for each metric name (None when either side lacks it)."""
    return {n: (after[n] - before[n]) if before is not None and n in before and n in after else None for n in names}
