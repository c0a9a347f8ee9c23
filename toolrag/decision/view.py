"""The decision's view of one search: the numbers the decision model reads, built in one place.

Serving and training both call :func:`build_view`: the retriever after it ranked the tools a caller sees, and
``bench.decision_train`` through the very same search on its episodes, so the model is fitted on exactly what it
reads (tests/test_decision_parity.py checks a request searched both ways). Every figure is computed over the
caller's visible tools only (hidden tools change nothing) and is catalog-relative or size-free, so one model
reads a catalog of one tool and one of thousands:

- how far the top tool stands out from requests that need no tool, per text model (:class:`NullBank` z), its raw
  cosine, its z-score among the visible tools and its lead over the next one (absent with one tool);
- the same standing for the second tool, how alike the two are, how close the request comes to chit-chat;
- BM25: the top tool's z among the visible tools; how much of its name the request says;
- the request read against the top tool: a change asked of a tool that only reads, an action opposite to the
  tool's (log in / log out), a web address and a tool that takes one, required parameters left open, a
  placeholder ("schedule something");
- the catalog and the request: how many tools are visible, the request's language and whether the top tool is
  written in it, earlier turns, an image;
- with earlier turns (mixed into the request's vectors, so a follow-up such as "what about Friday?" finds the
  tool), how far the top tool stands out for the request's own text alone: a request that changed the subject
  ("who won the world cup?" after booking a room) does not inherit the earlier turn's tool (docs/decisions.md);
- the image: how far the text read in it (OCR) stands out for the top tool from requests that need no tool, the
  top tool's z among the visible tools and lead over the next by that text, how much text was read, and the top
  tool's z by the image's concepts, so a screenshot or a receipt with "handle this" (or nothing typed) is read
  by what it shows. The visual signal (example images) is ranked but not read here: no training catalog has
  example images to learn its standing from (docs/decisions.md).

Figures whose meaning depends on how a catalog is written (raw BM25 scores, the share of a request's words its
tools cover, how many parameters a schema lists, a request's length) were measured and left out: the catalogs an
agent sends are written otherwise than the training sets, and leave-one-source-out numbers were equal without
them (docs/decisions.md). The raw cosines are kept for the reason and the MiniLM baseline, not read by the model.

Pure numpy and word rules over the head of the ranking: well under a millisecond.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from toolrag.decision.actions import action_match, change_verb, reads_only, vague_word
from toolrag.decision.addresses import takes_web_address
from toolrag.decision.nulls import NullBank
from toolrag.decision.slots import open_parameters
from toolrag.index.snapshot import IndexSnapshot
from toolrag.language import UNDETERMINED, detect_language, english_model_reads
from toolrag.stats import standard_scores
from toolrag.text import has_web_address

__all__ = ["ENGLISH_ONLY", "FEATURES", "LOOKALIKE", "SELECTION_FEATURES", "DecisionView", "RequestFacts", "as_unread",
           "build_view"]

#: Two tools whose profiles (multilingual vectors) are at least this close are look-alikes: the catalog map's
#: pairs, and a question between the two rather than for the top tool's missing parameters (unrelated tools still
#: score 0.71-0.80).
LOOKALIKE = 0.91

_COSINE = ("sem", "en")
#: The features of a result, in the order of :attr:`DecisionView.features` (and of the model's inputs).
FEATURES: tuple[str, ...] = (
    *(f"{s}_{k}" for s in _COSINE for k in ("null", "top", "z", "gap", "null2", "chat")),
    "kw_z", "name_hit",
    "lookalike", "lookalike_en",
    "change", "reads", "change_reader", "action", "url", "takes_url", "vague", "open",
    "tools", "cjk", "lang_match", "history", "image", "text",
    "ocr_null", "ocr_z", "ocr_gap", "ocr_len", "concepts_z",
    "sem_own", "en_own",
)
#: What the English model reads of a request, and BM25 with it: absent for a request in a language it does not
#: read (:func:`toolrag.language.english_model_reads`). The training sets hold English and Chinese requests only,
#: so the model learned such requests from training episodes read this way (:func:`as_unread`).
ENGLISH_ONLY: tuple[str, ...] = ("en_null", "en_top", "en_z", "en_gap", "en_null2", "en_chat", "lookalike_en", "kw_z",
                                 "name_hit", "en_own")
_UNREAD = [FEATURES.index(f) for f in ENGLISH_ONLY]
#: The features of one lower candidate (position 2, 3, ...): is it also needed?
SELECTION_FEATURES: tuple[str, ...] = ("position", "sem_drop", "en_drop", "kw_drop", "sem_null", "novel", "alike")


class RequestFacts(Protocol):
    """What the view reads of an analysed request (:class:`toolrag.search.query.QueryFeatures`)."""

    @property
    def text(self) -> str: ...

    @property
    def history(self) -> tuple[str, ...]: ...

    @property
    def cjk(self) -> bool: ...

    @property
    def language(self) -> str: ...

    @property
    def vectors(self) -> dict[str, np.ndarray]: ...

    @property
    def image_given(self) -> bool: ...

    @property
    def lexical(self) -> str: ...

    @property
    def ocr_text(self) -> str: ...

    @property
    def own(self) -> dict[str, np.ndarray]: ...


@dataclass(frozen=True)
class DecisionView:
    """The features of one result (:data:`FEATURES`), one row of :data:`SELECTION_FEATURES` per lower candidate,
    and the facts the reason and the question quote."""

    features: np.ndarray
    candidates: np.ndarray
    change_verb: str = ""
    vague: str = ""
    open_parameters: tuple[str, ...] = ()

    def named(self) -> dict[str, float]:
        return dict(zip(FEATURES, (float(v) for v in self.features), strict=True))


def build_view(snap: IndexSnapshot, rows: np.ndarray, raw: Mapping[str, np.ndarray],
               present: Mapping[str, np.ndarray], mask: np.ndarray, head: Sequence[int], request: RequestFacts,
               query: str, bank: NullBank | None) -> DecisionView:
    """The view of a search whose scored ``rows`` (snapshot rows, sorted) have ``raw`` scores and ``present``
    masks per signal, over the caller's visible tools ``mask``; ``head`` = snapshot rows of the final candidates,
    best first (at least one); ``query`` = the request as typed (its web addresses as written); ``bank`` = the
    no-tool requests (``None``: their features NaN)."""
    f = dict.fromkeys(FEATURES, math.nan)
    pos = np.searchsorted(rows, np.asarray(head, dtype=np.int64))
    tools = [snap.catalog.tools[int(r)] for r in head]
    top = tools[0]
    sem = next((s for s in ("dense", "ocr", "concepts") if s in raw and present[s][pos[0]]), None)
    for name, signal, space in (("sem", sem, "dense"), ("en", "dense_en", "dense_en")):
        if signal is None or signal not in raw or signal not in request.vectors:
            continue
        values, here, vector = raw[signal], present[signal], request.vectors[signal]
        if here[pos[0]]:
            f[f"{name}_top"] = float(values[pos[0]])
            f[f"{name}_z"], f[f"{name}_gap"] = _standing(values, here, int(pos[0]))
        if bank is not None:
            f[f"{name}_chat"] = bank.closest(space, vector, language=request.language)
            for slot, at in ((f"{name}_null", 0), (f"{name}_null2", 1)):
                if at < len(pos) and here[pos[at]]:
                    f[slot] = bank.z(space, snap.vectors[space][head[at]], vector, language=request.language)
            if request.history and here[pos[0]]:
                alone = request.own.get(signal, vector)  # the turns were not mixed in: its own vector
                f[f"{name}_own"] = bank.z(space, snap.vectors[space][head[0]], alone, language=request.language)
    if "bm25" in raw:
        kw = np.log1p(np.maximum(raw["bm25"].astype(np.float64), 0.0))
        f["kw_z"] = _standing(kw, present["bm25"], int(pos[0]))[0]
    visible = None if mask.all() else mask
    terms = list(dict.fromkeys(snap.bm25.terms(request.lexical))) if request.lexical else []
    known = [t for t in terms if snap.bm25.has_term(t, visible)]
    docs = [snap.bm25.term_set(t.id) for t in tools]
    novel = _novel(known, docs)
    name_words = {w for w in snap.bm25.terms(f"{top.id} {top.name}") if w}
    f["name_hit"] = len(name_words & set(terms)) / len(name_words) if name_words else math.nan
    dense = snap.vectors["dense"]
    if len(head) > 1:
        f["lookalike"] = float(dense[head[0]] @ dense[head[1]])
        if "dense_en" in snap.vectors and snap.english[head[0]] and snap.english[head[1]]:
            f["lookalike_en"] = float(snap.vectors["dense_en"][head[0]] @ snap.vectors["dense_en"][head[1]])
    verb = change_verb(request.text) or ""
    f["change"], f["reads"] = float(bool(verb)), float(reads_only(top))
    f["change_reader"] = f["change"] * f["reads"]
    f["action"] = float(action_match(request.text, top))
    f["url"], f["takes_url"] = float(has_web_address(query)), float(takes_web_address(top.parameters))
    vague = vague_word(request.text) or ""
    f["vague"] = float(bool(vague))
    open_names, required = open_parameters(top.parameters, query, image=request.image_given, read=request.ocr_text)
    f["open"] = len(open_names) / required if required else math.nan
    read_in_english = english_model_reads(request.language)
    if not read_in_english:
        open_names = ()  # its values are read by English and Chinese words: the reason claims nothing missing
    n = int(np.count_nonzero(mask))
    f["tools"] = math.log(max(n, 1))
    f["cjk"] = float(request.cjk)
    f["lang_match"] = float(_reads_language(snap, head[0], request.language))
    f["history"], f["image"], f["text"] = float(bool(request.history)), float(request.image_given), float(bool(
        request.text))
    _image_standing(f, snap, raw, present, int(pos[0]), head[0], request, bank)
    features = np.array([f[k] for k in FEATURES], dtype=np.float64)
    if not read_in_english:
        features = as_unread(features)
    return DecisionView(features,
                        _selection(snap, raw, present, pos, head, request, bank, novel, sem),
                        verb if f["change_reader"] else "", vague, open_names)


def as_unread(features: np.ndarray) -> np.ndarray:
    """``features`` (one row or several) as the model reads a request the English model does not read: the
    :data:`ENGLISH_ONLY` features absent, not Chinese, the top tool not in its language. The decision's training
    reads a share of its English and Chinese episodes this way (bench/decision_fit.py), and a search reads every
    such request this way, so both see the same features: BM25 still scores a German request (names, numbers,
    loan words) and the tool name's words it says, but a model that never saw those beside an absent English model
    read them as a sign that nothing serves (issue 44: 0-25% of the multilingual rows' tools reached the agent)."""
    out = np.array(features, dtype=np.float64, copy=True)
    out[..., _UNREAD] = np.nan
    out[..., FEATURES.index("cjk")] = 0.0
    out[..., FEATURES.index("lang_match")] = 0.0
    return out


def _image_standing(f: dict[str, float], snap: IndexSnapshot, raw: Mapping[str, np.ndarray],
                    present: Mapping[str, np.ndarray], at: int, top: int, request: RequestFacts,
                    bank: NullBank | None) -> None:
    """The image's features of ``f`` (NaN when the request has no image, or the image gave no such signal): the
    text read in it against the no-tool requests (in the language it is written in) and among the visible
    tools, how much of it there is, and the concepts' standing."""
    text = request.ocr_text
    if text:
        f["ocr_len"] = math.log1p(len(text))
        if "ocr" in request.vectors and bank is not None:
            f["ocr_null"] = bank.z("dense", snap.vectors["dense"][top], request.vectors["ocr"],
                                   language=detect_language(text))
    elif request.image_given:
        f["ocr_len"] = 0.0
    for signal in ("ocr", "concepts"):
        if signal in raw and present[signal][at]:
            z, lead = _standing(raw[signal], present[signal], at)
            f[f"{signal}_z"] = z
            if signal == "ocr":
                f["ocr_gap"] = lead


def _standing(values: np.ndarray, here: np.ndarray, at: int) -> tuple[float, float]:
    """(z of ``values[at]`` among the present values, its lead over the best other present value); z is NaN
    with fewer than three present values or no spread, the lead NaN when no other value is present."""
    present = values[here].astype(np.float64)
    z = math.nan
    if len(present) >= 3:
        scores = standard_scores(np.array([values[at]]), present)
        z = math.nan if scores is None else float(scores[0])
    others = here.copy()
    others[at] = False
    lead = float(values[at]) - float(values[others].max()) if others.any() else math.nan
    return z, lead


def _novel(known: Sequence[str], docs: Sequence[frozenset[str]]) -> list[float]:
    """Per candidate, the share of the request's known words it has and no candidate above it has."""
    if not known:
        return [0.0] * len(docs)
    seen: set[str] = set()
    out = []
    for doc in docs:
        fresh = [t for t in known if t in doc and t not in seen]
        out.append(len(fresh) / len(known))
        seen.update(fresh)
    return out


def _selection(snap: IndexSnapshot, raw: Mapping[str, np.ndarray], present: Mapping[str, np.ndarray],
               pos: np.ndarray, head: Sequence[int], request: RequestFacts, bank: NullBank | None,
               novel: Sequence[float], sem: str | None) -> np.ndarray:
    """One :data:`SELECTION_FEATURES` row per candidate after the first."""
    out = np.full((max(len(head) - 1, 0), len(SELECTION_FEATURES)), np.nan)
    kw = np.log1p(np.maximum(raw["bm25"].astype(np.float64), 0.0)) if "bm25" in raw else None
    dense = snap.vectors["dense"]
    for j in range(1, len(head)):
        row = out[j - 1]
        row[0] = j + 1
        for k, signal in ((1, sem), (2, "dense_en")):
            if signal is not None and signal in raw and present[signal][pos[0]] and present[signal][pos[j]]:
                row[k] = float(raw[signal][pos[0]] - raw[signal][pos[j]])
        if kw is not None:
            row[3] = float(kw[pos[0]] - kw[pos[j]])
        if bank is not None and sem is not None and sem in request.vectors and present[sem][pos[j]]:
            row[4] = bank.z("dense", dense[head[j]], request.vectors[sem], language=request.language)
        row[5] = novel[j] if j < len(novel) else 0.0
        row[6] = float(dense[head[0]] @ dense[head[j]])
    return out


def _reads_language(snap: IndexSnapshot, row: int, language: str) -> bool:
    """Whether the tool at ``row`` is written in the request's ``language`` (:func:`toolrag.language.detect_language`):
    some Chinese in its text for a Chinese request, read by the English model for an English one (or one without
    letters): not mostly Chinese, or a Chinese description with enough English words of its own (name, tags,
    examples: :func:`toolrag.text.english_segments`), so a bilingual tool reads both; its text detected as the
    request's language for any other. A property of the tool, not of the catalog: a catalog of English
    descriptions with Chinese tags serves English requests as well as any."""
    if language in ("en", UNDETERMINED):
        return bool(snap.english[row])
    if language == "zh":
        return snap.catalog.chinese_tools[row]
    return detect_language(snap.catalog.tools[row].document_text()) == language
