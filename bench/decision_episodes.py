"""Decision episodes from many catalogs: a request, the tools a caller sees, and what an agent should do.

The decision model (``toolrag/decision/``) is trained on these by ``python -m bench.decision_train`` and
validated leave-one-source-out. An episode is searched through the real retriever over its source's whole
catalog with the episode's tools as the caller's visible tools (``Caller.tools``): what a caller cannot see is
absent from every figure, so this is the search of a catalog holding those tools alone
(tests/test_decision_parity.py checks it).

From each request -> tool folder of ``../shared/training`` (read its README: provenance, licences,
decontamination), around each labelled request:

- ``gold``: its gold tools among distractors of its own folder, a drawn share of them (none, a quarter, half,
  three quarters or all) its nearest siblings (the most alike tools by the multilingual model), the rest drawn at
  random -> EXECUTE;
- ``sibling``: the same tools without the gold ones -> NO_TOOL (the hard case: "log out" where only "log in" is
  left). A tool that duplicates a gold one (MiniLM cosine of their texts >= 0.85, or the multilingual model's >=
  0.96 for a tool MiniLM cannot read) is never a distractor: it would likely serve the request too (Gorilla's
  model variants, API-Bank's repeated APIs), so "no tool fits" would be a wrong label;
- ``foreign``: a request of another source to a catalog of this folder -> NO_TOOL;
- ``cross``: a HammerBench request to its tools in the other language (the same ids: a Chinese request to the
  English tools, an English one to the Chinese tools) -> as ``gold``/``sibling``;
- earlier turns: ACEBench's follow-up requests carry their dialogue's user turns; a share of the others get an
  unrelated earlier request of their folder as a turn (the decision is the current request's);
- conversations (``bench.decision_conversations``): a served request as the earlier turn, then a request that
  moved on or one that continues it.

Catalog sizes are weighted toward what agents send: 70% 1-10 tools, 20% 11-40, 10% 41-300 (capped by the
folder). From ``decisions/`` (real requests with their own function lists): ACEBench special (irrelevant ->
NO_TOOL, incomplete -> CLARIFY) and BFCL non-live (irrelevance -> NO_TOOL, single calls -> EXECUTE); each set's
functions are pooled into one catalog (``decisions_<set>``) and each episode sees its own list. ACEBench's
incomplete requests also appear in its pairs as plain request -> tool rows: those rows are left out of the
``gold`` episodes (they need a question first).

Sources are grouped by origin for leave-one-source-out (:data:`GROUPS`): HammerBench's English and Chinese
folders share requests and tools, ACEBench's four sets share a repository, Gorilla's two share one.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.train_data import FOLDERS, training_dir

__all__ = ["CROSS_SIDES", "DECISION_SETS", "FOREIGN_SHARE", "GROUPS", "OTHER_SIDE", "SHIFT_GROUPS", "Episode", "Space",
           "build_cross", "build_episodes", "build_foreign", "pool_decision_sets", "read_pairs", "size_draw"]

#: The decision sets of ``../shared/training/decisions``.
DECISION_SETS = ("acebench_special_en", "acebench_special_zh", "bfcl_nonlive", "glaive_toolcall_en",
                 "glaive_toolcall_zh")
#: Source (a training folder or a pooled decision set) -> its group for leave-one-source-out.
GROUPS: Mapping[str, str] = {
    "gorilla_torchhub": "gorilla", "gorilla_apizoo": "gorilla", "apibank_lv3": "apibank",
    "hammerbench_en": "hammerbench", "hammerbench_zh": "hammerbench", "acebench_en": "acebench",
    "acebench_zh": "acebench", "callnavi": "callnavi", "toolalpaca_eval": "toolalpaca",
    "decisions_acebench_special_en": "acebench", "decisions_acebench_special_zh": "acebench",
    "decisions_bfcl_nonlive": "bfcl", "tau_bench": "tau_bench", "restbench": "restbench",
    "glaive_toolcall_en": "glaive", "glaive_toolcall_zh": "glaive", "decisions_glaive_toolcall_en": "glaive",
    "decisions_glaive_toolcall_zh": "glaive",
}
#: Groups never fitted on by the shipped model (the training sets' README lists them as added later): the model
#: fitted on every other group is scored on them as catalogs it never saw (``bench.decision_train``;
#: ``--fit-shift`` fits on them too, for a trial). tau-bench's long second-person task instructions, RestBench's
#: REST endpoints, Glaive's one-line functions (English and Chinese) with its own first turns to ask or decline.
SHIFT_GROUPS = frozenset({"tau_bench", "restbench", "glaive"})
EPISODES_VERSION = "4"
#: The share of labelled requests that also give a ``foreign`` episode (another group's request, NO_TOOL).
FOREIGN_SHARE = 0.34
#: The folders whose tools have a version in the other language under the same ids, and that version.
OTHER_SIDE: Mapping[str, str] = {"hammerbench_zh": "hammerbench_en", "hammerbench_en": "hammerbench_zh"}
#: The sources whose tools exist in both languages, for the trial episodes of :func:`build_cross`: HammerBench (the
#: same tool ids) and Glaive (the same function names, described in English in one folder, in Chinese in the other).
CROSS_SIDES: Mapping[str, Mapping[str, str]] = {
    "hammerbench": OTHER_SIDE,
    "glaive": {"glaive_toolcall_zh": "glaive_toolcall_en", "glaive_toolcall_en": "glaive_toolcall_zh"}}
#: The shares of a catalog's distractors that are the gold tool's nearest siblings (one drawn per catalog).
NEAR_SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)
#: A tool at least this close to a gold tool (MiniLM; the multilingual model for a tool MiniLM cannot read) is its
#: duplicate, never a distractor.
DUPLICATE_EN, DUPLICATE = 0.85, 0.96
_UNSAFE = re.compile(r"\s+")


@dataclass(frozen=True)
class Episode:
    """One decision to make: ``query`` (and earlier ``history`` turns) searched in ``source``'s catalog by a
    caller that sees ``visible`` only; ``expect`` and ``gold`` say what is right."""

    source: str
    kind: str
    query: str
    history: tuple[str, ...]
    visible: tuple[str, ...]
    gold: tuple[str, ...]
    expect: str
    lang: str
    image: Any = None
    """How to draw the request's image (a :class:`bench.decision_images.Picture`; ``None``: no image)."""

    @property
    def group(self) -> str:
        return GROUPS[self.source]


def size_draw(rng: random.Random, cap: int) -> int:
    """A catalog size: 70% from 1-10, 20% from 11-40, 10% from 41-300, at most ``cap``."""
    roll = rng.random()
    n = rng.randint(1, 10) if roll < 0.7 else rng.randint(11, 40) if roll < 0.9 else round(
        float(np.exp(rng.uniform(np.log(41), np.log(300)))))
    return max(1, min(n, cap))


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def read_pairs(root: Path, limit: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """Each training folder's labelled requests (``pairs.jsonl``), with ``limit``: at most that many per folder,
    evenly spaced (a quick run)."""
    pairs = {f: list(_read_jsonl(root / f / "pairs.jsonl")) for f in FOLDERS}
    if limit:
        pairs = {f: rows[:: max(1, len(rows) // limit)][:limit] for f, rows in pairs.items()}
    return pairs


def _norm(text: str) -> str:
    return _UNSAFE.sub(" ", text).strip().casefold()


def pool_decision_sets(root: Path, source: Path | None = None) -> dict[str, list[dict[str, Any]]]:
    """Each decision set's function lists pooled into one catalog under ``root/decisions_<set>/catalog``
    (a function listed by several episodes once, an id per distinct function); returns each set's episodes
    with ``visible`` = the ids of its own list."""
    folder = training_dir(source) / "decisions"
    out: dict[str, list[dict[str, Any]]] = {}
    for name in DECISION_SETS:
        rows = list(_read_jsonl(folder / name / "episodes.jsonl"))
        ids: dict[str, str] = {}
        tools: list[dict[str, Any]] = []
        taken: dict[str, int] = {}
        episodes = []
        for row in rows:
            visible = []
            for fn in row["tools"]:
                key = json.dumps(fn, sort_keys=True, ensure_ascii=False)
                if key not in ids:
                    base = str(fn.get("name") or "tool")
                    taken[base] = taken.get(base, 0) + 1
                    ids[key] = base if taken[base] == 1 else f"{base}~{taken[base]}"
                    tools.append({"type": "function", "function": {**fn, "name": ids[key]}})
                visible.append(ids[key])
            names = {str(fn.get("name")): ids[json.dumps(fn, sort_keys=True, ensure_ascii=False)] for fn in row["tools"]}
            episodes.append({**row, "visible": visible, "gold": [names[g] for g in row.get("gold", []) if g in names]})
        target = root / f"decisions_{name}" / "catalog"
        target.mkdir(parents=True, exist_ok=True)
        stamp = hashlib.sha256(json.dumps(tools, sort_keys=True).encode()).hexdigest()
        file = target / "tools.json"
        if not file.is_file() or hashlib.sha256(
                json.dumps(json.loads(file.read_text("utf-8")), sort_keys=True).encode()).hexdigest() != stamp:
            file.write_text(json.dumps(tools, ensure_ascii=False), "utf-8")
        out[f"decisions_{name}"] = episodes
    return out


def _history(row: Mapping[str, Any]) -> tuple[str, ...]:
    """The user turns of an ACEBench dialogue (``context``: lines "user: ..." and "system: ...")."""
    context = row.get("context") or ""
    return tuple(line.split(":", 1)[1].strip() for line in str(context).splitlines()
                 if line.startswith("user:") and line.split(":", 1)[1].strip())[-3:]


@dataclass(frozen=True)
class Space:
    """One source catalog's tools: ids (catalog order), multilingual vectors, MiniLM vectors and which tools
    MiniLM reads (English)."""

    ids: Sequence[str]
    dense: np.ndarray
    english_vectors: np.ndarray | None
    english: np.ndarray

    def alike(self, rows: Sequence[int]) -> np.ndarray:
        """Per tool, its best cosine to any of ``rows`` (multilingual model), and whether it duplicates one."""
        sims = np.max(self.dense[list(rows)] @ self.dense.T, axis=0)
        dup = sims >= DUPLICATE
        if self.english_vectors is not None:
            en = np.max(self.english_vectors[list(rows)] @ self.english_vectors.T, axis=0)
            readable = self.english & bool(np.all(self.english[list(rows)]))
            dup = np.where(readable, en >= DUPLICATE_EN, dup)
        return np.where(dup, -np.inf, sims)


def build_episodes(root: Path, spaces: Mapping[str, Space],
                   decisions: Mapping[str, list[dict[str, Any]]], *, seed: int = 7, training: Path | None = None,
                   limit: int | None = None, sources: Sequence[str] | None = None) -> list[Episode]:
    """The episodes of every source, or of ``sources`` only (their foreign requests still drawn from every
    folder; ``spaces`` then needs those sources only); ``limit``: at most that many requests per folder, evenly
    spaced, for a quick run. ``root``: the converted training folders (``bench.train_data``); ``training``: the
    sets' own folder (ACEBench's dialogues); ``spaces``: each source catalog's tools and vectors, for the nearest
    siblings and the duplicates; ``decisions``: :func:`pool_decision_sets`' episodes."""
    rng = random.Random(seed)
    wanted = set(sources) if sources is not None else set(FOLDERS) | set(decisions)
    clarify = {_norm(e["request"]) for eps in decisions.values() for e in eps if e["expect"] == "CLARIFY"}
    pairs = read_pairs(root, limit)
    raw = {f: {_norm(r["query"]): r for r in _read_jsonl(training_dir(training) / f / "pairs.jsonl")} for f in FOLDERS}
    episodes: list[Episode] = []
    for folder in (f for f in FOLDERS if f in wanted):
        foreign_pool = _foreign_pool(pairs, folder)
        space = spaces[folder]
        position = {tool_id: i for i, tool_id in enumerate(space.ids)}
        for pair in pairs[folder]:
            if _norm(pair["query"]) in clarify:
                continue
            gold = tuple(g for g in pair["gold"] if g in position)
            if not gold:
                continue
            history = _history(raw[folder].get(_norm(pair["query"]), {}))
            if not history and rng.random() < 0.12:
                other = rng.choice(pairs[folder])["query"]
                history = (other,) if _norm(other) != _norm(pair["query"]) else ()
            lang = pair.get("lang", "en")
            tools = _catalog(rng, gold, space, position)
            episodes.append(Episode(folder, "gold", pair["query"], history, tools, gold, "EXECUTE", lang))
            siblings = tuple(t for t in tools if t not in gold) or _nearest(gold, space, position, 1, rng)
            episodes.append(Episode(folder, "sibling", pair["query"], history, siblings, gold, "NO_TOOL", lang))
            if rng.random() < FOREIGN_SHARE:
                other = _draw_foreign(rng, foreign_pool, folder)
                episodes.append(Episode(folder, "foreign", other["query"], (), tools, (), "NO_TOOL",
                                        other.get("lang", "en")))
            other_side = OTHER_SIDE.get(folder)
            if other_side is not None and rng.random() < 0.34:
                other = spaces[other_side]
                at = {t: i for i, t in enumerate(other.ids)}
                if all(g in at for g in gold):
                    cross = _catalog(rng, gold, other, at)
                    kind = "cross" if rng.random() < 0.5 else "cross_sibling"
                    shown = cross if kind == "cross" else tuple(t for t in cross if t not in gold) or _nearest(
                        gold, other, at, 1, rng)
                    episodes.append(Episode(other_side, kind, pair["query"], history, shown, gold,
                                            "EXECUTE" if kind == "cross" else "NO_TOOL", lang))
    for source, rows in ((s, r) for s, r in decisions.items() if s in wanted):
        for row in rows[:: max(1, len(rows) // limit)] if limit else rows:
            episodes.append(Episode(source, row["expect"].lower(), row["request"], (), tuple(row["visible"]),
                                    tuple(row["gold"]), row["expect"], row.get("lang", "en")))
    return episodes


def build_foreign(root: Path, spaces: Mapping[str, Space], *, sources: Sequence[str], seed: int,
                  same_language: bool, limit: int | None = None) -> list[Episode]:
    """``foreign`` episodes alone, drawn afresh (``bench.decision_train --foreign``): for a share
    (:data:`FOREIGN_SHARE`) of the labelled requests of ``sources``, a request of another group to a catalog drawn
    around the labelled one as its ``gold`` episode's is. ``same_language``: that request in the labelled
    request's own language (where another group has one). As built by :func:`build_episodes`, a foreign request
    is in the other language than its catalog for about a third of the English catalogs and three quarters of
    the Chinese ones, while a served request nearly never is; so "the request is not in its top tool's language"
    came to mean "nothing serves" (docs/decision_trials.md)."""
    rng = random.Random(seed)
    pairs = read_pairs(root, limit)
    episodes = []
    for folder in (f for f in FOLDERS if f in sources):
        space, pool = spaces[folder], _foreign_pool(pairs, folder)
        position = {tool_id: i for i, tool_id in enumerate(space.ids)}
        for pair in pairs[folder]:
            gold = tuple(g for g in pair["gold"] if g in position)
            if not gold or rng.random() >= FOREIGN_SHARE:
                continue
            tools = _catalog(rng, gold, space, position)
            lang = pair.get("lang", "en") if same_language else None
            other = _draw_foreign(rng, pool, folder, lang)
            episodes.append(Episode(folder, "foreign", other["query"], (), tools, (), "NO_TOOL",
                                    other.get("lang", "en")))
    return episodes


def build_cross(root: Path, spaces: Mapping[str, Space], *, seed: int, limit: int | None = None,
                sides: Mapping[str, str] = OTHER_SIDE) -> list[Episode]:
    """``cross`` and ``cross_sibling`` episodes alone, one of each for every labelled request of a folder whose
    tools exist in the other language (``sides``: folder -> the other language's folder, :data:`CROSS_SIDES`),
    drawn afresh (``bench.decision_train --cross-extra``):
    the request to a catalog of the other language's tools with its gold tools (EXECUTE) and without them
    (NO_TOOL), so a request in the other language than its catalog is served as often as not."""
    rng = random.Random(seed)
    episodes = []
    for folder, other_side in sides.items():
        rows = list(_read_jsonl(root / folder / "pairs.jsonl"))
        if limit:
            rows = rows[:: max(1, len(rows) // limit)][:limit]
        other = spaces[other_side]
        at = {t: i for i, t in enumerate(other.ids)}
        for pair in rows:
            gold = tuple(g for g in pair["gold"] if g in at)
            if not gold or len(gold) < len(pair["gold"]):
                continue
            lang = pair.get("lang", "en")
            cross = _catalog(rng, gold, other, at)
            episodes.append(Episode(other_side, "cross", pair["query"], (), cross, gold, "EXECUTE", lang))
            shown = tuple(t for t in cross if t not in gold) or _nearest(gold, other, at, 1, rng)
            episodes.append(Episode(other_side, "cross_sibling", pair["query"], (), shown, gold, "NO_TOOL", lang))
    return episodes


def _foreign_pool(pairs: Mapping[str, list[dict[str, Any]]], folder: str) -> list[tuple[str, dict[str, Any]]]:
    """The requests a ``foreign`` episode of ``folder`` may draw: those of every other group, but never one of a
    group the shipped model is not fitted on (:data:`SHIFT_GROUPS`) for a folder it is fitted on."""
    fitted = GROUPS[folder] not in SHIFT_GROUPS
    return [(f, p) for f in FOLDERS for p in pairs[f] if not (fitted and GROUPS[f] in SHIFT_GROUPS)]


def _draw_foreign(rng: random.Random, pool: Sequence[tuple[str, dict[str, Any]]], folder: str,
                  lang: str | None = None) -> dict[str, Any]:
    """A request of another group than ``folder``'s from ``pool`` (``lang``: in that language, where there is
    one)."""
    if lang is not None:
        pool = [(f, p) for f, p in pool if p.get("lang", "en") == lang and GROUPS[f] != GROUPS[folder]] or pool
    other_folder, other = rng.choice(pool)
    while GROUPS[other_folder] == GROUPS[folder]:
        other_folder, other = rng.choice(pool)
    return other


def _catalog(rng: random.Random, gold: Sequence[str], space: Space, position: Mapping[str, int]) -> tuple[str, ...]:
    """Gold tools plus distractors: a drawn size, a drawn share of nearest siblings (:data:`NEAR_SHARES`), the rest
    random, never a duplicate of a gold tool; in catalog order."""
    n = size_draw(rng, len(space.ids))
    extra = max(0, n - len(gold))
    near = _nearest(gold, space, position, round(extra * rng.choice(NEAR_SHARES)), rng)
    chosen = set(gold) | set(near)
    allowed = np.flatnonzero(np.isfinite(space.alike([position[g] for g in gold])))
    allowed = [int(i) for i in allowed if space.ids[int(i)] not in chosen]
    rng.shuffle(allowed)
    chosen.update(space.ids[i] for i in allowed[: max(0, len(gold) + extra - len(chosen))])
    return tuple(sorted(chosen, key=position.__getitem__))


def _nearest(gold: Sequence[str], space: Space, position: Mapping[str, int], k: int,
             rng: random.Random) -> tuple[str, ...]:
    """``k`` tools among the 3k most alike to the gold tools (best cosine to any of them), drawn at random; never a
    gold tool or a duplicate of one."""
    if k <= 0:
        return ()
    rows = [position[g] for g in gold]
    sims = space.alike(rows)
    sims[rows] = -np.inf
    order = [int(i) for i in np.argsort(-sims)[: 3 * k] if np.isfinite(sims[i])]
    return tuple(space.ids[i] for i in rng.sample(order, min(k, len(order))))
