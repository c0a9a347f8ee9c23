"""The queries a built BM25 index answers: every document's score for a request (over all documents or a caller's
visible ones), the best ``k`` with the id tie rule, one term's presence, a document's terms and each query term's
share of a document's score. :class:`toolrag.index.bm25.BM25Index` builds, updates and saves the arrays read here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolrag.index import bm25_triples
from toolrag.index.bm25_docs import DocumentTerms
from toolrag.index.bm25_subset import SubsetScorer

__all__ = ["BM25Queries"]


class BM25Queries:
    """The read side of :class:`toolrag.index.bm25.BM25Index`, over the arrays it sets (never changed after)."""

    _ids: tuple[str, ...]
    _doc_tokens: list[tuple[str, ...]] | None
    _vocab: dict[str, int]
    _terms: np.ndarray
    _docs: np.ndarray
    _tf: np.ndarray
    _k1: float
    _b: float
    _tokenizer: Callable[[str], list[str]]
    _last_scores: tuple[str, np.ndarray | None, np.ndarray] | None
    _last_terms: tuple[str, tuple[str, ...]] | None
    _by_doc: DocumentTerms | None
    _position: dict[str, int]
    _id_rank: np.ndarray
    _weights: np.ndarray
    _doc_index: np.ndarray
    _starts: np.ndarray
    _subsets: SubsetScorer

    @property
    def ids(self) -> tuple[str, ...]:
        """Indexed ids, in the order of :meth:`scores`."""
        return self._ids

    @property
    def k1(self) -> float:
        """Term-frequency saturation parameter."""
        return self._k1

    @property
    def b(self) -> float:
        """Document-length normalisation parameter."""
        return self._b

    def __len__(self) -> int:
        return len(self._ids)

    def tokens(self, doc_id: str) -> tuple[str, ...]:
        """The indexed tokens of one document (for explanations and debugging)."""
        if doc_id not in self._position:
            raise KeyError(f"id {doc_id!r} is not in the BM25 index")
        if self._doc_tokens is not None:
            return self._doc_tokens[self._position[doc_id]]
        # restored from arrays: the document's terms from the triples (in vocabulary order, not text order)
        return self._documents().tokens(self._position[doc_id], self._terms, self._tf)

    def term_set(self, doc_id: str) -> frozenset[str]:
        """The distinct indexed terms of one document: :meth:`tokens` without repeats or order, read straight
        from the triples of an index restored from arrays (a search's decision asks for a few of these)."""
        if doc_id not in self._position:
            raise KeyError(f"id {doc_id!r} is not in the BM25 index")
        if self._doc_tokens is not None:
            return frozenset(self._doc_tokens[self._position[doc_id]])
        return self._documents().term_set(self._position[doc_id], self._terms)

    def _documents(self) -> DocumentTerms:
        """The document-ordered view of the triples, built on the first request of an index restored from
        arrays (a search's explanation and decision ask for a few documents' terms)."""
        if self._by_doc is None:
            self._by_doc = DocumentTerms.build(self._docs, len(self._ids), self._vocab)
        return self._by_doc

    def has_term(self, term: str, visible: np.ndarray | None = None) -> bool:
        """True when ``term`` (a token as :meth:`tokens` returns them) is in the text of an indexed document (of
        a ``visible`` one, when given: a bool mask over :attr:`ids`)."""
        tid = self._vocab.get(term)
        if tid is None:
            return False
        lo, hi = int(self._starts[tid]), int(self._starts[tid + 1])
        if visible is None:
            return hi > lo
        return bool(visible[self._doc_index[lo:hi]].any())

    def terms(self, query: str) -> list[str]:
        """The query's tokens (repeats kept), as :meth:`scores` reads them; the last query's are kept."""
        cached = self._last_terms
        if cached is not None and cached[0] == query:
            return list(cached[1])
        tokens = tuple(self._tokenizer(query))
        self._last_terms = (query, tokens)
        return list(tokens)

    def _query_term_ids(self, query: str) -> list[int]:
        return list(dict.fromkeys(self._vocab[t] for t in self.terms(query) if t in self._vocab))

    def scores(self, query: str, visible: np.ndarray | None = None) -> np.ndarray:
        """BM25 score of every indexed document for ``query`` (float32, in :attr:`ids` order, >= 0; read-only).

        ``visible`` (a bool mask over :attr:`ids`, e.g. the tools a caller sees): score as if only those
        documents were indexed: N, each term's document frequency and the mean length are theirs, so the
        scores equal those of an index built over them alone, bit for bit, and the other documents score 0 (each
        term's weights in the subset are kept for the next queries: :mod:`toolrag.index.bm25_subset`).
        The last query's scores are kept: one search asks for them up to three times (candidates, exact
        scores, the reference distribution), which at 100,000 tools costs milliseconds each time."""
        if visible is not None and visible.all():
            visible = None
        cached = self._last_scores
        if cached is not None and cached[0] == query and cached[1] is visible:
            return cached[2]
        terms = self._query_term_ids(query)
        if visible is None:
            out = bm25_triples.query_scores(self._weights, self._doc_index, self._starts, terms, len(self._ids))
        else:
            out = self._subsets.scores(terms, visible)
        out.flags.writeable = False
        self._last_scores = (query, visible, out)
        return out

    def term_scores(self, query: str, doc_id: str) -> dict[str, float]:
        """Per query term, its contribution to ``doc_id``'s score (only terms found in the document)."""
        if doc_id not in self._position:
            raise KeyError(f"id {doc_id!r} is not in the BM25 index")
        doc = self._position[doc_id]
        terms = {v: k for k, v in self._vocab.items()}
        out: dict[str, float] = {}
        for tid in self._query_term_ids(query):
            lo, hi = int(self._starts[tid]), int(self._starts[tid + 1])
            pos = lo + int(np.searchsorted(self._doc_index[lo:hi], doc))
            if pos < hi and self._doc_index[pos] == doc:
                out[terms[tid]] = float(self._weights[pos])
        return out

    def top(self, query: str, *, k: int, mask: np.ndarray | None = None) -> list[tuple[str, float]]:
        """The best ``k`` documents with score > 0, sorted by score desc, then id asc (ties by id).

        ``mask`` (bool, one per indexed document) restricts the result to those documents, scored as if only they
        were indexed (:meth:`scores` with ``visible``).
        """
        if k < 0:
            raise ValueError(f"top-k must be >= 0, got k={k}")
        if mask is not None:
            mask = np.asarray(mask)
            if mask.dtype != np.bool_ or mask.shape != (len(self._ids),):
                raise ValueError(
                    f"mask must be a bool array of shape {(len(self._ids),)}, got {mask.dtype} {mask.shape}"
                )
        scores = self.scores(query, mask)
        allowed = scores > 0
        if mask is not None:
            allowed &= mask
        cand = np.flatnonzero(allowed)
        if k == 0 or cand.size == 0:
            return []
        values = scores[cand]
        if cand.size > k:  # keep everything tied with the k-th best so the id tie rule stays exact
            kth = np.partition(values, cand.size - k)[cand.size - k]
            keep = values >= kth
            cand, values = cand[keep], values[keep]
        best = np.lexsort((self._id_rank[cand], -values))[:k]
        return [(self._ids[i], v) for i, v in zip(cand[best].tolist(), values[best].tolist(), strict=True)]
