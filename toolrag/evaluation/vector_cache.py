"""Vectors of texts by (model fingerprint, text hash), in memory and optionally on disk.

The retrievability check encodes one leave-one-out document per example and text model; kept here, a second
check (or a second ``toolrag report`` process) encodes only the texts it has not seen. One ``.npz`` file per
model fingerprint, written atomically; an unreadable file only makes a slower run.
"""

from __future__ import annotations

import hashlib
import io
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from toolrag.errors import ToolragError
from toolrag.files import write_atomic
from toolrag.search.query import TEXT_READING

__all__ = ["VectorCache"]

log = logging.getLogger(__name__)

#: The newest entries kept per model when the cache is saved.
_CACHE_LIMIT = 200_000


class VectorCache:
    """Vectors by (model fingerprint, text hash), in memory and optionally in ``folder`` (one .npz per model)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._data: dict[str, dict[str, np.ndarray]] = {}
        self._dirty: set[str] = set()
        self._lock = threading.Lock()

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    def _file(self, fingerprint: str) -> Path | None:
        if self.folder is None:
            return None
        return self.folder / f"{hashlib.sha256(fingerprint.encode()).hexdigest()[:16]}.npz"

    def _table(self, fingerprint: str) -> dict[str, np.ndarray]:
        table = self._data.get(fingerprint)
        if table is None:
            table = {}
            file = self._file(fingerprint)
            if file is not None and file.is_file():
                try:
                    with np.load(file, allow_pickle=False) as npz:
                        table = dict(zip(npz["keys"].tolist(), npz["vectors"], strict=True))
                except (OSError, ValueError, KeyError) as exc:  # a damaged cache only makes a slower run
                    log.warning("ignoring the unreadable vector cache %s: %s", file, exc)
            self._data[fingerprint] = table
        return table

    def lookup(self, fingerprint: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors of ``texts`` (texts not cached are left out)."""
        with self._lock:
            table = self._table(fingerprint)
            return {t: table[k] for t in texts if (k := self.key(t)) in table}

    def store(self, fingerprint: str, vectors: dict[str, np.ndarray]) -> None:
        with self._lock:
            table = self._table(fingerprint)
            for text, vec in vectors.items():
                key = self.key(text)
                if key not in table:
                    table[key] = np.asarray(vec, dtype=np.float32)
                    self._dirty.add(fingerprint)

    def passages(self, model: Any, texts: Sequence[str]) -> tuple[dict[str, np.ndarray], int]:
        """The document vector of every text, encoding those not cached in batches of 32; and how many
        were encoded."""
        found = self.lookup(model.fingerprint, texts)
        todo = [t for t in dict.fromkeys(texts) if t not in found]
        for start in range(0, len(todo), 32):
            batch = todo[start:start + 32]
            new = dict(zip(batch, np.asarray(model.encode_passages(batch), dtype=np.float32), strict=True))
            self.store(model.fingerprint, new)
            found.update(new)
        return found, len(todo)

    def save(self) -> None:
        """Write the tables that changed (atomically; the newest ``_CACHE_LIMIT`` entries per model)."""
        if self.folder is None:
            return
        with self._lock:
            dirty, self._dirty = self._dirty, set()
            for fingerprint in dirty:
                table = self._data[fingerprint]
                keys = list(table)[-_CACHE_LIMIT:]
                file = self._file(fingerprint)
                if file is None or not keys:
                    continue
                try:
                    self.folder.mkdir(parents=True, exist_ok=True)
                    buffer = io.BytesIO()
                    np.savez(buffer, keys=np.array(keys), vectors=np.stack([table[k] for k in keys]))
                    write_atomic(file, buffer.getvalue())
                except (OSError, ToolragError) as exc:
                    log.warning("could not save the vector cache in %s: %s", self.folder, exc)


def prime_queries(retriever: Any, cache: VectorCache, queries: Sequence[str]) -> dict[tuple[str, str], np.ndarray]:
    """Every request's text vectors from ``cache`` or one batched encoding, keyed ``(kind, query)``; the
    retriever's query cache is primed with them, so the searches that follow encode nothing, and ``cache``
    keeps the new ones (per model fingerprint and text reading)."""
    kinds = {"dense": retriever.models.text, "dense_en": retriever.models.english}
    space = {kind: f"query|{model.fingerprint}|reading {TEXT_READING}" for kind, model in kinds.items()
             if model is not None}
    known = {(kind, q): v for kind, name in space.items() for q, v in cache.lookup(name, queries).items()}
    vectors: dict[tuple[str, str], np.ndarray] = retriever.analyzer.prime(queries, known=known)
    for kind, name in space.items():
        fresh = {q: v for (k, q), v in vectors.items() if k == kind and (k, q) not in known}
        if fresh:
            cache.store(name, fresh)
    return vectors
