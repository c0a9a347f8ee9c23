"""Fitting, storing and serving a catalog's decision model (:mod:`toolrag.search.decision_model`).

The model is keyed by the catalog (every tool's embedded and keyword text, deprecation, priority), the text
models' fingerprints, the fusion weights and the bundled no-tool requests; it is stored as JSON next to the
index (``<data dir>/decisions/<key>.json``, written atomically) and refitted when any of them changes. The
bundled no-tool requests are encoded once per model and cached there too (``chat-<key>.npy``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import math
import os
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from toolrag.encode.models import ModelSet
from toolrag.errors import StoreError
from toolrag.files import write_atomic
from toolrag.index.snapshot import IndexSnapshot
from toolrag.search import simulate
from toolrag.search.decision_model import (
    MODEL_VERSION,
    DecisionModel,
    class_weights,
    fit_logistic,
    predict_logistic,
    standardisation,
)
from toolrag.search.features import FEATURES
from toolrag.settings import Settings
from toolrag.text import is_mostly_cjk

__all__ = ["DecisionCalibrator", "LabelledCase", "fit_model"]

log = logging.getLogger(__name__)

#: Weight of a "tool removed" case relative to the other NO_TOOL cases: the nearest remaining tool is often
#: a sibling that a real request for the removed tool would reasonably be asked about.
REMOVED_WEIGHT = 0.25
#: L2 penalty of the decision and right-tool models (standardised features).
L2 = 10.0
#: Weight of one labelled request against one simulated request when a catalog owner refines the model.
LABEL_WEIGHT = 4.0
#: Shares of the simulated EXECUTE requests the operating point may turn away: asked about for looking
#: ambiguous, and not called for a low P(right) (the execute floor).
CLARIFY_SHARE = 0.04
FLOOR_SHARE = 0.02
#: Share of the simulated two-tool requests completed by the top five that the selection must complete too.
SELECTION_KEEP = 0.92
#: Features the "a tool fits" model does not read, because in the simulation their link to the class comes from
#: how the cases are made, not from the catalog: on a catalog without Chinese text every Chinese case is a
#: bundled no-tool request (the model would learn "Chinese means no tool"), and a pseudo-request keeps few of
#: its description's words and adds names no tool knows (so word coverage says little there, while real
#: requests that need a tool cover many catalog words). The ambiguity and right-tool models still read them.
TOOL_SKIPS = ("cjk", "cover", "cover2", "unknown")
#: Folds of the cross-fitting that gives held-out probabilities of the simulated requests.
FOLDS = 5
#: Simulated requests' vectors kept per model for refits after an edit.
_VECTOR_CACHE = 20_000


class LabelledCase:
    """A labelled request's features, the class it should get and whether its top tool was a right one."""

    __slots__ = ("features", "label", "right")

    def __init__(self, features: np.ndarray, label: int, right: bool) -> None:
        self.features, self.label, self.right = np.asarray(features, dtype=np.float64), int(label), bool(right)


def fit_model(sim: simulate.Simulation, key: str, *, labelled: Sequence[LabelledCase] = ()) -> DecisionModel:
    """Fit the models on simulated (and labelled) requests and choose the operating point.

    * tool model: every case, "a tool fits" (EXECUTE, CLARIFY) against NO_TOOL, the two balanced, "tool
      removed" cases at :data:`REMOVED_WEIGHT`; NO_TOOL from P(no tool) >= 0.5.
    * ambiguous model: the cases a tool fits, CLARIFY against EXECUTE, balanced; its threshold lets at most
      :data:`CLARIFY_SHARE` of the simulated EXECUTE cases be asked about (held out by cross-fitting).
    * right model: the cases a tool fits, top tool right or not, unweighted (the simulated rate); the execute
      floor lets at most :data:`FLOOR_SHARE` of the simulated EXECUTE cases be asked about for it.
    * selection model: lower candidates of EXECUTE cases, a right tool or not; threshold 0.5.
    Labelled rows count :data:`LABEL_WEIGHT` times a simulated one.
    """
    start = time.perf_counter()
    kinds = np.array(sim.kinds + ("labelled",) * len(labelled))
    x = np.concatenate([sim.features, np.array([c.features for c in labelled]).reshape(-1, len(FEATURES))])
    y = np.concatenate([sim.label, np.array([c.label for c in labelled], dtype=np.int64)])
    right = np.concatenate([sim.right, np.array([c.right for c in labelled], dtype=bool)])
    mean, scale = standardisation(x)
    z = (np.where(np.isnan(x), mean, x) - mean) / scale
    extra = np.where(kinds == "removed", REMOVED_WEIGHT, 1.0) * np.where(kinds == "labelled", LABEL_WEIGHT, 1.0)
    models = _fit_models(z, y, right, extra)
    if len(sim.selection_y) and 0 < sim.selection_y.sum() < len(sim.selection_y):
        select_coef, select_intercept = fit_logistic(sim.selection_x, 1 - sim.selection_y, 2, l2=0.1)
        select_threshold = _select_threshold(sim, select_coef, select_intercept)
    else:  # nothing to learn from: inject the top tool only
        select_coef, select_intercept = np.zeros((1, sim.selection_x.shape[1])), np.array([-10.0])
        select_threshold = 0.5
    # Held-out probabilities (cross-fitting) for the operating point and the reliability curve.
    held = np.zeros((len(y), 3))  # right, ambiguous, no tool
    folds = np.arange(len(y)) % FOLDS
    for fold in range(FOLDS):
        train, test = folds != fold, folds == fold
        held[test] = np.stack(_probabilities(_fit_models(z[train], y[train], right[train], extra[train]),
                                             z[test]), axis=1)
    clear = (y == simulate.EXECUTE) & (held[:, 2] < 0.5)
    ambiguous_threshold = float(np.quantile(held[clear, 1], 1 - CLARIFY_SHARE)) if clear.any() else 0.5
    called = clear & (held[:, 1] < ambiguous_threshold)
    floor = float(np.quantile(held[called, 0], FLOOR_SHARE)) if called.any() else 0.0
    wants = y != simulate.NO_TOOL
    ok = wants & right & np.isin(kinds, ("example", "description"))
    reference = {
        "example_cosine": float(np.median(x[ok, FEATURES.index("sem_top_raw")])) if ok.any() else math.nan,
        "chat_sim": float(np.nanmedian(x[kinds == "no_tool", FEATURES.index("chat_sim")]))
        if (kinds == "no_tool").any() else math.nan,
    }
    decided = np.where(held[:, 2] >= 0.5, simulate.NO_TOOL,
                       np.where(held[:, 1] >= ambiguous_threshold, simulate.CLARIFY, simulate.EXECUTE))
    summary = {
        "cases": {str(k): int((kinds == k).sum()) for k in dict.fromkeys(kinds.tolist())},
        "heldout_accuracy": round(float((decided == y).mean()), 4),
        "labelled": len(labelled),
        "fit_seconds": round(time.perf_counter() - start, 3),
        # held-out P(right) and whether the top tool was right, for the requests a tool fits
        "heldout_right": [[round(float(p), 3), int(r)] for p, r in zip(held[wants, 0], right[wants], strict=True)],
    }
    (tool_coef, tool_b), (amb_coef, amb_b), (right_coef, right_b) = models
    return DecisionModel(
        key=key, mean=mean, scale=scale, tool_coef=tool_coef, tool_intercept=tool_b, ambiguous_coef=amb_coef,
        ambiguous_intercept=amb_b, right_coef=right_coef, right_intercept=right_b, select_coef=select_coef,
        select_intercept=select_intercept, select_threshold=select_threshold, no_tool_threshold=0.5,
        ambiguous_threshold=ambiguous_threshold, execute_floor=floor,
        reference={k: v for k, v in reference.items() if math.isfinite(v)}, summary=summary)


Pair = tuple[np.ndarray, np.ndarray]


def _select_threshold(sim: simulate.Simulation, coef: np.ndarray, intercept: np.ndarray) -> float:
    """The highest threshold on P(also a right tool) whose selection still completes at least
    :data:`SELECTION_KEEP` of the simulated two-tool requests that the top five complete.

    Selection of a case = the top tool plus candidates 2, 3, ... while their probability reaches the threshold;
    complete = every right tool selected.
    """
    if not len(sim.selection_case):
        return 0.5
    probs = predict_logistic(coef, intercept, sim.selection_x)[:, 0]
    pairs = [c for c in np.unique(sim.selection_case) if sim.kinds[c] == "pair"]
    rows = {c: np.flatnonzero(sim.selection_case == c) for c in pairs}
    complete_top = [c for c in pairs if (sim.selection_y[rows[c]].sum() >= 1 and sim.right[c])
                    or sim.selection_y[rows[c]].sum() >= 2]
    if not complete_top:
        return 0.5
    for threshold in np.linspace(0.9, 0.05, 18):
        done = 0
        for c in complete_top:
            chosen = 1
            for p in probs[rows[c]]:
                if p < threshold:
                    break
                chosen += 1
            needed = np.flatnonzero(sim.selection_y[rows[c]])
            done += int(not len(needed) or needed.max() + 2 <= chosen)
        if done >= SELECTION_KEEP * len(complete_top):
            return float(threshold)
    return 0.05


def _fit_models(z: np.ndarray, y: np.ndarray, right: np.ndarray, extra: np.ndarray) -> tuple[Pair, Pair, Pair]:
    """(tool, ambiguous, right) logistic models; class 0 is the event each one names.

    The tool model does not read :data:`TOOL_SKIPS` (their columns are zeroed, so their coefficients are
    exactly 0)."""
    fits = np.where(y == simulate.NO_TOOL, 1, 0)
    skipped = [FEATURES.index(f) for f in TOOL_SKIPS]
    z_tool = z.copy()
    z_tool[:, skipped] = 0.0
    tool = fit_logistic(z_tool, fits, 2, weights=class_weights(fits, 2) * extra, l2=L2)
    wants = y != simulate.NO_TOOL
    amb = np.where(y[wants] == simulate.CLARIFY, 0, 1)
    if 0 < amb.sum() < len(amb):
        ambiguous = fit_logistic(z[wants], amb, 2, weights=class_weights(amb, 2) * extra[wants], l2=L2)
    else:
        ambiguous = (np.zeros((1, z.shape[1])), np.array([-10.0]))
    good = np.where(right[wants], 0, 1)
    if 0 < good.sum() < len(good):
        right_model = fit_logistic(z[wants], good, 2, weights=extra[wants], l2=L2)
    else:
        right_model = (np.zeros((1, z.shape[1])), np.array([10.0 if good.sum() == 0 else -10.0]))
    return tool, ambiguous, right_model


def _probabilities(models: tuple[Pair, Pair, Pair], z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P(right), P(ambiguous), P(no tool)) of each row, as :meth:`DecisionModel.probabilities`."""
    (tc, tb), (ac, ab), (rc, rb) = models
    fits = predict_logistic(tc, tb, z)[:, 0]
    return fits * predict_logistic(rc, rb, z)[:, 0], fits * predict_logistic(ac, ab, z)[:, 0], 1.0 - fits


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
            digest = hashlib.sha256()
            for row, tool in enumerate(snap.catalog.tools):
                lexical = snap.bm25_texts[row] if snap.bm25_texts else tool.lexical_text()
                digest.update(f"{tool.id}\0{tool.text_hash()}\0{bool(snap.deprecated[row])}\0"
                              f"{int(snap.priority[row])}\0{bool(snap.english[row])}\0".encode())
                digest.update(hashlib.sha256(lexical.encode("utf-8", "surrogatepass")).digest())
            catalog_key = digest.hexdigest()
            self._snapshot_keys = {id(snap): (snap, catalog_key)}
        digest = hashlib.sha256(catalog_key.encode())
        english = self.models.english.fingerprint if self.models.english is not None else "-"
        digest.update(f"|{MODEL_VERSION}|{self.models.text.fingerprint}|{english}|{weights}|"
                      f"{self._chat_key()}".encode())
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
        searches meanwhile use the previous model); :meth:`wait` joins it."""
        thread = threading.Thread(target=self._refit_quietly, args=(snap, settings), name="toolrag-decisions",
                                  daemon=True)
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

    def chat_vectors(self) -> dict[str, np.ndarray]:
        """The bundled no-tool requests' vectors per text signal (``dense_en`` rows of Chinese ones: NaN),
        encoded once per model and cached in the data folder."""
        if self._chat is not None:
            return self._chat
        with self._lock:
            if self._chat is None:
                texts = self.chat_texts()
                out = {"dense": self._chat_matrix("dense", self.models.text, texts)}
                if self.models.english is not None:
                    out["dense_en"] = self._chat_matrix("dense_en", self.models.english, texts)
                self._chat = out
        return self._chat

    def _chat_matrix(self, signal: str, encoder: object, texts: Sequence[str]) -> np.ndarray:
        fingerprint = str(getattr(encoder, "fingerprint", signal))
        file = self.folder / f"chat-{simulate.chat_key(texts, fingerprint)}.npy" if self.folder else None
        if file is not None and file.is_file():
            try:
                matrix = np.load(file, allow_pickle=False)
                if matrix.shape[0] == len(texts):
                    return matrix
            except (OSError, ValueError):
                log.warning("ignoring unreadable cache %s", file)
        readable = [i for i, t in enumerate(texts) if signal != "dense_en" or not is_mostly_cjk(t)]
        vectors = np.asarray(encoder.encode_queries([texts[i] for i in readable]), dtype=np.float32)  # type: ignore[attr-defined]
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

