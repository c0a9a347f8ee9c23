"""BM25 over a caller's visible tools (:meth:`toolrag.index.bm25.BM25Index.scores` with ``visible``), with the
term weights kept per subset.

A caller who sees a subset of the catalog is scored as if only its tools were indexed: N, each term's document
frequency and the mean length are the subset's, so every query term's weights differ from the full index's and
were computed again at every search (3.0 ms against 0.9 ms for the full index at 50,000 tools). They depend
only on the index (immutable: one per snapshot), the subset and the term, so they are computed on a term's
first query for a subset and kept: the next searches of that caller add the kept arrays up, as a search over
the full index does. A subset is known by its content (a digest of the mask), so a caller whose mask is made
again (another snapshot memo, another request with the same filter) finds its weights; the few most recent
subsets are kept, each up to a bounded number of entries.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from toolrag.index import bm25_triples

__all__ = ["MAX_SUBSETS", "SubsetScorer"]

#: Subsets (callers' masks) whose weights one index keeps; the least recently used goes first.
MAX_SUBSETS: Final = 8


@dataclass
class _Subset:
    """One subset's statistics and the weights of the terms queried so far: term id -> (documents, weights)."""

    n_docs: int
    avgdl: float
    terms: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    entries: int = 0


class SubsetScorer:
    """Scores of a query over the visible documents of one index (the arrays of
    :class:`~toolrag.index.bm25.BM25Index`, in CSC order): the same values as computing each term's subset
    weights at every query, bit for bit, with the weights kept per subset and term. Thread-safe."""

    def __init__(self, *, starts: np.ndarray, docs: np.ndarray, tf: np.ndarray, lengths: np.ndarray, k1: float,
                 b: float, max_subsets: int = MAX_SUBSETS) -> None:
        self._starts, self._docs, self._tf, self._lengths = starts, docs, tf, lengths
        self._k1, self._b = k1, b
        self._max_subsets = max_subsets
        #: Entries kept per subset (a bound on its memory: at most the full index's entries, at least 100,000).
        self._max_entries = max(len(docs), 100_000)
        self._subsets: OrderedDict[bytes, _Subset] = OrderedDict()
        self._last: tuple[np.ndarray, bytes] | None = None  # the last mask and its key (a caller's mask is reused)
        self._lock = threading.Lock()

    def scores(self, term_ids: Sequence[int], visible: np.ndarray) -> np.ndarray:
        """Every document's score (float32) for the distinct ``term_ids``, over the ``visible`` documents only
        (the others score 0)."""
        subset = self._subset(visible)
        scores = np.zeros(len(self._lengths), dtype=np.float32)
        for term in term_ids:
            found = subset.terms.get(term)
            if found is None:
                found = self._weights(term, visible, subset)
            docs, weights = found
            if len(docs):
                scores[docs] += weights
        return scores

    def __len__(self) -> int:
        """How many subsets are kept."""
        return len(self._subsets)

    def _key(self, visible: np.ndarray) -> bytes:
        last = self._last
        if last is not None and last[0] is visible:
            return last[1]
        key = hashlib.blake2b(np.packbits(visible).tobytes(), digest_size=16).digest()
        self._last = (visible, key)
        return key

    def _subset(self, visible: np.ndarray) -> _Subset:
        key = self._key(visible)
        with self._lock:
            subset = self._subsets.get(key)
            if subset is not None:
                self._subsets.move_to_end(key)
                return subset
        subset = _Subset(int(np.count_nonzero(visible)), bm25_triples.mean_length(self._lengths[visible]))
        with self._lock:
            subset = self._subsets.setdefault(key, subset)
            self._subsets.move_to_end(key)
            while len(self._subsets) > self._max_subsets:
                self._subsets.popitem(last=False)
        return subset

    def _weights(self, term: int, visible: np.ndarray, subset: _Subset) -> tuple[np.ndarray, np.ndarray]:
        """The visible documents holding ``term`` and their weights in the subset (computed once, then kept)."""
        lo, hi = int(self._starts[term]), int(self._starts[term + 1])
        docs = self._docs[lo:hi]
        keep = visible[docs]
        df = int(np.count_nonzero(keep))
        if df:
            docs = docs[keep]
            weights = bm25_triples.subset_weights(self._tf[lo:hi][keep], self._lengths[docs], df, subset.n_docs,
                                                  subset.avgdl, k1=self._k1, b=self._b)
        else:
            docs, weights = docs[:0], np.zeros(0, dtype=np.float32)
        docs.flags.writeable = weights.flags.writeable = False
        with self._lock:
            if subset.entries + len(docs) > self._max_entries:  # bounded: start this subset's terms again
                subset.terms.clear()
                subset.entries = 0
            subset.terms[term] = (docs, weights)
            subset.entries += len(docs)
        return docs, weights
