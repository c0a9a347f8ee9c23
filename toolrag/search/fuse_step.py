"""The fusion step of a search: normalise each signal against the permitted catalog, fuse, explain.

Split from :mod:`toolrag.search.retriever` (which filters, calls this, reranks and decides); pure numpy over the
scores :func:`toolrag.search.scoring.score_signals` computed, no models.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

from toolrag.index.snapshot import IndexSnapshot
from toolrag.search import adaptive, fusion
from toolrag.search.query import QueryFeatures
from toolrag.search.results import SignalScore
from toolrag.search.scoring import RawScores, row_dot, score_signals
from toolrag.settings import Fusion, Normalization, Settings
from toolrag.signals import SIGNALS

__all__ = ["WORDS_READ", "fuse_signals", "lexical_share", "top_positions"]

#: Languages whose requests BM25 weighs in full (:func:`toolrag.language.detect_language`): English and Chinese,
#: whose words (and gloss) it was tuned on, and texts without letters. Any other request's BM25 weight is scaled by
#: :func:`lexical_share`: against tools written in another language such a request shares only numbers, names and
#: ids with them, and a tool that happens to share "30" or "de" stood out by several z (docs/results.md, "Requests
#: in other languages").
WORDS_READ = frozenset({"en", "zh", "und"})

T = TypeVar("T")

#: Signals that early fusion merges into ``dense``: their query vectors live in the multilingual text space.
_EARLY_MERGED = ("ocr", "concepts")


class _Explained:
    """One signal's explanation of each candidate, built on access: only returned candidates are explained.

    Ranks are the competition ranks of :func:`toolrag.search.fusion.competition_ranks` (1 + present candidates with a
    strictly higher raw score); unless the fusion needed them all (RRF) they are counted for the returned
    candidates only, which saves sorting every signal of a 10,000-tool catalog."""

    def __init__(self, raw: np.ndarray, norm: np.ndarray, ranks: np.ndarray | None, eff: np.ndarray | None,
                 contrib: np.ndarray | None, present: np.ndarray) -> None:
        self._raw, self._norm, self._ranks = raw, norm, ranks
        self._eff, self._contrib, self._present = eff, contrib, present

    def __getitem__(self, i: int) -> SignalScore:
        if not self._present[i]:
            return SignalScore(float("nan"), 0.0, 0, 0.0, 0.0)
        if self._ranks is not None:
            rank = int(self._ranks[i])
        else:
            values = self._raw[self._present].astype(np.float64)
            rank = 1 + int(np.count_nonzero(values > np.float64(self._raw[i])))
        return SignalScore(float(self._raw[i]), float(self._norm[i]), rank,
                           float(self._eff[i]) if self._eff is not None else 0.0,
                           float(self._contrib[i]) if self._contrib is not None else 0.0)

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(raw, normalised, present) over all scored candidates: what the decision's features read."""
        return self._raw, self._norm, self._present


def fuse_signals(scores: RawScores, q: QueryFeatures, cfg: Settings, snap: IndexSnapshot, rows: np.ndarray,
                 mask: np.ndarray, *, filter_id: Hashable | None = None
                 ) -> tuple[np.ndarray, dict[str, Any], dict[str, str]]:
    """Fuse the signals of the scored ``rows`` (``mask`` = the permitted tools): (fused scores, each signal's
    lazy explanation of every candidate, the signals left out and why). ``filter_id``
    (the :attr:`toolrag.catalog.caller.Caller.key` of the caller behind ``mask``) lets the snapshot keep the
    reference rows and their vectors for the next search with the same filters. BM25 reads the statistics of
    the ``mask`` tools only (a hidden tool moves no score)."""
    raw, present = dict(scores.raw), dict(scores.present)
    weights = {s: cfg.weights.get(s, 0.0) for s in SIGNALS}
    absent = dict(q.absent)
    if "bm25" in raw and q.language not in WORDS_READ:
        # A request in a language the catalog may not be written in: BM25 weighs as much of it as it reads.
        weights["bm25"] *= lexical_share(snap, q.lexical, None if mask.all() else mask)
    combined = None
    if cfg.fusion is Fusion.EARLY and "dense" in raw:
        # Early fusion: the query vectors that live in the multilingual space are combined first, so
        # one cosine replaces the text, OCR and concept signals (their weights are added to it).
        parts = {s: q.vectors[s] for s in ("dense", *_EARLY_MERGED) if s in q.vectors}
        combined = fusion.early_fusion(parts, {s: weights[s] for s in parts})
        raw["dense"] = np.asarray(row_dot(snap.vectors["dense"][rows], combined), dtype=np.float32)
        for s in _EARLY_MERGED:
            if s in raw:
                weights["dense"] += weights[s]
                raw.pop(s)
                present.pop(s)
                absent[s] = "merged into dense by early fusion"
    n = len(next(iter(raw.values()))) if raw else 0
    for s in list(raw):
        if weights[s] <= 0:
            absent.setdefault(s, "weight is 0")
    if cfg.normalization is Normalization.STANDARD:
        # z-scores against each signal's distribution over the permitted catalog (a fixed sample of it
        # when large), never over the candidate pool: see toolrag.search.adaptive.
        ref_rows = _remember(snap, ("reference", filter_id), lambda: adaptive.reference_rows(np.flatnonzero(mask)))
        pos = np.searchsorted(rows, ref_rows)
        if len(rows) and pos.max(initial=0) < len(rows) and np.array_equal(rows[pos], ref_rows):
            # Every reference row was scored already (the exact path): no second scoring pass.
            ref_raw = {s: v[pos] for s, v in raw.items()}
            ref_present = {s: v[pos] for s, v in present.items()}
        else:
            # Their tool vectors gathered once into small contiguous matrices: gathering 1,024 rows from each
            # 100,000-row matrix again for every search costs about 1 ms.
            ref_vectors = _remember(snap, ("reference-vectors", filter_id), lambda: {
                space: np.ascontiguousarray(matrix[ref_rows]) for space, matrix in snap.vectors.items()})
            ref = score_signals(snap, ref_rows, q, history_weight=cfg.history_weight, row_vectors=ref_vectors,
                                visible=None if mask.all() else mask)
            ref_raw, ref_present = dict(ref.raw), dict(ref.present)
            if combined is not None and "dense" in ref_raw:
                ref_raw["dense"] = np.asarray(row_dot(ref_vectors["dense"], combined), dtype=np.float32)
        norm = {s: adaptive.standardize(raw[s], present[s], reference=ref_raw[s],
                                        reference_present=ref_present[s])
                if s in ref_raw else fusion.normalize(raw[s], present[s], cfg.normalization) for s in raw}
    else:
        norm = {s: fusion.normalize(raw[s], present[s], cfg.normalization) for s in raw}
    ranks = {s: fusion.competition_ranks(raw[s], present[s]) for s in raw} if cfg.fusion is Fusion.RRF else {}
    active = {s: w for s, w in weights.items() if s in raw and w > 0}
    if not active:  # every weight is 0 (or no signal ran): nothing to fuse, all candidates tie
        fused, contrib = np.zeros(n, dtype=np.float64), dict[str, np.ndarray]()
    elif cfg.fusion is Fusion.RRF:
        fused, contrib = fusion.rrf_fusion({s: ranks[s] for s in active}, active, k=cfg.rrf_k)
    else:
        fused, contrib = fusion.late_fusion({s: norm[s] for s in active},
                                            {s: present[s] for s in active}, active)
    eff = fusion.effective_weights({s: present[s] for s in active}, active) if active else {}
    explained: dict[str, Any] = {
        s: _Explained(raw[s], norm[s], ranks.get(s), eff.get(s), contrib.get(s), present[s]) for s in raw}
    return fused, explained, absent


def lexical_share(snap: IndexSnapshot, lexical: str, visible: np.ndarray | None) -> float:
    """The share of a request's BM25 terms (repeats counted) that some ``visible`` tool's text holds (0 without
    terms)."""
    terms = snap.bm25.terms(lexical) if lexical else []
    return sum(1 for t in terms if snap.bm25.has_term(t, visible)) / len(terms) if terms else 0.0


def _remember(snap: IndexSnapshot, key: tuple[str, Hashable | None], build: Callable[[], T]) -> T:
    """``build()``, kept by the snapshot for the next search with the same filters (``key[1]``: their
    :attr:`toolrag.catalog.caller.Caller.key`; ``None``: not kept)."""
    return build() if key[1] is None else snap.memo(key, build)


def top_positions(fused: np.ndarray, rows: np.ndarray, snap: IndexSnapshot, k: int) -> np.ndarray:
    """Positions of the ``k`` best candidates in :func:`toolrag.search.fusion.order`'s order. Only candidates scoring at
    least the k-th best score are sorted (all of them, so ties are still broken by priority, then id)."""
    keep = np.arange(len(fused))
    if len(fused) > 4 * k:
        kth = np.partition(fused, len(fused) - k)[len(fused) - k]
        keep = np.flatnonzero(fused >= kth)
    picked = rows[keep]
    return keep[fusion.order(fused[keep], [snap.ids[r] for r in picked], snap.priority[picked])][:k]
