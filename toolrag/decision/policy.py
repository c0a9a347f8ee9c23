"""The policy: the decision model's distribution against an operating point, after a few invariants.

Invariants first (:data:`RULES`: source -> predicate -> reason), because no number should override them: no tool
is visible to the caller; the request holds no letters or digits and no image; the request names a visible tool
exactly (it is called). Then the model (:mod:`toolrag.decision.model`: one distribution over call / ask / no tool
that sums to one) through :func:`choose`, the one policy serving, ``toolrag tune`` and the benchmarks apply:

- EXECUTE when P(right) reaches the threshold of the EXECUTE precision target (``Settings.precision_target``)
  and P(no tool) stays below :data:`NO_TOOL_AT`, unless the request asks for a change of a tool that only reads
  (the call could not do what was asked: the agent asks instead);
- else CLARIFY when a listed tool likely serves the request: P(no tool) below the threshold of the clean target
  (``Settings.clean_target``: the share of requests nothing serves that get no tool injected, measured on
  held-out sources). The agent gets the candidates (up to :data:`ASK_TOOLS`) and the question, not nothing;
- else NO_TOOL.

What is injected (``selected``, positions among the candidates) never holds a tool the catalog lint flags as
keyword-stuffed (:attr:`Facts.eligible`), nor does a question name one. The reason quotes the numbers that
decided. Without a usable model file the top tool's standing against requests that need no tool decides
(``fallback``), and the reason says so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from toolrag.decision.model import DecisionModel
from toolrag.decision.outcome import Decision, DecisionOutcome, DecisionScores, DecisionSource
from toolrag.decision.view import FEATURES, LOOKALIKE, DecisionView
from toolrag.language import detect_language

__all__ = ["ASK_TOOLS", "FALLBACK_Z", "NO_TOOL_AT", "RULES", "Facts", "OperatingPoint", "choose", "decide",
           "operating_point"]

#: EXECUTE never holds at or above this P(no tool): a call must be more likely served than not.
NO_TOOL_AT = 0.5
#: A question injects at most this many candidates (an agent picks among them with the user's answer).
ASK_TOOLS = 3
#: Without a model, the top tool is called when the request stands out this far (z) from requests that need no
#: tool (the English model's z when it read the request, else the multilingual one's).
FALLBACK_Z = 2.0


@dataclass(frozen=True)
class Facts:
    """What the policy reads besides the view: the candidates' names and summaries (best first), how many the
    request names exactly, whether it holds meaningful text or an image, the request (for the language of the
    question), and which candidates may be injected (``eligible``: not flagged as keyword-stuffed; all when
    empty)."""

    names: Sequence[str]
    summaries: Sequence[str]
    named: int = 0
    meaningful: bool = True
    image: bool = False
    query: str = ""
    eligible: Sequence[bool] = field(default_factory=tuple)
    language: str = ""
    """The request's language as the search detected it (the question's language); empty: read from ``query``."""

    def may_inject(self, position: int) -> bool:
        return not self.eligible or bool(self.eligible[position])


@dataclass(frozen=True)
class OperatingPoint:
    """The two thresholds of a decision: EXECUTE at P(right) >= ``execute_at`` (measured for ``precision``
    EXECUTE precision), inject the candidates at P(no tool) < ``inject_below`` (measured to keep ``clean`` of the
    requests nothing serves clean)."""

    execute_at: float
    inject_below: float
    precision: float
    clean: float


def operating_point(model: DecisionModel, *, target: float | None = None, clean: float | None = None,
                    history: bool = False) -> OperatingPoint:
    """The thresholds serving an EXECUTE precision ``target`` and a clean share ``clean`` (0-1; ``None``: the
    model's defaults), each the nearest measured point at or above it; ``history``: the EXECUTE threshold
    measured for the heads that read a request with earlier turns (:meth:`DecisionModel.reads_history`), where
    the model has one."""
    precision, execute_at = model.operating_point(model.default_target if target is None else target,
                                                  history=history)
    kept, inject_below = model.clean_point(model.default_clean if clean is None else clean)
    return OperatingPoint(execute_at, inject_below, precision, kept)


def choose(scores: DecisionScores, point: OperatingPoint, *, change_reader: bool = False, top_eligible: bool = True,
           offer: bool = True) -> Decision:
    """The one policy over the model's distribution (serving, ``toolrag tune`` and the benchmarks use it): EXECUTE
    at P(right) >= the point's threshold with P(no tool) < :data:`NO_TOOL_AT`, unless the request asks a change of
    a tool that only reads (``change_reader``) or the top tool may not be injected (``top_eligible``: not flagged
    as keyword-stuffed); else CLARIFY while a listed tool likely serves the request (P(no tool) below the point's
    threshold) and some candidate may be offered (``offer``); else NO_TOOL."""
    if (scores.right >= point.execute_at and scores.no_tool < NO_TOOL_AT and not change_reader
            and top_eligible):
        return Decision.EXECUTE
    if scores.no_tool < point.inject_below and offer:
        return Decision.CLARIFY
    return Decision.NO_TOOL


#: The invariants, in order: (source, predicate, reason). The first that holds decides.
RULES: tuple[tuple[DecisionSource, Callable[[Facts], bool], Callable[[Facts], str]], ...] = (
    (DecisionSource.NO_PERMITTED_TOOL, lambda f: not f.names, lambda f: "no tool: no tool is available to this caller"),
    (DecisionSource.NO_MEANINGFUL_TEXT, lambda f: not f.meaningful and not f.image,
     lambda f: "no tool: the request holds no letters or digits (only symbols, emoji or invisible characters)"),
    (DecisionSource.NAMED_TOOL, lambda f: f.named > 0,
     lambda f: f"calls {', '.join(f.names[: f.named])}: the request names {'it' if f.named == 1 else 'them'} exactly"),
)


def decide(facts: Facts, view: DecisionView | None, model: DecisionModel | None, *, target: float | None = None,
           clean: float | None = None, note: str = "") -> DecisionOutcome:
    """The decision for one result: :data:`RULES`, then the model at the operating point of ``target`` (EXECUTE
    precision, 0-1) and ``clean`` (the share of requests nothing serves kept clean, 0-1; ``None``: the model's
    defaults). ``note``: why the model is missing (a fallback says so)."""
    for source, holds, reason in RULES:
        if holds(facts):
            if source is DecisionSource.NAMED_TOOL:
                return DecisionOutcome(Decision.EXECUTE, None, reason(facts), _scores(view, model),
                                       tuple(range(facts.named)), source)
            return DecisionOutcome(Decision.NO_TOOL, None, reason(facts), _scores(view, model), source=source)
    if view is None:  # candidates exist whenever a tool is visible (the retriever builds the view then)
        return DecisionOutcome(Decision.NO_TOOL, None, "no tool: nothing was ranked", None)
    if model is None:
        return _fallback(facts, view, note)
    p = model.probabilities(view.features)
    scores = DecisionScores(p["right"], p["ask"], p["none"])
    later = model.reads_history(view.features) and bool(model.history_points)
    point = operating_point(model, target=target, clean=clean, history=later)
    names = facts.names
    top_ok = facts.may_inject(0)
    offered = _offered(facts, view)
    decision = choose(scores, point, change_reader=bool(view.change_verb), top_eligible=top_ok, offer=bool(offered))
    numbers = (f"P(right) {scores.right:.2f}, P(ambiguous) {scores.ambiguous:.2f}, P(no tool) "
               f"{scores.no_tool:.2f}")
    precision = (f"the operating point for {100 * point.precision:.0f}% EXECUTE precision"
                 + (" on requests with earlier turns" if later else ""))
    kept = f"the point keeping {100 * point.clean:.0f}% of requests nothing serves clean"
    if decision is Decision.EXECUTE:
        also = model.also_selected(view.candidates[: len(names) - 1])
        selected = [0, *(at for at in range(1, 1 + also) if facts.may_inject(at))]
        more = f"; {len(selected)} tools injected (the next ones are likely needed too)" if len(selected) > 1 else ""
        return DecisionOutcome(Decision.EXECUTE, None,
                               f"calls {names[0]}: P(right) {scores.right:.2f} >= {point.execute_at:.2f} ({precision}) "
                               f"and P(no tool) {scores.no_tool:.2f} < {NO_TOOL_AT:.2f}; P(ambiguous) "
                               f"{scores.ambiguous:.2f}{more}{_notes(view, names[0])}{_turns(view)}", scores,
                               tuple(selected))
    if decision is Decision.CLARIFY:
        question, about = _question(facts, view, offered)
        if not top_ok:
            why = f"{names[0]} ranks first but its description is flagged as keyword stuffing (never injected)"
        elif view.change_verb and scores.right >= point.execute_at:
            why = f'the request asks for a change ("{view.change_verb}") and {names[0]} only reads, so it is not called'
        elif scores.right >= point.execute_at:
            why = (f"P(right) {scores.right:.2f} reaches {point.execute_at:.2f} but P(no tool) {scores.no_tool:.2f} "
                   f">= {NO_TOOL_AT:.2f}")
        else:
            why = (f"a listed tool likely serves the request (P(no tool) {scores.no_tool:.2f} < "
                   f"{point.inject_below:.2f}, {kept}) but P(right) {scores.right:.2f} < {point.execute_at:.2f} "
                   f"({precision})")
        return DecisionOutcome(Decision.CLARIFY, question, f"asks: {why}; {about}; {numbers}{_turns(view)}", scores,
                               offered)
    if not offered:  # nothing may be offered, whatever the numbers say
        return DecisionOutcome(Decision.NO_TOOL, None, "no tool: every candidate's description is flagged as keyword "
                               f"stuffing (never injected); {numbers}", scores)
    reads = f'; the request asks for a change ("{view.change_verb}") and {names[0]} only reads' \
        if view.change_verb else ""
    best = f"the best visible match is {names[0]}" if top_ok else "the best match may not be injected"
    return DecisionOutcome(Decision.NO_TOOL, None,
                           f"no tool: P(no tool) {scores.no_tool:.2f} >= {point.inject_below:.2f} ({kept}) and "
                           f"P(right) {scores.right:.2f} < {point.execute_at:.2f}; {best}{reads}{_turns(view)}", scores)


def _offered(facts: Facts, view: DecisionView) -> tuple[int, ...]:
    """The candidates a question injects: the top tool alone when it asks for its missing parameters, else up to
    :data:`ASK_TOOLS` of the first candidates that may be injected."""
    if facts.may_inject(0) and _asks_for_parameters(facts, view):
        return (0,)
    return tuple(i for i in range(len(facts.names)) if facts.may_inject(i))[:ASK_TOOLS]


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


def _turns(view: DecisionView) -> str:
    """For a request with earlier turns, how its top tool stands with them and by the request alone (the history
    heads read both): a request that changed the subject stands high only with them."""
    f = view.named()
    for own, mixed in (("en_own", "en_null"), ("sem_own", "sem_null")):
        if math.isfinite(f[own]) and math.isfinite(f[mixed]):
            return (f"; against requests that need no tool, the top tool stands {f[mixed]:.1f} spreads out with the "
                    f"earlier turns and {f[own]:.1f} by this request alone")
    return ""


def _asks_for_parameters(facts: Facts, view: DecisionView) -> bool:
    """Whether a CLARIFY asks for the top tool's missing parameters (then it injects that tool alone) rather than
    which of two look-alikes is meant."""
    return bool(view.open_parameters) and (
        len(facts.names) < 2 or not view.features[FEATURES.index("lookalike")] >= LOOKALIKE)


def _question(facts: Facts, view: DecisionView, offered: Sequence[int]) -> tuple[str, str]:
    """The clarification question about the ``offered`` candidates and, for the reason, what it is about."""
    names, summaries = facts.names, facts.summaries
    chinese = (facts.language or detect_language(facts.query)) == "zh"  # not a Japanese request's kanji
    first = names[offered[0]]
    if offered == (0,) and _asks_for_parameters(facts, view):
        missing = ", ".join(view.open_parameters)
        if chinese:
            return f"要使用 {first}，还需要您提供：{missing}。", f"the request leaves open {missing} of {first}"
        them = "it" if len(view.open_parameters) == 1 else "them"
        return (f"To use {first} I need: {missing}. Could you give {them}?",
                f"the request leaves open {missing} of {first}")
    shown = [f"{names[i]} ({_short(summaries[i])})" if summaries[i] else names[i] for i in offered]
    if len(shown) < 2:
        if chinese:
            return f"您是想用 {shown[0]} 吗？能再具体说说吗？", f"{first} may fit but the request says too little"
        return f"Do you want {shown[0]}? Could you say more?", f"{first} may fit but the request says too little"
    listed_en = ", ".join(shown[:-1]) + f" or {shown[-1]}"
    listed_zh = "、".join(shown[:-1]) + f"，还是 {shown[-1]}"
    if view.vague:
        about = f'the request leaves open what it is about ("{view.vague}")'
        if chinese:
            return f"能具体说说您想做什么吗？最接近的工具是 {'、'.join(shown)}。", about
        return f'Could you say more about what you need ("{view.vague}")? The closest tools are {listed_en}.', about
    about = f"{', '.join(names[i] for i in offered)} may each fit"
    return (f"您是想用 {listed_zh}？" if chinese else f"Do you want {listed_en}?"), about


def _fallback(facts: Facts, view: DecisionView, note: str) -> DecisionOutcome:
    """No usable model: call the top tool when the request stands out for it from requests that need no tool."""
    f = view.named()
    z = f["en_null"] if math.isfinite(f["en_null"]) else f["sem_null"]
    why = note or "no decision model"
    if (math.isfinite(z) and z >= FALLBACK_Z) or (not facts.meaningful and facts.image):
        return DecisionOutcome(Decision.EXECUTE, None, f"calls {facts.names[0]}: the request stands out for it from "
                               f"requests that need no tool (z {z:.2f} >= {FALLBACK_Z:.2f}); {why}", None, (0,),
                               DecisionSource.FALLBACK)
    return DecisionOutcome(Decision.NO_TOOL, None, f"no tool: the request comes no closer to {facts.names[0]} than "
                           f"requests that need no tool (z {z:.2f} < {FALLBACK_Z:.2f}); {why}", None,
                           source=DecisionSource.FALLBACK)


def _short(text: str, limit: int = 60) -> str:
    first = re.split(r"(?<=[.。!！?？;；])\s*", text.strip(), maxsplit=1)[0]
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"
