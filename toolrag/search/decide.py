"""The decision: call the top tool, ask the user to choose, or use no tool; with the reason and the selection.

Rules, in order (the probabilities come from the catalog's :class:`toolrag.search.decision_model.DecisionModel`):

1. NO_TOOL when no tool is permitted, or the request holds no letters or digits and no image (emoji, control,
   zero-width or NUL characters only: nothing a tool could act on).
2. EXECUTE the tools the request names by their exact name or id (permitted ones only: naming a hidden tool
   reveals nothing); they come first and are all injected.
3. NO_TOOL when the catalog owner set a ``no_tool_threshold`` and the confidence (best multilingual cosine
   among the top tools) is under it, or when P(no tool fits) reaches the model's threshold (0.5). The model's
   P(no tool) does not turn away a request that holds a web address when the top tool takes one
   (:mod:`toolrag.search.addresses`): a language model cannot open it, so the top tool is called (CLARIFY when
   the second candidate takes one too); nor does the z below. The owner's ``no_tool_threshold`` still does.
4. CLARIFY when P(ambiguous) reaches the model's threshold and the top tool leads the second by no more than
   the upper quartile of the leads among the catalog's own simulated ambiguous requests (``clarify_max_gap``,
   relative to the top fused score), or when the request holds a placeholder for what it leaves unsaid
   ("schedule something", "处理一下这张发票": :func:`toolrag.search.actions.vague_word`; whichever tool fits, the
   call cannot be filled in), or when the top two fused scores are within ``clarify_gap`` of each other (relative)
   and the two are look-alikes (profiles at least :data:`toolrag.search.features.LOOKALIKE` alike: a tie between
   unrelated tools is most often a request that needs both, not a choice between them).
5. NO_TOOL when the top tool is very likely not the one: P(right) < ``execute_share`` x P(a tool fits)
   (``Settings.execute_share``, 0.2 by default: :data:`toolrag.settings.DEFAULT_EXECUTE_SHARE`), or under the
   model's execute floor.
6. EXECUTE otherwise.
7. Whatever decided above: NO_TOOL instead of EXECUTE when the request asks for a change and the top tool only
   reads (:mod:`toolrag.search.actions`; "approve the expense claims" on ``get_expense_claim_status``), unless the
   request names that tool. Calling a reader would not make the change, so the reason would contradict the
   decision.

With at most ``FEW_TOOLS`` (5) permitted tools, for a mostly-Chinese request to a catalog where fewer than
``CROSS_LINGUAL_SHARE`` (10%) of the tools have Chinese text (its simulated requests hold no Chinese request
that needs a tool), or without a model, the model does not decide (z-scores over a handful
of tools say little; a catalog that small gives a handful of simulated cases): the top tool is called when the
request's cosine to it stands out from the bundled requests that need no tool, in the request's language, by at
least ``LONE_Z`` standard deviations (the English model's cosines when it reads the request and the tool, else
the multilingual model's: :func:`toolrag.search.features.lone_tool_z`), else NO_TOOL; the ``clarify_gap`` tie
rule and the placeholder rule still ask; a request without text (an image alone) calls it.

The selection (what to inject) is the top tool plus each next candidate, in order, whose P(also a right tool)
reaches the model's threshold (1..top_k tools), stopping at a tool whose description is mostly a keyword list
(keyword stuffing: it sits in the top five through its words alone); CLARIFY injects at least the two it asks
about, NO_TOOL none.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolrag.search.features import LONE_Z, LOOKALIKE
from toolrag.search.results import Decision, DecisionScores, DecisionSource
from toolrag.settings import DEFAULT_EXECUTE_SHARE
from toolrag.text import has_cjk

__all__ = [
    "NAMED_REASON", "DecisionInputs", "DecisionOutcome", "OperatingPoint",
    "clarification_question", "decide",
    "name_lookup", "named_tools",
]

#: Words of the reason of a call the request asked for by name (rule 2).
NAMED_REASON = "the request names"
#: Identifier-like spans of a request: where a tool's exact name or id can appear.
_IDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@+\-]*[A-Za-z0-9]")
_NAME_LIKE = re.compile(r"[_.\-/:@]|\d|[a-z][A-Z]")


@dataclass(frozen=True)
class DecisionInputs:
    """What the decision reads about one result besides the probabilities (best candidate first)."""

    names: Sequence[str]
    summaries: Sequence[str]
    lookalike: float = 0.0
    """Cosine of the top two tools' profiles."""
    relative_gap: float = 1.0
    """(s1 - s2) / |s1| of the top two fused scores."""
    top_cosine: float = float("nan")
    """The top tool's multilingual cosine (for the reason)."""
    chat_sim: float = float("nan")
    """The request's best cosine to requests that need no tool (for the reason)."""
    confidence: float = -1.0
    meaningful: bool = True
    image: bool = False
    named: int = 0
    """How many of the first candidates the request names (they were moved first)."""
    select: Sequence[float] = ()
    """P(also a right tool) of candidates 2..k."""
    query: str = ""
    lone_z: float = float("nan")
    """With a few permitted tools (or no model): how far the request stands out for the top tool from
    requests that need no tool (:func:`toolrag.search.features.lone_tool_z`); NaN otherwise or without request
    text."""
    permitted: int = 0
    """How many tools are permitted when they are :data:`toolrag.search.features.FEW_TOOLS` or fewer, else 0."""
    cross_lingual: bool = False
    """A mostly-Chinese request to a catalog whose tools are almost all without Chinese
    (:data:`toolrag.search.features.CROSS_LINGUAL_SHARE`)."""
    glossed: bool = False
    """The request was also read through its English gloss (:mod:`toolrag.search.gloss`): its z is the lower of
    the two readings."""
    address_takers: tuple[bool, ...] = ()
    """For a request that holds a web address: whether each of the first two candidates takes one
    (:mod:`toolrag.search.addresses`); empty for a request without one."""
    vague: str = ""
    """The request's placeholder for what it leaves unsaid ("something", "弄一下":
    :func:`toolrag.search.actions.vague_word`), else empty: the decision asks instead of calling."""
    stuffed: tuple[bool, ...] = ()
    """Per candidate: its description is mostly a keyword list (:func:`toolrag.catalog.lint.keyword_stuffing`);
    such a tool is never injected beside the top tool (it reaches the top five through its words alone)."""
    change_verb: str = ""
    """The request's verb of change ("approve", "删除") when the top tool only reads
    (:mod:`toolrag.search.actions`), else empty: said in the reason."""


@dataclass(frozen=True)
class DecisionOutcome:
    decision: Decision
    clarification: str | None
    reason: str = ""
    scores: DecisionScores | None = None
    selected: int = 0
    """How many of the first candidates to inject."""
    features: tuple[float, ...] = ()
    """The feature vector the model read (empty without a model)."""
    source: DecisionSource = DecisionSource.MODEL
    """The model, or the rule that decided."""


@dataclass(frozen=True)
class OperatingPoint:
    """The thresholds of a decision model (see :class:`toolrag.search.decision_model.DecisionModel`)."""

    no_tool_threshold: float = 0.5
    ambiguous_threshold: float = 0.5
    execute_floor: float = 0.0
    select_threshold: float = 0.5
    clarify_max_gap: float = math.inf
    reference: Mapping[str, float] = field(default_factory=dict)


def decide(
    inputs: DecisionInputs,
    scores: DecisionScores | None,
    *,
    model: OperatingPoint | Any = None,
    clarify_gap: float = 0.0,
    no_tool_threshold: float | None = None,
    execute_share: float = DEFAULT_EXECUTE_SHARE,
) -> DecisionOutcome:
    """Decide from the model's ``scores`` (``None``: no model, e.g. no tool is permitted) and the result facts.

    ``model`` gives the operating point (any object with the :class:`OperatingPoint` fields, e.g. the
    catalog's decision model); its ``reference`` holds what the catalog's own simulated requests reach
    (``example_cosine``: median top cosine of its example requests; ``chat_sim``: how close requests that need
    no tool come to each other), used only in the reason's words. See the module docstring for the rules; the
    last one holds whatever decided before it: a request of change is never EXECUTEd on a tool that only reads
    (unless the request names that tool), so a decision never contradicts its own reason.
    """
    outcome = _decide(inputs, scores, model, clarify_gap, no_tool_threshold, execute_share)
    if outcome.decision is Decision.EXECUTE and inputs.change_verb and outcome.source is not DecisionSource.NAMED_TOOL:
        return DecisionOutcome(Decision.NO_TOOL, None,
                               f'no tool: the request asks for a change ("{inputs.change_verb}") and the best '
                               f"permitted match {inputs.names[0]} only reads: calling it would not make the change",
                               scores, source=DecisionSource.CHANGE_READER)
    return outcome


def _decide(inputs: DecisionInputs, scores: DecisionScores | None, model: OperatingPoint | Any, clarify_gap: float,
            no_tool_threshold: float | None, execute_share: float) -> DecisionOutcome:
    """Rules 1-6 of the module docstring (:func:`decide` adds the last)."""
    point = model if model is not None else OperatingPoint()
    ref = dict(point.reference)
    n = len(inputs.names)
    if n == 0:
        return DecisionOutcome(Decision.NO_TOOL, None, "no tool: no tool is available to this caller", scores,
                               source=DecisionSource.NO_PERMITTED_TOOL)
    if not inputs.meaningful and not inputs.image:
        return DecisionOutcome(Decision.NO_TOOL, None,
                               "no tool: the request holds no letters or digits (only symbols, emoji or "
                               "invisible characters)", scores, source=DecisionSource.NO_MEANINGFUL_TEXT)
    if inputs.named:
        named = ", ".join(inputs.names[: inputs.named])
        return DecisionOutcome(Decision.EXECUTE, None, f"calls {named}: {NAMED_REASON} "
                               f"{'it' if inputs.named == 1 else 'them'} exactly", scores, inputs.named,
                               source=DecisionSource.NAMED_TOOL)
    if no_tool_threshold is not None and inputs.confidence < no_tool_threshold:
        return DecisionOutcome(Decision.NO_TOOL, None,
                               f"no tool: the confidence {inputs.confidence:.3f} is under the catalog's "
                               f"no_tool_threshold {no_tool_threshold:.3f}", scores,
                               source=DecisionSource.OWNER_THRESHOLD)
    if scores is None or ((inputs.permitted or inputs.cross_lingual) and math.isfinite(inputs.lone_z)):
        return _few(inputs, scores, point, clarify_gap)
    if scores.no_tool >= point.no_tool_threshold:
        if any(inputs.address_takers[:1]):
            return _address(inputs, scores, point, f"P(no tool) {scores.no_tool:.2f} from its words alone")
        return DecisionOutcome(Decision.NO_TOOL, None, _no_tool_reason(inputs, scores, ref) + _reads_note(inputs),
                               scores)
    alike = scores.ambiguous >= point.ambiguous_threshold
    # the model's P(ambiguous) reads how alike the two tools are; a choice needs them close in the ranking too
    close = inputs.relative_gap <= point.clarify_max_gap
    ambiguous = alike and close
    # a placeholder leaves the request's object or action unsaid: whichever tool fits, the agent cannot fill
    # in the call, so it asks ("schedule something": schedule what, when?)
    vague = bool(inputs.vague) and not ambiguous
    tie = _tied(inputs, clarify_gap)
    if n >= 2 and (ambiguous or vague or tie):
        question = clarification_question(inputs.names[:2], inputs.summaries[:2], query=inputs.query,
                                          vague=inputs.vague if vague else "")
        if ambiguous:
            reason = _clarify_reason(inputs, scores, point.ambiguous_threshold)
        elif vague:
            reason = (f'asks: the request leaves open what it is about ("{inputs.vague}"); its best matches are '
                      f"{inputs.names[0]} and {inputs.names[1]} (P(right) {scores.right:.2f}, P(ambiguous) "
                      f"{scores.ambiguous:.2f})")
        else:
            reason = (f"asks: {inputs.names[0]} and {inputs.names[1]} are within "
                      f"{100 * max(inputs.relative_gap, 0.0):.0f}% of each other (clarify_gap {clarify_gap:.2f})")
        selected = max(2, _selection(inputs, point.select_threshold))
        source = DecisionSource.MODEL if ambiguous else DecisionSource.PLACEHOLDER if vague else DecisionSource.TIE
        return DecisionOutcome(Decision.CLARIFY, question, reason, scores, selected, source=source)
    fits = 1.0 - scores.no_tool
    if scores.right < max(point.execute_floor, execute_share * fits):
        return DecisionOutcome(Decision.NO_TOOL, None,
                               f"no tool: the best permitted match {inputs.names[0]} is more likely wrong than "
                               f"right (P(right) {scores.right:.2f} of P(a tool fits) {fits:.2f}; "
                               f"P(ambiguous) {scores.ambiguous:.2f}){_reads_note(inputs)}", scores)
    selected = _selection(inputs, point.select_threshold)
    more = f"; {selected} tools injected (the next ones are likely needed too)" if selected > 1 else ""
    reason = (f"calls {inputs.names[0]}: P(right) {scores.right:.2f}, P(ambiguous) {scores.ambiguous:.2f}, "
              f"P(no tool) {scores.no_tool:.2f}{more}")
    if alike and n >= 2:
        reason += (f"; {inputs.names[0]} and {inputs.names[1]} are alike, but the first leads by "
                   f"{100 * inputs.relative_gap:.0f}%, more than three in four of this catalog's ambiguous requests "
                   f"({100 * point.clarify_max_gap:.0f}%)")
    return DecisionOutcome(Decision.EXECUTE, None, reason + _reads_note(inputs), scores, selected)


def _tied(inputs: DecisionInputs, clarify_gap: float) -> bool:
    """The tie rule: the top two fused scores within ``clarify_gap`` (relative) and the two tools look-alikes
    (a tie between unrelated tools is most often a request that needs both)."""
    return len(inputs.names) >= 2 and inputs.relative_gap < clarify_gap and inputs.lookalike >= LOOKALIKE


def _reads_note(inputs: DecisionInputs) -> str:
    """The reason's words for a request of change whose top tool only reads (empty otherwise)."""
    if not inputs.change_verb:
        return ""
    return f'; the request asks for a change ("{inputs.change_verb}") and {inputs.names[0]} only reads'


def _few(inputs: DecisionInputs, scores: DecisionScores | None, point: Any, clarify_gap: float
         ) -> DecisionOutcome:
    """A few permitted tools (or no model): the top tool is called when the request stands out for it from
    requests that need no tool (``lone_z`` >= :data:`toolrag.search.features.LONE_Z`), else NO_TOOL; a placeholder
    (rule 4) and the tie rule (``clarify_gap``) still ask; called as before when that cannot be measured (no
    request text, e.g. an image alone)."""
    name, z, n = inputs.names[0], inputs.lone_z, len(inputs.names)
    if n == 1 or inputs.permitted == 1:
        why = "the only candidate"
    elif inputs.permitted:
        why = f"{inputs.permitted} tools are permitted, too few for the decision model, and {name} ranks first"
    elif inputs.cross_lingual:
        why = (f"a Chinese request to a catalog without Chinese (its decision model saw no such request that "
               f"needs a tool), and {name} ranks first" + (" (z: the lower of the request as typed and its English "
                                                           "gloss)" if inputs.glossed else ""))
    else:
        why = f"{name} ranks first (no decision model for this catalog)"
    if not math.isfinite(z):
        return DecisionOutcome(Decision.EXECUTE, None, f"calls {name}: {why}{_reads_note(inputs)}", scores, 1,
                               source=DecisionSource.STANDOUT)
    if z < LONE_Z and any(inputs.address_takers[:1]):
        return _address(inputs, scores, point, f"z {z:.2f} < {LONE_Z:.2f} from its words alone")
    if z < LONE_Z:
        return DecisionOutcome(Decision.NO_TOOL, None,
                               f"no tool: {why}; the request comes no closer to {name} than requests that need "
                               f"no tool do (z {z:.2f} < {LONE_Z:.2f})", scores, source=DecisionSource.STANDOUT)
    if n >= 2 and inputs.vague:  # rule 4's placeholder: the call could not be filled in whoever decides
        question = clarification_question(inputs.names[:2], inputs.summaries[:2], query=inputs.query,
                                          vague=inputs.vague)
        return DecisionOutcome(Decision.CLARIFY, question,
                               f'asks: the request leaves open what it is about ("{inputs.vague}"); its best matches '
                               f"are {inputs.names[0]} and {inputs.names[1]} ({why})", scores,
                               max(2, _selection(inputs, point.select_threshold)), source=DecisionSource.PLACEHOLDER)
    if _tied(inputs, clarify_gap):
        question = clarification_question(inputs.names[:2], inputs.summaries[:2], query=inputs.query)
        return DecisionOutcome(Decision.CLARIFY, question,
                               f"asks: {inputs.names[0]} and {inputs.names[1]} are within "
                               f"{100 * max(inputs.relative_gap, 0.0):.0f}% of each other (clarify_gap "
                               f"{clarify_gap:.2f})", scores, max(2, _selection(inputs, point.select_threshold)),
                               source=DecisionSource.TIE)
    selected = _selection(inputs, point.select_threshold) if scores is not None else 1
    return DecisionOutcome(Decision.EXECUTE, None,
                           f"calls {name}: {why}; the request is far closer to it than requests that need no "
                           f"tool are (z {z:.2f} >= {LONE_Z:.2f}){_reads_note(inputs)}", scores, selected,
                           source=DecisionSource.STANDOUT)


def _address(inputs: DecisionInputs, scores: DecisionScores | None, point: Any, words: str) -> DecisionOutcome:
    """Rule 3's exception: the request holds a web address and the top tool takes one. A language model cannot
    open the address, so the request needs a tool even though its words read like one that needs none: the
    top tool is called, or, when the second candidate takes an address too, the user is asked which."""
    a = inputs.names[0]
    why = f"the request holds a web address, which a language model cannot open ({words})"
    if len(inputs.address_takers) >= 2 and inputs.address_takers[1]:
        b = inputs.names[1]
        question = clarification_question(inputs.names[:2], inputs.summaries[:2], query=inputs.query)
        selected = max(2, _selection(inputs, point.select_threshold)) if scores is not None else 2
        return DecisionOutcome(Decision.CLARIFY, question, f"asks: {why}; {a} and {b} both take one", scores,
                               selected, source=DecisionSource.WEB_ADDRESS)
    return DecisionOutcome(Decision.EXECUTE, None, f"calls {a}: {why}, and {a} takes one", scores, 1,
                           source=DecisionSource.WEB_ADDRESS)


def _selection(inputs: DecisionInputs, threshold: float) -> int:
    """How many of the first candidates to inject: the top one, then each next one while P(also a right tool)
    reaches ``threshold`` and its description is not keyword stuffing."""
    count = 1
    for k, p in enumerate(inputs.select[: len(inputs.names) - 1], start=1):
        if p < threshold or (k < len(inputs.stuffed) and inputs.stuffed[k]):
            break
        count += 1
    return count


def _no_tool_reason(inputs: DecisionInputs, scores: DecisionScores, ref: dict[str, float]) -> str:
    parts = [f"no tool: P(no tool) {scores.no_tool:.2f}"]
    example = ref.get("example_cosine")
    if example is not None and inputs.top_cosine == inputs.top_cosine and inputs.top_cosine < example:
        parts.append(f"the best match ({inputs.names[0]}, cosine {inputs.top_cosine:.3f}) is below what this "
                     f"catalog's own example requests reach ({example:.3f})")
    chat = ref.get("chat_sim")
    if chat is not None and inputs.chat_sim == inputs.chat_sim and inputs.chat_sim >= chat:
        parts.append(f"the request reads like requests that need no tool (similarity {inputs.chat_sim:.3f})")
    if len(parts) == 1:
        parts.append(f"the best match {inputs.names[0]} does not stand out from the catalog")
    return "; ".join(parts)


def _clarify_reason(inputs: DecisionInputs, scores: DecisionScores, threshold: float) -> str:
    a, b = inputs.names[0], inputs.names[1]
    within = f"within {100 * max(inputs.relative_gap, 0.0):.0f}% of each other"
    return (f"asks: {a} and {b} are look-alikes ({inputs.lookalike:.2f}) and {within}; "
            f"P(ambiguous) {scores.ambiguous:.2f} >= {threshold:.2f}")


def named_tools(query: str, lookup: dict[str, int]) -> list[int]:
    """Rows of the tools whose exact name or id appears in ``query``, in order of appearance, distinct.

    ``lookup`` maps a lower-cased name or id to its row (see :func:`name_lookup`). A span counts when it is a
    whole identifier-like token of the request ("use get_weather_forecast for Paris"), compared without case.
    """
    if not lookup:
        return []
    rows: list[int] = []
    for match in _IDENT.finditer(query):
        row = lookup.get(match.group(0).lower())
        if row is not None and row not in rows:
            rows.append(row)
    return rows


def name_lookup(names_and_ids: Sequence[Sequence[str]]) -> dict[str, int]:
    """Lower-cased name, function name and id -> row, for names that look like identifiers (one tuple of
    names per row, e.g. ``(name, function_name, id)``).

    Only identifier-like names count (with ``_ . - / : @``, a digit or an inner capital, 4+ characters):
    a tool named "search" or "Now" must not be "named" by every request that uses the word. A name two tools
    share is dropped (it names neither).
    """
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


def clarification_question(names: Sequence[str], summaries: Sequence[str], *, query: str = "",
                           vague: str = "") -> str:
    """A question naming both look-alike tools, in Chinese when the query is Chinese; for a request with a
    placeholder (``vague``, e.g. "something") it asks what the request leaves unsaid and names the two tools."""
    a, b = (f"{n} ({_short(s)})" if s else n for n, s in zip(names, summaries, strict=True))
    if vague and has_cjk(query):
        return f"能具体说说您想做什么吗？最接近的工具是 {a} 和 {b}。"
    if vague:
        return f'Could you say more about what you need ("{vague}")? The closest tools are {a} and {b}.'
    if has_cjk(query):
        return f"您是想用 {a}，还是 {b}？"
    return f"Do you want {a} or {b}?"


def _short(text: str, limit: int = 60) -> str:
    first = re.split(r"(?<=[.。!！?？;；])\s*", text.strip(), maxsplit=1)[0]
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"
