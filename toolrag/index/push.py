"""Pushing a catalog as a version of a published index (:mod:`toolrag.index.published`): built once, by the
process that holds the version's lease, and flipped to only once written completely.

A process with the catalog's folder (``toolrag index --index NAME``, or a replica started with ``--catalog``)
computes the version its folder makes; when the manifest already names it, nothing happens. Otherwise it takes the
version's lease and builds: a :class:`~toolrag.index.tool_index.ToolIndex` over the server's collections (named
after the index, so every machine shares one set of vectors and a finished part of a killed build is not encoded
again), the version's data written, the manifest flipped. A process that finds the lease held waits for the
holder; when the holder dies its lease expires and the waiter finishes the build.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolrag.catalog.profile import Catalog
from toolrag.catalog.wire import catalog_to_json
from toolrag.config import seconds_setting
from toolrag.encode.models import ModelSet
from toolrag.env_vars import INDEX_LEASE_ENV
from toolrag.errors import StoreError
from toolrag.index.client import StoreConfig, open_client
from toolrag.index.held import HeldVectors, kept_contents
from toolrag.index.published import (
    Manifest,
    PublishedIndex,
    owner_id,
    pack,
    version_contents,
    version_of,
)
from toolrag.index.snapshot import IndexSnapshot
from toolrag.index.tool_index import ToolIndex, collection_specs
from toolrag.progress import Progress, no_progress

__all__ = ["PushResult", "Pusher", "catalog_key", "open_pusher"]

log = logging.getLogger(__name__)


def catalog_key(index: str) -> str:
    """What the vector collections of a published index are named after (not a folder: every machine shares them)."""
    return f"index:{index}"


@dataclass(frozen=True)
class PushResult:
    """What a push did: the ``version`` the folder makes, whether this process ``built`` it (encoded, wrote the
    data) and whether it ``flipped`` the manifest to it; ``snapshot``: the built index (``None`` when another
    process built it: read it from the store); ``encoded``: texts and images encoded here."""

    version: str
    built: bool
    flipped: bool
    manifest: Manifest
    snapshot: IndexSnapshot | None = None
    encoded: int = 0


class Pusher:
    """Pushes one catalog folder's state under an index name (one per process; its index is kept for the next
    push, so an edit re-encodes only what changed)."""

    def __init__(self, published: PublishedIndex, models: ModelSet, store: StoreConfig, *, ttl: float,
                 poll: float = 1.0, progress: Progress | None = None) -> None:
        self.published, self.models, self.store = published, models, store
        self.ttl, self.poll = ttl, poll
        self.progress = progress or no_progress
        self.owner = owner_id()
        self._index: ToolIndex | None = None
        self._hashes: dict[tuple[str, int, int], str] = {}

    def version(self, catalog: Catalog) -> tuple[str, dict[str, Any], dict[str, str]]:
        """The version ``catalog`` makes with these models, its catalog JSON and its collections (kind -> name)."""
        catalog_json = catalog_to_json(catalog)
        image_ids = [f"{t.id}#{self._content_hash(img.file)}" for t in catalog.tools for img in t.images]
        specs = {kind: name for kind, (name, _, _) in
                 collection_specs(self.models, catalog_key(self.published.name)).items()}
        return version_of(catalog_json, image_ids, specs), catalog_json, specs

    def _content_hash(self, path: Any) -> str:
        """The first 16 hex digits of an image file's SHA-256 (as the index names image rows)."""
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        if key not in self._hashes:
            self._hashes[key] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        return self._hashes[key]

    def push(self, catalog: Catalog, *, wait: float | None = None) -> PushResult:
        """Make the manifest name the version ``catalog`` makes: nothing when it does already, else build and
        flip (or wait for the process building it). ``wait``: seconds to wait for another builder (default: ten
        leases) before a StoreError."""
        version, catalog_json, specs = self.version(catalog)
        published = self.published
        deadline = time.monotonic() + (wait if wait is not None else 10 * self.ttl)
        waited = False
        while True:
            manifest = published.manifest()
            if manifest.version == version:
                return PushResult(version, built=False, flipped=False, manifest=manifest)
            if waited and version in manifest.kept:  # built by another process, since replaced by a newer push
                return PushResult(version, built=False, flipped=False, manifest=manifest)
            lease = published.acquire(version, owner=self.owner, ttl=self.ttl)
            if lease is not None:
                with lease:
                    if published.complete(version):  # written by a build that stopped before its flip
                        return PushResult(version, built=False, flipped=True,
                                          manifest=published.flip(version, tools=len(catalog)))
                    return self._build(catalog, version, catalog_json, specs, lease, manifest)
            holder = published.lease_holder(version)
            if not waited and holder is not None:
                log.info("index %s: version %s is being built by %s; waiting for it", published.name, version,
                         holder[0])
            waited = True
            if time.monotonic() > deadline:
                raise StoreError(f"index {published.name!r}: version {version} is still being built by "
                                 f"{holder[0] if holder else 'another process'}; try again later")
            time.sleep(self.poll)

    def _build(self, catalog: Catalog, version: str, catalog_json: dict[str, Any], specs: dict[str, str],
               lease: Any, manifest: Manifest) -> PushResult:
        published = self.published
        self.progress(0.0, f"building version {version} of index {published.name}")
        # What the kept versions hold: a vector this build replaces is kept (held) while one of them holds its
        # content (the oldest one's too: the build may fail before its flip; the flip's collection drops it).
        records = self._records(manifest.kept, strict=False)
        held = HeldVectors(published.client, collection_specs(self.models, catalog_key(published.name)),
                           kept_contents(records.values(), specs))
        if self._index is None:
            self._index = ToolIndex(catalog, self.models, store=self.store, progress=self.progress,
                                    catalog_key=catalog_key(published.name), held=held)
            encoded = self._index.encoded_last_sync
        else:
            encoded = self._index.update(catalog, self.progress, held=held)
        lease.check()
        blob = pack(name=published.name, version=version, catalog_json=catalog_json, state=self._index.state(),
                    collections=specs)
        contents = version_contents(specs, (t.text_hash() for t in catalog.tools),
                                    (self._content_hash(img.file) for t in catalog.tools for img in t.images))
        lease.check()
        published.write(version, blob, contents=contents)
        lease.check()
        manifest = published.flip(version, tools=len(catalog))
        collected = self._collect(held, manifest, {**records, version: contents}, specs)
        log.info("index %s: version %s pushed (%d tools, %d texts/images encoded, %d vectors taken from the held "
                 "ones, %d kept there, %d no longer kept; %.1f MB)", published.name, version, len(catalog), encoded,
                 held.reused, held.retired, collected, len(blob) / 1e6)
        snapshot = dataclasses.replace(self._index.snapshot, version=version)
        return PushResult(version, built=True, flipped=True, manifest=manifest, snapshot=snapshot, encoded=encoded)

    def _records(self, versions: Sequence[str], *, strict: bool) -> dict[str, dict[str, Any] | None]:
        """What each version holds by content hash (``None``: a version without that record); a failed read is
        a StoreError when ``strict``, else counts as ``None`` (less is kept, nothing is mixed)."""
        out: dict[str, dict[str, Any] | None] = {}
        for version in versions:
            try:
                out[version] = self.published.contents(version)
            except StoreError as exc:
                if strict:
                    raise
                log.warning("index %s: reading what version %s holds failed (%s); its vectors are not kept this "
                            "time", self.published.name, version, exc)
                out[version] = None
        return out

    def _collect(self, held: HeldVectors, manifest: Manifest, known: dict[str, dict[str, Any] | None],
                 specs: dict[str, str]) -> int:
        """Delete the held vectors no version kept now holds (after the flip: a failure only leaves them for the
        next push to delete); the vectors deleted."""
        known = {v: record for v, record in known.items() if record is not None}  # the others are read again
        try:
            records = {**self._records([v for v in manifest.kept if v not in known], strict=True), **known}
            return held.collect(kept_contents((records[v] for v in manifest.kept), specs))
        except StoreError as exc:
            log.warning("index %s: deleting the held vectors no kept version holds failed (%s); the next push "
                        "deletes them", self.published.name, exc)
            return 0


def open_pusher(url: str, index: str, models: ModelSet, *, progress: Progress | None = None) -> Pusher:
    """A pusher of index ``index`` on the Chroma server ``url`` (StoreError when it cannot be reached), with the
    lease of ``TOOLRAG_INDEX_LEASE`` seconds."""
    store = StoreConfig(url=url)
    return Pusher(PublishedIndex(open_client(store), index, where=url), models, store,
                  ttl=seconds_setting(INDEX_LEASE_ENV, 30.0), progress=progress)
