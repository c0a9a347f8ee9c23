"""The BM25 keyword index: dense embeddings miss exact identifiers ("SKU-1001", "query_stock") and rare domain
words; BM25 over a tokenisation that understands identifiers and Chinese (:mod:`toolrag.index.tokenize`)
catches them. Pure CPU code: no models.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np

from toolrag.index import bm25_triples
from toolrag.index.bm25_docs import DocumentTerms, cached_tokens, check_unique, text_key
from toolrag.index.bm25_query import BM25Queries
from toolrag.index.bm25_subset import SubsetScorer
from toolrag.index.tokenize import tokenize

__all__ = ["BM25Index"]


class BM25Index(BM25Queries):
    """An immutable Okapi BM25 index over tool texts, scored as ``bm25s`` (method "lucene") scores.

    Score of document d for query q, summed over the *distinct* known terms t of q::

        idf(t)   = ln(1 + (N - df_t + 0.5) / (df_t + 0.5))          (Lucene idf: always > 0)
        score(d) = sum_t idf(t) * tf_td / (tf_td + k1 * (1 - b + b * |d| / avgdl))

    N = number of documents, df_t = documents containing t, tf_td = occurrences of t in d, |d| = tokens in d,
    avgdl = mean |d|. This is bm25s's "lucene" variant (Lucene >= 8 drops the constant (k1 + 1) factor,
    which does not change rankings). Repeated query terms count once.

    The index keeps the (term, document, tf) triples in CSC order (a term's entries together) and computes
    every entry's weight from them with vectorised numpy (bm25s's own ``index()`` loops over documents in
    Python: 0.7 s for 10,000 tools); :meth:`update` splices changed documents into the triples instead of
    re-sorting. A query sums its terms' entries (:func:`toolrag.index.bm25_triples.query_scores`, the
    arithmetic of ``bm25s.BM25.get_scores_from_ids``), so no private attribute of bm25s is written or read and
    bm25s is no runtime dependency. Tests check scores against bm25s's own ``index()`` (the reference, in
    requirements-dev.txt) and against hand arithmetic. This class builds, updates and saves the arrays; the
    queries over them (:meth:`scores`, :meth:`top`, :meth:`tokens`, ...) are :class:`BM25Queries`'.
    """

    def __init__(
        self,
        ids: list[str],
        doc_tokens: list[tuple[str, ...]] | None,
        doc_keys: list[bytes],
        vocab: dict[str, int],
        token_cache: dict[bytes, tuple[str, ...]],
        triples: tuple[np.ndarray, np.ndarray, np.ndarray],
        *,
        k1: float,
        b: float,
        tokenizer: Callable[[str], list[str]],
        same_ids: BM25Index | None = None,
        lengths: np.ndarray | None = None,
        df: np.ndarray | None = None,
    ) -> None:
        """Internal: use :meth:`build`, :meth:`update` or :meth:`from_arrays`; ``triples`` = (terms, docs, tf)
        in CSC order. ``same_ids``: an index over the same ids in the same order, whose id lookups are reused.
        ``doc_tokens`` may be ``None`` (an index restored from arrays): then ``lengths`` gives each document's
        token count and :meth:`tokens` rebuilds a document's tokens from the triples. ``df``: each term's
        document frequency when the caller already knows it (an edit updates the previous one)."""
        self._ids = tuple(ids)
        self._doc_tokens = doc_tokens
        if lengths is None:
            if doc_tokens is None:
                raise ValueError("give doc_tokens or lengths")
            lengths = np.fromiter((len(t) for t in doc_tokens), dtype=np.int64, count=len(doc_tokens))
        self._lengths = np.asarray(lengths, dtype=np.int64)
        self._doc_keys = doc_keys
        self._vocab = vocab
        self._token_cache = token_cache
        self._terms, self._docs, self._tf = triples
        self._k1, self._b, self._tokenizer = k1, b, tokenizer
        self._last_scores: tuple[str, np.ndarray | None, np.ndarray] | None = None
        self._last_terms: tuple[str, tuple[str, ...]] | None = None
        self._by_doc: DocumentTerms | None = None
        self._position: dict[str, int]
        self._id_rank: np.ndarray
        if same_ids is not None and same_ids._ids == self._ids:  # an edit: 0.3 s saved at 100,000 tools
            self._position, self._id_rank = same_ids._position, same_ids._id_rank
        else:
            self._position = {doc_id: i for i, doc_id in enumerate(ids)}
            # rank of each id in ascending string order: the tie-breaker of top()
            self._id_rank = np.empty(len(ids), dtype=np.int64)
            self._id_rank[np.argsort(np.asarray(ids, dtype=object), kind="stable")] = np.arange(len(ids))
        self._weigh(df)

    # ----------------------------------------------------------------------------------------- building
    @classmethod
    def build(
        cls,
        ids: Sequence[str],
        texts: Sequence[str],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        tokenizer: Callable[[str], list[str]] = tokenize,
    ) -> BM25Index:
        """Tokenise ``texts`` and index them under ``ids`` (unique, same length as ``texts``)."""
        if len(ids) != len(texts):
            raise ValueError(
                f"BM25Index.build got {len(ids)} ids but {len(texts)} texts; pass one text per id"
            )
        if not k1 >= 0 or not 0 <= b <= 1:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        check_unique(ids)
        cache: dict[bytes, tuple[str, ...]] = {}
        keys = [text_key(text) for text in texts]
        tokens = [cached_tokens(cache, key, text, tokenizer) for key, text in zip(keys, texts, strict=True)]
        vocab: dict[str, int] = {}
        arrays = bm25_triples.term_triples(range(len(tokens)), tokens, vocab)
        return cls(list(ids), tokens, keys, vocab, cache, arrays, k1=k1, b=b, tokenizer=tokenizer)

    def to_arrays(self) -> dict[str, Any]:
        """Everything needed to restore this index without tokenising again (see :meth:`from_arrays`):
        numpy arrays plus the vocabulary in id order (JSON-ready)."""
        terms = [""] * len(self._vocab)
        for term, i in self._vocab.items():
            terms[i] = term
        return {"terms": self._terms, "docs": self._docs, "tf": self._tf, "lengths": self._lengths,
                "keys": np.frombuffer(b"".join(self._doc_keys), dtype=np.uint8).reshape(len(self._ids), 16)
                if self._ids else np.zeros((0, 16), dtype=np.uint8),
                "vocab": terms, "k1": self._k1, "b": self._b}

    @classmethod
    def from_arrays(cls, ids: Sequence[str], arrays: Mapping[str, Any], *,
                    tokenizer: Callable[[str], list[str]] = tokenize) -> BM25Index:
        """An index equal to the one :meth:`to_arrays` saved, over ``ids`` (the same ids, same order).

        Nothing is tokenised; the documents' tokens are rebuilt from the triples only when asked for."""
        vocab = {term: i for i, term in enumerate(arrays["vocab"])}
        keys_raw = np.ascontiguousarray(arrays["keys"], dtype=np.uint8).tobytes()
        keys = [keys_raw[i * 16:(i + 1) * 16] for i in range(len(ids))]
        lengths = np.asarray(arrays["lengths"], dtype=np.int64)
        triples = tuple(np.asarray(arrays[name], dtype=np.int64) for name in ("terms", "docs", "tf"))
        if len(keys_raw) != 16 * len(ids) or len(lengths) != len(ids):
            raise ValueError(f"saved BM25 arrays hold {len(lengths)} documents, not {len(ids)}")
        return cls(list(ids), None, keys, vocab, {}, triples,  # type: ignore[arg-type]
                   k1=float(arrays["k1"]), b=float(arrays["b"]), tokenizer=tokenizer, lengths=lengths)

    def update(self, changed: Mapping[str, str], removed: Collection[str]) -> BM25Index:
        """A new index with ``changed`` texts replaced or added (new ids go last) and ``removed`` ids gone.

        Only changed texts whose hash is not in the token cache are tokenised again; df, avgdl and the
        score matrix are recomputed for all documents (vectorised, O(entries)), so the result equals
        :meth:`build` on the final texts. ``self`` is left unchanged.
        """
        both = set(changed) & set(removed)
        if both:
            raise ValueError(f"ids both changed and removed in one update: {sorted(both)}; pick one")
        unknown = [doc_id for doc_id in removed if doc_id not in self._position]
        if unknown:
            raise ValueError(f"cannot remove ids that are not indexed: {sorted(unknown)}")
        if not removed and all(doc_id in self._position for doc_id in changed):
            return self._replaced(changed)
        kept = np.ones(len(self._ids), dtype=bool)
        kept[[self._position[doc_id] for doc_id in removed]] = False
        stale = ~kept  # old documents whose entries go away
        keep = np.flatnonzero(kept).tolist()
        ids = [self._ids[i] for i in keep]
        known = self._doc_tokens
        tokens: list[tuple[str, ...]] | None = [known[i] for i in keep] if known is not None else None
        keys = [self._doc_keys[i] for i in keep]
        lengths = self._lengths[keep].tolist()
        new_slot = np.cumsum(kept) - 1  # old document index -> new index
        cache = dict(self._token_cache)  # texts seen before (also older versions) are not tokenised again
        vocab = dict(self._vocab)
        slots: list[int] = []
        changed_docs: list[tuple[str, ...]] = []
        for doc_id, text in changed.items():
            key = text_key(text)
            doc = cached_tokens(cache, key, text, self._tokenizer)
            old = self._position.get(doc_id)
            if old is None:
                slots.append(len(ids))
                ids.append(doc_id)
                keys.append(key)
                lengths.append(len(doc))
                if tokens is not None:
                    tokens.append(doc)
            else:
                stale[old] = True
                slot = int(new_slot[old])
                slots.append(slot)
                keys[slot], lengths[slot] = key, len(doc)
                if tokens is not None:
                    tokens[slot] = doc
            changed_docs.append(doc)
        live = ~stale[self._docs]
        kept_triples = (self._terms[live], new_slot[self._docs[live]], self._tf[live])
        return self._assemble(ids, tokens, keys, np.asarray(lengths, dtype=np.int64), vocab, cache, kept_triples,
                              slots, changed_docs)

    def _replaced(self, changed: Mapping[str, str]) -> BM25Index:
        """:meth:`update` when texts are only replaced (an edit): the same ids in the same order, so no
        per-document list is rebuilt, only the changed slots are overwritten (0.1 s saved at 100,000 tools).
        The token cache is shared (it maps a text's hash to its tokens, so growing it changes no index); the
        vocabulary is copied only when a changed text brings a new term. For a few documents the old entries
        are found by one comparison pass per document and the new ones spliced in with one copy per array,
        and df is updated rather than recounted."""
        tokens = list(self._doc_tokens) if self._doc_tokens is not None else None
        keys, lengths = list(self._doc_keys), self._lengths.copy()
        cache, slots, docs = self._token_cache, [], []
        for doc_id, text in changed.items():
            key = text_key(text)
            doc = cached_tokens(cache, key, text, self._tokenizer)
            slot = self._position[doc_id]
            slots.append(slot)
            docs.append(doc)
            keys[slot], lengths[slot] = key, len(doc)
            if tokens is not None:
                tokens[slot] = doc
        vocab = self._vocab
        if any(t not in vocab for doc in docs for t in doc):
            vocab = dict(vocab)
        if len(slots) > bm25_triples.FEW_DOCS or self._churned(vocab, cache, len(self._ids)):
            stale = np.zeros(len(self._ids), dtype=bool)
            stale[slots] = True
            live = ~stale[self._docs]
            kept_triples = (self._terms[live], self._docs[live], self._tf[live])
            return self._assemble(list(self._ids), tokens, keys, lengths, vocab, cache, kept_triples, slots, docs)
        gone = np.sort(np.concatenate([np.flatnonzero(self._docs == slot) for slot in slots] or [np.zeros(0, int)]))
        add_terms, add_docs, add_tf = bm25_triples.term_triples(slots, docs, vocab)
        at = bm25_triples.insertion_points(self._terms, self._docs, add_terms, add_docs)
        df = np.zeros(len(vocab), dtype=np.int64)
        df[: len(self._df)] = self._df
        np.subtract.at(df, self._terms[gone], 1)
        np.add.at(df, add_terms, 1)
        terms, doc_slots, tf = (bm25_triples.splice(old, gone, at, new) for old, new in
                                ((self._terms, add_terms), (self._docs, add_docs), (self._tf, add_tf)))
        return BM25Index(list(self._ids), tokens, keys, vocab, cache, (terms, doc_slots, tf), k1=self._k1, b=self._b,
                         tokenizer=self._tokenizer, same_ids=self, lengths=lengths, df=df)

    def _assemble(self, ids: list[str], tokens: list[tuple[str, ...]] | None, keys: list[bytes],
                  lengths: np.ndarray, vocab: dict[str, int], cache: dict[bytes, tuple[str, ...]],
                  kept: tuple[np.ndarray, np.ndarray, np.ndarray], slots: Sequence[int],
                  docs: Sequence[tuple[str, ...]]) -> BM25Index:
        """The index after an update: the kept (term, doc, tf) triples with those of the changed documents
        (``docs`` at ``slots``) spliced in, the token cache bounded and the vocabulary compacted after heavy
        churn. ``vocab`` grows with new terms (callers pass a copy when it is shared)."""
        terms, doc_slots, tf = kept
        add_terms, add_docs, add_tf = bm25_triples.term_triples(slots, docs, vocab)
        n = max(len(ids), 1)
        at = np.searchsorted(terms * n + doc_slots, add_terms * n + add_docs)  # both sorted by (term, doc)
        terms, doc_slots = np.insert(terms, at, add_terms), np.insert(doc_slots, at, add_docs)
        tf = np.insert(tf, at, add_tf)
        if len(cache) > bm25_triples.cache_bound(len(ids)):  # bound the cache: keep the current texts only
            cache = dict(zip(keys, tokens, strict=True)) if tokens is not None else {}
        if len(vocab) > bm25_triples.vocab_bound(self._live_terms):  # drop terms of replaced texts after heavy churn
            used = np.bincount(terms, minlength=len(vocab)) > 0
            renumber = np.cumsum(used) - 1
            vocab = {t: int(renumber[i]) for t, i in vocab.items() if used[i]}
            terms = renumber[terms]
        return BM25Index(ids, tokens, keys, vocab, cache, (terms, doc_slots, tf), k1=self._k1, b=self._b,
                         tokenizer=self._tokenizer, same_ids=self if len(ids) == len(self._ids) else None,
                         lengths=lengths)

    def _churned(self, vocab: dict[str, int], cache: dict[bytes, tuple[str, ...]], n_docs: int) -> bool:
        """The token cache or the vocabulary has outgrown the live texts: :meth:`_assemble` trims them."""
        return len(cache) > bm25_triples.cache_bound(n_docs) or len(vocab) > bm25_triples.vocab_bound(self._live_terms)

    def _weigh(self, df: np.ndarray | None = None) -> None:
        """Each term's document frequency, where its entries start, and every entry's weight."""
        n_vocab = len(self._vocab)
        if df is None or len(df) != n_vocab:
            df = np.bincount(self._terms, minlength=n_vocab)
        self._df = df
        self._live_terms = int(np.count_nonzero(df))
        self._weights = bm25_triples.lucene_weights(self._terms, self._docs, self._tf, self._lengths, df,
                                                    k1=self._k1, b=self._b)
        self._doc_index = self._docs.astype(np.int32)
        self._starts = np.concatenate([[0], np.cumsum(df)]).astype(np.int64)
        self._subsets = SubsetScorer(starts=self._starts, docs=self._doc_index, tf=self._tf, lengths=self._lengths,
                                     k1=self._k1, b=self._b)
