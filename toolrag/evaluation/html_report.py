"""One self-contained HTML page of a :class:`toolrag.evaluation.report.CatalogReport`.

The page embeds plotly.js (about 4.5 MB) and refers to no other file or network address, so it opens
offline, from a CI artefact or an e-mail. Its figures are those of :mod:`toolrag.evaluation.figures`, its
tables the same rows as the app's Evaluate tab.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolrag.evaluation.changes import failing, gold_rank
from toolrag.evaluation.figures import retrievability_figure, threshold_figure, tuning_figure
from toolrag.evaluation.metrics import DECISION_ACCURACY
from toolrag.evaluation.report import CatalogReport
from toolrag.evaluation.risk import TRACKED

__all__ = ["ESTIMATE_CARDS", "EVAL_CARDS", "HEALTH_CARDS", "render_html"]

#: The labelled metrics shown as cards (app and report), with their labels.
EVAL_CARDS = (("recall@1", "Recall@1"), ("recall@5", "Recall@5"), ("ndcg@10", "NDCG@10"), ("mrr@10", "MRR@10"),
              ("completeness@5", "Completeness@5"), (DECISION_ACCURACY, "Decision accuracy"))
#: The health figures shown as cards.
HEALTH_CARDS = (("found_first", "Examples found first"), ("found_top5", "Examples in the top 5"),
                ("mrr", "MRR@10 of the examples"), ("tools_found", "Tools found first at least once"))
#: The label-free estimates shown as cards.
ESTIMATE_CARDS = (("estimated_found_first", "Estimated found first"),
                  ("estimated_found_top5", "Estimated in the top 5"))

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", "Noto Sans CJK SC", sans-serif; margin: 24px auto;
       max-width: 1200px; color: #202124; padding: 0 16px; }
h1 { font-size: 1.6em; } h2 { margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0; }
.card { border: 1px solid #ddd; border-radius: 8px; padding: 10px 14px; min-width: 150px; background: #fafafa; }
.card .v { font-size: 1.6em; font-weight: 600; } .card .l { color: #5f6368; font-size: .9em; }
.delta.up { color: #1e7e34; } .delta.down { color: #d32f2f; }
table { border-collapse: collapse; width: 100%; font-size: .9em; margin: 8px 0 16px; }
th, td { border: 1px solid #e0e0e0; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f1f3f4; } tr.at-risk td { background: #fdecea; } tr.weak td { background: #fff4e5; }
.muted { color: #5f6368; } code { background: #f1f3f4; padding: 0 3px; border-radius: 3px; }
.card .why { color: #5f6368; font-size: .8em; max-width: 260px; }
"""


def card_html(label: str, value: float | None, delta: float | None = None, *, key: str = "",
              reason: str | None = None) -> str:
    """One metric card (a share shown in percent), with the change since a previous value when given; a value
    not measured reads n/a, with ``reason`` under it."""
    shown = "n/a" if value is None else f"{100 * value:.1f}%"
    extra = ""
    if delta is not None:
        cls = "up" if delta > 1e-12 else "down" if delta < -1e-12 else ""
        extra = f' <span class="delta {cls}">{100 * delta:+.1f}</span>'
    why = f'<div class="why">{html.escape(reason)}</div>' if value is None and reason else ""
    return (f'<div class="card" data-metric="{html.escape(key)}"><div class="v">{shown}{extra}</div>'
            f'<div class="l">{html.escape(label)}</div>{why}</div>')


def cards_html(cards: Iterable[tuple[str, str]], values: Mapping[str, float | None],
               previous: Mapping[str, float | None] | None = None, reasons: Mapping[str, str] | None = None) -> str:
    """A row of cards for ``values`` (with deltas against ``previous`` when given; ``reasons`` of the values
    not measured)."""
    out = []
    for key, label in cards:
        value = values.get(key)
        before = previous.get(key) if previous else None
        delta = value - before if value is not None and before is not None else None
        out.append(card_html(label, value, delta, key=key, reason=(reasons or {}).get(key)))
    return '<div class="cards">' + "".join(out) + "</div>"


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], classes: Iterable[str] = ()) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = []
    styles = list(classes)
    for i, row in enumerate(rows):
        cls = styles[i] if i < len(styles) else ""
        cells = "".join(f"<td>{html.escape(str(c))}</td>" for c in row)
        body.append(f'<tr class="{html.escape(cls)}">{cells}</tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _ranks(ranks: Sequence[int | None]) -> str:
    return " ".join(f"#{r}" if r else ">10" for r in ranks)


def _figure(fig: Any) -> str:
    import plotly.io as pio

    return str(pio.to_html(fig, full_html=False, include_plotlyjs=False, config={"displaylogo": False}))


def render_html(report: CatalogReport) -> str:
    """The whole report as one HTML document (plotly.js embedded; no network access needed to open it)."""
    from plotly.offline import get_plotlyjs

    r = report.retrievability
    h = r.health
    parts = [f"<h1>toolrag report: <code>{html.escape(report.catalog)}</code></h1>",
             f'<p class="muted">{h.n_tools} tools checked ({len(h.skipped)} deprecated skipped), {h.n_examples} '
             f"example requests, each searched with that example left out of its tool's document; created "
             f"{html.escape(report.created)}; fusion {report.settings.fusion.value}, normalisation "
             f"{report.settings.normalization.value}.</p>",
             "<h2>Catalog health</h2>", cards_html(HEALTH_CARDS, h.figures(), reasons=h.unmeasured()),
             f"<p>Tools never found first by their own examples (<b>at risk</b>): "
             f"{', '.join(f'<code>{html.escape(t)}</code>' for t in h.at_risk) or 'none'}.</p>"]
    if not h.n_examples:  # nothing to show in the figure: the estimate is what this catalog has
        parts += label_free_html(report)
    else:
        parts.append(_figure(retrievability_figure(r)))
    tools = sorted(r.tools, key=lambda t: ({"at risk": 0, "weak": 1, "no examples": 2}.get(t.status, 3), t.tool_id))
    parts += ["<h2>Tools</h2>", _table(
        ["tool", "status", "found first", "ranks of its examples", "won instead", "lint", "look-alikes"],
        ([t.tool_id, t.status, f"{t.first}/{t.n_examples}", _ranks(t.ranks),
          ", ".join(f"{w} ×{n}" for w, n in t.stolen_by), ", ".join(t.lint), ", ".join(t.lookalikes)]
         for t in tools), (t.status.replace(" ", "-") for t in tools))]
    parts += ["<h2>Confusion pairs</h2>",
              "<p class='muted'>Examples of the expected tool on which another tool came first; a high text cosine "
              "marks look-alikes (sharpen both descriptions, add negative examples).</p>",
              _table(["expected", "won instead", "examples", "text cosine", "look-alike", "requests"],
                     ([c.expected, c.winner, c.count, f"{c.cosine:.3f}", "yes" if c.lookalike else "",
                       " · ".join(c.queries)] for c in r.confusions))]
    parts += ["<h2>Look-alike pairs of the map</h2>",
              _table(["tool A", "tool B", "cosine"], ([a, b, f"{s:.3f}"] for a, b, s in r.lookalikes)),
              "<h2>Lint warnings</h2>", _table(["tool", "warning", "message"],
                                              ([w.tool_id, w.code, w.message] for w in r.lint))]
    if h.n_examples:
        parts += label_free_html(report)
    ev = report.evaluation
    if ev is not None:
        parts += [f"<h2>Labelled requests ({ev.n_queries})</h2>", cards_html(EVAL_CARDS, ev.metrics),
                  "<h3>Failing requests</h3>", _table(
                      ["request", "expected", "returned (top 5)", "rank of expected", "decision", "expected decision"],
                      ([o.row.query, ", ".join(o.row.gold) or "(no tool)", ", ".join(o.returned[:5]),
                        f"#{gold_rank(o)}" if gold_rank(o) else "–", o.decision.value,
                        o.row.expect.value if o.row.expect else ""] for o in failing(ev)))]
    if report.tuning is not None:
        parts += ["<h2>Tuning</h2>", _figure(tuning_figure(report.tuning, base=report.settings))]
    if report.threshold is not None:
        parts += [_figure(threshold_figure(report.threshold))]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>toolrag report: {html.escape(report.catalog)}</title><style>{_CSS}</style>"
            f'<script type="text/javascript">{get_plotlyjs()}</script></head><body>'
            + "\n".join(parts) + "</body></html>\n")


def label_free_html(report: CatalogReport) -> list[str]:
    """The section of the tools estimated from their descriptions alone: the estimate, how it was made and how
    well it tracked labelled results, then each tool (at risk first) with its rival, the words they share,
    its missing or generic fields and the suggested example requests."""
    lf = report.label_free
    if lf is None or not lf.tools:
        return []
    tools = sorted(lf.tools, key=lambda t: (not t.at_risk, t.p_first, t.tool_id))
    return [f"<h2>Estimated without examples ({len(lf.tools)} tools)</h2>",
            cards_html(ESTIMATE_CARDS, lf.figures()),
            f'<p class="muted">How: {html.escape(lf.method)}. How well it tracked labelled results: '
            f"{html.escape(TRACKED)}</p>",
            f"<p>Tools at risk (estimated): {len(lf.at_risk)}. Accept a suggested example with "
            "<code>toolrag report --suggest-examples extra_examples.yaml</code> or in the app's Profiles tab.</p>",
            _table(["tool", "found first (est.)", "top 5 (est.)", "verdict", "why", "fields to fix",
                    "suggested examples"],
                   ([t.tool_id, f"{100 * t.p_first:.0f}%", f"{100 * t.p_top5:.0f}%", t.verdict, t.reason(),
                     ", ".join(t.fields), " · ".join(s.query for s in t.suggestions)] for t in tools),
                   ("at-risk" if t.at_risk else "" for t in tools))]
