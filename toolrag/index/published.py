"""An index published on a Chroma server under a name: its versions, the manifest naming the one to serve, and
(:mod:`toolrag.index.lease`) the lease of the process that builds a version.

Several replicas serve one index from one Chroma server; the server is the truth. A *version* is everything a
search needs, frozen: the profiles (:mod:`toolrag.catalog.wire`), the serving state (vectors in catalog order,
BM25 arrays, English flags, nearest-neighbour lists: :mod:`toolrag.index.serving`). Its id is a digest of what
it is built from (the catalog, its example images, the models' collections, the formats), so two processes
building from the same folder build the same version.

Chroma objects of index ``NAME`` (every write is one Chroma call; readers check what they read):

- ``toolrag-index-NAME``: the manifest, in the collection's metadata (``current`` version, ``serial``,
  ``pushed_at``, ``tools``, the ``kept`` versions). Flipped last: a version is served only once complete.
- ``toolrag-index-NAME-v-VERSION``: the version's data in chunks of the records' metadata, and in the collection's
  metadata ``complete`` (set after the last chunk), the data's SHA-256 and size. A half-written version (a build
  killed while writing) is never complete, so never flipped to; the next builder rewrites it. Beside the data, in
  ``contents-*`` records, what the version holds by content hash (:func:`version_contents`): a push keeps the
  vectors of every text and image a kept version holds (:mod:`toolrag.index.held`).
- ``toolrag-index-NAME-lease-VERSION``: who builds the version (``owner``) until when (``expires``, renewed every
  third of the lease). Creating a collection is atomic on the server, so two processes starting together cannot
  both take it; an expired lease (its holder was killed) is taken over and the build finished.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
import re
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from toolrag.errors import SettingsError, StoreError
from toolrag.index.client import chroma_call, chroma_errors, error_text
from toolrag.index.lease import Lease, owner_id
from toolrag.index.serving import FORMAT as STATE_FORMAT
from toolrag.index.serving import SavedState, state_from_parts, state_parts
from toolrag.index.tokenize import LEXICAL_VERSION

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["CONTENT_PREFIX", "FORMAT", "Lease", "Manifest", "PublishedIndex", "check_index_name", "owner_id", "pack",
           "unpack", "version_contents", "version_of"]

log = logging.getLogger(__name__)

#: The layout of a version's data; a reader refuses another one with a clear error.
FORMAT: Final = 1
#: Bytes of data per record (each record's metadata holds them as base64): Chroma writes 30 MB in about 5 s.
CHUNK_BYTES: Final = 3_000_000
#: Versions kept besides the current one (replicas still loading one may finish); older ones are deleted.
KEEP_VERSIONS: Final = 3
_NAME: Final = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,62}[A-Za-z0-9])?$")


def check_index_name(name: str) -> str:
    """``name`` when it can name an index (1-64 letters, digits, ``-`` or ``_``, starting and ending with a letter or
    digit); SettingsError otherwise."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise SettingsError(f"index name {name!r}: use 1-64 letters, digits, '-' or '_', starting and ending with a "
                            "letter or digit, e.g. --index tools-prod")
    return name


def version_of(catalog_json: Mapping[str, Any], image_ids: Sequence[str], collections: Mapping[str, str]) -> str:
    """The id of the version built from a catalog (its JSON), its example images (``tool#content hash``) and the
    collections of its models (kind -> Chroma name, which carries the model fingerprints): 16 hex digits."""
    digest = hashlib.sha256()
    head = {"format": FORMAT, "state": STATE_FORMAT, "lexical": LEXICAL_VERSION, "images": list(image_ids),
            "collections": sorted(collections.items())}
    digest.update(json.dumps(head, sort_keys=True).encode())
    digest.update(json.dumps(catalog_json, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


#: Hex digits of a content hash a version's contents record keeps (a filter: a vector is reused only under the
#: full hash it was stored with, :mod:`toolrag.index.held`).
CONTENT_PREFIX: Final = 16


def version_contents(collections: Mapping[str, str], text_hashes: Iterable[str], image_hashes: Iterable[str]
                     ) -> dict[str, Any]:
    """What a version holds by content hash, kept beside its data (:meth:`PublishedIndex.contents`): its
    collections (kind -> Chroma name), the text hashes of its tools and the content hashes of its example images
    (their first :data:`CONTENT_PREFIX` hex digits). A push keeps the vectors of what the kept versions hold."""
    return {"collections": dict(sorted(collections.items())),
            "texts": sorted({h[:CONTENT_PREFIX] for h in text_hashes}),
            "images": sorted({h[:CONTENT_PREFIX] for h in image_hashes})}


def pack(*, name: str, version: str, catalog_json: Mapping[str, Any], state: SavedState,
         collections: Mapping[str, str]) -> bytes:
    """A version's data as bytes: an ``.npz`` of the state's arrays and of its JSON (zlib-compressed)."""
    arrays, state_meta = state_parts(state)
    meta = {"format": FORMAT, "name": name, "version": version, "catalog": catalog_json, "state": state_meta,
            "collections": dict(collections), "created_at": time.time()}
    packed = zlib.compress(json.dumps(meta, ensure_ascii=False).encode("utf-8", "surrogatepass"), 6)
    buffer = io.BytesIO()
    arrays = {"__meta__": np.frombuffer(packed, dtype=np.uint8), **arrays}
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


def unpack(blob: bytes) -> tuple[dict[str, Any], SavedState]:
    """The JSON (catalog, collections, ...) and the state :func:`pack` wrote; ValueError when the bytes are
    not such data (of this format)."""
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
            meta = json.loads(zlib.decompress(npz["__meta__"].tobytes()).decode("utf-8", "surrogatepass"))
            arrays = {name: npz[name] for name in npz.files if name != "__meta__"}
    except (OSError, ValueError, KeyError, TypeError, zlib.error) as exc:
        raise ValueError(f"published index data cannot be read ({type(exc).__name__}: {exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise ValueError(f"published index data of format {found!r}; this toolrag reads format {FORMAT}: push the "
                         "index again with this toolrag version")
    try:
        return meta, state_from_parts(meta["state"], arrays.__getitem__)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"published index data cannot be read ({type(exc).__name__}: {exc})") from None


@dataclass(frozen=True)
class Manifest:
    """What the manifest of an index says now: the ``version`` to serve (``None``: nothing pushed yet), how many
    pushes there were (``serial``), when (``pushed_at``, seconds since the epoch), its tools, the kept versions."""

    name: str
    version: str | None = None
    serial: int = 0
    pushed_at: float = 0.0
    tools: int = 0
    kept: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.name, "version": self.version, "serial": self.serial,
                "pushed_at": round(self.pushed_at, 3), "tools": self.tools}


class PublishedIndex:
    """The Chroma objects of one published index (see the module's docstring); ``where`` names the server in
    messages. Every method raises :class:`StoreError` when Chroma fails or cannot be reached."""

    def __init__(self, client: ClientAPI, name: str, *, where: str = "the Chroma server") -> None:
        self.client = client
        self.name = check_index_name(name)
        self.where = where

    # ------------------------------------------------------------------------------------------------ names
    def manifest_name(self) -> str:
        return f"toolrag-index-{self.name}"

    def data_name(self, version: str) -> str:
        return f"toolrag-index-{self.name}-v-{version}"

    def lease_name(self, version: str) -> str:
        return f"toolrag-index-{self.name}-lease-{version}"

    # ---------------------------------------------------------------------------------------------- helpers
    def _metadata(self, collection: str) -> dict[str, Any] | None:
        """The metadata of ``collection``, ``None`` when it does not exist."""
        from chromadb.errors import NotFoundError

        try:
            found = self.client.get_collection(collection, embedding_function=None)
        except NotFoundError:
            return None
        except chroma_errors() as exc:
            if "does not exist" in str(exc):
                return None
            raise StoreError(f"Chroma at {self.where} failed to read {collection!r}: {error_text(exc)}") from exc
        return dict(found.metadata or {})

    def _create(self, collection: str, metadata: Mapping[str, Any]) -> bool:
        """Create ``collection``; False when it already exists (one process wins a race on the server)."""
        try:
            self.client.create_collection(collection, metadata=dict(metadata), embedding_function=None)
            return True
        except chroma_errors() as exc:
            if "already exists" in str(exc):
                return False
            raise StoreError(f"Chroma at {self.where} failed to create {collection!r}: {error_text(exc)}") from exc

    def _open(self, collection: str) -> Any:
        return self.client.get_collection(collection, embedding_function=None)

    def drop(self, collection: str) -> None:
        from chromadb.errors import NotFoundError

        try:
            self.client.delete_collection(collection)
        except NotFoundError:
            return
        except chroma_errors() as exc:
            if "does not exist" not in str(exc):
                raise StoreError(f"Chroma at {self.where} failed to delete {collection!r}: {error_text(exc)}") from exc

    # --------------------------------------------------------------------------------------------- manifest
    def manifest(self) -> Manifest:
        """The manifest now (an index nothing was pushed to has ``version`` ``None``)."""
        meta = self._metadata(self.manifest_name())
        if not meta or not meta.get("current"):
            return Manifest(self.name)
        kept = tuple(v for v in str(meta.get("kept", "")).split(",") if v)
        return Manifest(self.name, str(meta["current"]), int(meta.get("serial", 0)),
                        float(meta.get("pushed_at", 0.0)), int(meta.get("tools", 0)), kept)

    def flip(self, version: str, *, tools: int) -> Manifest:
        """Make ``version`` (complete) the one every replica serves; versions beyond :data:`KEEP_VERSIONS` are
        deleted. The last write of a push."""
        if not self.complete(version):
            raise StoreError(f"version {version} of index {self.name!r} is not complete on {self.where}: not served")
        before = self.manifest()
        kept = (version, *[v for v in before.kept if v != version])
        manifest = Manifest(self.name, version, before.serial + 1, time.time(), tools, kept[: KEEP_VERSIONS + 1])
        metadata = {"current": version, "serial": manifest.serial, "pushed_at": manifest.pushed_at, "tools": tools,
                    "kept": ",".join(manifest.kept)}
        if not self._create(self.manifest_name(), metadata):
            collection = chroma_call(f"open the manifest of index {self.name!r}", self._open,
                                     self.manifest_name())
            chroma_call(f"flip the manifest of index {self.name!r}", collection.modify, metadata=metadata)
        for old in kept[KEEP_VERSIONS + 1:]:
            self.drop(self.data_name(old))
        self.sweep_leases(keep=version)
        return manifest

    # ---------------------------------------------------------------------------------------------- versions
    def complete(self, version: str) -> bool:
        meta = self._metadata(self.data_name(version))
        return bool(meta and meta.get("complete"))

    def write(self, version: str, blob: bytes, *, contents: Mapping[str, Any] | None = None) -> None:
        """Store a version's data (a half-written copy is replaced), marked complete after its last chunk;
        ``contents``: what it holds by content hash (:func:`version_contents`), read back by :meth:`contents`."""
        name = self.data_name(version)
        self.drop(name)
        digest = hashlib.sha256(blob).hexdigest()
        if not self._create(name, {"complete": False}):
            raise StoreError(f"version {version} of index {self.name!r} is being written by another process")
        collection = chroma_call(f"open {name!r}", self._open, name)
        chunks = self._write_chunks(collection, name, "chunk", blob)
        done: dict[str, Any] = {"complete": True, "sha256": digest, "bytes": len(blob), "chunks": chunks}
        if contents is not None:
            packed = zlib.compress(json.dumps(contents, sort_keys=True).encode(), 6)
            done.update(contents_chunks=self._write_chunks(collection, name, "contents", packed),
                        contents_sha256=hashlib.sha256(packed).hexdigest(), contents_bytes=len(packed))
        chroma_call(f"mark {name!r} complete", collection.modify, metadata=done)

    @staticmethod
    def _write_chunks(collection: Any, name: str, prefix: str, blob: bytes) -> int:
        chunks = [blob[i:i + CHUNK_BYTES] for i in range(0, len(blob), CHUNK_BYTES)] or [b""]
        for n, chunk in enumerate(chunks):
            chroma_call(f"write {prefix} {n + 1}/{len(chunks)} of {name!r}", collection.add, ids=[f"{prefix}-{n:05d}"],
                        embeddings=[[0.0]], metadatas=[{"data": base64.b64encode(chunk).decode("ascii")}])
        return len(chunks)

    def _read_chunks(self, collection: Any, name: str, prefix: str, count: int) -> bytes:
        ids = [f"{prefix}-{n:05d}" for n in range(count)]
        parts: dict[str, bytes] = {}
        for start in range(0, len(ids), 8):
            got = chroma_call(f"read {name!r}", collection.get, ids=ids[start:start + 8], include=["metadatas"])
            for row_id, row in zip(got["ids"], got["metadatas"] or [], strict=True):
                parts[row_id] = base64.b64decode(str((row or {}).get("data", "")))
        return b"".join(parts.get(i, b"") for i in ids)

    def contents(self, version: str) -> dict[str, Any] | None:
        """What a complete version holds by content hash (:func:`version_contents`); ``None`` when it is gone,
        incomplete, or was pushed without it (by an older toolrag) or its record does not match its checksum."""
        name = self.data_name(version)
        meta = self._metadata(name)
        if not meta or not meta.get("complete") or not meta.get("contents_chunks"):
            return None
        collection = chroma_call(f"open {name!r}", self._open, name)
        try:
            packed = self._read_chunks(collection, name, "contents", int(meta["contents_chunks"]))
            if len(packed) != int(meta.get("contents_bytes", -1)) or \
                    hashlib.sha256(packed).hexdigest() != meta.get("contents_sha256"):
                return None
            found = json.loads(zlib.decompress(packed).decode())
        except (ValueError, zlib.error):  # a chunk rewritten or deleted while read, not base64 or not JSON
            return None
        return found if isinstance(found, dict) else None

    def read(self, version: str) -> bytes:
        """A complete version's data, checked against its SHA-256."""
        name = self.data_name(version)
        meta = self._metadata(name)
        if not meta or not meta.get("complete"):
            raise StoreError(f"version {version} of index {self.name!r} is missing or incomplete on {self.where}")
        collection = chroma_call(f"open {name!r}", self._open, name)
        blob = self._read_chunks(collection, name, "chunk", int(meta["chunks"]))
        if len(blob) != int(meta["bytes"]) or hashlib.sha256(blob).hexdigest() != meta["sha256"]:
            raise StoreError(f"version {version} of index {self.name!r} on {self.where} does not match its checksum "
                             "(deleted or rewritten while read); it is read again")
        return blob

    # ---------------------------------------------------------------------------------------------- leases
    def lease_holder(self, version: str) -> tuple[str, float] | None:
        """(owner, expiry) of the lease to build ``version``, ``None`` when nobody holds it."""
        meta = self._metadata(self.lease_name(version))
        if not meta:
            return None
        return str(meta.get("owner", "?")), float(meta.get("expires", 0.0))

    def acquire(self, version: str, *, owner: str, ttl: float, heartbeat: bool = True) -> Lease | None:
        """The lease to build ``version``, or ``None`` while another process holds it; an expired one (its holder
        died) is taken over."""
        name = self.lease_name(version)
        if self._create(name, {"owner": owner, "expires": time.time() + ttl}):
            self.sweep_leases(keep=version)
            return Lease(self, version, owner, ttl, heartbeat=heartbeat)
        holder = self.lease_holder(version)
        if holder is not None and holder[1] > time.time():
            return None
        if holder is not None:
            log.warning("index %s: the build of version %s by %s stopped (its lease expired); finishing it",
                        self.name, version, holder[0])
        self.drop(name)
        if self._create(name, {"owner": owner, "expires": time.time() + ttl}):
            return Lease(self, version, owner, ttl, heartbeat=heartbeat)
        return None

    def sweep_leases(self, *, keep: str | None = None) -> list[str]:
        """Remove the expired leases of other versions than ``keep`` (their builders died and no push of their
        folder came back to finish them) with their half-written data; run at each lease taken and each flip.
        The versions swept (a failure is logged: the next sweep tries again)."""
        prefix = self.lease_name("")
        swept = []
        failures: tuple[type[BaseException], ...] = (StoreError, *chroma_errors())
        try:
            for collection in self.client.list_collections():
                meta = dict(collection.metadata or {})
                version = collection.name[len(prefix):]
                if (not collection.name.startswith(prefix) or version == keep or "owner" not in meta
                        or float(meta.get("expires", 0.0)) > time.time()):
                    continue
                self.drop(collection.name)
                if not self.complete(version):
                    self.drop(self.data_name(version))
                log.info("index %s: removed the expired lease of version %s (its builder %s stopped)", self.name,
                         version, meta["owner"])
                swept.append(version)
        except failures as exc:
            log.warning("index %s: removing expired build leases failed: %s", self.name, exc)
        return swept

    def renew(self, version: str, owner: str, ttl: float) -> None:
        name = self.lease_name(version)
        collection = chroma_call(f"open {name!r}", self._open, name)
        chroma_call(f"renew {name!r}", collection.modify, metadata={"owner": owner, "expires": time.time() + ttl})
