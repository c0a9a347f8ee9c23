"""The audit record of one search: what was asked, what was decided, which tools were offered.

Built here, where the search result is known, and handed to :class:`toolrag.audit.AuditLog`, which only
writes. The record names no tool the caller may not see: the filter's work is a count.
"""

from __future__ import annotations

from typing import Any

from toolrag.audit import AuditLog
from toolrag.search.results import SearchResult

__all__ = ["search_record"]


def search_record(result: SearchResult, *, audit: AuditLog, role: str | None, image: bool, n_tools: int,
                  n_permitted: int) -> dict[str, Any]:
    """One ``kind: search`` record: caller role, the request (or its hash), decision and its reason, the decision
    model's probabilities (P(right) is what ``toolrag audit --unmatched`` filters on), the selected ids, the
    returned ids with scores, how many tools the permission/category/deprecation filter removed, latency."""
    return {
        "kind": "search",
        "role": role,
        **audit.request_fields(result.query),
        "image": image,
        "decision": result.decision.value,
        "reason": _reason(getattr(result, "decision_reason", None)),
        "clarification": result.clarification,
        "probabilities": scores.to_json() if (scores := getattr(result, "scores", None)) is not None else None,
        "selected": list(getattr(result, "selected", ())),
        "returned": [{"id": c.id, "score": round(float(c.score), 4)} for c in result.candidates],
        "filtered": n_tools - n_permitted,
        "latency_ms": round(float(result.timing_ms.get("total", 0.0)), 2),
        "index_version": getattr(result, "index_version", None),
    }


def _reason(reason: Any) -> Any:
    """The decision's reason as JSON: text, a mapping, an object's ``to_json()``; ``None`` when there is none."""
    if reason is None or isinstance(reason, str | int | float | dict | list):
        return reason
    to_json = getattr(reason, "to_json", None)
    return to_json() if callable(to_json) else str(reason)
