"""The policy: the decision model's probabilities against an operating point, after a few invariants.

Invariants first (:data:`RULES`: source -> predicate -> reason), because no number should override them: no tool
is visible to the caller; the request holds no letters or digits and no image; the request names a visible tool
exactly (it is called). Then the model (:mod:`toolrag.decision.model`):

- EXECUTE when P(right) reaches the threshold of the EXECUTE precision target (``Settings.precision_target``,
  default the model's; each target's threshold was measured on held-out sources, docs/decisions.md);
- else CLARIFY when a tool likely fits (P(no tool) < :data:`FITS`) or P(ambiguous) reaches the model's ask
  threshold: the top two contend, or the request leaves open what the tool needs (the question then names the
  missing parameters); an agent asks rather than calls a tool it is unsure of, or answers as if none fitted;
- else NO_TOOL.

The reason quotes the numbers that decided. Without a usable model file the top tool's standing against
requests that need no tool decides (``fallback``), and the reason says so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from toolrag.decision.model import DecisionModel
from toolrag.decision.outcome import Decision, DecisionOutcome, DecisionScores, DecisionSource
from toolrag.decision.view import FEATURES, LOOKALIKE, DecisionView
from toolrag.text import has_cjk

__all__ = ["FALLBACK_Z", "FITS", "RULES", "Facts", "decide", "name_lookup", "named_tools"]

#: Below this P(no tool) a tool likely fits: a request the model would not call on is asked about, not refused.
FITS = 0.5
#: Without a model, the top tool is called when the request stands out this far (z) from requests that need no
#: tool (the English model's z when it read the request, else the multilingual one's).
FALLBACK_Z = 2.0
_IDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@+\-]*[A-Za-z0-9]")
_NAME_LIKE = re.compile(r"[_.\-/:@]|\d|[a-z][A-Z]")


@dataclass(frozen=True)
class Facts:
    """What the policy reads besides the view: the candidates' names and summaries (best first), how many the
    request names exactly, whether it holds meaningful text or an image, and the request (for the language of
    the question)."""

    names: Sequence[str]
    summaries: Sequence[str]
    named: int = 0
    meaningful: bool = True
    image: bool = False
    query: str = ""


#: The invariants, in order: (source, predicate, reason). The first that holds decides.
RULES: tuple[tuple[DecisionSource, Callable[[Facts], bool], Callable[[Facts], str]], ...] = (
    (DecisionSource.NO_PERMITTED_TOOL, lambda f: not f.names, lambda f: "no tool: no tool is available to this caller"),
    (DecisionSource.NO_MEANINGFUL_TEXT, lambda f: not f.meaningful and not f.image,
     lambda f: "no tool: the request holds no letters or digits (only symbols, emoji or invisible characters)"),
    (DecisionSource.NAMED_TOOL, lambda f: f.named > 0,
     lambda f: f"calls {', '.join(f.names[: f.named])}: the request names {'it' if f.named == 1 else 'them'} exactly"),
)


def decide(facts: Facts, view: DecisionView | None, model: DecisionModel | None, *, target: float | None = None,
           note: str = "") -> DecisionOutcome:
    """The decision for one result: :data:`RULES`, then the model at the operating point of ``target`` (EXECUTE
    precision, 0-1; ``None``: the model's default). ``note``: why the model is missing (a fallback says so)."""
    for source, holds, reason in RULES:
        if holds(facts):
            if source is DecisionSource.NAMED_TOOL:
                return DecisionOutcome(Decision.EXECUTE, None, reason(facts), _scores(view, model), facts.named,
                                       source)
            return DecisionOutcome(Decision.NO_TOOL, None, reason(facts), _scores(view, model), source=source)
    assert view is not None
    if model is None:
        return _fallback(facts, view, note)
    p = model.probabilities(view.features)
    scores = DecisionScores(p["right"], p["ask"], p["none"])
    goal = model.default_target if target is None else target
    measured, execute_at = model.operating_point(goal)
    point = f"{100 * measured:.0f}% EXECUTE precision" + (
        "" if abs(measured - goal) < 1e-9 else f", the measured point nearest {100 * goal:.0f}%")
    names = facts.names
    notes = _notes(view, names[0])
    if p["right"] >= execute_at:
        selected = 1
        for q in model.also_needed(view.candidates[: len(names) - 1]):
            if q < model.select_threshold:
                break
            selected += 1
        more = f"; {selected} tools injected (the next ones are likely needed too)" if selected > 1 else ""
        return DecisionOutcome(Decision.EXECUTE, None,
                               f"calls {names[0]}: P(right) {p['right']:.2f} >= {execute_at:.2f} (the operating point "
                               f"for {point}); P(ambiguous) {p['ask']:.2f}, P(no tool) "
                               f"{p['none']:.2f}{more}{notes}", scores, selected)
    if p["ask"] >= model.ask_threshold or p["none"] < FITS:
        question, about = _question(facts, view)
        why = (f"P(ambiguous) {p['ask']:.2f} >= {model.ask_threshold:.2f}" if p["ask"] >= model.ask_threshold
               else f"a tool likely fits (P(no tool) {p['none']:.2f} < {FITS:.2f})")
        return DecisionOutcome(Decision.CLARIFY, question,
                               f"asks: {why} and P(right) {p['right']:.2f} < {execute_at:.2f}; {about}{notes}", scores,
                               1 if _asks_for_parameters(facts, view) else min(2, len(names)))
    reads = f'; the request asks for a change ("{view.change_verb}") and {names[0]} only reads' \
        if view.change_verb else ""
    return DecisionOutcome(Decision.NO_TOOL, None,
                           f"no tool: P(no tool) {p['none']:.2f} >= {FITS:.2f}, P(right) {p['right']:.2f} < "
                           f"{execute_at:.2f} and P(ambiguous) {p['ask']:.2f} < {model.ask_threshold:.2f}; the best "
                           f"visible match is {names[0]}{reads}", scores)


def _scores(view: DecisionView | None, model: DecisionModel | None) -> DecisionScores | None:
    if view is None or model is None:
        return None
    p = model.probabilities(view.features)
    return DecisionScores(p["right"], p["ask"], p["none"])


def _notes(view: DecisionView, top: str) -> str:
    """What the request's words say against the top tool, for the reason (the model read the same facts)."""
    out = ""
    if view.change_verb:
        out += f'; the request asks for a change ("{view.change_verb}") and {top} only reads'
    if view.open_parameters:
        out += f"; it leaves open {', '.join(view.open_parameters)} of {top}"
    return out


def _asks_for_parameters(facts: Facts, view: DecisionView) -> bool:
    """Whether a CLARIFY asks for the top tool's missing parameters (then it injects that tool alone) rather than
    which of two look-alikes is meant."""
    return bool(view.open_parameters) and (
        len(facts.names) < 2 or not view.features[FEATURES.index("lookalike")] >= LOOKALIKE)


def _question(facts: Facts, view: DecisionView) -> tuple[str, str]:
    """The clarification question and, for the reason, what it is about."""
    names, summaries, chinese = facts.names, facts.summaries, has_cjk(facts.query)
    if _asks_for_parameters(facts, view):
        missing = ", ".join(view.open_parameters)
        if chinese:
            return f"要使用 {names[0]}，还需要您提供：{missing}。", f"the request leaves open {missing} of {names[0]}"
        them = "it" if len(view.open_parameters) == 1 else "them"
        return (f"To use {names[0]} I need: {missing}. Could you give {them}?",
                f"the request leaves open {missing} of {names[0]}")
    if len(names) < 2:
        what = f"{names[0]} ({_short(summaries[0])})" if summaries[0] else names[0]
        if chinese:
            return f"您是想用 {what} 吗？能再具体说说吗？", f"{names[0]} may fit but the request says too little"
        return f"Do you want {what}? Could you say more?", f"{names[0]} may fit but the request says too little"
    a, b = (f"{n} ({_short(s)})" if s else n for n, s in zip(names[:2], summaries[:2], strict=True))
    if view.vague:
        if chinese:
            return f"能具体说说您想做什么吗？最接近的工具是 {a} 和 {b}。", \
                f'the request leaves open what it is about ("{view.vague}")'
        return (f'Could you say more about what you need ("{view.vague}")? The closest tools are {a} and {b}.',
                f'the request leaves open what it is about ("{view.vague}")')
    about = f"{names[0]} and {names[1]} both fit"
    return (f"您是想用 {a}，还是 {b}？" if chinese else f"Do you want {a} or {b}?"), about


def _fallback(facts: Facts, view: DecisionView, note: str) -> DecisionOutcome:
    """No usable model: call the top tool when the request stands out for it from requests that need no tool."""
    f = view.named()
    z = f["en_null"] if math.isfinite(f["en_null"]) else f["sem_null"]
    why = note or "no decision model"
    if (math.isfinite(z) and z >= FALLBACK_Z) or (not facts.meaningful and facts.image):
        return DecisionOutcome(Decision.EXECUTE, None, f"calls {facts.names[0]}: the request stands out for it from "
                               f"requests that need no tool (z {z:.2f} >= {FALLBACK_Z:.2f}); {why}", None, 1,
                               DecisionSource.FALLBACK)
    return DecisionOutcome(Decision.NO_TOOL, None, f"no tool: the request comes no closer to {facts.names[0]} than "
                           f"requests that need no tool (z {z:.2f} < {FALLBACK_Z:.2f}); {why}", None,
                           source=DecisionSource.FALLBACK)


def _short(text: str, limit: int = 60) -> str:
    first = re.split(r"(?<=[.。!！?？;；])\s*", text.strip(), maxsplit=1)[0]
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def name_lookup(names_and_ids: Sequence[tuple[str, ...]]) -> dict[str, int]:
    """Lower-cased identifier-like names and ids -> row, from each row's names (original name, function name,
    id). Only names that look like identifiers count (with ``_ . - / : @``, a digit or an inner capital, 4+
    characters): a tool named "search" or "Now" must not be "named" by every request that uses the word. A name
    two tools share is dropped (it names neither)."""
    out: dict[str, int] = {}
    clash: set[str] = set()
    for row, names in enumerate(names_and_ids):
        for value in dict.fromkeys(names):
            if len(value) < 4 or not _NAME_LIKE.search(value) or not _IDENT.fullmatch(value):
                continue
            key = value.lower()
            if key in out and out[key] != row:
                clash.add(key)
            out[key] = row
    for key in clash:
        out.pop(key, None)
    return out


def named_tools(query: str, lookup: dict[str, int]) -> list[int]:
    """Rows of the tools whose exact name or id appears in ``query``, in order of appearance, distinct.

    ``lookup`` maps a lower-cased name or id to its row (see :func:`name_lookup`). A span counts when it is a
    whole identifier-like token of the request ("use get_weather_forecast for Paris"), compared without case.
    """
    rows: list[int] = []
    for match in _IDENT.finditer(query):
        row = lookup.get(match.group(0).lower())
        if row is not None and row not in rows:
            rows.append(row)
    return rows
