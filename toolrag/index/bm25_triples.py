"""The (term, document, tf) triples behind :class:`toolrag.index.bm25.BM25Index`: built from tokens, an edit
spliced into them, and the Lucene BM25 weight of every entry. Pure numpy, no tokenising.

Triples are kept sorted by term, then document (CSC order: the entries of one term are contiguous), so a
query's scores are the sum of its terms' slices (:func:`query_scores`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["FEW_DOCS", "cache_bound", "insertion_points", "lucene_weights", "mean_length", "query_scores", "splice",
           "subset_weights", "term_triples", "vocab_bound"]


def lucene_weights(terms: np.ndarray, docs: np.ndarray, tf: np.ndarray, lengths: np.ndarray, df: np.ndarray, *,
                   k1: float, b: float) -> np.ndarray:
    """BM25 weight of every entry (float32), Lucene's variant as ``bm25s`` computes it:
    idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl)), idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)), N = the
    number of documents, dl = the document's token count, avgdl = their mean (1.0 when every document is
    empty). Example: N = 2, df = 1, tf = 1, dl = avgdl, k1 = 1.5, b = 0.75: idf = ln(1 + 1.5 / 1.5) = ln 2 =
    0.693; weight = 0.693 * 1 / (1 + 1.5) = 0.277.

    The length factor is computed once per document and the passes over the entries are done in place (1.6
    million entries at 100,000 tools: a fresh array for every step costs more in page faults than in
    arithmetic); the values equal the step-by-step formula's bit for bit."""
    n_docs = len(lengths)
    idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
    avgdl = mean_length(lengths)
    per_doc = k1 * (1.0 - b + b * lengths / avgdl)
    tfc = tf.astype(np.float64)
    denominator = per_doc[docs]
    denominator += tfc
    tfc /= denominator
    weights = idf[terms]
    weights *= tfc
    return weights.astype(np.float32)


def mean_length(lengths: np.ndarray) -> float:
    """avgdl of :func:`lucene_weights`: the documents' mean token count, 1.0 when every document is empty."""
    return float(lengths.mean()) if lengths.sum() else 1.0


def subset_weights(tf: np.ndarray, dl: np.ndarray, df: int, n_docs: int, avgdl: float, *, k1: float, b: float
                   ) -> np.ndarray:
    """The weights :func:`lucene_weights` gives one term's entries (``tf``, their documents' lengths ``dl``) in an
    index of only ``n_docs`` documents of mean length ``avgdl``, where ``df`` of them hold the term: the same
    operations in the same order, so the values are those of an index built over those documents alone, bit
    for bit (a caller's visible tools: what the others are does not move its scores)."""
    idf = np.log1p((n_docs - np.asarray([df], dtype=np.int64) + 0.5) / (np.asarray([df], dtype=np.int64) + 0.5))
    per_doc = k1 * (1.0 - b + b * dl / avgdl)
    tfc = tf.astype(np.float64)
    per_doc += tfc
    tfc /= per_doc
    weights = np.repeat(idf, len(tfc))
    weights *= tfc
    return weights.astype(np.float32)


def query_scores(weights: np.ndarray, docs: np.ndarray, starts: np.ndarray, term_ids: Sequence[int],
                 n_docs: int) -> np.ndarray:
    """Every document's score for a query of distinct term ids (float32): the sum of the query terms' entry
    weights. ``starts``: where each term's entries begin in ``weights``/``docs`` (length vocabulary + 1).

    The same arithmetic, in the same order, as ``bm25s.BM25.get_scores_from_ids`` (float32 sums, one term at a
    time in query order): a term's entries name each document once, so one fancy-indexed add per term is exact.
    Example: weights [0.5, 0.2, 0.4], docs [0, 1, 1], starts [0, 2, 3]: term 0 gives document 0 0.5 and
    document 1 0.2, term 1 gives document 1 0.4; the query [0, 1] scores [0.5, 0.6]."""
    scores = np.zeros(n_docs, dtype=np.float32)
    for term in term_ids:
        lo, hi = int(starts[term]), int(starts[term + 1])
        scores[docs[lo:hi]] += weights[lo:hi]
    return scores


#: Up to this many replaced documents, an edit finds their old entries by one comparison pass each.
FEW_DOCS = 8


def cache_bound(n_docs: int) -> int:
    """Past this many cached texts the token cache keeps only the current ones."""
    return 2 * n_docs + 1024


def vocab_bound(live_terms: int) -> int:
    """Past this many terms (most no longer in any document) the vocabulary is compacted."""
    return 2 * live_terms + 1024


def insertion_points(terms: np.ndarray, docs: np.ndarray, add_terms: np.ndarray, add_docs: np.ndarray
                      ) -> np.ndarray:
    """Where each new (term, doc) entry goes in triples sorted by term then doc (before the first entry that
    is not smaller): a binary search per entry instead of a sort key over every entry."""
    lo = np.searchsorted(terms, add_terms, side="left")
    hi = np.searchsorted(terms, add_terms, side="right")
    return np.array([a + int(np.searchsorted(docs[a:z], d)) for a, z, d in zip(lo, hi, add_docs, strict=True)],
                    dtype=np.int64)


def splice(values: np.ndarray, gone: np.ndarray, at: np.ndarray, add: np.ndarray) -> np.ndarray:
    """``values`` without the positions ``gone`` (sorted) and with ``add`` inserted before the positions
    ``at`` (sorted, of the original array; an entry inserted where one is removed goes in its place), in one
    copy."""
    events = sorted([(int(p), 1, i) for i, p in enumerate(gone)] + [(int(p), 0, i) for i, p in enumerate(at)])
    pieces: list[np.ndarray] = []
    start = 0
    for position, kind, i in events:
        if position > start:
            pieces.append(values[start:position])
            start = position
        if kind == 0:
            pieces.append(add[i:i + 1])
        else:
            start = position + 1
    pieces.append(values[start:])
    return np.concatenate(pieces).astype(values.dtype, copy=False)


def term_triples(
    slots: Sequence[int], docs: Sequence[tuple[str, ...]], vocab: dict[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(term id, document slot, tf) of the given documents, sorted by term then slot; grows ``vocab``."""
    lengths = np.fromiter((len(doc) for doc in docs), dtype=np.int64, count=len(docs))
    flat = np.fromiter(
        (vocab.setdefault(t, len(vocab)) for doc in docs for t in doc),
        dtype=np.int64,
        count=int(lengths.sum()),
    )
    owner = np.repeat(np.asarray(slots, dtype=np.int64), lengths)
    n = int(owner.max()) + 1 if owner.size else 1
    key, tf = np.unique(flat * n + owner, return_counts=True)
    terms, doc_slots = np.divmod(key, n)
    return terms, doc_slots, tf.astype(np.int64)
