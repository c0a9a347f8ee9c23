"""Features of a whole search result for the decision model (:mod:`toolrag.search.decision_model`).

The decision (call the top tool, ask, answer without a tool) cannot come from one score: a raw cosine says
little on its own (e5 puts unrelated pairs at 0.71-0.80), and a fused score is normalised per request. The
features below describe how the result *looks*: how far the best tool stands out from the catalog under each
signal (z-scores against the permitted catalog, the same ones the fusion uses), how far it is ahead of the
second, whether the signals agree, whether the first two are look-alikes, and a few facts about the request.
They are computed the same way for a real search (:func:`result_view` from the retriever's arrays) and for the
simulated requests the model is fitted on (:mod:`toolrag.search.simulate`), so the model sees one distribution.

Pure numpy, no models: a few vector maxima over the permitted tools, well under a millisecond.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "FEATURES",
    "LOOKALIKE",
    "SELECTION_FEATURES",
    "ResultView",
    "SignalArrays",
    "candidate_row",
    "coverage",
    "feature_vector",
    "meaningful_chars",
    "novel_cover",
    "second_best",
    "word_count",
]

#: The features, in the order of :func:`feature_vector` (and of the model's coefficients).
FEATURES: tuple[str, ...] = (
    "sem_top_raw",   # multilingual cosine of the top tool (text; else the text read in the image; else concepts)
    "sem_max_z",     # best z-score of the multilingual signal over the permitted catalog
    "sem_gap_z",     # its lead over the second-best tool (z units)
    "en_top_raw",    # English-model cosine of its best tool (missing for a Chinese request)
    "en_max_z",      # best z-score and lead of the English model (missing when it cannot read the request)
    "en_gap_z",
    "kw_top_log",    # log(1 + BM25 score of the top tool)
    "kw_max_z",      # best BM25 z-score and its lead
    "kw_gap_z",
    "fused_top",     # fused score of the top tool and its lead over the second and third (z units)
    "fused_gap",
    "fused_gap3",
    "agree",         # share of the fused signals whose own best tool is the top tool
    "lookalike",     # cosine of the top two tools' profiles (multilingual space)
    "cover",         # share of the request's catalog words (distinct BM25 terms) found in the top tool's text
    "cover2",        # the same for the second tool
    "unknown",       # share of the request's words that no tool of the catalog uses
    "change_reader",  # 1 when the request asks for a change and the top tool only reads (search.actions)
    "chat_sim",      # how close the request comes to requests that need no tool (multilingual cosine)
    "chat_sim_en",   # the same with the English model (missing for a Chinese request)
    "image",         # an image came with the request
    "image_top",     # best image evidence of the top tool: visual similarity or OCR z-score (0 without image)
    "cjk",           # the request is mostly Chinese
    "length",        # log(1 + words of the request), CJK characters counted as words
)

#: The selection model's features of one lower candidate (:func:`candidate_row`).
SELECTION_FEATURES: tuple[str, ...] = (
    "gap_to_top",  # the top tool's fused score minus this candidate's (z units)
    "fused",       # this candidate's fused score
    "position",    # 2, 3, ...
    "novel",       # share of the request's catalog words this candidate has and no candidate above it has
)

#: Two tools whose profiles (multilingual vectors) are at least this close are look-alikes: the catalog map's
#: pairs and the tie rule of :func:`toolrag.search.decide.decide` (unrelated tools still score 0.71-0.80).
LOOKALIKE = 0.91
#: A lone permitted tool is called only when the request stands out this far (z units) from the bundled
#: requests that need no tool, read with the English model when it reads the request and the tool (its cosines
#: spread; the multilingual model's are compressed into a narrow band), else the multilingual one: with one tool
#: there is nothing to standardise against, so the decision model cannot read the result (:func:`lone_tool_z`;
#: measured with ``python -m bench.lone_tool``, docs/decisions.md).
LONE_Z = 2.0
#: Up to this many permitted tools the same test of the top tool decides (EXECUTE or NO_TOOL) instead of the
#: decision model: z-scores over a handful of tools say little, and a model fitted on a catalog this small has
#: a handful of simulated cases (``python -m bench.small_catalogs``, docs/decisions.md).
FEW_TOOLS = 5
#: A mostly-Chinese request to a catalog where fewer than this share of the tools have any Chinese text is also
#: decided by that test: the catalog's simulated requests hold no Chinese request that needs a tool (its Chinese
#: cases are all bundled no-tool requests), so the model refuses Chinese requests wholesale, while the test
#: compares with no-tool requests in the request's own language.
CROSS_LINGUAL_SHARE = 0.1

#: z-scores are clipped here: a BM25 match on one rare word can reach z = 30 on a large catalog, and an
#: unclipped extreme would dominate a linear model.
Z_CLIP = 12.0
_SEM = ("dense", "ocr", "concepts")


@dataclass(frozen=True)
class SignalArrays:
    """One signal over the scored tools: raw scores, z-scores (0 where absent) and the presence mask."""

    raw: np.ndarray
    z: np.ndarray
    present: np.ndarray


@dataclass(frozen=True)
class ResultView:
    """What the decision reads from one search: per-signal arrays over the same scored tools, the fused
    scores, the positions of the best tools (best first, at least one), and facts about the request."""

    signals: Mapping[str, SignalArrays]
    fused: np.ndarray
    head: np.ndarray
    """Positions (into the arrays) of the top tools in ranking order; at most three are read."""
    lookalike: float = 0.0
    """Cosine of the top two tools' multilingual profile vectors (0.0 with fewer than two tools)."""
    weights: Mapping[str, float] = field(default_factory=dict)
    """Weights of the fused signals (signals with weight 0 do not vote in ``agree``)."""
    image: bool = False
    cjk: bool = False
    words: int = 0
    chat_sim: float = math.nan
    """Best cosine of the request to the bundled requests that need no tool (multilingual model)."""
    chat_sim_en: float = math.nan
    """The same with the English model (NaN when it did not read the request)."""
    cover: tuple[float, float] = (math.nan, math.nan)
    """:func:`coverage` of the request's words by the top two tools' BM25 texts."""
    unknown: float = math.nan
    """Share of the request's words (BM25 terms) in no tool's text."""
    change_reader: bool = False
    """The request asks for a change and the top tool only reads (:mod:`toolrag.search.actions`)."""



def meaningful_chars(text: str) -> int:
    """How many letters, digits and ideographs ``text`` holds (Unicode categories L* and N*).

    Emoji (So), punctuation, spaces, control (Cc), format (Cf: zero-width joiners and spaces) and NUL
    characters do not count: a request made only of them means nothing a tool could act on.
    """
    return sum(1 for ch in text if unicodedata.category(ch)[0] in "LN")


def word_count(text: str) -> int:
    """Words of ``text``: runs of letters/digits, each CJK ideograph counting as one word."""
    count, in_word = 0, False
    for ch in text:
        cat = unicodedata.category(ch)
        if cat == "Lo" and unicodedata.east_asian_width(ch) == "W":
            count += 1
            in_word = False
        elif cat[0] in "LN":
            if not in_word:
                count += 1
            in_word = True
        else:
            in_word = False
    return count


def coverage(terms: Sequence[str], known: Callable[[str], bool], docs: Sequence[Collection[str]]
             ) -> tuple[tuple[float, ...], float]:
    """How much of a request the catalog's words cover.

    ``terms`` = the request's BM25 terms (:func:`toolrag.index.tokenize.tokenize`), ``known(t)`` = some tool's
    text has ``t``, ``docs`` = the term sets of the tools to check. Returns (per doc: distinct known terms of
    the request found in it / distinct known terms, NaN when none is known), and the share of distinct terms
    that no tool knows (NaN for a request without terms). Example: terms {approve, payroll, march}, known
    {approve, payroll}, doc {payroll, payslip} -> cover 1/2, unknown 1/3.
    """
    distinct = list(dict.fromkeys(terms))
    if not distinct:
        return tuple(math.nan for _ in docs), math.nan
    inside = [t for t in distinct if known(t)]
    unknown = 1.0 - len(inside) / len(distinct)
    if not inside:
        return tuple(math.nan for _ in docs), unknown
    return tuple(sum(1 for t in inside if t in doc) / len(inside) for doc in docs), unknown


def novel_cover(terms: Sequence[str], known: Callable[[str], bool], docs: Sequence[Collection[str]]
                ) -> list[float]:
    """Per doc, the share of the request's distinct known terms that it has and no doc before it has.

    The first doc's value is its plain coverage; a lower candidate of a two-tool request ("book a flight and
    a hotel") brings words the tools above it lack ("hotel"), a look-alike of a one-tool request brings none.
    0.0 for every doc when the request has no known term. Example: known terms {book, flight, hotel}, docs
    [{book, flight}, {flight, fare}, {hotel, book}] -> [2/3, 0/3, 1/3].
    """
    inside = [t for t in dict.fromkeys(terms) if known(t)]
    if not inside:
        return [0.0 for _ in docs]
    seen: set[str] = set()
    out = []
    for doc in docs:
        fresh = [t for t in inside if t in doc and t not in seen]
        out.append(len(fresh) / len(inside))
        seen.update(fresh)
    return out


def candidate_row(fused: np.ndarray, head: Sequence[int] | np.ndarray, position: int, novel: Sequence[float]
                  ) -> np.ndarray:
    """The :data:`SELECTION_FEATURES` of the candidate at ``position`` (1-based, >= 2); ``head`` = positions
    of the candidates in ``fused``, best first; ``novel`` = :func:`novel_cover` of the candidates in order."""
    top, cand = head[0], head[position - 1]
    fresh = novel[position - 1] if position - 1 < len(novel) else 0.0
    return np.array([float(fused[top] - fused[cand]), float(fused[cand]), float(position), float(fresh)])


def lone_tool_z(tool: Mapping[str, np.ndarray], request: Mapping[str, np.ndarray],
                chat: Mapping[str, np.ndarray]) -> float:
    """How far a request stands out, for one tool, from requests that need no tool, read with the first text
    signal of ``tool`` (signal -> the tool's vector, in order of preference) that ``request`` (its vectors) and
    ``chat`` (the bundled no-tool requests' vectors in the request's language) also have and whose no-tool
    cosines spread: z = (cos(request, tool) - mean) / std of the no-tool requests' cosines to the tool (NaN
    rows skipped; population std). NaN when no signal can be read. Example: cosines 0.1, 0.2, 0.3 of the no-tool
    requests (mean 0.2, std 0.0816) and 0.4 of the request: z = 0.2 / 0.0816 = 2.45."""
    for signal, vector in tool.items():
        if signal not in request or signal not in chat:
            continue
        null = chat[signal] @ vector
        null = null[np.isfinite(null)].astype(np.float64)
        spread = float(null.std()) if len(null) > 1 else 0.0
        if spread > 0.0:
            return (float(request[signal] @ vector) - float(null.mean())) / spread
    return math.nan


def second_best(values: np.ndarray) -> tuple[float, float]:
    """The largest and second-largest value of ``values`` (second = first for one value; both -inf when
    empty). O(n): one partition, no sort."""
    n = values.shape[0]
    if n == 0:
        return -math.inf, -math.inf
    if n == 1:
        v = float(values[0])
        return v, v
    part = np.partition(values, n - 2)[n - 2:]
    return float(part[1]), float(part[0])


def _signal_stats(sig: SignalArrays | None, top: int) -> tuple[float, float, float, bool] | None:
    """(raw of the top tool, max z, lead of the best over the second-best in z, top tool is the signal's
    best), or None when the signal is absent for every tool or does not tell tools apart."""
    if sig is None or not sig.present.any():
        return None
    z = sig.z if sig.present.all() else sig.z[sig.present]
    first, second = second_best(z)
    if first == second == 0.0 and not np.any(z):
        return None  # no spread: standardisation gave every tool 0
    raw_top = float(sig.raw[top]) if sig.present[top] else math.nan
    best = bool(sig.present[top] and sig.z[top] >= first)
    return raw_top, first, first - second, best


def feature_vector(view: ResultView) -> np.ndarray:
    """The :data:`FEATURES` of one result as a float64 vector; NaN marks a missing value.

    Missing: the English model's values when it did not read the request (a Chinese request, no English
    model); the model replaces NaN with the training mean, i.e. "as usual". BM25's values are 0 when no
    request word is in the catalog (z = 0 means "like the average tool"). Without any tool every feature is
    0 except the request facts. Finite values are clipped to +-:data:`Z_CLIP`.
    """
    f = dict.fromkeys(FEATURES, 0.0)
    f["en_top_raw"] = f["en_max_z"] = f["en_gap_z"] = math.nan
    f["chat_sim"], f["chat_sim_en"] = view.chat_sim, view.chat_sim_en
    f["cover"], f["cover2"] = view.cover
    f["unknown"] = view.unknown
    f["change_reader"] = float(view.change_reader)
    f["image"] = float(view.image)
    f["cjk"] = float(view.cjk)
    f["length"] = math.log1p(max(view.words, 0))
    if len(view.head) == 0:
        return _clipped(f)
    top = int(view.head[0])
    memo: dict[str, tuple[float, float, float, bool] | None] = {}

    def stats(name: str) -> tuple[float, float, float, bool] | None:
        # each signal's statistics once: the agreement vote reads them again (a pass over every scored tool)
        if name not in memo:
            memo[name] = _signal_stats(view.signals.get(name), top)
        return memo[name]

    sem = None
    for name in _SEM:
        sem = stats(name)
        if sem is not None:
            break
    if sem is not None:
        raw_top, max_z, gap, _ = sem
        f["sem_top_raw"] = raw_top if math.isfinite(raw_top) else 0.0
        f["sem_max_z"], f["sem_gap_z"] = max_z, gap
    en_sig = view.signals.get("dense_en")
    en = stats("dense_en")
    if en is not None and en_sig is not None:
        f["en_top_raw"] = float(np.max(en_sig.raw[en_sig.present]))
        f["en_max_z"], f["en_gap_z"] = en[1], en[2]
    kw = stats("bm25")
    if kw is not None:
        raw_top = kw[0] if math.isfinite(kw[0]) else 0.0
        f["kw_top_log"] = math.log1p(max(raw_top, 0.0))
        f["kw_max_z"], f["kw_gap_z"] = kw[1], kw[2]
    fused = view.fused[view.head[:3]].astype(np.float64)
    f["fused_top"] = float(fused[0])
    f["fused_gap"] = float(fused[0] - fused[1]) if len(fused) > 1 else Z_CLIP
    f["fused_gap3"] = float(fused[0] - fused[2]) if len(fused) > 2 else f["fused_gap"]
    voters = [s for s, w in view.weights.items() if w > 0 and s in view.signals]
    if voters:
        votes = [st[3] for s in voters if (st := stats(s)) is not None]
        f["agree"] = sum(votes) / len(voters)
    f["lookalike"] = float(view.lookalike) if len(view.head) > 1 else 0.0
    if view.image:
        evidence = []
        visual = view.signals.get("visual")
        if visual is not None and visual.present[top]:
            evidence.append(float(visual.raw[top]))
        ocr = view.signals.get("ocr")
        if ocr is not None and ocr.present[top]:
            evidence.append(float(np.tanh(ocr.z[top] / 4.0)))
        f["image_top"] = max(evidence) if evidence else 0.0
    return _clipped(f)


def _clipped(f: Mapping[str, float]) -> np.ndarray:
    out = np.array([f[name] for name in FEATURES], dtype=np.float64)
    finite = np.isfinite(out)
    out[finite] = np.clip(out[finite], -Z_CLIP, Z_CLIP)
    out[~finite] = math.nan
    return out
