"""Pure views of the Evaluate tab and of an edit's effect (no gradio): metric cards, the failing requests,
the tools and confusions of the retrievability report, the rows an edit moved. Unit-tested without a server.

The tables come with the small per-row records the tab keeps in its session state, so a click on a row
knows which request and which tool it stands for.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from toolrag.evaluation.changes import EvalChanges, failing, gold_rank
from toolrag.evaluation.evaluator import EvalReport
from toolrag.evaluation.html_report import ESTIMATE_CARDS, EVAL_CARDS, HEALTH_CARDS
from toolrag.evaluation.retrievability import RetrievabilityReport, ToolSummary
from toolrag.evaluation.risk import TRACKED, LabelFreeReport, Suggestion
from toolrag.ui.format import IMAGE_MARK
from toolrag.ui.studio import EditEffect

__all__ = ["WHY", "confusion_table", "effect_frame", "effect_text", "estimate_cards", "estimate_summary",
           "estimate_table", "failing_table", "health_cards", "metric_cards", "suggestion_table", "tools_table"]

#: The text of the failing table's last column: a click there explains the request instead of opening it.
WHY = "why?"
_CARD = ("display:inline-block;border:1px solid #ddd;border-radius:8px;padding:8px 12px;margin:0 8px 8px 0;"
         "min-width:130px;background:#fafafa;vertical-align:top")
_STATUS_ORDER = {"at risk": 0, "weak": 1, "no examples": 2, "ok": 3}


def _cards(items: Sequence[tuple[str, str]], values: Mapping[str, float | None],
           previous: Mapping[str, float | None] | None, elem: str, reasons: Mapping[str, str] | None = None) -> str:
    out = []
    for key, label in items:
        value = values.get(key)
        shown = "n/a" if value is None else f"{100 * value:.1f}%"
        before = previous.get(key) if previous is not None else None
        delta = ""
        why = ""
        if value is None and reasons and key in reasons:
            why = (f'<div class="why" style="color:#5f6368;font-size:.75em;max-width:240px">'
                   f"{html.escape(reasons[key])}</div>")
        if value is not None and before is not None:
            d = 100 * (value - before)
            colour = "#1e7e34" if d > 0.05 else "#d32f2f" if d < -0.05 else "#5f6368"
            delta = f' <span class="delta" style="font-size:.7em;color:{colour}">{d:+.1f}</span>'
        out.append(f'<div class="metric-card" data-metric="{html.escape(key)}" style="{_CARD}">'
                   f'<div style="font-size:1.5em;font-weight:600">{shown}{delta}</div>'
                   f'<div style="color:#5f6368;font-size:.85em">{html.escape(label)}</div>{why}</div>')
    return f'<div id="{elem}-inner">' + "".join(out) + "</div>"


def metric_cards(metrics: Mapping[str, float], previous: Mapping[str, float] | None = None) -> str:
    """Recall@1/5, NDCG@10, MRR@10, Completeness@5 and decision accuracy, with the change since ``previous``."""
    return _cards(EVAL_CARDS, metrics, previous, "eval-cards")


def health_cards(report: RetrievabilityReport, previous: Mapping[str, float | None] | None = None) -> str:
    """The catalog's health figures as cards (n/a with the reason for a figure not measured)."""
    return _cards(HEALTH_CARDS, report.health.figures(), previous, "retr-cards", report.health.unmeasured())


def failing_table(report: EvalReport | None) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """The failing requests and, per row, what a click needs: the request, its context and the tool to open
    (its first expected tool; for a request that needs no tool, the tool that wrongly came first). ``None``:
    the empty table."""
    rows, records = [], []
    for o in failing(report) if report is not None else []:
        rank = gold_rank(o)
        expect = f" (expected {o.row.expect.value})" if o.row.expect and o.row.expect != o.decision else ""
        rows.append([o.row.query + (IMAGE_MARK if o.row.image else ""), ", ".join(o.row.gold) or "(no tool)",
                     ", ".join(o.returned[:3]), f"#{rank}" if rank else "–", o.decision.value + expect, WHY])
        open_id = o.row.gold[0] if o.row.gold else (o.returned[0] if o.returned else None)
        records.append({"query": o.row.query, "image": str(o.row.image) if o.row.image else None,
                        "role": o.row.role, "permissions": list(o.row.permissions) if o.row.permissions is not None
                        else None, "history": list(o.row.history), "gold": list(o.row.gold), "open": open_id})
    frame = pd.DataFrame(rows, columns=["request", "expected", "came back (top 3)", "rank of expected", "decision",
                                        "explain"])
    return frame, records


def _ranks(summary: ToolSummary) -> str:
    return " ".join(f"#{r}" if r else ">10" for r in summary.ranks) or "–"


def tools_table(report: RetrievabilityReport | None) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Every checked tool, hardest first, with what a click needs (the tool and its worst example)."""
    tools = sorted(report.tools if report is not None else (),
                   key=lambda t: (_STATUS_ORDER.get(t.status, 9), t.first / max(t.n_examples, 1), t.tool_id))
    rows, records = [], []
    for t in tools:
        rows.append([t.tool_id, t.status, f"{t.first}/{t.n_examples}", _ranks(t),
                     ", ".join(f"{w} ×{n}" for w, n in t.stolen_by), ", ".join(t.lint), ", ".join(t.lookalikes)])
        worst = max(range(t.n_examples), key=lambda i: t.ranks[i] or 10**6, default=None)
        records.append({"open": t.tool_id, "query": t.queries[worst] if worst is not None else ""})
    frame = pd.DataFrame(rows, columns=["tool", "status", "found first", "ranks of its examples", "won instead",
                                        "lint", "look-alikes"])
    return frame, records


def confusion_table(report: RetrievabilityReport | None) -> pd.DataFrame:
    """Confusion pairs: which tool wins the examples of which, with their text cosine."""
    pairs = report.confusions if report is not None else ()
    return pd.DataFrame([[c.expected, c.winner, c.count, round(c.cosine, 3), "yes" if c.lookalike else "",
                          " · ".join(c.queries)] for c in pairs],
                        columns=["expected", "won instead", "examples", "text cosine", "look-alike", "requests"])


def _rank(value: int | None) -> str:
    return f"#{value}" if value else "–"


def effect_text(effect: EditEffect) -> str:
    """The effect of an edit in a few lines of Markdown."""
    lines = []
    changes: EvalChanges = effect.changes
    if changes.changes:
        lines.append(f"**Labelled requests:** {len(changes.improved)} improved, **{len(changes.regressed)} "
                     f"regressed**, {len(changes.same)} unchanged (of {len(changes.changes)}).")
        moved = [f"{name} {100 * changes.metrics_before[name]:.1f}% → {100 * changes.metrics_after[name]:.1f}%"
                 for name in ("recall@1", "recall@5", "ndcg@10")
                 if name in changes.metrics_before and name in changes.metrics_after]
        if moved:
            lines.append("Metrics: " + " · ".join(moved))
    else:
        lines.append("Run the evaluation in the Evaluate tab once: from then on every save shows which labelled "
                     "requests it improved or broke.")
    if effect.tool_id:
        b, a = effect.before, effect.after
        if a is None:
            lines.append(f"**Retrievability of `{effect.tool_id}`:** not checked (deleted or deprecated).")
        else:
            before = f"{b.first}/{b.n_examples} ({_ranks(b)})" if b else "new tool"
            lines.append(f"**Retrievability of `{effect.tool_id}`** (its examples, each left out): found first "
                         f"{before} → {a.first}/{a.n_examples} ({_ranks(a)}).")
    return "\n\n".join(lines)


def effect_frame(effect: EditEffect | None = None) -> pd.DataFrame:
    """The requests the edit moved: regressions first, then improvements (``None``: the empty table)."""
    rows = []
    for verdict in ("regressed", "improved"):
        for c in effect.changes.of(verdict) if effect is not None else ():
            rows.append([verdict, c.query, ", ".join(c.after.row.gold) or "(no tool)",
                         f"{_rank(gold_rank(c.before))} → {_rank(gold_rank(c.after))}",
                         f"{c.before.decision.value} → {c.after.decision.value}"])
    return pd.DataFrame(rows, columns=["change", "request", "expected", "rank", "decision"])


def estimate_cards(report: LabelFreeReport | None) -> str:
    """The label-free estimate as cards (n/a before any tool was estimated)."""
    values = report.figures() if report is not None else {}
    return _cards(ESTIMATE_CARDS, values, None, "estimate-cards",
                  {key: "not estimated yet" for key, _ in ESTIMATE_CARDS})


def estimate_summary(report: LabelFreeReport) -> str:
    """How the estimate was made, how well it tracked labelled results, and the tools at risk."""
    at_risk = ", ".join(f"`{t}`" for t in report.at_risk) or "none"
    return (f"{len(report.tools)} tools estimated from their descriptions alone ({report.searched} searches, "
            f"{report.seconds:.1f} s). **At risk**: {at_risk}. Click a tool to open it with its suggested "
            f"example requests.\n\n*How:* {report.method}. *How well it tracked labelled results:* {TRACKED}")


def estimate_table(report: LabelFreeReport | None) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Every estimated tool, at risk first: its estimate, verdict, why, fields to fix and suggestions; and what
    a click needs (the tool, and the request it lost, as rank query)."""
    tools = sorted(report.tools if report is not None else (), key=lambda t: (not t.at_risk, t.p_first, t.tool_id))
    rows, records = [], []
    for t in tools:
        rows.append([t.tool_id, f"{100 * t.p_first:.0f}%", f"{100 * t.p_top5:.0f}%", t.verdict, t.reason(),
                     ", ".join(t.fields), " · ".join(s.query for s in t.suggestions)])
        lost = next((p.query for p in t.probes if p.rank != 1), t.probes[0].query if t.probes else "")
        records.append({"open": t.tool_id, "query": lost,
                        "suggestions": [s.to_json() for s in t.suggestions]})
    frame = pd.DataFrame(rows, columns=["tool", "found first (est.)", "top 5 (est.)", "verdict", "why",
                                        "fields to fix", "suggested examples"])
    return frame, records


def suggestion_table(suggestions: Sequence[Suggestion | Mapping[str, Any]]) -> tuple[pd.DataFrame, list[str]]:
    """Suggested example requests (a click on one adds it to the tool's examples) and their texts."""
    items = [s.to_json() if isinstance(s, Suggestion) else dict(s) for s in suggestions]
    frame = pd.DataFrame([[s["query"], s["source"], "✚ accept"] for s in items],
                         columns=["suggested request", "from", "add"])
    return frame, [s["query"] for s in items]
