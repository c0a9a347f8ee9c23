"""Fitting, storing and serving a catalog's decision model (:mod:`toolrag.search.decision_model`).

The model is keyed by the catalog (every tool's embedded and keyword text, deprecation, priority), the text
models' fingerprints, the fusion weights and the bundled no-tool requests; it is stored as JSON next to the
index (``<data dir>/decisions/<key>.json``, written atomically) and refitted when any of them changes. The
bundled no-tool requests are encoded once per model and cached beside the built models
(``$TOOLRAG_DATA_DIR/models/no-tool-requests/chat-<key>.npy``), so an index in a new data folder does not
encode them again.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np

from toolrag.config import data_dir
from toolrag.encode.models import ModelSet
from toolrag.errors import SettingsError, StoreError
from toolrag.files import write_atomic
from toolrag.index.snapshot import IndexSnapshot
from toolrag.index.tokenize import LEXICAL_VERSION
from toolrag.search import simulate
from toolrag.search.decision_model import (
    MODEL_VERSION,
    DecisionModel,
)
from toolrag.search.gloss import english_reading, gloss_key
from toolrag.search.model_fit import LabelledCase, fit_model
from toolrag.settings import Settings
from toolrag.text import is_mostly_cjk

__all__ = ["DecisionCalibrator"]

log = logging.getLogger(__name__)

#: Simulated requests' vectors kept per model for refits after an edit.
_VECTOR_CACHE = 20_000


class DecisionCalibrator:
    """The decision model of one retriever: fitted on first need, stored in ``folder`` (``None``: memory
    only), refitted when the catalog, the models or the fusion weights change. Thread-safe."""

    def __init__(self, models: ModelSet, *, folder: Path | None = None) -> None:
        self.models = models
        self.folder = folder
        self._lock = threading.RLock()
        self._model: DecisionModel | None = None
        self._chat: dict[str, np.ndarray] | None = None
        self._chat_texts: tuple[str, ...] | None = None
        self._chat_cjk: np.ndarray | None = None
        self._snapshot_keys: dict[int, tuple[IndexSnapshot, str]] = {}
        self._last_key: tuple[IndexSnapshot, str, str] | None = None
        self._vectors: dict[str, dict[str, np.ndarray]] = {}
        self._pending: threading.Thread | None = None
        self.last_fit_seconds = 0.0

    # ---------------------------------------------------------------------------------------------- keys
    def key(self, snap: IndexSnapshot, settings: Settings) -> str:
        """The model's key for a snapshot and settings (catalog, model fingerprints, weights, versions)."""
        weights = ",".join(f"{s}={settings.weights.get(s, 0.0):g}" for s in ("dense", "dense_en", "bm25"))
        last = self._last_key
        if last is not None and last[0] is snap and last[1] == weights:
            return last[2]
        cached = self._snapshot_keys.get(id(snap))
        if cached is not None and cached[0] is snap:
            catalog_key = cached[1]
        else:
            # One running hash over every tool's keyword text (which holds its id and whole embedded text, and
            # the text read in its example images) and the flags the model reads.
            digest = hashlib.sha256()
            texts = snap.bm25_texts or tuple(t.lexical_text() for t in snap.catalog.tools)
            columns = zip(snap.ids, texts, snap.deprecated.tolist(), snap.priority.tolist(), snap.english.tolist(),
                          strict=True)
            for tool_id, text, deprecated, priority, english in columns:
                digest.update(f"{tool_id}\0{deprecated}\0{priority}\0{english}\0{len(text)}\0{text}\0"
                              .encode("utf-8", "surrogatepass"))
            catalog_key = digest.hexdigest()
            self._snapshot_keys = {id(snap): (snap, catalog_key)}
        digest = hashlib.sha256(catalog_key.encode())
        english = self.models.english.fingerprint if self.models.english is not None else "-"
        digest.update(f"|{MODEL_VERSION}|{LEXICAL_VERSION}|{self.models.text.fingerprint}|{english}|{weights}|"
                      f"{self._chat_key()}|{gloss_key()}".encode())
        key = digest.hexdigest()[:32]
        self._last_key = (snap, weights, key)
        return key

    def _chat_key(self) -> str:
        return simulate.chat_key(self.chat_texts(), "")

    # ----------------------------------------------------------------------------------------- the model
    def current(self) -> DecisionModel | None:
        """The model in use now (``None`` before the first fit or load)."""
        return self._model

    def model_for(self, snap: IndexSnapshot, settings: Settings) -> DecisionModel:
        """The model of this snapshot: the one in memory, else the stored one, else a new fit (stored).

        While :meth:`refit_soon` refits after an edit, the previous model answers (one edited tool moves a
        catalog's calibration little), so a search never waits for the refit."""
        key = self.key(snap, settings)
        model = self._model
        if model is not None and model.key == key:
            return model
        pending = self._pending
        if model is not None and pending is not None and pending.is_alive():
            return model
        with self._lock:
            model = self._model
            if model is not None and model.key == key:
                return model
            model = self._load(key)
            if model is None:
                model = self.fit(snap, settings, key=key)
            self._model = model
            return model

    def refit_soon(self, snap: IndexSnapshot, settings: Settings) -> threading.Thread:
        """Bring the model up to ``snap`` in a background thread (after an edit: the edit returns at once and
        searches meanwhile use the previous model); :meth:`wait` joins it. Not a daemon thread: a process that
        ends right after an edit waits for the refit (which is then stored) instead of being torn down while the
        thread is inside the encoders' native code (that aborts the process: "terminate called without an
        active exception")."""
        thread = threading.Thread(target=self._refit_quietly, args=(snap, settings), name="toolrag-decisions")
        with self._lock:
            self._pending = thread
        thread.start()
        return thread

    def _refit_quietly(self, snap: IndexSnapshot, settings: Settings) -> None:
        try:
            with self._lock:  # one fit at a time; a later edit's refit waits for this one
                self._pending_fit(snap, settings)
        except Exception:  # a background thread must not die silently; the next search refits
            log.exception("refitting the decision model in the background failed; the next search refits it")

    def _pending_fit(self, snap: IndexSnapshot, settings: Settings) -> None:
        key = self.key(snap, settings)
        if self._model is not None and self._model.key == key:
            return
        model = self._load(key)
        self._model = model if model is not None else self.fit(snap, settings, key=key)

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a background refit (:meth:`refit_soon`) to finish."""
        pending = self._pending
        if pending is not None:
            pending.join(timeout)

    def fit(self, snap: IndexSnapshot, settings: Settings, *, key: str | None = None,
            labelled: Sequence[LabelledCase] = ()) -> DecisionModel:
        """Simulate, fit and store a model now (``labelled`` requests refine it); becomes the current one."""
        key = key or self.key(snap, settings)
        start = time.perf_counter()
        sim = self.simulation(snap, settings)
        model = fit_model(sim, key, labelled=labelled)
        self.last_fit_seconds = time.perf_counter() - start
        log.info("decision model fitted in %.1f s on %s", self.last_fit_seconds, dict(sim.counts))
        self._store(model)
        with self._lock:
            self._model = model
        return model

    def simulation(self, snap: IndexSnapshot, settings: Settings) -> simulate.Simulation:
        """The simulated requests of a snapshot, scored (see :mod:`toolrag.search.simulate`)."""
        encoders = {"dense": self._encoder("dense", self.models.text)}
        if self.models.english is not None and "dense_en" in snap.vectors:
            encoders["dense_en"] = self._encoder("dense_en", self.models.english)
        counter = _token_counter(self.models.text)
        chat = self.chat_vectors()
        return simulate.simulate(snap, encoders=encoders, token_count=counter, weights=dict(settings.weights),
                                 chat=self.chat_texts(), chat_vectors={k: chat[k] for k in encoders})

    def _encoder(self, signal: str, model: object) -> Callable[[Sequence[str]], np.ndarray]:
        """The model's query encoder behind a cache of the simulated requests' vectors: a refit after an edit
        encodes only the requests it has not seen."""
        cache = self._vectors.setdefault(signal, {})

        def encode(texts: Sequence[str]) -> np.ndarray:
            todo = list(dict.fromkeys(t for t in texts if t not in cache))
            if todo:
                vectors = np.asarray(model.encode_queries(todo), dtype=np.float32)  # type: ignore[attr-defined]
                if len(cache) + len(todo) > _VECTOR_CACHE:
                    cache.clear()
                cache.update(zip(todo, vectors, strict=True))
            return np.array([cache[t] for t in texts], dtype=np.float32)

        return encode

    # -------------------------------------------------------------------------------- no-tool requests
    def chat_texts(self) -> tuple[str, ...]:
        if self._chat_texts is None:
            self._chat_texts = simulate.chat_requests()
        return self._chat_texts

    def chat_cjk(self) -> np.ndarray:
        """Which bundled no-tool requests are mostly Chinese (bool, in :meth:`chat_texts` order)."""
        if self._chat_cjk is None:
            self._chat_cjk = np.array([is_mostly_cjk(t) for t in self.chat_texts()], dtype=bool)
        return self._chat_cjk

    def chat_vectors(self) -> dict[str, np.ndarray]:
        """The bundled no-tool requests' vectors per text signal (``dense_en`` rows of Chinese ones: NaN),
        encoded once per model and cached beside the built models."""
        if self._chat is not None:
            return self._chat
        with self._lock:
            if self._chat is None:
                texts = self.chat_texts()
                models = {"dense": self.models.text, "dense_en": self.models.english}
                jobs = {s: partial(self._chat_matrix, s, m) for s, m in models.items() if m is not None}
                # the two models side by side, as for the simulated requests
                self._chat = dict(zip(jobs, simulate.side_by_side([(job, texts) for job in jobs.values()]),
                                      strict=True))
        return self._chat

    def _chat_matrix(self, signal: str, encoder: object, texts: Sequence[str]) -> np.ndarray:
        fingerprint = str(getattr(encoder, "fingerprint", signal))
        if signal == "dense_en":  # its Chinese rows are glosses
            fingerprint += f"|{gloss_key()}"
        name = f"chat-{simulate.chat_key(texts, fingerprint)}.npy"
        file = _chat_folder(self.folder) / name if self.folder is not None else None  # None: memory only
        if file is not None and file.is_file():
            try:
                matrix = np.load(file, allow_pickle=False)
                if matrix.shape[0] == len(texts):
                    return matrix
            except (OSError, ValueError):
                log.warning("ignoring unreadable cache %s", file)
        read = [english_reading(t) if signal == "dense_en" else t for t in texts]  # a gloss, as in a search
        readable = [i for i, t in enumerate(read) if t]
        vectors = np.asarray(encoder.encode_queries([read[i] for i in readable]), dtype=np.float32)  # type: ignore[attr-defined]
        matrix = np.full((len(texts), vectors.shape[1]), np.nan, dtype=np.float32)
        matrix[readable] = vectors
        if file is not None:
            _save_npy(file, matrix)
        return matrix

    # ----------------------------------------------------------------------------------------- storage
    def _path(self, key: str) -> Path | None:
        return self.folder / f"{key}.json" if self.folder is not None else None

    def _load(self, key: str) -> DecisionModel | None:
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        try:
            model = DecisionModel.from_json(path.read_text(encoding="utf-8"))
        except OSError:
            return None
        return model if model is not None and model.key == key else None

    def _store(self, model: DecisionModel) -> None:
        path = self._path(model.key)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, model.to_json(), error=StoreError)
        except (OSError, StoreError) as exc:  # a read-only data folder: the model still works in memory
            log.warning("decision model not stored: %s", exc)


def _token_counter(encoder: object) -> Callable[[str], int]:
    """Tokens of a text under the encoder's tokenizer (words when it has none)."""
    tokenizer = getattr(getattr(encoder, "_model", None), "tokenizer", None)
    if tokenizer is None:
        return lambda text: max(1, len(text.split()))
    return lambda text: max(1, len(tokenizer(text, add_special_tokens=False)["input_ids"]))


def _chat_folder(own: Path) -> Path:
    """Where the no-tool requests' vectors are cached: beside the built models (they depend on the models and
    the bundled requests only, not on the catalog), else in the retriever's own folder ``own``."""
    try:
        return data_dir() / "models" / "no-tool-requests"
    except SettingsError:  # the shared data dir cannot be created: keep them with this index
        return own


def _save_npy(file: Path, matrix: np.ndarray) -> None:
    """np.save via a temp file and os.replace: a crash leaves the old file or none, never half a file."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        np.save(buffer, matrix, allow_pickle=False)
        fd, tmp = tempfile.mkstemp(prefix=f".{file.name}.", suffix=".tmp", dir=file.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(buffer.getvalue())
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, file)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    except OSError as exc:
        log.warning("cache %s not written: %s", file, exc)

