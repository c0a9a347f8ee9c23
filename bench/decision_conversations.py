"""Decision episodes of conversations: a served request as the earlier turn, then one more request.

A search mixes the earlier turns into the request's vectors (``Settings.history_weight``), so a follow-up ("what
about Friday?") finds the earlier turn's tool; and so does a request that changed the subject ("who won the world
cup?" after booking a room). The decision reads the request's own standing beside the mixed one (``sem_own``,
``en_own``: :mod:`toolrag.decision.view`), and learns to tell the two apart from these episodes, built around
each drawn labelled request of a training folder, its gold tools visible:

- ``moved_on``: then a request of another group in its language -> NO_TOOL;
- ``moved_gold``: then another request of the folder, its own gold tools visible too -> EXECUTE that one;
- ``follow``: then what another request of the same tools says beyond the earlier one, as a short follow-up
  ("what about Paris on Friday?", "那明天呢？": :func:`follow_up`) -> EXECUTE the earlier turn's tools;
- ``follow_sibling``: the same without the gold tools -> NO_TOOL (a quarter of the weight, as a sibling).

The training sets' own follow-ups (ACEBench's dialogues) are mostly whole requests; a follow-up that names only
the new values is what a user types after an answer or a question, so it is drawn here. Never from an evaluation
set: Glaive's conversations (a group never fitted on) judge the result (docs/decisions.md).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.decision_episodes import (
    Episode,
    Space,
    _catalog,
    _draw_foreign,
    _foreign_pool,
    _norm,
    read_pairs,
)
from bench.train_data import FOLDERS
from toolrag.text import has_cjk

__all__ = ["CONVERSATION_KINDS", "FOLLOW_SHARE", "MOVED_SHARE", "build_conversations", "follow_up"]

#: The share of labelled requests that also give a conversation that moved on, and one that is followed up.
MOVED_SHARE = 0.25
FOLLOW_SHARE = 0.25
#: The kinds of episode built here (fitted by the heads read for a request with earlier turns alone).
CONVERSATION_KINDS = frozenset({"moved_on", "moved_gold", "follow", "follow_sibling"})
_EN_FORMS = ("what about {}?", "and {}?", "same for {}", "make it {} instead", "{}", "now {}", "how about {}?")
_ZH_FORMS = ("那{}呢？", "换成{}", "{}也要", "还有{}", "{}")
_ZH_FILLER = re.compile("帮我|帮忙|麻烦|给我|请|查一下|看一下|一下|我想|我要|可以|能不能|吗|呢|的|了")
_WORD = re.compile(r"[A-Za-z0-9][\w'./:@-]*")
_STOP = frozenset({
    "a", "an", "the", "to", "of", "for", "in", "on", "at", "by", "with", "and", "or", "is", "are", "be", "me", "my",
    "i", "you", "your", "it", "this", "that", "please", "can", "could", "would", "will", "do", "does", "what",
    "how", "which", "who", "get", "find", "show", "give", "tell", "want", "need",
})


def follow_up(request: str, earlier: str, lang: str, rng: random.Random) -> str:
    """What ``request`` says beyond ``earlier`` (both requests of the same tools) as a short follow-up: its words
    the earlier one lacks (English: at most 6, no function words; Chinese: its runs of characters the earlier one
    lacks, at most 3), in a drawn form; ``""`` when it says nothing more."""
    if lang == "zh":
        text = _ZH_FILLER.sub(" ", request)
        seen = {earlier[i:i + 2] for i in range(len(earlier) - 1)}
        keep = [True] * len(text)
        for i in range(len(text) - 1):
            if text[i:i + 2] in seen:
                keep[i] = keep[i + 1] = False
        runs = [r for r in re.findall(r"[^\s，,。？?！!、]+", "".join(c if k else " " for c, k in zip(text, keep,
                                                                                               strict=True)))
                if len(r) >= 2 or not has_cjk(r)][:3]
        return rng.choice(_ZH_FORMS).format("，".join(runs)) if runs else ""
    seen = {w.lower() for w in _WORD.findall(earlier)}
    words = [w for w in _WORD.findall(request) if w.lower() not in seen and w.lower() not in _STOP][:6]
    return rng.choice(_EN_FORMS).format(" ".join(words)) if words else ""


def build_conversations(root: Path, spaces: Mapping[str, Space], decisions: Mapping[str, list[dict[str, Any]]], *,
                        sources: Sequence[str], seed: int, limit: int | None = None) -> list[Episode]:
    """The conversation episodes (the module's docstring) of ``sources``' labelled requests (``limit``: at most
    that many per folder, as :func:`bench.decision_episodes.build_episodes`); never a request a decision set asks
    about as the later one."""
    rng = random.Random(seed)
    clarify = {_norm(e["request"]) for eps in decisions.values() for e in eps if e["expect"] == "CLARIFY"}
    pairs = read_pairs(root, limit)
    episodes = []
    for folder in (f for f in FOLDERS if f in sources):
        space, pool = spaces[folder], _foreign_pool(pairs, folder)
        position = {tool_id: i for i, tool_id in enumerate(space.ids)}
        rows = [(p, tuple(g for g in p["gold"] if g in position)) for p in pairs[folder]]
        rows = [(p, g) for p, g in rows if g]
        same: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for pair, gold in rows:
            same.setdefault(tuple(sorted(gold)), []).append(pair)
        for pair, gold in rows:
            lang, earlier = pair.get("lang", "en"), (pair["query"],)
            if rng.random() < MOVED_SHARE:
                if rng.random() < 0.5:
                    other = _draw_foreign(rng, pool, folder, lang)
                    episodes.append(Episode(folder, "moved_on", other["query"], earlier,
                                            _catalog(rng, gold, space, position), (), "NO_TOOL",
                                            other.get("lang", "en")))
                else:
                    later, later_gold = rng.choice(rows)
                    if not set(later_gold) & set(gold) and _norm(later["query"]) not in clarify:
                        episodes.append(Episode(folder, "moved_gold", later["query"], earlier,
                                                _catalog(rng, (*gold, *later_gold), space, position), later_gold,
                                                "EXECUTE", later.get("lang", "en")))
            if rng.random() < FOLLOW_SHARE:
                others = [p for p in same[tuple(sorted(gold))] if _norm(p["query"]) != _norm(pair["query"])
                          and p.get("lang", "en") == lang]
                text = follow_up(rng.choice(others)["query"], pair["query"], lang, rng) if others else ""
                if text:
                    tools = _catalog(rng, gold, space, position)
                    episodes.append(Episode(folder, "follow", text, earlier, tools, gold, "EXECUTE", lang))
                    shown = tuple(t for t in tools if t not in gold)
                    if shown:
                        episodes.append(Episode(folder, "follow_sibling", text, earlier, shown, gold, "NO_TOOL",
                                                lang))
    return episodes

