"""Simulated requests that calibrate a catalog's decision model without anyone labelling anything.

When a catalog is indexed, the three cases the decision tells apart are simulated from the catalog itself and
from a bundled set of requests that need no tool, then scored exactly as a search scores a request (the same
signals, z-scores and late fusion: :func:`score_view`) and turned into :mod:`toolrag.search.features`:

* EXECUTE: each tool's example requests, left out of what their tool is matched on (otherwise the case is
  trivially easy: the example is part of the tool's document). The tool's vector becomes
  ``unit(d - beta * q)`` with ``beta = sim_requests.LOO_SCALE * tokens(example) / tokens(document)``, checked against
  re-encoding the document without the example (mean cosine within 0.01 for e5 and MiniLM on the bundled
  catalog); its BM25 text loses the example's line. Tools without examples (most public catalogs) get a
  pseudo-request from their description instead (:mod:`toolrag.search.sim_requests`): one content word in
  ``KEEP_EVERY`` of its first sentence, with a request context that carries names, places or numbers no
  tool text has ("for Priya Raman by 12 May", "订单号 4471"), so it shares some
  words with the tool, not all, like a real request.
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
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import numpy as np

from toolrag.encode.spread import spread
from toolrag.index.snapshot import IndexSnapshot
from toolrag.search import adaptive, fusion
from toolrag.search.actions import change_verb, reads_only
from toolrag.search.features import (
    FEATURES,
    SELECTION_FEATURES,
    ResultView,
    SignalArrays,
    candidate_row,
    coverage,
    feature_vector,
    novel_cover,
    word_count,
)
from toolrag.search.gloss import english_reading, lexical_reading
from toolrag.search.sim_requests import Lexicon, Request, build_requests
from toolrag.text import is_mostly_cjk
from toolrag.yamlio import read_yaml

__all__ = ["CHAT_FILE", "CLARIFY", "EXECUTE", "NO_TOOL", "Simulation", "chat_requests", "score_view", "side_by_side",
           "simulate"]

log = logging.getLogger(__name__)

CHAT_FILE = Path(__file__).resolve().parent.parent / "data" / "no_tool_requests.yaml"
#: Class indices of the decision model.
EXECUTE, CLARIFY, NO_TOOL = 0, 1, 2
#: Profile cosine from which two tools count as copies of one tool (published twice, e.g. by two servers).
DUPLICATE_COSINE = 0.99

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
    keep: np.ndarray | None = None,
) -> ResultView:
    """A search's view over the given tools from their raw scores: z-scores against these tools (a fixed
    sample of 1,024 when there are more, as the retriever does), late fusion with ``weights``, the order of
    :func:`toolrag.search.fusion.order` (priority, then id break ties). ``dense`` = the tools' multilingual
    profile vectors (for the look-alike cosine of the top two).

    ``keep``: positions of the tools that take part (e.g. all but a removed tool); every array and ``ids`` still
    cover all tools and are read through it, and the view's arrays and ``head`` are over the kept tools. Only
    the scores are copied (a 100,000-tool catalog's profile vectors are not)."""
    if keep is not None:
        raw = {s: v[keep] for s, v in raw.items()}
        present = {s: v[keep] for s, v in present.items()}
        priority = priority[keep]
    where = keep if keep is not None else np.arange(len(ids))
    n = len(where)
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
        top = np.flatnonzero(fused >= kth)
        head = top[fusion.order(fused[top], [ids[int(where[i])] for i in top], priority[top])][:head_k]
    else:
        head = fusion.order(fused, [ids[int(i)] for i in where], priority)[:head_k]
    look = float(dense[where[head[0]]] @ dense[where[head[1]]]) if len(head) > 1 else 0.0
    return ResultView(signals, fused, head, look, active, False, cjk, words, chat_sim, chat_sim_en)


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
    requests = build_requests(snap, allowed, token_count, chat)
    vectors = _vectors(snap, requests, encoders, chat_vectors, token_count)
    return _score(snap, allowed, requests, vectors, weights, chat_vectors)


def _vectors(snap: IndexSnapshot, requests: Sequence[Request], encoders: Mapping[str, Encoder],
             chat_vectors: Mapping[str, np.ndarray], token_count: Callable[[str], int]) -> dict[str, np.ndarray]:
    """Query vectors of every request per signal, encoded in one batch per model, the models side by side (the
    second in a worker thread: ONNX Runtime releases the GIL, and one request at a time keeps neither model's
    threads busy). A two-tool request mixes the vectors of its parts, weighted by their tokens (what mean
    pooling of the joined text approximates); NaN rows: the English model does not read the request."""
    read = {signal: [r.text if signal != "dense_en" else english_reading(r.text) for r in requests]
            for signal in encoders}  # the English model reads a Chinese request's gloss, as in a search
    todo = {signal: [i for i, r in enumerate(requests) if r.kind not in ("no_tool", "pair") and read[signal][i]]
            for signal in encoders}
    jobs = [(encoders[signal], [read[signal][i] for i in rows]) for signal, rows in todo.items() if rows]
    vectors = iter(side_by_side(jobs))
    out: dict[str, np.ndarray] = {}
    for signal in encoders:
        matrix = np.full((len(requests), snap.vectors[signal].shape[1]), np.nan, dtype=np.float32)
        if todo[signal]:
            matrix[todo[signal]] = next(vectors)
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


def side_by_side(jobs: Sequence[tuple[Encoder, Sequence[str]]]) -> list[np.ndarray]:
    """Each job's vectors (one encoder and its texts per job), the jobs run in the shared encoding queue of two
    worker threads (:func:`toolrag.encode.spread.spread`), which runs them in this thread when the pool refuses
    work: a refit after an edit runs on while the interpreter exits (the process waits for it,
    :meth:`toolrag.search.calibration.DecisionCalibrator.refit_soon`), and by then ``concurrent.futures``
    refuses new threads."""
    return spread([(len(texts), [(range(len(texts)), partial(encode, texts))]) for encode, texts in jobs])


def _score(snap: IndexSnapshot, allowed: np.ndarray, requests: Sequence[Request], vectors: Mapping[str, np.ndarray],
           weights: Mapping[str, float], chat_vectors: Mapping[str, np.ndarray]) -> Simulation:
    ids = [snap.ids[r] for r in allowed]
    priority = snap.priority[allowed]
    dense_tools = snap.vectors["dense"][allowed]
    position = {int(r): i for i, r in enumerate(allowed)}
    mats = {signal: snap.vectors[signal][allowed] for signal in vectors}
    english = snap.english[allowed]
    everyone = np.ones(len(allowed), dtype=bool)
    lexicon = Lexicon(snap)
    copy_cache: dict[int, list[int]] = {}
    reader_cache: dict[int, bool] = {}

    def reads(row: int) -> bool:
        if row not in reader_cache:
            tool = snap.catalog.get(snap.ids[row])
            reader_cache[row] = tool is not None and reads_only(tool)
        return reader_cache[row]

    def copies_of(pos: int) -> list[int]:
        """Positions of the tools whose profile is (nearly) the same as the tool's at ``pos``, itself included."""
        if pos not in copy_cache:
            copy_cache[pos] = np.flatnonzero(dense_tools @ dense_tools[pos] >= DUPLICATE_COSINE).tolist()
        return copy_cache[pos]

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
        lexical = lexical_reading(req.text)
        terms = snap.bm25.terms(lexical)
        kw = np.asarray(snap.bm25.scores(lexical), dtype=np.float64)[allowed]
        own: dict[int, Counter[str]] = {row: lexicon.without(row, example) for row, example in req.left_out}
        if own:
            kw = kw.copy()
            for row, counts in own.items():
                if row in position:
                    kw[position[row]] = lexicon.score(terms, counts)
        raw["bm25"], present["bm25"] = kw, everyone
        cjk, words = is_mostly_cjk(req.text), word_count(req.text)
        changes = change_verb(req.text) is not None
        for kind, label, gold in _variants(req):
            # A copy of a right tool (the same tool published twice, e.g. by two servers of a gateway) is right
            # too, and goes with it when the request's tool is removed (else that case is a perfect match).
            copies = [j for row in req.gold for j in copies_of(position[row])]
            gold = tuple(dict.fromkeys((*gold, *(int(allowed[j]) for j in copies)))) if gold else gold
            sub = None
            if kind == "removed":
                keep = everyone.copy()
                keep[copies] = False
                sub = np.flatnonzero(keep)
            view = score_view(raw, present, weights=weights, ids=ids, priority=priority, dense=dense_tools,
                              cjk=cjk, words=words, chat_sim=sims.get("dense", math.nan),
                              chat_sim_en=sims.get("dense_en", math.nan), keep=sub)
            top_rows = [int(allowed[j if sub is None else sub[j]]) for j in view.head]
            if kind == "vague" and set(top_rows[:2]) != set(gold):
                continue
            docs = [set(+own[row]) if row in own else lexicon.counts(row).keys() for row in top_rows]
            known = partial(_known, lexicon, own)
            cover, unknown = coverage(terms, known, docs[:2])
            padded = (*cover, math.nan, math.nan)
            rows_x.append(feature_vector(replace(view, cover=(padded[0], padded[1]), unknown=unknown,
                                                 change_reader=changes and bool(top_rows) and reads(top_rows[0]))))
            labels.append(label)
            right.append(bool(top_rows) and top_rows[0] in gold)
            kinds.append(kind)
            if label == EXECUTE:
                novel = novel_cover(terms, known, docs)
                for pos in range(2, len(top_rows) + 1):
                    sel_x.append(candidate_row(view.fused, view.head, pos, novel))
                    sel_y.append(int(top_rows[pos - 1] in gold))
                    sel_case.append(len(rows_x) - 1)
    return Simulation(np.array(rows_x).reshape(-1, len(FEATURES)), np.array(labels, dtype=np.int64),
                      np.array(right, dtype=bool), tuple(kinds),
                      np.array(sel_x).reshape(-1, len(SELECTION_FEATURES)), np.array(sel_y, dtype=np.int64),
                      dict(Counter(kinds)), np.array(sel_case, dtype=np.int64))


def _variants(req: Request) -> list[tuple[str, int, tuple[int, ...]]]:
    """The cases one request gives: (kind, class, right tools)."""
    if req.kind in ("example", "description"):
        return [(req.kind, EXECUTE, req.gold), ("removed", NO_TOOL, ())]
    if req.kind == "pair":
        return [("pair", EXECUTE, req.gold)]
    if req.kind == "vague":
        return [("vague", CLARIFY, req.gold)]
    return [("no_tool", NO_TOOL, ())]


def _known(lexicon: Lexicon, own: Mapping[int, Counter[str]], term: str) -> bool:
    """Whether some tool's text has ``term`` once the request's own example is left out of its tool."""
    count = lexicon.df.get(term, 0)
    for row, counts in own.items():
        count += (counts.get(term, 0) > 0) - (lexicon.counts(row).get(term, 0) > 0)
    return count > 0
