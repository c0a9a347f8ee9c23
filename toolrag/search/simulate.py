"""Simulated requests that calibrate a catalog's decision model without anyone labelling anything.

When a catalog is indexed, the three cases the decision tells apart are simulated from the catalog itself and
from a bundled set of requests that need no tool, then scored exactly as a search scores a request (the same
signals, z-scores and late fusion: :func:`score_view`) and turned into :mod:`toolrag.search.features`:

* EXECUTE: each tool's example requests, left out of what their tool is matched on (otherwise the case is
  trivially easy: the example is part of the tool's document). The tool's vector becomes
  ``unit(d - beta * q)`` with ``beta = LOO_SCALE * tokens(example) / tokens(document)``, checked against
  re-encoding the document without the example (mean cosine within 0.01 for e5 and MiniLM on the bundled
  catalog); its BM25 text loses the example's line. Tools without examples (most public catalogs) get a
  pseudo-request from their description instead: one content word in :data:`KEEP_EVERY` of its first
  sentence, with a request context that carries names, places or numbers no tool text has ("for Priya Raman
  by 12 May", "订单号 4471"), so it shares some words with the tool, not all, like a real request.
* NO_TOOL: the same requests with their tool removed from the catalog (the nearest remaining tool is a poor
  fit), and the bundled requests that need no tool (``toolrag/data/no_tool_requests.yaml``: chit-chat,
  general knowledge, arithmetic, writing help, in English and Chinese).
* CLARIFY: requests between two look-alike tools (each tool and its nearest neighbour when that pair is among
  the catalog's closest): an example of one with the words that only its own profile has removed ("will it
  rain tomorrow in Berlin" between a current-weather and a forecast tool becomes "will it rain in Berlin"),
  kept only when the two look-alikes then rank first and second; and generic requests made of the rarest
  words two look-alikes share ("schedule something").
* Two-tool requests (EXECUTE, both tools right): examples of two unrelated tools joined ("... and ...");
  they teach the selection how many tools to inject.

Encoding is batched; the bundled requests' vectors are cached per model (:func:`chat_vectors`).
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import numpy as np

from toolrag.index.snapshot import IndexSnapshot
from toolrag.index.tokenize import EN_STOPWORDS, ZH_STOPWORDS, tokenize
from toolrag.search import adaptive, fusion
from toolrag.search.features import FEATURES, ResultView, SignalArrays, coverage, feature_vector, word_count
from toolrag.text import has_cjk, is_mostly_cjk
from toolrag.yamlio import read_yaml

__all__ = ["CHAT_FILE", "CLARIFY", "EXECUTE", "NO_TOOL", "Simulation", "chat_requests", "score_view", "simulate"]

log = logging.getLogger(__name__)

CHAT_FILE = Path(__file__).resolve().parent.parent / "data" / "no_tool_requests.yaml"
#: Class indices of the decision model.
EXECUTE, CLARIFY, NO_TOOL = 0, 1, 2
#: beta of the leave-one-out vector: LOO_SCALE x the example's share of the document's tokens.
LOO_SCALE = 1.5
MAX_EXAMPLES_PER_TOOL = 2
MAX_EXAMPLES = 400
MAX_DESCRIPTIONS = 300
MAX_VAGUE = 60  # edited examples; half as many generic ones
MAX_PAIRS = 90
#: Profile cosine from which two tools count as copies of one tool (published twice, e.g. by two servers).
DUPLICATE_COSINE = 0.99
#: Share of the catalog's nearest-neighbour pairs treated as look-alikes (the closest ones).
LOOKALIKE_SHARE = 0.25
#: Tools whose nearest neighbour is looked up for the look-alike cases (evenly spaced over larger catalogs:
#: the cases are capped at MAX_PAIRS / MAX_VAGUE anyway), and the rows compared at a time, so memory stays
#: bounded (a 100,000-tool catalog's full similarity matrix would need 37 GiB).
MAX_LOOKALIKE_TOOLS = 5000
_SIM_BLOCK = 1024
#: Request context of a pseudo-request: the names, places, dates and numbers real requests carry and tool
#: descriptions do not.
_CONTEXT_EN = ("for Priya Raman by 12 May", "in Hamburg next Tuesday", "order 4471 from Lakeside Ltd",
               "for the Orion project", "around Lyon this weekend", "for my sister Mia", "before 3pm on Friday",
               "for account 88-2190", "near Union Square", "for the Kowalski family", "about the 2019 Corolla",
               "for our Denver office")
_CONTEXT_ZH = ("给王磊，5月12日前", "在杭州西湖附近", "订单号 4471", "这周五下午三点", "给我妹妹小敏", "在成都的分公司",
               "关于那台 2019 款的车", "账户 88-2190")
#: A pseudo-request keeps one content word of the description in KEEP_EVERY.
KEEP_EVERY = 6
_WORD = re.compile(r"\S+")

Encoder = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class Simulation:
    """The simulated cases of one catalog: features, class, whether the top tool was right, what kind of
    case each row is, and the rows of the selection model (candidate features, is a right tool)."""

    features: np.ndarray
    label: np.ndarray
    right: np.ndarray
    kinds: tuple[str, ...]
    selection_x: np.ndarray
    selection_y: np.ndarray
    counts: Mapping[str, int] = field(default_factory=dict)
    selection_case: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """The case (row of ``features``) each selection row belongs to; rows of a case are in position order."""


@dataclass(frozen=True)
class _Request:
    text: str
    kind: str
    gold: tuple[int, ...] = ()
    loo: tuple[tuple[int, float], ...] = ()
    """(row, beta): the tool's vectors become unit(d - beta * q) for this request."""
    left_out: tuple[tuple[int, str], ...] = ()
    """(row, example): the example's words leave the tool's BM25 text for this request."""
    chat_self: int = -1
    """Index of this request in the bundled no-tool set (left out of its own similarity)."""
    parts: tuple[int, ...] = ()
    """A two-tool request: the indices of the two requests it joins (its vectors mix theirs)."""


def chat_requests(path: Path = CHAT_FILE) -> tuple[str, ...]:
    """The bundled requests that need no tool, in file order."""
    data = read_yaml(path.read_text(encoding="utf-8"))
    return tuple(str(r) for group in data for r in group["requests"])


def chat_key(texts: Sequence[str], fingerprint: str) -> str:
    """Cache key of the bundled requests' vectors under one model."""
    digest = hashlib.sha256("\n".join(texts).encode("utf-8"))
    digest.update(fingerprint.encode("utf-8"))
    return digest.hexdigest()[:24]


# --------------------------------------------------------------------------------------------- scoring
def score_view(
    raw: Mapping[str, np.ndarray],
    present: Mapping[str, np.ndarray],
    *,
    weights: Mapping[str, float],
    ids: Sequence[str],
    priority: np.ndarray,
    dense: np.ndarray,
    cjk: bool,
    words: int,
    chat_sim: float = math.nan,
    chat_sim_en: float = math.nan,
    head_k: int = 5,
) -> ResultView:
    """A search's view over the given tools from their raw scores: z-scores against these tools (a fixed
    sample of 1,024 when there are more, as the retriever does), late fusion with ``weights``, the order of
    :func:`toolrag.search.fusion.order` (priority, then id break ties). ``dense`` = the tools' multilingual
    profile vectors (for the look-alike cosine of the top two)."""
    n = len(ids)
    ref = adaptive.reference_rows(np.arange(n)) if n > adaptive.REFERENCE_SIZE else None
    signals: dict[str, SignalArrays] = {}
    for s, values in raw.items():
        mask = present[s]
        if ref is None:
            z = adaptive.standardize(values, mask)
        else:
            z = adaptive.standardize(values, mask, reference=values[ref], reference_present=mask[ref])
        signals[s] = SignalArrays(values, z, mask)
    active = {s: w for s, w in weights.items() if s in signals and w > 0}
    if active and n:
        fused, _ = fusion.late_fusion({s: signals[s].z for s in active}, {s: signals[s].present for s in active},
                                      active)
    else:
        fused = np.zeros(n)
    if n > 4 * head_k:
        kth = np.partition(fused, n - head_k)[n - head_k]
        keep = np.flatnonzero(fused >= kth)
        head = keep[fusion.order(fused[keep], [ids[int(i)] for i in keep], priority[keep])][:head_k]
    else:
        head = fusion.order(fused, list(ids), priority)[:head_k]
    look = float(dense[head[0]] @ dense[head[1]]) if len(head) > 1 else 0.0
    return ResultView(signals, fused, head, look, active, False, cjk, words, chat_sim, chat_sim_en)


def candidate_features(view: ResultView, position: int) -> np.ndarray:
    """Features of the candidate at ``position`` (1-based, >= 2) for the selection model: its fused score's
    distance below the top (z units), its fused score and its position (:data:`SELECTION_FEATURES`)."""
    fused = view.fused
    top, cand = view.head[0], view.head[position - 1]
    return np.array([float(fused[top] - fused[cand]), float(fused[cand]), float(position)], dtype=np.float64)


SELECTION_FEATURES = ("gap_to_top", "fused", "position")


# ------------------------------------------------------------------------------------------ simulation
def simulate(
    snap: IndexSnapshot,
    *,
    encoders: Mapping[str, Encoder],
    token_count: Callable[[str], int],
    weights: Mapping[str, float],
    chat: Sequence[str],
    chat_vectors: Mapping[str, np.ndarray],
) -> Simulation:
    """Simulate and score the cases of one catalog (see the module docstring).

    ``encoders`` maps a signal ("dense", "dense_en") to its query encoder (it may cache); ``token_count``
    counts a text's tokens (for the leave-one-out share); ``chat`` / ``chat_vectors`` are the bundled no-tool
    requests and their vectors per signal (rows of mostly-Chinese requests are NaN for ``dense_en``).
    """
    allowed = np.flatnonzero(~snap.deprecated)
    if len(allowed) < 2:
        raise ValueError("a decision model needs at least two tools that are not deprecated")
    requests = _requests(snap, allowed, token_count, chat)
    vectors = _vectors(snap, requests, encoders, chat_vectors, token_count)
    return _score(snap, allowed, requests, vectors, weights, chat_vectors)


def _vectors(snap: IndexSnapshot, requests: Sequence[_Request], encoders: Mapping[str, Encoder],
             chat_vectors: Mapping[str, np.ndarray], token_count: Callable[[str], int]) -> dict[str, np.ndarray]:
    """Query vectors of every request per signal, encoded in one batch per model. A two-tool request mixes
    the vectors of its parts, weighted by their tokens (what mean pooling of the joined text approximates);
    NaN rows: the English model does not read the request."""
    out: dict[str, np.ndarray] = {}
    for signal, encode in encoders.items():
        matrix = np.full((len(requests), snap.vectors[signal].shape[1]), np.nan, dtype=np.float32)
        todo = [i for i, r in enumerate(requests) if r.kind not in ("no_tool", "pair")
                and (signal != "dense_en" or not is_mostly_cjk(r.text))]
        if todo:
            matrix[todo] = encode([requests[i].text for i in todo])
        for i, r in enumerate(requests):
            if r.kind == "no_tool":
                matrix[i] = chat_vectors[signal][r.chat_self]
            elif r.kind == "pair":
                a, b = (requests[j] for j in r.parts)
                mixed = token_count(a.text) * matrix[r.parts[0]] + token_count(b.text) * matrix[r.parts[1]]
                norm = float(np.linalg.norm(mixed))
                if np.isfinite(norm) and norm > 0:
                    matrix[i] = mixed / norm
        out[signal] = matrix
    return out


def _requests(snap: IndexSnapshot, allowed: np.ndarray, token_count: Callable[[str], int],
              chat: Sequence[str]) -> list[_Request]:
    tools = snap.catalog.tools
    out: list[_Request] = []
    with_examples = [int(r) for r in allowed if any(e.query.strip() for e in tools[r].examples)]
    per_tool = max(1, min(MAX_EXAMPLES_PER_TOOL, MAX_EXAMPLES // max(len(with_examples), 1)))
    for row in _spread(with_examples, MAX_EXAMPLES // per_tool):
        tool = tools[row]
        doc_tokens = max(token_count(tool.document_text()), 1)
        for ex in [e for e in tool.examples if e.query.strip()][:per_tool]:
            beta = LOO_SCALE * token_count(ex.query) / doc_tokens
            out.append(_Request(ex.query.strip(), "example", (row,), ((row, min(beta, 0.5)),),
                                ((row, ex.query.strip()),)))
    taken = set(with_examples)
    bare = [int(r) for r in allowed if int(r) not in taken]
    for n, row in enumerate(_spread(bare, MAX_DESCRIPTIONS)):
        text = _pseudo_request(tools[row].description, n)
        if text:
            out.append(_Request(text, "description", (row,)))
    out.extend(_vague(snap, allowed, out))
    out.extend(_pairs(snap, out))
    out.extend(_Request(text, "no_tool", chat_self=i) for i, text in enumerate(chat))
    return out


def _spread(rows: Sequence[int], limit: int) -> list[int]:
    """At most ``limit`` of ``rows`` at evenly spaced positions (deterministic)."""
    if len(rows) <= limit:
        return list(rows)
    picks = np.round(np.linspace(0, len(rows) - 1, limit)).astype(int)
    return [rows[i] for i in picks]


def _content(token: str) -> bool:
    low = token.lower().strip(".,;:!?()[]{}\"'")
    return bool(low) and low not in EN_STOPWORDS and low not in ZH_STOPWORDS


def _pieces(text: str) -> list[str]:
    """Surface pieces of a text: words, and Chinese words from jieba's plain segmentation."""
    if not has_cjk(text):
        return _WORD.findall(text)
    from toolrag.index.tokenize import _jieba

    return [p for p in _jieba().lcut(text) if p.strip()]


def _join(pieces: Sequence[str], cjk: bool) -> str:
    return ("" if cjk else " ").join(pieces).strip()


def _pseudo_request(description: str, n: int) -> str:
    """One content word in :data:`KEEP_EVERY` of the description's first sentence (the first always), plus a
    request context with names, places or numbers no tool text has."""
    first = re.split(r"(?<=[.!?。！？])\s*", description.strip(), maxsplit=1)[0].rstrip(".!?。！？ ")
    cjk = has_cjk(first)
    pieces = _pieces(first)
    content = [i for i, p in enumerate(pieces) if _content(p)]
    if len(content) < 2:
        return ""
    dropped = {c for k, c in enumerate(content) if k % KEEP_EVERY}
    kept = [p for i, p in enumerate(pieces) if i not in dropped]
    context = _CONTEXT_ZH[n % len(_CONTEXT_ZH)] if cjk else _CONTEXT_EN[n % len(_CONTEXT_EN)]
    return _join(kept, cjk) + ("，" if cjk else ", ") + context


def _lookalikes(snap: IndexSnapshot, allowed: np.ndarray) -> list[tuple[int, int, float]]:
    """Each tool (at most MAX_LOOKALIKE_TOOLS, evenly spaced) with its nearest neighbour among all permitted
    tools (multilingual profile cosine), the closest LOOKALIKE_SHARE of these pairs, most similar first."""
    dense = snap.vectors["dense"][allowed]
    n = len(allowed)
    probe = np.arange(n) if n <= MAX_LOOKALIKE_TOOLS else np.linspace(0, n - 1, MAX_LOOKALIKE_TOOLS).astype(int)
    pairs: dict[tuple[int, int], float] = {}
    for start in range(0, len(probe), _SIM_BLOCK):
        rows = probe[start:start + _SIM_BLOCK]
        sims = dense[rows] @ dense.T
        sims[np.arange(len(rows)), rows] = -np.inf  # a tool is not its own neighbour
        nearest = sims.argmax(axis=1)
        for k, (i, j) in enumerate(zip(rows, nearest, strict=True)):
            a, b = sorted((int(allowed[i]), int(allowed[j])))
            pairs[(a, b)] = float(sims[k, j])
    ranked = sorted(((a, b, s) for (a, b), s in pairs.items()), key=lambda p: -p[2])
    return ranked[: max(3, math.ceil(LOOKALIKE_SHARE * len(ranked)))]


class _Lexicon:
    """BM25 facts of the snapshot for simulated requests: each tool's term counts (read from the index),
    document frequencies, and BM25 scores of a tool's text with an example's words left out."""

    def __init__(self, snap: IndexSnapshot) -> None:
        self.snap = snap
        self._counts: dict[int, Counter[str]] = {}
        self.df: Counter[str] = Counter()
        lengths = []
        for doc_id in snap.ids:
            tokens = snap.bm25.tokens(doc_id)
            self.df.update(set(tokens))
            lengths.append(len(tokens))
        self.n = len(snap.ids)
        self.avgdl = float(np.mean(lengths)) if lengths and sum(lengths) else 1.0
        self._example_terms: dict[str, Counter[str]] = {}

    def counts(self, row: int) -> Counter[str]:
        if row not in self._counts:
            self._counts[row] = Counter(self.snap.bm25.tokens(self.snap.ids[row]))
        return self._counts[row]

    def without(self, row: int, example: str) -> Counter[str]:
        """The tool's term counts without one example's words (its line in the tool's text)."""
        if example not in self._example_terms:
            self._example_terms[example] = Counter(tokenize(example))
        return self.counts(row) - self._example_terms[example]

    def score(self, terms: Sequence[str], counts: Counter[str]) -> float:
        """BM25 (Lucene idf, as :class:`toolrag.index.bm25.BM25Index`) of distinct ``terms`` in a text with
        these term counts; document frequencies and mean length are the catalog's."""
        k1, b = self.snap.bm25.k1, self.snap.bm25.b
        length = sum(counts.values())
        total = 0.0
        for term in dict.fromkeys(terms):
            tf = counts.get(term, 0)
            df = self.df.get(term, 0)
            if tf <= 0 or df <= 0:
                continue
            idf = math.log1p((self.n - df + 0.5) / (df + 0.5))
            total += idf * tf / (tf + k1 * (1.0 - b + b * length / self.avgdl))
        return total


def _vague(snap: IndexSnapshot, allowed: np.ndarray, base: Sequence[_Request]) -> list[_Request]:
    """Requests between look-alikes: a request of one with the words only its own profile has removed."""
    by_row: dict[int, list[_Request]] = {}
    for r in base:
        by_row.setdefault(r.gold[0], []).append(r)
    out: list[_Request] = []
    lexicon = _Lexicon(snap)
    for a, b, _ in _lookalikes(snap, allowed):
        for own, other in ((a, b), (b, a)):
            for req in by_row.get(own, [])[:2]:
                # the example's own words (names, numbers) are not what sets its tool apart: compare the
                # tool's text without the example
                example = dict(req.left_out).get(own)
                own_words = lexicon.without(own, example) if example is not None else lexicon.counts(own)
                other_words = lexicon.counts(other)
                cjk = has_cjk(req.text)
                pieces = _pieces(req.text)
                kept = [p for p in pieces if not any(own_words.get(t, 0) > 0 and t not in other_words
                                                     for t in tokenize(p))]
                if len(kept) == len(pieces) or not any(_content(p) for p in kept):
                    continue
                out.append(_Request(_join(kept, cjk), "vague", (own, other), req.loo, req.left_out))
    generic = [g for n, (a, b, _) in enumerate(_lookalikes(snap, allowed))
               if (g := _shared_request(snap, lexicon, a, b, n)) is not None]
    return _spread_requests(out, MAX_VAGUE) + _spread_requests(generic, MAX_VAGUE // 2)


_SHARED_EN = ("{a} something", "help me with the {a}", "I need {a} {b}", "can you do the {a} thing",
              "{a} {b} please", "something about {a}")
_SHARED_ZH = ("帮我{a}一下", "{a}的事帮我弄一下", "处理一下{a}", "{a}{b}")


def _shared_request(snap: IndexSnapshot, lexicon: _Lexicon, a: int, b: int, n: int) -> _Request | None:
    """A generic request made of the words two look-alikes share ("schedule something", "帮我翻译一下"): the
    two rarest content words of the catalog that both tools' names and descriptions use, in a template."""
    tools = snap.catalog.tools

    def words(row: int) -> set[str]:
        tool = tools[row]
        return set(tokenize(f"{tool.name} {tool.description}"))

    shared = [t for t in words(a) & words(b) if _content(t) and not t.isdigit() and len(t) > 1]
    if not shared:
        return None
    shared.sort(key=lambda t: (lexicon.df.get(t, 0), t))
    first, second = shared[0], shared[1] if len(shared) > 1 else ""
    cjk = is_mostly_cjk(tools[a].description) and is_mostly_cjk(tools[b].description)
    templates = [t for t in (_SHARED_ZH if cjk else _SHARED_EN) if second or "{b}" not in t]
    text = templates[n % len(templates)].format(a=first, b=second).strip()
    return _Request(text, "vague", (a, b))


def _pairs(snap: IndexSnapshot, base: Sequence[_Request]) -> list[_Request]:
    """Two-tool requests: requests of two tools that are not close neighbours, joined."""
    singles = [i for i, r in enumerate(base) if r.kind in ("example", "description")]
    if len(singles) < 4:
        return []
    dense = snap.vectors["dense"]
    limit = _median_nn(snap)
    out: list[_Request] = []
    half = len(singles) // 2
    step = max(1, half // MAX_PAIRS)
    for k in range(0, half, step):
        i, j = singles[k], singles[(k + half + 7) % len(singles)]
        a, b = base[i], base[j]
        ra, rb = a.gold[0], b.gold[0]
        if ra == rb or float(dense[ra] @ dense[rb]) >= limit:
            continue
        cjk = has_cjk(a.text) and has_cjk(b.text)
        text = f"{a.text}，然后{b.text}" if cjk else f"{a.text.rstrip('.?!')}, and {b.text}"
        out.append(_Request(text, "pair", (ra, rb), a.loo + b.loo, a.left_out + b.left_out, parts=(i, j)))
    return out[:MAX_PAIRS]


def _median_nn(snap: IndexSnapshot) -> float:
    dense = snap.vectors["dense"]
    if len(dense) < 2:
        return 1.0
    sample = dense[_spread(list(range(len(dense))), 2000)]
    sims = sample @ dense.T
    sims[sims > 0.9999] = -np.inf  # each tool itself
    return float(np.median(sims.max(axis=1)))


def _spread_requests(requests: Sequence[_Request], limit: int) -> list[_Request]:
    return [requests[i] for i in _spread(list(range(len(requests))), limit)]


def _score(snap: IndexSnapshot, allowed: np.ndarray, requests: Sequence[_Request], vectors: Mapping[str, np.ndarray],
           weights: Mapping[str, float], chat_vectors: Mapping[str, np.ndarray]) -> Simulation:
    ids = [snap.ids[r] for r in allowed]
    priority = snap.priority[allowed]
    dense_tools = snap.vectors["dense"][allowed]
    position = {int(r): i for i, r in enumerate(allowed)}
    mats = {signal: snap.vectors[signal][allowed] for signal in vectors}
    english = snap.english[allowed]
    everyone = np.ones(len(allowed), dtype=bool)
    lexicon = _Lexicon(snap)
    rows_x: list[np.ndarray] = []
    labels: list[int] = []
    right: list[bool] = []
    kinds: list[str] = []
    sel_x: list[np.ndarray] = []
    sel_y: list[int] = []
    sel_case: list[int] = []
    for i, req in enumerate(requests):
        raw: dict[str, np.ndarray] = {}
        present: dict[str, np.ndarray] = {}
        sims: dict[str, float] = {}
        for signal, q in vectors.items():
            if np.isnan(q[i, 0]):
                sims[signal] = math.nan
                continue
            scores = (mats[signal] @ q[i]).astype(np.float64)
            for row, beta in req.loo:
                if row in position:
                    c = scores[position[row]]
                    scores[position[row]] = (c - beta) / math.sqrt(max(1.0 - 2.0 * beta * c + beta * beta, 1e-9))
            raw[signal] = scores
            present[signal] = english if signal == "dense_en" else everyone
            chat_scores = chat_vectors[signal] @ q[i]
            if req.chat_self >= 0:
                chat_scores = chat_scores.copy()
                chat_scores[req.chat_self] = np.nan
            sims[signal] = float(np.nanmax(chat_scores)) if np.isfinite(chat_scores).any() else math.nan
        terms = snap.bm25.terms(req.text)
        kw = np.asarray(snap.bm25.scores(req.text), dtype=np.float64)[allowed]
        own: dict[int, Counter[str]] = {row: lexicon.without(row, example) for row, example in req.left_out}
        if own:
            kw = kw.copy()
            for row, counts in own.items():
                if row in position:
                    kw[position[row]] = lexicon.score(terms, counts)
        raw["bm25"], present["bm25"] = kw, everyone
        cjk, words = is_mostly_cjk(req.text), word_count(req.text)
        for kind, label, gold in _variants(req):
            keep = everyone.copy()
            # A copy of a right tool (the same tool published twice, e.g. by two servers of a gateway) is right
            # too, and goes with it when the request's tool is removed (else that case is a perfect match).
            copies = [j for row in req.gold for j in np.flatnonzero(
                dense_tools @ dense_tools[position[row]] >= DUPLICATE_COSINE).tolist()]
            gold = tuple(dict.fromkeys((*gold, *(int(allowed[j]) for j in copies)))) if gold else gold
            if kind == "removed":
                keep[copies] = False
            sub = np.flatnonzero(keep)
            view = score_view({s: v[sub] for s, v in raw.items()}, {s: v[sub] for s, v in present.items()},
                              weights=weights, ids=[ids[j] for j in sub], priority=priority[sub],
                              dense=dense_tools[sub], cjk=cjk, words=words, chat_sim=sims.get("dense", math.nan),
                              chat_sim_en=sims.get("dense_en", math.nan))
            top_rows = [int(allowed[sub[j]]) for j in view.head]
            if kind == "vague" and set(top_rows[:2]) != set(gold):
                continue
            docs = [set(+own[row]) if row in own else lexicon.counts(row).keys() for row in top_rows[:2]]
            cover, unknown = coverage(terms, partial(_known, lexicon, own), docs)
            padded = (*cover, math.nan, math.nan)
            rows_x.append(feature_vector(replace(view, cover=(padded[0], padded[1]), unknown=unknown)))
            labels.append(label)
            right.append(bool(top_rows) and top_rows[0] in gold)
            kinds.append(kind)
            if label == EXECUTE:
                for pos in range(2, len(top_rows) + 1):
                    sel_x.append(candidate_features(view, pos))
                    sel_y.append(int(top_rows[pos - 1] in gold))
                    sel_case.append(len(rows_x) - 1)
    return Simulation(np.array(rows_x).reshape(-1, len(FEATURES)), np.array(labels, dtype=np.int64),
                      np.array(right, dtype=bool), tuple(kinds),
                      np.array(sel_x).reshape(-1, len(SELECTION_FEATURES)), np.array(sel_y, dtype=np.int64),
                      dict(Counter(kinds)), np.array(sel_case, dtype=np.int64))


def _variants(req: _Request) -> list[tuple[str, int, tuple[int, ...]]]:
    """The cases one request gives: (kind, class, right tools)."""
    if req.kind in ("example", "description"):
        return [(req.kind, EXECUTE, req.gold), ("removed", NO_TOOL, ())]
    if req.kind == "pair":
        return [("pair", EXECUTE, req.gold)]
    if req.kind == "vague":
        return [("vague", CLARIFY, req.gold)]
    return [("no_tool", NO_TOOL, ())]


def _known(lexicon: _Lexicon, own: Mapping[int, Counter[str]], term: str) -> bool:
    """Whether some tool's text has ``term`` once the request's own example is left out of its tool."""
    count = lexicon.df.get(term, 0)
    for row, counts in own.items():
        count += (counts.get(term, 0) > 0) - (lexicon.counts(row).get(term, 0) > 0)
    return count > 0
