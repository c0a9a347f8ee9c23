"""The Evaluate tab's first screen: the catalog's health in a few figures, each linking to the section it comes
from, and the one line each section shows before it has content (what fills it). Pure (no gradio), so every
view is unit-tested without a server.

Each check leaves its *facts* (small JSON-able dicts) in the session's state; :func:`health_summary` draws
whatever facts there are, so the summary grows as the author runs the checks one by one or all at once.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolrag.evaluation.evaluator import EvalReport
from toolrag.evaluation.metrics import DECISION_ACCURACY
from toolrag.evaluation.retrievability import RetrievabilityReport
from toolrag.evaluation.risk import LabelFreeReport
from toolrag.evaluation.unmatched import UnmatchedReport

__all__ = ["SECTIONS", "CatalogFacts", "estimate_facts", "estimate_placeholder", "health_summary",
           "labelled_facts", "labelled_placeholder", "retrievability_facts", "unmatched_facts",
           "unmatched_placeholder"]

#: The anchor (element id) of each section of the Evaluate tab, in the order the tab shows them.
SECTIONS = {"retrievability": "sec-retrievability", "estimate": "sec-estimate", "labelled": "sec-labelled",
            "tuning": "sec-tuning", "unmatched": "sec-unmatched"}
RUN_ALL = "Run every check"
NOT_CHECKED = (f"Nothing checked yet: **Check retrievability** (or **{RUN_ALL}** above) searches every example "
               "request of every tool with that example left out of its tool's document.")
NOT_TUNED = ("Not tuned yet: **Tune on the labelled requests** draws NDCG@10 over the weights of the text signals "
             "(and the no-tool threshold's trade-off when the file has rows that need no tool).")
_CARD = ("display:inline-block;border:1px solid #ddd;border-radius:8px;padding:8px 12px;margin:0 8px 8px 0;"
         "min-width:150px;max-width:260px;background:#fafafa;vertical-align:top;text-decoration:none;color:inherit")


@dataclass(frozen=True)
class CatalogFacts:
    """What the summary knows before any check: the tools the session may see, how many have example requests,
    the labelled requests file there is (uploaded or the catalog's), the audit log there is."""

    tools: int
    with_examples: int
    labelled: str | None = None
    log: str | None = None
    deprecated: int = 0
    """Deprecated tools: not counted (never searched for, never shown to users)."""


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def retrievability_facts(report: RetrievabilityReport, scope: str | None = None) -> dict[str, Any]:
    """What the summary shows of a retrievability check (``scope``: the category checked, ``None``: all)."""
    h = report.health
    return {"found_first": h.found_first, "found_top5": h.found_top5, "n_examples": h.n_examples,
            "at_risk": list(h.at_risk), "scope": scope}


def estimate_facts(report: LabelFreeReport) -> dict[str, Any]:
    """What the summary shows of the label-free estimate."""
    figures = report.figures()
    return {"found_first": figures.get("estimated_found_first"), "found_top5": figures.get("estimated_found_top5"),
            "n_tools": len(report.tools), "at_risk": list(report.at_risk)}


def labelled_facts(report: EvalReport, name: str, failing: int) -> dict[str, Any]:
    """What the summary shows of an evaluation of labelled requests."""
    return {"recall@5": report.metrics.get("recall@5"), DECISION_ACCURACY: report.metrics.get(DECISION_ACCURACY),
            "n": report.n_queries, "name": name, "failing": failing}


def unmatched_facts(report: UnmatchedReport, log: str) -> dict[str, Any]:
    """What the summary shows of the audit log's unmatched requests."""
    return {"distinct": sum(len(g.requests) for g in report.groups), "listed": report.listed,
            "searches": report.searches, "log": log}


def estimate_placeholder(catalog: CatalogFacts) -> str:
    """The estimate section's line before it has content."""
    bare = catalog.tools - catalog.with_examples
    if bare:
        return (f"Not estimated yet: {bare} of {catalog.tools} tools have no example request. **Estimate from the "
                f"descriptions** (or **{RUN_ALL}**) estimates how findable each is from its descriptions alone.")
    return ("Every tool has example requests, so the retrievability check above measures them; **Estimate from the "
            "descriptions** estimates every tool from its descriptions alone anyway.")


def labelled_placeholder(labelled: str | None) -> str:
    """The labelled-requests section's line before it has content."""
    if labelled:
        return f"Not evaluated yet: **Run evaluation** (or **{RUN_ALL}**) searches every request of `{labelled}`."
    return ("No labelled requests yet: upload a file (YAML, JSON Lines or CSV with query,gold) or add a "
            "queries.yaml to the catalog, then **Run evaluation**.")


def unmatched_placeholder(log: str | None) -> str:
    """The unmatched-requests section's line before it has content."""
    if log:
        return f"Not read yet: **Show unmatched requests** (or **{RUN_ALL}**) reads `{log}`."
    return ("No audit log: start the app with TOOLRAG_AUDIT_LOG=FILE so its searches (and your agents') are logged; "
            "what found no tool is listed here.")


def _card(figure: str, value: str, label: str, note: str, section: str) -> str:
    return (f'<a class="health-card" data-figure="{figure}" href="#{SECTIONS[section]}" style="{_CARD}">'
            f'<div style="font-size:1.4em;font-weight:600">{html.escape(value)}</div>'
            f'<div style="color:#3c4043;font-size:.85em">{html.escape(label)}</div>'
            f'<div style="color:#5f6368;font-size:.75em">{html.escape(note)}</div></a>')


def _names(ids: Sequence[str], limit: int = 4) -> str:
    return ", ".join(ids[:limit]) + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def health_summary(catalog: CatalogFacts, facts: Mapping[str, Mapping[str, Any]]) -> str:
    """The catalog's health as a row of figures (tools; examples found first and in the top five, or the
    label-free estimate; tools at risk; labelled recall@5 and decision accuracy; unmatched requests), each a
    link to its section. ``facts``: what the session's checks left (see the ``*_facts`` functions)."""
    found, estimate = facts.get("retrievability"), facts.get("estimate")
    labelled, unmatched = facts.get("labelled"), facts.get("unmatched")
    bare = catalog.tools - catalog.with_examples
    examples = f"{catalog.with_examples} with example requests" if catalog.with_examples else "none has examples"
    retired = f", {catalog.deprecated} deprecated not counted" if catalog.deprecated else ""
    cards = [_card("tools", f"{catalog.tools}", "tools", examples + retired, "retrievability")]
    if found is not None:
        scope = f" (category {found['scope']})" if found.get("scope") else ""
        cards.append(_card("found", f"{_share(found['found_first'])} · {_share(found['found_top5'])}",
                           "examples found first · in the top five",
                           f"{found['n_examples']} example requests{scope}, each left out of its tool",
                           "retrievability"))
    elif catalog.with_examples:
        cards.append(_card("found", "–", "examples found first · in the top five", "not checked yet",
                           "retrievability"))
    if estimate is not None:
        cards.append(_card("estimate", f"{_share(estimate['found_first'])} · {_share(estimate['found_top5'])}",
                           "estimated found first · in the top five",
                           f"{estimate['n_tools']} tools, from their descriptions alone", "estimate"))
    elif bare:
        cards.append(_card("estimate", "–", "estimated found first · in the top five",
                           f"{bare} tools without examples: not estimated yet", "estimate"))
    if found is not None or estimate is not None:
        risky = sorted({*(found or {}).get("at_risk", ()), *(estimate or {}).get("at_risk", ())})
        cards.append(_card("at-risk", f"{len(risky)}", "tools at risk", _names(risky) or "none",
                           "retrievability" if found is not None else "estimate"))
    else:
        cards.append(_card("at-risk", "–", "tools at risk", "not checked yet", "retrievability"))
    if labelled is not None:
        cards.append(_card("labelled", f"{_share(labelled['recall@5'])} · {_share(labelled[DECISION_ACCURACY])}",
                           "recall@5 · decision accuracy",
                           f"{labelled['n']} labelled requests ({labelled['name']}), {labelled['failing']} failing",
                           "labelled"))
    else:
        cards.append(_card("labelled", "–", "recall@5 · decision accuracy",
                           f"{catalog.labelled}: not evaluated yet" if catalog.labelled
                           else "no labelled requests: upload a file or add queries.yaml", "labelled"))
    if unmatched is not None:
        cards.append(_card("unmatched", f"{unmatched['distinct']}", "unmatched requests",
                           f"in {unmatched['log']} ({unmatched['listed']} of {unmatched['searches']} searches)",
                           "unmatched"))
    else:
        cards.append(_card("unmatched", "–", "unmatched requests", f"{catalog.log}: not read yet" if catalog.log
                           else "no audit log (TOOLRAG_AUDIT_LOG)", "unmatched"))
    done = any(key in facts for key in ("retrievability", "estimate", "labelled", "unmatched"))
    head = ("" if done else f'<p style="margin:0 0 8px">Press <b>{RUN_ALL}</b> for the figures below (every check '
            "that needs no upload); each figure links to its section.</p>")
    return f'<div id="eval-health-inner">{head}{"".join(cards)}</div>'
