"""Pure functions that turn search results and catalogs into what the playground shows.

Nothing here imports gradio, so every view is unit-tested without a server: the ranked table (a pandas
``Styler`` that highlights, per row, the signal that contributed most), the decision banner, the prompt and
``tools`` JSON, token saving, timings, the session history and the catalog table. The app's handlers only
call these.
"""

from __future__ import annotations

import html
import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from toolrag.catalog.lint import lint_profile
from toolrag.catalog.profile import Catalog
from toolrag.search.results import Decision, SearchResult
from toolrag.settings import Fusion, Settings
from toolrag.signals import SIGNALS, signal

__all__ = [
    "GUEST",
    "HISTORY_SIZE",
    "build_settings",
    "catalog_table",
    "decision_banner",
    "history_entry",
    "history_table",
    "lookalike_table",
    "notes_text",
    "prompt_text",
    "rank_of",
    "results_table",
    "role_choices",
    "signal_column",
    "signal_info",
    "timings_text",
    "token_text",
    "tools_json",
]

#: The role choice that grants no permission code (only unrestricted tools are visible).
GUEST = "guest (no permissions)"
HISTORY_SIZE = 6
TOP_COLOUR = "background-color: #ffd54f; font-weight: 600"
PART_COLOUR = "background-color: #fff3c4"
_BANNER = {
    Decision.EXECUTE: ("#e6f4ea", "#1e7e34", "CALL"),
    Decision.CLARIFY: ("#fff4e5", "#b26a00", "CLARIFY"),
    Decision.NO_TOOL: ("#eceff1", "#455a64", "NO TOOL"),
}


def signal_column(name: str) -> str:
    """Header of a signal's column in the results table."""
    return f"{name} raw (norm)"


def role_choices(catalog: Catalog, roles: Iterable[str] | None = None) -> list[str]:
    """The role selector's choices: :data:`GUEST` and the catalog's roles (``roles``: those of them the caller
    holds), without a role named ``guest`` that grants no code (it is :data:`GUEST` itself: listed once)."""
    names = catalog.roles if roles is None else roles
    return [GUEST, *(r for r in names if not (r.strip().lower() == "guest" and not catalog.roles.get(r)))]


def build_settings(base: Settings, *, fusion: str, top_k: float, rerank: bool, clarify_gap: float,
                   no_tool_threshold: float | None, weights: Mapping[str, float],
                   normalization: str | None = None) -> Settings:
    """Settings from the search controls (sliders give floats; top-K must be an int; no normalisation given
    keeps the base's)."""
    changes: dict[str, Any] = {
        "fusion": Fusion(str(fusion).lower()), "top_k": int(top_k), "rerank": bool(rerank),
        "clarify_gap": float(clarify_gap),
        "no_tool_threshold": None if no_tool_threshold is None else float(no_tool_threshold),
        "weights": {s: float(w) for s, w in weights.items()},
    }
    if normalization:
        changes["normalization"] = normalization
    return base.with_overrides(**changes)


def signal_info(name: str, notes: Mapping[str, str]) -> str:
    """The info line under a weight slider: what the signal reads, or why it can't run here (``notes``:
    signal -> reason, from :meth:`toolrag.search.retriever.ToolRetriever.signal_notes`)."""
    reason = notes.get(name)
    return f"⚠ unavailable: {reason}" if reason else signal(name).label


def _cell(raw: float, norm: float) -> str:
    if math.isnan(raw):
        return "–"
    return f"{raw:.3f} ({norm:.2f})"  # wraps cleanly in a narrow column: raw above, (norm) below


def results_table(result: SearchResult) -> Any:
    """The ranked candidates: fused score and one ``raw (norm)`` column per signal, with the signal that
    contributed most to each row highlighted (others that contributed get a lighter tint)."""
    columns = ["#", "tool", "id", "score", *(signal_column(s) for s in SIGNALS), "top signal"]
    rows: list[list[Any]] = []
    tops: list[str | None] = []
    contributing: list[set[str]] = []
    for rank, c in enumerate(result.candidates, start=1):
        top = c.top_signal()
        tops.append(top)
        contributing.append({s for s, v in c.signals.items() if v.contribution > 0})
        cells = [_cell(c.signals[s].raw, c.signals[s].norm) if s in c.signals else "–" for s in SIGNALS]
        name = c.name + (" ⚠deprecated" if c.deprecated else "") + (" ✎mutation" if c.mutation else "")
        score = c.rerank_score if c.rerank_score is not None else c.score
        rows.append([rank, name, c.id, round(float(score), 4), *cells, top or "–"])
    frame = pd.DataFrame(rows, columns=columns)

    def highlight(row: pd.Series) -> list[str]:
        i = int(row.name)
        styles = []
        for col in frame.columns:
            name = next((s for s in SIGNALS if signal_column(s) == col), None)
            if name is not None and name == tops[i]:
                styles.append(TOP_COLOUR)
            elif name is not None and name in contributing[i]:
                styles.append(PART_COLOUR)
            else:
                styles.append("")
        return styles

    return frame.style.apply(highlight, axis=1).format(precision=4)


def decision_banner(result: SearchResult) -> str:
    """HTML banner: call <tool> / clarify with the question / no tool; the three probabilities of the
    decision model, the reason in words and numbers, how many schemas are injected and the confidence."""
    bg, fg, label = _BANNER.get(result.decision, ("#eceff1", "#455a64", str(result.decision.value)))
    top = result.candidates[0] if result.candidates else None
    if result.decision is Decision.EXECUTE and top is not None:
        text = f"Call <code>{html.escape(top.name)}</code> ({html.escape(top.id)})"
        if top.mutation:
            text += " — irreversible: confirm with the user first"
    elif result.decision is Decision.CLARIFY:
        text = "Ask the user: " + html.escape(result.clarification or "which tool do you mean?")
    else:
        text = "No tool fits: answer directly without calling a tool"
    scores = result.scores
    probs = (f'<span class="toolrag-probs">P(right) <b>{scores.right:.2f}</b> · P(ambiguous) '
             f"<b>{scores.ambiguous:.2f}</b> · P(no tool) <b>{scores.no_tool:.2f}</b>"
             + (f" · <i>{note}</i>" if (note := result.decided_by.view_note()) else "")
             + "</span><br>" if scores is not None else "")
    reason = (f'<span class="toolrag-reason">{html.escape(result.decision_reason)}</span><br>'
              if result.decision_reason else "")
    injected = len(result.selected)
    return (f'<div class="toolrag-banner" data-decision="{result.decision.value}" style="background:{bg};'
            f'border-left:6px solid {fg};padding:10px 14px;border-radius:6px;color:{fg};font-size:1.05em">'
            f"<b>{label}</b> · {text}<br>{probs}{reason}<small>{injected} schema(s) injected · "
            f"confidence {result.confidence:.3f} · {len(result.candidates)} candidate(s) · "
            f"{result.filtered_out} filtered out</small></div>")


def prompt_text(result: SearchResult) -> str:
    return result.prompt


def tools_json(result: SearchResult) -> str:
    return json.dumps(list(result.tools), ensure_ascii=False, indent=2)


def token_text(result: SearchResult) -> str:
    t = result.tokens
    return (f"**{t.selected:,}** schema tokens injected instead of **{t.all:,}** for every permitted tool: "
            f"**{t.saving:.0%} saved** ({t.tokenizer}).")


def timings_text(result: SearchResult) -> str:
    parts = [f"{name} {ms:,.1f} ms" for name, ms in result.timing_ms.items() if name != "total"]
    total = result.timing_ms.get("total")
    head = f"**{total:,.1f} ms total**" if total is not None else ""
    return " · ".join([head, *parts]) if head else " · ".join(parts)


def notes_text(result: SearchResult) -> str:
    lines = [f"- {n}" for n in result.notes]
    lines += [f"- `{s}` absent: {why}" for s, why in result.absent_signals.items()]
    return "\n".join(lines) or "–"


def rank_of(result: SearchResult, tool_id: str) -> int | None:
    """1-based position of ``tool_id`` in the result (None when not returned)."""
    ids = result.ids
    return ids.index(tool_id) + 1 if tool_id in ids else None


def history_entry(result: SearchResult, *, image: bool, role: str, settings: Settings) -> dict[str, Any]:
    """A small, JSON-able record of one run for the session history (kept in ``gr.State``)."""
    return {
        "time": time.strftime("%H:%M:%S"),
        "query": result.query[:80],
        "image": image,
        "role": role,
        "fusion": settings.fusion.value,
        "decision": result.decision.value,
        "top": [c.id for c in result.candidates[:3]],
        "ms": round(float(result.timing_ms.get("total", 0.0)), 1),
    }


def history_table(history: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The last runs, newest first."""
    rows = [[h["time"], h["query"] + (" 🖼" if h.get("image") else ""), h["role"], h["fusion"], h["decision"],
             ", ".join(h["top"]), h["ms"]] for h in reversed(list(history))]
    return pd.DataFrame(rows, columns=["time", "query", "role", "fusion", "decision", "top 3", "ms"])


def lookalike_table(pairs: Sequence[tuple[str, str, float]], catalog: Catalog) -> pd.DataFrame:
    """Look-alike pairs with names and categories, most similar first."""
    rows = []
    for a, b, sim in pairs:
        ta, tb = catalog.get(a), catalog.get(b)
        rows.append([a, b, round(sim, 4), ta.category if ta else "", tb.category if tb else ""])
    return pd.DataFrame(rows, columns=["tool A", "tool B", "cosine", "category A", "category B"])


def catalog_table(catalog: Catalog) -> pd.DataFrame:
    """Every tool with category, number of examples and images, permissions and lint warnings."""
    rows = []
    for t in catalog.tools:
        warnings = lint_profile(t)
        rows.append([t.id, t.name, t.category, len(t.examples), len(t.images), ", ".join(t.permissions) or "–",
                     "; ".join(w.code for w in warnings) or "✓", "deprecated" if t.deprecated else ""])
    return pd.DataFrame(rows, columns=["id", "name", "category", "examples", "images", "permissions", "lint",
                                       "status"])
