"""Query analysis (encode once, cached) and the per-signal raw scores of candidate tools.

Each signal gives a raw score per candidate and a presence mask; a signal that cannot run for a query (no
image, model unavailable, Chinese query for the English model) or for a tool (no example images) is absent,
never scored as zero. Fusion normalises; signals never do.

| signal | query side | tool side | raw score |
|---|---|---|---|
| dense | text (+ earlier turns) by the multilingual model | tool document | cosine |
| dense_en | text by the English model (skipped for CJK queries) | document of English tools | cosine |
| bm25 | text tokens (+ OCR text tokens) | lexical text incl. parameters | Okapi BM25 |
| ocr | text read from the image, multilingual model | tool document | cosine |
| concepts | top ImageNet labels of the image as text | tool document | cosine |
| visual | EfficientNet features of the image | tool example images | max cosine |
| clip | CLIP text and image embeddings | tool images and texts | mean of the two directions |
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from toolrag.index import IndexSnapshot, ModelSet, is_mostly_cjk
from toolrag.settings import Settings

__all__ = ["QueryAnalyzer", "QueryFeatures", "SignalScores", "score_signals"]

log = logging.getLogger(__name__)
MAX_QUERY_CHARS = 4000
_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class QueryFeatures:
    """Everything derived from one request; cached, so re-ranking with other weights encodes nothing."""

    text: str
    history: tuple[str, ...]
    cjk: bool
    vectors: dict[str, np.ndarray]
    ocr_text: str = ""
    concepts: tuple[tuple[str, float], ...] = ()
    image_given: bool = False
    absent: dict[str, str] = field(default_factory=dict)
    timing_ms: dict[str, float] = field(default_factory=dict)


class _LRU:
    def __init__(self, size: int) -> None:
        self._data: OrderedDict[Any, Any] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
            return None

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._size:
                self._data.popitem(last=False)


class QueryAnalyzer:
    """Encodes queries with every available model, caching text vectors and image analyses."""

    def __init__(self, models: ModelSet, *, cache_size: int = 512) -> None:
        self.models = models
        self._texts = _LRU(cache_size)
        self._images = _LRU(64)
        self._lock = threading.Lock()

    def analyze(self, query: str, *, image: Any = None, history: Sequence[str] = (),
                settings: Settings) -> QueryFeatures:
        timing: dict[str, float] = {}
        text = _WS.sub(" ", query).strip()[:MAX_QUERY_CHARS]
        turns = tuple(_WS.sub(" ", h).strip()[:MAX_QUERY_CHARS] for h in history if h and h.strip())[-3:]
        absent: dict[str, str] = {}
        vectors: dict[str, np.ndarray] = {}
        cjk = is_mostly_cjk(" ".join((text, *turns)))
        start = time.perf_counter()
        if text or turns:
            vectors["dense"] = self._text_vector("dense", self.models.text, text, turns, settings)
            if self.models.english is None:
                absent["dense_en"] = self.models.unavailable.get("dense_en", "English model turned off")
            elif cjk:
                absent["dense_en"] = "the English model does not read Chinese queries"
            else:
                vectors["dense_en"] = self._text_vector("dense_en", self.models.english, text, turns, settings)
            if self.models.clip is not None:
                vectors["clip_text"] = self._clip_text(text or " ".join(turns))
        else:
            for name in ("dense", "dense_en", "bm25"):
                absent[name] = "no query text given"
        timing["encode_text"] = (time.perf_counter() - start) * 1000
        ocr_text: str = ""
        concepts: list[tuple[str, float]] = []
        if image is not None:
            start = time.perf_counter()
            ocr_text, concepts, image_vectors = self._analyze_image(image, absent)
            vectors.update(image_vectors)
            timing["encode_image"] = (time.perf_counter() - start) * 1000
        else:
            for name in ("ocr", "visual", "concepts"):
                absent[name] = "no image given"
            if self.models.clip is None:
                absent["clip"] = self.models.unavailable.get("clip", "CLIP is off")
        if self.models.clip is None and "clip" not in absent:
            absent["clip"] = self.models.unavailable.get("clip", "CLIP is off")
        return QueryFeatures(text, turns, cjk, vectors, ocr_text, tuple(concepts), image is not None, absent,
                             timing)

    # ----------------------------------------------------------------------------------------- internals

    def _text_vector(self, kind: str, model: Any, text: str, turns: tuple[str, ...],
                     settings: Settings) -> np.ndarray:
        own = self._encode(kind, model, text) if text else None
        if not turns:
            return own  # type: ignore[return-value]
        past = self._encode(kind, model, " ".join(turns))
        if own is None:
            return past
        mixed = (1.0 - settings.history_weight) * own + settings.history_weight * past
        return (mixed / np.linalg.norm(mixed)).astype(np.float32)

    def _encode(self, kind: str, model: Any, text: str) -> np.ndarray:
        key = (kind, text)
        vec = self._texts.get(key)
        if vec is None:
            vec = np.asarray(model.encode_queries([text])[0], dtype=np.float32)
            self._texts.put(key, vec)
        return vec

    def _clip_text(self, text: str) -> np.ndarray:
        key = ("clip", text)
        vec = self._texts.get(key)
        if vec is None:
            vec = np.asarray(self.models.clip.encode_texts([text])[0], dtype=np.float32)  # type: ignore[union-attr]
            self._texts.put(key, vec)
        return vec

    def _analyze_image(self, image: Any, absent: dict[str, str]) -> tuple[str, list[Any], dict[str, np.ndarray]]:
        from toolrag.encoders import load_image

        img = load_image(image)
        key = hashlib.sha256(img.tobytes()).hexdigest() + str(img.size)
        cached = self._images.get(key)
        if cached is None:
            ocr_text = ""
            concepts: list[tuple[str, float]] = []
            vecs: dict[str, np.ndarray] = {}
            notes: dict[str, str] = {}
            ocr = self.models.get_ocr()
            if ocr is not None:
                ocr_text = ocr.read(img).text.strip()
                if ocr_text:
                    vecs["ocr"] = self._encode("dense", self.models.text, ocr_text[:MAX_QUERY_CHARS])
                else:
                    notes["ocr"] = "no text found in the image"
            else:
                notes["ocr"] = self.models.unavailable.get("ocr", "OCR turned off")
            if self.models.image is not None:
                feature, concepts = self.models.image.analyze(img)
                vecs["visual"] = np.asarray(feature, dtype=np.float32)
                phrase = ", ".join(label for label, _ in concepts)
                vecs["concepts"] = self._encode("dense", self.models.text, f"a photo of {phrase}")
            else:
                for name in ("visual", "concepts"):
                    notes[name] = self.models.unavailable.get("image", "image model unavailable")
            if self.models.clip is not None:
                vecs["clip_image"] = np.asarray(self.models.clip.encode_images([img])[0], dtype=np.float32)
            cached = (ocr_text, concepts, vecs, notes)
            self._images.put(key, cached)
        ocr_text, concepts, vecs, notes = cached
        absent.update(notes)
        if ocr_text:  # BM25 reads the text found in the image even when no query text was typed
            absent.pop("bm25", None)
        return ocr_text, list(concepts), dict(vecs)


@dataclass(frozen=True)
class SignalScores:
    """Raw scores of the candidate rows for each signal that ran, with per-candidate presence."""

    raw: dict[str, np.ndarray]
    present: dict[str, np.ndarray]


def score_signals(snap: IndexSnapshot, rows: np.ndarray, q: QueryFeatures, *,
                  history_weight: float) -> SignalScores:
    """Exact raw scores of every signal for the candidate ``rows`` (indices into the snapshot)."""
    raw: dict[str, np.ndarray] = {}
    present: dict[str, np.ndarray] = {}
    n = len(rows)
    everyone = np.ones(n, dtype=bool)
    # Most of the catalog (the exact path): one product over the whole matrix, then pick the rows; picking
    # the rows first would copy the matrix (15 MB at 10,000 tools) for every signal.
    whole = n > len(snap.ids) // 4
    for name, space in (("dense", "dense"), ("ocr", "dense"), ("concepts", "dense"), ("dense_en", "dense_en")):
        if name in q.vectors and space in snap.vectors:
            matrix = snap.vectors[space]
            raw[name] = (matrix @ q.vectors[name])[rows] if whole else matrix[rows] @ q.vectors[name]
            present[name] = snap.english[rows].copy() if name == "dense_en" else everyone
    if "ocr" in raw and len(snap.image_text_owner):
        # Text read in the query image also matches text read in the tools' example images (a receipt
        # looks like a receipt): the best of the two similarities counts.
        best = np.full(len(snap.ids), -np.inf, dtype=np.float32)
        np.maximum.at(best, snap.image_text_owner, (snap.image_text @ q.vectors["ocr"]).astype(np.float32))
        raw["ocr"] = np.maximum(raw["ocr"], best[rows])
    lexical = " ".join(t for t in (q.text, q.ocr_text) if t)
    if lexical or q.history:
        scores = snap.bm25.scores(lexical)[rows] if lexical else np.zeros(n, dtype=np.float32)
        if q.history:
            past = snap.bm25.scores(" ".join(q.history))[rows]
            scores = (1.0 - history_weight) * scores + history_weight * past if lexical else past
        raw["bm25"], present["bm25"] = scores.astype(np.float32), everyone
    if "visual" in q.vectors and "visual" in snap.image_vectors:
        raw["visual"], present["visual"] = _per_tool_max(snap, rows, "visual", q.vectors["visual"])
    parts = []
    if "clip_text" in q.vectors and "clip_image" in snap.image_vectors:
        parts.append(_per_tool_max(snap, rows, "clip_image", q.vectors["clip_text"]))
    if "clip_image" in q.vectors and "clip_text" in snap.vectors:
        clip_text = snap.vectors["clip_text"]
        sims = (clip_text @ q.vectors["clip_image"])[rows] if whole else clip_text[rows] @ q.vectors["clip_image"]
        parts.append((sims, everyone))
    if parts:
        total = np.sum([np.where(p, s, 0.0) for s, p in parts], axis=0)
        count = np.sum([p.astype(np.float32) for _, p in parts], axis=0)
        present["clip"] = np.asarray(count > 0)
        raw["clip"] = np.where(count > 0, total / np.maximum(count, 1), 0.0).astype(np.float32)
    return SignalScores(raw, present)


def _per_tool_max(snap: IndexSnapshot, rows: np.ndarray, kind: str, vector: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Max cosine over each candidate tool's example images; absent for tools without images."""
    n_tools = len(snap.ids)
    best = np.full(n_tools, -np.inf, dtype=np.float32)
    if len(snap.image_owner):
        sims = snap.image_vectors[kind] @ vector
        np.maximum.at(best, snap.image_owner, sims.astype(np.float32))
    picked = best[rows]
    has = np.isfinite(picked)
    return np.where(has, picked, 0.0).astype(np.float32), has
