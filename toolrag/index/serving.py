"""The serving state of an index, persisted next to Chroma: a restart with an unchanged catalog reads nothing
back from Chroma and tokenises nothing.

Chroma stays the store of record. What serves searches - the vectors in catalog order, the BM25 arrays, the
English flags, the nearest-neighbour lists of large catalogs - is kept in memory and saved here as plain
numpy files (memory-mapped when read back). A saved state is used only when its fingerprint matches:

    sha256(format, catalog key, per collection (model fingerprint, Chroma generation), rows signature)

where the rows signature hashes, tool by tool in catalog order, everything the index derives from a profile
(id, embedded-text hash, lexical-text hash, filter fields, example images by content hash). The Chroma
generation is a random token in the collection's metadata that every writing sync replaces *before* its first
write, so a state saved before a write (or a crash in the middle of one) never matches again. Anything else -
a missing, partial, foreign or stale folder - is ignored and the index is rebuilt from Chroma as before.

A state is written into a fresh folder; ``current.json`` (replaced atomically) names the folder in use, so
readers see the old or the new state, never a mix.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from toolrag.catalog.profile import ToolProfile
from toolrag.errors import StoreError
from toolrag.files import write_atomic
from toolrag.index.tokenize import LEXICAL_VERSION

__all__ = ["SavedState", "ServingStore", "rows_signature", "state_fingerprint", "state_from_parts",
           "state_parts"]

log = logging.getLogger(__name__)

#: The saved state's layout; 2: the IVF lists keep their projection basis (toolrag.index.ann).
FORMAT = 2
_POINTER = "current.json"


def rows_signature(tools: Sequence[ToolProfile], image_ids: Mapping[str, Sequence[str]]) -> str:
    """Hash of everything the index derives from the profiles, in catalog order: each tool's keyword text
    (:meth:`ToolProfile.lexical_text` holds its id, category and the whole embedded text), permissions,
    flags and example images (``image_ids``: tool id -> its images' row ids, which carry the image content
    hash). One running hash over all of it: a hash object per tool cost 0.5 s at 100,000 tools."""
    h = hashlib.sha256()
    for t in tools:
        lexical = t.lexical_text()
        h.update(f"{t.id}\t{t.perm_key}\t{t.category}\t{t.deprecated}\t{t.mutation}\t{t.priority}\t"
                 f"{','.join(image_ids.get(t.id, ()))}\t{len(lexical)}\t{lexical}\n".encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def state_fingerprint(catalog_key: str, collections: Mapping[str, tuple[str, str]], signature: str) -> str:
    """``collections``: kind -> (model fingerprint, Chroma generation)."""
    blob = json.dumps({"format": FORMAT, "lexical": LEXICAL_VERSION, "catalog": catalog_key,
                       "collections": sorted(collections.items()),
                       "rows": signature}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True)
class SavedState:
    """What a saved state holds (arrays memory-mapped read-only when loaded)."""

    fingerprint: str
    ids: tuple[str, ...]
    vectors: dict[str, np.ndarray]              # tool collections: (n_tools, dim) in catalog order
    image_ids: tuple[str, ...]                  # example-image rows, in the snapshot's order
    image_vectors: dict[str, np.ndarray]        # image collections: (n_images, dim)
    ocr_texts: dict[str, str]                   # image id -> text read in it ("" when none)
    image_text: np.ndarray                      # vectors of the images with text, in image order
    english: np.ndarray
    bm25: dict[str, Any]                        # BM25Index.to_arrays()
    ann: dict[str, dict[str, np.ndarray]]       # kind -> IvfIndex.to_arrays() (large catalogs only)


def state_parts(state: SavedState) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """A state as named arrays and the JSON-ready values beside them: the one layout of a saved state, on disk
    (:class:`ServingStore`) and in a published index (:mod:`toolrag.index.published`)."""
    arrays: dict[str, np.ndarray] = {}
    for kind, matrix in (*state.vectors.items(), *state.image_vectors.items()):
        arrays[f"vec-{kind}"] = np.ascontiguousarray(matrix, dtype=np.float32)
    arrays["english"] = np.ascontiguousarray(state.english, dtype=bool)
    arrays["image-text"] = np.ascontiguousarray(state.image_text, dtype=np.float32)
    for key in ("terms", "docs", "tf", "lengths", "keys"):
        arrays[f"bm25-{key}"] = np.ascontiguousarray(state.bm25[key])
    for kind, parts in state.ann.items():
        for key, value in parts.items():
            arrays[f"ann-{kind}-{key}"] = np.ascontiguousarray(value)
    meta = {"format": FORMAT, "fingerprint": state.fingerprint, "n_tools": len(state.ids),
            "ids": list(state.ids), "tool_kinds": sorted(state.vectors),
            "image_kinds": sorted(state.image_vectors), "image_ids": list(state.image_ids),
            "ocr_texts": state.ocr_texts, "ann": {k: sorted(v) for k, v in state.ann.items()},
            "bm25": {"vocab": list(state.bm25["vocab"]), "k1": state.bm25["k1"], "b": state.bm25["b"]}}
    return arrays, meta


def state_from_parts(meta: Mapping[str, Any], arr: Callable[[str], np.ndarray]) -> SavedState:
    """The state :func:`state_parts` split (``arr(name)``: one of its arrays); ValueError when the parts disagree."""
    n = int(meta["n_tools"])
    ids = tuple(meta["ids"])
    vectors = {kind: arr(f"vec-{kind}") for kind in meta["tool_kinds"]}
    image_vectors = {kind: arr(f"vec-{kind}") for kind in meta["image_kinds"]}
    english = np.asarray(arr("english"), dtype=bool)
    if len(ids) != n or any(v.shape[0] != n for v in vectors.values()) or english.shape != (n,):
        raise ValueError("row counts disagree")
    image_ids = tuple(meta["image_ids"])
    if any(v.shape[0] != len(image_ids) for v in image_vectors.values()):
        raise ValueError("image row counts disagree")
    bm25: dict[str, Any] = {name: arr(f"bm25-{name}") for name in ("terms", "docs", "tf", "lengths", "keys")}
    bm25.update(vocab=meta["bm25"]["vocab"], k1=meta["bm25"]["k1"], b=meta["bm25"]["b"])
    ann = {kind: {name: arr(f"ann-{kind}-{name}") for name in names} for kind, names in meta["ann"].items()}
    return SavedState(fingerprint=meta["fingerprint"], ids=ids, vectors=vectors, image_ids=image_ids,
                      image_vectors=image_vectors, ocr_texts=dict(meta["ocr_texts"]),
                      image_text=arr("image-text"), english=english, bm25=bm25, ann=ann)


class ServingStore:
    """The folder of one index's saved states; saves may run in a background thread (one at a time)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._pending: Callable[[], SavedState | None] | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------------------------------- reading
    def load(self, fingerprint: str) -> SavedState | None:
        """The saved state when its fingerprint is ``fingerprint``; ``None`` (never an error) otherwise."""
        try:
            pointer = json.loads((self.folder / _POINTER).read_text(encoding="utf-8"))
            if pointer.get("format") != FORMAT or pointer.get("fingerprint") != fingerprint:
                return None
            state_dir = self.folder / str(pointer["folder"])
            meta = json.loads((state_dir / "state.json").read_text(encoding="utf-8"))
            if meta.get("fingerprint") != fingerprint:
                return None
            return self._read(state_dir, meta)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            if (self.folder / _POINTER).exists():
                log.warning("ignoring the saved serving state in %s (%s); rebuilding it from Chroma",
                            self.folder, exc)
            return None

    @staticmethod
    def _read(folder: Path, meta: dict[str, Any]) -> SavedState:
        # A plain read-only ndarray over the mapped file: np.memmap's indexing adds a few microseconds a call in
        # Python (gathering 150 rows: 22.7 against 19.4 us), several calls per search.
        return state_from_parts(meta, lambda name: np.load(folder / f"{name}.npy", mmap_mode="r",
                                                           allow_pickle=False).view(np.ndarray))

    # ------------------------------------------------------------------------------------------- writing
    def save(self, state: Callable[[], SavedState | None], *, background: bool = False) -> None:
        """Build the state (``state()``; ``None`` = nothing to save) and write it as the current one.
        ``background``: in a (non-daemon) thread, so an edit does not wait for it; a newer state replaces one
        still waiting. Errors are logged: the index works without a saved state, it only restarts slower."""
        with self._lock:
            self._pending = state
            if self._thread is not None and self._thread.is_alive():
                return
            if background:
                self._thread = threading.Thread(target=self._drain, name="toolrag-serving-save")
                self._thread.start()
                return
        self._drain()

    def invalidate(self) -> None:
        """Make the current state unusable at once (before the index changes under it)."""
        try:
            (self.folder / _POINTER).unlink(missing_ok=True)
        except OSError as exc:
            log.warning("cannot remove %s: %s", self.folder / _POINTER, exc)

    def wait(self) -> None:
        """Wait for a background save to finish."""
        thread = self._thread
        if thread is not None:
            thread.join()

    def _drain(self) -> None:
        while True:
            with self._lock:
                make, self._pending = self._pending, None
            if make is None:
                return
            try:
                state = make()
                if state is not None:
                    self._write(state)
            except (OSError, ValueError, StoreError) as exc:
                log.warning("could not save the serving state in %s (%s); the next start reads Chroma instead",
                            self.folder, exc)

    def _write(self, state: SavedState) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        name = f"state-{uuid.uuid4().hex[:12]}"
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=self.folder))
        try:
            arrays, meta = state_parts(state)
            for file, value in arrays.items():
                buffer = io.BytesIO()
                np.save(buffer, np.ascontiguousarray(value), allow_pickle=False)
                write_atomic(tmp / f"{file}.npy", buffer.getbuffer(), error=StoreError)
            write_atomic(tmp / "state.json", json.dumps(meta, ensure_ascii=False), error=StoreError)
            os.replace(tmp, self.folder / name)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        write_atomic(self.folder / _POINTER, json.dumps({"format": FORMAT, "fingerprint": state.fingerprint,
                                                          "folder": name}), error=StoreError)
        for old in self.folder.glob("state-*"):  # older states (a mapped file may outlive its name: fine)
            if old.name != name:
                shutil.rmtree(old, ignore_errors=True)
        for stale in self.folder.glob(".state-*.tmp-*"):  # left by a crash: an hour is long past any save
            with contextlib.suppress(OSError):
                if time.time() - stale.stat().st_mtime > 3600:
                    shutil.rmtree(stale, ignore_errors=True)
