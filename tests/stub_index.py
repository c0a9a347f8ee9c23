"""An in-memory stand-in for :class:`toolrag.index.tool_index.ToolIndex`, for quick tests of the orchestration.

:class:`StubIndex` builds the :class:`toolrag.index.snapshot.IndexSnapshot` a real index serves, from a catalog
and stub text models (:class:`HashingText`, the :class:`toolrag.encode.protocols.TextModel` protocol: a
normalised bag of hashed words, so requests sharing words with a tool's text land near it), with the real BM25
(:meth:`toolrag.index.bm25.BM25Index.build`) over each tool's lexical text. It offers what
:class:`toolrag.search.retriever.ToolRetriever` reads of an index (``snapshot``, ``catalog``, ``models``,
``update``, ``query_rows``), so ``ToolRetriever(StubIndex(catalog))`` runs the real search, fusion, decision and
result assembly without Chroma or a model: the quick tier (no chromadb, no onnxruntime) can run it.
:func:`stub_retriever` also gives the real :class:`toolrag.decision.decider.Decider` the stub encoder for its
bank of no-tool requests, kept in memory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from toolrag.catalog.caller import Caller
from toolrag.catalog.profile import Catalog
from toolrag.encode.models import ModelSet
from toolrag.index.bm25 import BM25Index
from toolrag.index.snapshot import IndexSnapshot, perm_codes
from toolrag.index.tokenize import tokenize
from toolrag.progress import Progress
from toolrag.text import is_mostly_cjk

__all__ = ["HashingText", "StubIndex", "stub_retriever"]


class HashingText:
    """A text model stand-in: each word (toolrag's tokenizer, Chinese included) hashed to one of ``dim`` axes
    with a sign, summed and normalised. Deterministic, and every text is encoded on its own."""

    def __init__(self, name: str = "hashing", dim: int = 96) -> None:
        self.name = name
        self._dim = dim
        self.encoded = 0

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def fingerprint(self) -> str:
        return f"stub:{self.name}|dim={self._dim}"

    def _one(self, text: str) -> np.ndarray:
        vector = np.zeros(self._dim, dtype=np.float32)
        for word in tokenize(text):
            digest = hashlib.blake2b(f"{self.name}|{word}".encode(), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            vector[value % self._dim] += 1.0 if value & (1 << 40) else -1.0
        norm = float(np.linalg.norm(vector))
        if norm == 0:
            vector[0] = 1.0
            norm = 1.0
        return vector / norm

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.encoded += len(texts)
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self._dim), np.float32)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_queries(texts)


def stub_models() -> ModelSet:
    """Two stub text models (multilingual and English); no image, OCR or CLIP model (their signals are absent)."""
    return ModelSet(text=HashingText("multilingual"), english=HashingText("english"),
                    unavailable={"image": "stub: no image model", "clip": "stub: no CLIP model",
                                 "ocr": "stub: no OCR model"})


class StubIndex:
    """What :class:`ToolRetriever` reads of an index, built in memory from ``catalog`` with stub models."""

    def __init__(self, catalog: Catalog, models: ModelSet | None = None) -> None:
        self.models = models or stub_models()
        self.updates = 0
        self._snapshot = self._build(catalog)

    @property
    def snapshot(self) -> IndexSnapshot:
        return self._snapshot

    @property
    def catalog(self) -> Catalog:
        return self._snapshot.catalog

    def update(self, catalog: Catalog, progress: Progress | None = None) -> int:
        """A new snapshot of ``catalog`` (every tool encoded again; a stub has no cache); the number encoded."""
        self._snapshot = self._build(catalog)
        self.updates += 1
        return len(catalog)

    def query_rows(self, kind: str, vector: np.ndarray, *, k: int, mask: np.ndarray, caller: Caller,
                   snapshot: IndexSnapshot | None = None) -> np.ndarray:
        """The ``k`` rows of the tools ``caller`` sees (``mask``) nearest to ``vector`` (exact)."""
        snap = snapshot or self._snapshot
        matrix = snap.vectors.get(kind)
        if matrix is None:
            return np.zeros(0, dtype=np.int64)
        scores = np.where(mask, matrix @ vector, -np.inf)
        rows = np.argsort(-scores, kind="stable")[:k]
        return np.sort(rows[np.isfinite(scores[rows])]).astype(np.int64)

    def _build(self, catalog: Catalog) -> IndexSnapshot:
        tools = catalog.tools
        ids = tuple(t.id for t in tools)
        docs = [t.document_text() for t in tools]
        vectors: dict[str, Any] = {"dense": self.models.text.encode_passages(docs)}
        if self.models.english is not None:
            vectors["dense_en"] = self.models.english.encode_passages(docs)
        lexical = tuple(t.lexical_text() for t in tools)
        keys = [t.perm_key for t in tools]
        return IndexSnapshot(
            catalog=catalog, ids=ids, row_of={tool_id: n for n, tool_id in enumerate(ids)}, vectors=vectors,
            english=np.array([not is_mostly_cjk(d) for d in docs], dtype=bool),
            image_owner=np.zeros(0, dtype=np.int64), image_vectors={},
            image_text_owner=np.zeros(0, dtype=np.int64), image_text=np.zeros((0, self.models.text.dim), np.float32),
            perm_keys=np.array(keys, dtype=object), categories=np.array([t.category for t in tools], dtype=object),
            deprecated=np.array([t.deprecated for t in tools], dtype=bool),
            priority=np.array([t.priority for t in tools], dtype=np.int64),
            bm25=BM25Index.build(list(ids), list(lexical)), bm25_texts=lexical, **perm_codes(keys))


def stub_retriever(catalog: Catalog, **kwargs: Any) -> Any:
    """A real :class:`ToolRetriever` over a :class:`StubIndex` of ``catalog``, its real decision reading the
    no-tool requests with the stub encoders (in memory)."""
    from toolrag.search.no_tool_bank import bank_decider
    from toolrag.search.query import QueryAnalyzer
    from toolrag.search.retriever import ToolRetriever

    index = StubIndex(catalog)
    return ToolRetriever(index, decider=bank_decider(QueryAnalyzer(index.models), folder=None),  # type: ignore[arg-type]
                         **kwargs)
