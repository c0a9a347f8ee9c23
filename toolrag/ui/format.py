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
from toolrag.decision.model import DecisionModel, shipped_model
from toolrag.language import LANGUAGE_NAMES, MEASURED, UNDETERMINED
from toolrag.search.results import Candidate, Decision, SearchResult
from toolrag.settings import Fusion, Settings
from toolrag.signals import IMAGE_SIGNALS, SIGNALS, signal

__all__ = [
    "BEFORE_SEARCH",
    "GUEST",
    "HISTORY_SIZE",
    "IMAGE_MARK",
    "REQUEST_LABEL",
    "build_settings",
    "catalog_table",
    "decision_banner",
    "history_entry",
    "history_table",
    "image_note",
    "lookalike_table",
    "notes_text",
    "prompt_text",
    "rank_of",
    "result_widths",
    "results_table",
    "role_choices",
    "scored_signals",
    "signal_column",
    "signal_info",
    "timings_text",
    "token_text",
    "tools_json",
    "unscored_text",
]

#: The request box's label: the languages the multilingual labelled set measures (docs/results.md); others the
#: multilingual model reads are served too, unmeasured.
REQUEST_LABEL = "Request (measured in " + ", ".join(LANGUAGE_NAMES[lang] for lang in MEASURED) + ")"
#: The role choice that grants no permission code (only unrestricted tools are visible).
GUEST = "guest (no permissions)"
HISTORY_SIZE = 6
#: Marks a request that came with an image, in plain text: an emoji would be an empty box in a browser
#: without an emoji font.
IMAGE_MARK = " [+ image]"
TOP_COLOUR = "background-color: #ffd54f; font-weight: 600"
PART_COLOUR = "background-color: #fff3c4"
#: Widths of the ranked table's columns #, tool, id, score and top signal; the signal columns share the rest.
_FIXED_WIDTHS = (3.5, 14.0, 15.5, 7.0, 7.5)
#: The decision banner before the first search: what fills it.
BEFORE_SEARCH = ('<div class="toolrag-banner toolrag-empty">Type a request (or pick one of the examples below) and '
                 "press <b>Search</b>: the decision and the ranked tools appear here.</div>")
_BANNER = {
    Decision.EXECUTE: ("#e6f4ea", "#1e7e34", "CALL"),
    Decision.CLARIFY: ("#fff4e5", "#b26a00", "CLARIFY"),
    Decision.NO_TOOL: ("#eceff1", "#455a64", "NO TOOL"),
}


def signal_column(name: str) -> str:
    """Header of a signal's column in the results table (its cells: ``raw (norm)``, the table's label says so)."""
    return name


def role_choices(catalog: Catalog, roles: Iterable[str] | None = None) -> list[str]:
    """The role selector's choices: :data:`GUEST` and the catalog's roles (``roles``: those of them the caller
    holds), without a role named ``guest`` that grants no code (it is :data:`GUEST` itself: listed once)."""
    names = catalog.roles if roles is None else roles
    return [GUEST, *(r for r in names if not (r.strip().lower() == "guest" and not catalog.roles.get(r)))]


def build_settings(base: Settings, *, fusion: str, top_k: float, rerank: bool, precision_target: float | None,
                   clean_target: float | None, weights: Mapping[str, float],
                   normalization: str | None = None) -> Settings:
    """Settings from the search controls (sliders give floats; top-K must be an int; no normalisation given
    keeps the base's; the precision and clean targets as shares, the sliders show percent)."""
    changes: dict[str, Any] = {
        "fusion": Fusion(str(fusion).lower()), "top_k": int(top_k), "rerank": bool(rerank),
        "precision_target": None if precision_target is None else round(float(precision_target) / 100, 4),
        "clean_target": None if clean_target is None else round(float(clean_target) / 100, 4),
        "weights": {s: float(w) for s, w in weights.items()},
    }
    if normalization:
        changes["normalization"] = normalization
    return base.with_overrides(**changes)


def precision_target(base: Settings) -> float:
    """The decision's operating point the page starts at: the settings', else the shipped model's default (0.85
    when no model can be read: the slider still shows a value, and the decision says it fell back)."""
    if base.precision_target is not None:
        return float(base.precision_target)
    model, _ = shipped_model()
    return model.default_target if model is not None else 0.85


def clean_target(base: Settings) -> float:
    """The decision's other operating point the page starts at (the share of requests nothing serves that get
    no tool injected): the settings', else the shipped model's default (0.85 when no model can be read)."""
    if base.clean_target is not None:
        return float(base.clean_target)
    model, _ = shipped_model()
    return model.default_clean if model is not None else 0.85


def tradeoff_table(model: DecisionModel, target: float | None) -> str:
    """The decision model's operating points as a table (what each EXECUTE precision target, at the default clean
    share, gave on held-out training sources), the row of ``target`` (a share) marked; with the threshold a
    request with earlier turns is called at, where the model has its own for them."""
    later = bool(model.history_points)
    rows = ["| precision target | P(right) threshold | " + ("after earlier turns | " if later else "")
            + "EXECUTEs right | served requests called right | requests nothing serves with nothing injected | "
            "right tool injected, of the top three's |", "|---|---|---|---|---|---|" + ("---|" if later else "")]
    for point in model.trained.get("tradeoff", []):
        if point.get("kind", "precision") != "precision":
            continue
        mark = " (now)" if target is not None and abs(point["target"] - target) < 1e-6 else ""
        turns = f"{model.execute_threshold(point['target'], history=True):.2f} | " if later else ""
        rows.append(f"| {100 * point['target']:.0f}%{mark} | {point['threshold']:.2f} | {turns}"
                    f"{100 * point['precision']:.1f}% | {100 * point['coverage']:.1f}% | "
                    f"{100 * point.get('clean', math.nan):.1f}% | {100 * point.get('reach_ratio', math.nan):.1f}% |")
    return (f"Decision model {model.version} (one for every catalog; measured leave-one-source-out on the training "
            "sets, each source weighing the same; docs/decisions.md):\n\n" + "\n".join(rows))


def signal_info(name: str, notes: Mapping[str, str]) -> str:
    """The info line under a weight slider: what the signal reads, or why it can't run here (``notes``:
    signal -> reason, from :meth:`toolrag.search.retriever.ToolRetriever.signal_notes`)."""
    reason = notes.get(name)
    return f"⚠ unavailable: {reason}" if reason else signal(name).label


def image_note(notes: Mapping[str, str]) -> str:
    """The line beside the image: which image signals run here and which are off (why: under its slider)."""
    on = [s for s in IMAGE_SIGNALS if s not in notes]
    off = [s for s in IMAGE_SIGNALS if s in notes]
    return "Image signals: " + (", ".join(on) or "none") + (f" · **off: {', '.join(off)}**" if off else "")


def _cell(raw: float, norm: float) -> str:
    if math.isnan(raw):
        return "–"
    return f"{raw:.3f} ({norm:.2f})"  # wraps cleanly in a narrow column: raw above, (norm) below


def _scored(candidate: Candidate, name: str) -> bool:
    score = candidate.signals.get(name)
    return score is not None and not math.isnan(score.raw)


def scored_signals(result: SearchResult) -> list[str]:
    """The signals that scored at least one candidate of ``result``, in :data:`SIGNALS` order: the ranked
    table's signal columns (a signal that scored no candidate is named in :func:`unscored_text` instead)."""
    return [s for s in SIGNALS if any(_scored(c, s) for c in result.candidates)]


def unscored_text(result: SearchResult) -> str:
    """One line under the ranked table naming the signals that scored no candidate, grouped by why:
    ``not scored: ocr, visual, concepts (no image given); clip (CLIP is off ...)``; empty when every signal
    scored (or there is no candidate to score)."""
    if not result.candidates:
        return ""
    scored = set(scored_signals(result))
    reasons: dict[str, list[str]] = {}
    for name in SIGNALS:
        if name not in scored:
            why = result.absent_signals.get(name) or "no candidate has what it compares"
            reasons.setdefault(why, []).append(name)
    parts = [f"{', '.join(names)} ({why})" for why, names in reasons.items()]
    return f"<small>**not scored:** {html.escape('; '.join(parts))}</small>" if parts else ""


def result_widths(n_signals: int) -> list[str]:
    """Column widths of a ranked table with ``n_signals`` signal columns: they share what the fixed columns
    leave, so the table fills its panel whichever signals scored."""
    *head, top = _FIXED_WIDTHS
    each = (100.0 - sum(_FIXED_WIDTHS)) / max(n_signals, 1)
    return [f"{w:g}%" for w in (*head, *([each] * n_signals), top)]


def results_table(result: SearchResult) -> Any:
    """The ranked candidates: fused score and one ``raw (norm)`` column per signal that scored (the others
    fold into :func:`unscored_text`), with the signal that contributed most to each row highlighted (others
    that contributed get a lighter tint)."""
    shown = scored_signals(result)
    columns = ["#", "tool", "id", "score", *(signal_column(s) for s in shown), "top signal"]
    rows: list[list[Any]] = []
    tops: list[str | None] = []
    contributing: list[set[str]] = []
    for rank, c in enumerate(result.candidates, start=1):
        top = c.top_signal()
        tops.append(top)
        contributing.append({s for s, v in c.signals.items() if v.contribution > 0})
        cells = [_cell(c.signals[s].raw, c.signals[s].norm) if s in c.signals else "–" for s in shown]
        name = c.name + (" ⚠deprecated" if c.deprecated else "") + (" ✎mutation" if c.mutation else "")
        score = c.rerank_score if c.rerank_score is not None else c.score
        rows.append([rank, name, c.id, round(float(score), 3), *cells, top or "–"])
    frame = pd.DataFrame(rows, columns=columns)
    by_column = {signal_column(s): s for s in shown}

    def highlight(row: pd.Series) -> list[str]:
        i = int(row.name)
        styles = []
        for col in frame.columns:
            name = by_column.get(col)
            if name is not None and name == tops[i]:
                styles.append(TOP_COLOUR)
            elif name is not None and name in contributing[i]:
                styles.append(PART_COLOUR)
            else:
                styles.append("")
        return styles

    return frame.style.apply(highlight, axis=1).format(precision=3)


def decision_banner(result: SearchResult) -> str:
    """HTML banner: call <tool> / clarify with the question / no tool; the three probabilities of the
    decision model, the reason in words and numbers, how many schemas are injected."""
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
    language = LANGUAGE_NAMES.get(result.language, "no letters" if result.language == UNDETERMINED else "")
    language = f"{html.escape(language)} ({result.language})" if language else html.escape(result.language)
    return (f'<div class="toolrag-banner" data-decision="{result.decision.value}" style="background:{bg};'
            f'border-left:6px solid {fg};padding:10px 14px;border-radius:6px;color:{fg};font-size:1.05em">'
            f"<b>{label}</b> · {text}<br>{probs}{reason}<small>request in {language} · "
            f"{injected} schema(s) injected · {len(result.candidates)} candidate(s) · "
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
    rows = [[h["time"], h["query"] + (IMAGE_MARK if h.get("image") else ""), h["role"], h["fusion"], h["decision"],
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
