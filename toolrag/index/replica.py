"""A replica's index: the version of a published index (:mod:`toolrag.index.published`) its manifest names,
loaded from the Chroma server and followed live.

A follower thread reads the manifest every ``poll`` seconds; a new version is read, checked and turned into an
:class:`~toolrag.index.snapshot.IndexSnapshot` beside the one in use, then swapped in with one assignment:
searches in flight finish on the snapshot they started with, the next ones see the new version. No catalog file
is needed. Edits go through a :class:`~toolrag.index.push.Pusher` (a replica started with the catalog's folder)
or are refused. While the server cannot be reached the loaded version keeps answering searches and
:meth:`ReplicaIndex.health` says not ready, with the reason; the follower retries and recovers by itself.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from toolrag.catalog.caller import Caller
from toolrag.catalog.profile import Catalog
from toolrag.catalog.wire import catalog_from_json
from toolrag.encode.models import ModelSet
from toolrag.errors import IncompatibleVersion, StoreError
from toolrag.index.client import StoreConfig, open_client
from toolrag.index.published import Manifest, PublishedIndex, unpack
from toolrag.index.push import Pusher, PushResult, catalog_key
from toolrag.index.restore import ANN_PROBES, state_snapshot, tool_columns
from toolrag.index.snapshot import IndexSnapshot
from toolrag.index.tool_index import collection_specs
from toolrag.progress import Progress

__all__ = ["Health", "IncompatibleVersion", "ReplicaIndex"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Health:
    """What ``/readyz`` says: ``ready`` once a version is loaded and the store answered the last read."""

    ready: bool
    index: str
    version: str | None
    serial: int
    tools: int
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ready": self.ready, "index": self.index, "version": self.version,
                               "serial": self.serial, "tools": self.tools}
        if self.reason:
            out["reason"] = self.reason
        return out


class ReplicaIndex:
    """The index of a replica (the interface of :class:`~toolrag.index.tool_index.ToolIndex` a retriever uses).

    ``on_swap(snapshot)`` runs right before a new version replaces the one in use (the retriever prepares what
    it derives from a snapshot)."""

    def __init__(self, url: str, name: str, models: ModelSet, *, pusher: Pusher | None = None, poll: float = 2.0,
                 on_swap: Callable[[IndexSnapshot], None] | None = None) -> None:
        self.url, self.name, self.models = url, name, models
        self.store_config = StoreConfig(url=url)
        self.pusher = pusher
        self.poll = poll
        self.on_swap = on_swap
        self.encoded_last_sync = 0
        #: What this process's last push did (``None``: it pushed nothing).
        self.last_push: PushResult | None = None
        self._published: PublishedIndex | None = pusher.published if pusher is not None else None
        self._snapshot: IndexSnapshot | None = None
        self._manifest = Manifest(name)
        self._problem: str | None = "not loaded yet"
        self._refused: tuple[str, str] | None = None  # a version this replica cannot serve, and why
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loaded = threading.Event()
        self._specs = {kind: name for kind, (name, _, _) in collection_specs(models, catalog_key(name)).items()}

    # ------------------------------------------------------------------------------------- the ToolIndex view
    @property
    def snapshot(self) -> IndexSnapshot:
        snapshot = self._snapshot
        if snapshot is None:
            raise StoreError(f"index {self.name!r} is not loaded yet ({self._problem}); the replica serves it once "
                             f"its manifest on {self.url} names a version")
        return snapshot

    @property
    def catalog(self) -> Catalog:
        return self.snapshot.catalog

    def update(self, catalog: Catalog, progress: Progress | None = None) -> int:
        """Push ``catalog`` as the next version and serve it; refused on a replica without the catalog's folder."""
        if self.pusher is None:
            raise StoreError(f"this replica serves index {self.name!r} read-only (no catalog folder): edit the "
                             "catalog's files and push them with `toolrag index --catalog DIR --index NAME`")
        if progress is not None:
            self.pusher.progress = progress
        with self._lock:
            self.adopt(self.pusher.push(catalog))
        return self.encoded_last_sync

    def adopt(self, result: PushResult) -> None:
        """Serve the version a push made (the built snapshot, else the version read from the store)."""
        self.encoded_last_sync = result.encoded
        self.last_push = result
        self._manifest = result.manifest
        current = self._snapshot
        if current is not None and current.version == result.version:
            return
        self._swap(result.snapshot if result.snapshot is not None else self.load(result.version))

    def query_rows(self, kind: str, vector: np.ndarray, *, k: int, mask: np.ndarray, caller: Caller,
                   snapshot: IndexSnapshot | None = None) -> np.ndarray:
        """The rows ``caller`` sees (``mask``) nearest to ``vector``: the version's nearest-neighbour lists
        (catalogs above the exact-scoring size have them), else an exact scan of the vectors in memory."""
        snap = snapshot if snapshot is not None else self.snapshot
        ann = snap.ann.get(kind)
        permitted = int(np.count_nonzero(mask))
        if ann is not None:
            probes = ANN_PROBES
            while True:
                rows = ann.search(vector, k=k, probes=probes, mask=None if permitted == len(mask) else mask)
                if len(rows) >= min(k, permitted) or probes >= len(ann.lists):
                    return rows
                probes *= 4
        matrix = snap.vectors.get(kind)
        if matrix is None or not permitted:
            return np.zeros(0, dtype=np.int64)
        scores = np.where(mask, matrix @ np.asarray(vector, dtype=matrix.dtype), -np.inf)
        top = np.argsort(-scores, kind="stable")[: min(k, permitted)]
        return top.astype(np.int64)

    # ----------------------------------------------------------------------------------------------- loading
    def published(self) -> PublishedIndex:
        """The store's view of the index (the client opened on first need, again after a failure)."""
        if self._published is None:
            self._published = PublishedIndex(open_client(self.store_config), self.name, where=self.url)
        return self._published

    def load(self, version: str) -> IndexSnapshot:
        """Read ``version`` from the store and build its snapshot (StoreError when it is not usable here)."""
        try:
            meta, state = unpack(self.published().read(version))
            catalog = catalog_from_json(meta["catalog"])
        except ValueError as exc:
            raise StoreError(f"index {self.name!r} version {version}: {exc}") from None
        if dict(meta.get("collections", {})) != self._specs:
            raise IncompatibleVersion(
                f"index {self.name!r} version {version} was built with other models or signals "
                f"({sorted(meta.get('collections', {}))}) than this replica loads ({sorted(self._specs)}): start "
                "the replica with the same --text-model, --english-model, --clip-model settings as the push")
        snapshot = state_snapshot(state, catalog, state.image_ids, kinds=self._specs, text_dim=self.models.text.dim,
                                  tool_arrays=lambda english: tool_columns(catalog.tools, english), version=version)
        if snapshot is None:
            raise StoreError(f"index {self.name!r} version {version}: its data does not match its tools")
        return snapshot

    def _swap(self, snapshot: IndexSnapshot) -> None:
        if self.on_swap is not None:
            self.on_swap(snapshot)
        self._snapshot = snapshot  # one assignment: a search holds the snapshot it started with
        self._problem = None
        self._loaded.set()
        log.info("index %s: serving version %s (%d tools)", self.name, snapshot.version, len(snapshot.ids))

    def poll_once(self) -> bool:
        """Read the manifest and load the version it names when it is new; True when the store answered."""
        try:
            manifest = self.published().manifest()
            current = self._snapshot
            if manifest.version is not None and (current is None or current.version != manifest.version):
                if self._refused is not None and self._refused[0] == manifest.version:
                    raise StoreError(self._refused[1])  # not read again until another version is pushed
                try:
                    snapshot = self.load(manifest.version)
                except IncompatibleVersion as exc:
                    self._refused = (manifest.version, str(exc))
                    raise
                with self._lock:
                    self._swap(snapshot)
            self._manifest = manifest
            if manifest.version is None:
                self._problem = (f"nothing was pushed to index {self.name!r} on {self.url} yet: push it with "
                                 "`toolrag index --catalog DIR --chroma-url URL --index NAME`")
            elif self._problem is not None:
                log.warning("index %s: the Chroma server at %s answers again", self.name, self.url)
                self._problem = None
            return True
        except StoreError as exc:
            if self._problem is None or self._problem == "not loaded yet":
                log.warning("index %s: %s (serving %s meanwhile; retrying every %g s)", self.name, exc,
                            f"version {self._snapshot.version}" if self._snapshot is not None else "nothing",
                            self.poll)
            self._problem = str(exc).splitlines()[0]
            self._published = None  # reopened (with its heartbeat check) on the next read
            return False

    def follow(self) -> threading.Thread:
        """Start the follower thread (a daemon: it only reads)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._follow, name=f"toolrag-follow-{self.name}", daemon=True)
            self._thread.start()
        return self._thread

    def _follow(self) -> None:
        while not self._stop.wait(self.poll):
            try:
                self.poll_once()
            except Exception:  # never let the follower die: the next poll tries again
                log.exception("index %s: following the manifest failed", self.name)

    def close(self) -> None:
        self._stop.set()

    def wait_loaded(self, timeout: float | None = None) -> bool:
        """Wait until a version is loaded (at most ``timeout`` seconds); True when one is."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._loaded.is_set():
            if not self.poll_once() or self._snapshot is None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._loaded.wait(min(self.poll, left) if left is not None else self.poll)
        return True

    def health(self) -> Health:
        snapshot, manifest = self._snapshot, self._manifest
        ready = snapshot is not None and self._problem is None
        return Health(ready, self.name, snapshot.version if snapshot is not None else None,
                      manifest.serial, len(snapshot.ids) if snapshot is not None else 0, self._problem)
