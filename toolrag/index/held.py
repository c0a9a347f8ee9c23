"""Vectors a published index keeps by content hash, so that a push encodes only the texts and images whose vector
the Chroma server does not hold.

The vector collections of a published index (``toolrag-<kind>-<hash>``, :mod:`toolrag.index.tool_index`) hold one
row per tool text and example image of the last build. The kept versions (:mod:`toolrag.index.published`) may hold
other texts: a catalog pushed before and pushed again, pushes going back and forth between catalogs. So a row that
a build replaces (its tool's text changed) or deletes (the tool or the image left the catalog) is first copied into
its kind's *held* collection (``toolrag-<kind>-<hash>-held``, one row per content hash) when a version that stays
kept holds its content; after each flip, the held rows that no kept version holds are deleted. A build takes the
vector of each text or image it would encode from the rows it replaces or deletes (a tool renamed, two tools'
texts swapped), else from the held collection, and encodes only the rest.

A vector is reused only for the very content and model it was encoded from: a held collection is named after its
kind's collection, whose name carries the index, the kind and the model's fingerprint (and the OCR model's, for
text read in images), and each held row after the full hash stored with the row it was copied from (a tool's text
hash, an image's content hash). The versions' contents records (:func:`toolrag.index.published.version_contents`,
hash prefixes) only decide what is kept.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any

import numpy as np

from toolrag.index.mirror import MirroredCollection
from toolrag.index.published import CONTENT_PREFIX
from toolrag.index.store import MetadataValue, VectorCollection
from toolrag.signals import COLLECTIONS

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["HeldVectors", "held_name", "kept_contents"]

log = logging.getLogger(__name__)

#: Kinds whose rows are tool texts (keyed by text hash); the others are example images (keyed by content hash).
_TEXT_KINDS = frozenset(spec.kind for spec in COLLECTIONS if spec.rows == "tool")


def held_name(collection: str) -> str:
    """The held collection of an index's collection ``collection``."""
    return f"{collection}-held"


def kept_contents(records: Iterable[Mapping[str, Any] | None], collections: Mapping[str, str]
                  ) -> dict[str, set[str]]:
    """kind -> the content hash prefixes the versions' contents ``records`` hold for that kind, counting only the
    versions whose collection of that kind is ``collections[kind]`` (the same model); ``None``: a version without
    a record (pushed by an older toolrag), which holds nothing here."""
    out: dict[str, set[str]] = {kind: set() for kind in collections}
    for record in records:
        if not record:
            continue
        theirs = record.get("collections") or {}
        for kind, name in collections.items():
            if theirs.get(kind) == name:
                out[kind].update(str(h) for h in record.get("texts" if kind in _TEXT_KINDS else "images") or ())
    return out


class HeldVectors:
    """The held collections of one published index during one push: ``specs`` (kind -> (collection name, dim,
    model fingerprint), :func:`~toolrag.index.tool_index.collection_specs`) and ``keep`` (kind -> the content hash
    prefixes the versions that stay kept hold, :func:`kept_contents`). A held collection is created on its first
    write. ``retired`` and ``reused`` count rows copied in and vectors taken out."""

    def __init__(self, client: ClientAPI, specs: Mapping[str, tuple[str, int, str]],
                 keep: Mapping[str, AbstractSet[str]]) -> None:
        self._client = client
        self._specs = dict(specs)
        self.keep = {kind: frozenset(hashes) for kind, hashes in keep.items()}
        self._opened: dict[str, VectorCollection] = {}
        self._existing: set[str] | None = None
        self.retired = 0
        self.reused = 0

    def _exists(self, kind: str) -> bool:
        if kind in self._opened:
            return True
        if self._existing is None:
            from toolrag.index.client import chroma_call

            self._existing = {c.name for c in chroma_call("list collections", self._client.list_collections)}
        return held_name(self._specs[kind][0]) in self._existing

    def _collection(self, kind: str) -> VectorCollection:
        if kind not in self._opened:
            name, dim, fingerprint = self._specs[kind]
            self._opened[kind] = VectorCollection(self._client, held_name(name), dim=dim, fingerprint=fingerprint)
        return self._opened[kind]

    def retire(self, kind: str, collection: MirroredCollection, rows: Mapping[str, str]) -> int:
        """Copy ``rows`` (row id -> content hash) of ``collection``, about to be replaced or deleted, into the held
        collection when a version that stays kept holds their content and it is not held yet; the rows copied."""
        keep = self.keep.get(kind, frozenset())
        wanted: dict[str, str] = {}
        for row_id, content in rows.items():
            if content and content[:CONTENT_PREFIX] in keep:
                wanted.setdefault(content, row_id)
        if not wanted:
            return 0
        held = self._collection(kind)
        have = held.present(list(wanted))
        todo = {content: row_id for content, row_id in wanted.items() if content not in have}
        if not todo:
            return 0
        got_ids, vectors = collection.vectors(list(todo.values()))
        source = dict(zip(got_ids, vectors, strict=True))
        stored = collection.metadata()
        ids, rows_kept, metas = [], [], []
        for content, row_id in todo.items():
            if row_id in source:
                ids.append(content)
                rows_kept.append(source[row_id])
                metas.append(_held_meta(kind, content, stored.get(row_id, {})))
        if ids:
            held.upsert(ids, np.stack(rows_kept), metas)
        self.retired += len(ids)
        return len(ids)

    def find(self, kind: str, contents: Iterable[str]) -> dict[str, tuple[np.ndarray, dict[str, MetadataValue]]]:
        """The held vectors (and row metadata: the text read in an image, for ``image_text``) of ``contents``,
        by content hash; those not held are left out."""
        wanted = list(dict.fromkeys(contents))
        if not wanted or kind not in self._specs or not self._exists(kind):
            return {}
        ids, vectors, metas = self._collection(kind).get_rows(wanted)
        self.reused += len(ids)
        return {content: (vectors[n], metas[n]) for n, content in enumerate(ids)}

    def collect(self, keep: Mapping[str, AbstractSet[str]]) -> int:
        """Delete the held rows whose content no kept version holds now (``keep``: :func:`kept_contents` of the
        kept versions after a flip); the rows deleted."""
        deleted = 0
        for kind in self._specs:
            if not self._exists(kind):
                continue
            held = self._collection(kind)
            kept = keep.get(kind, set())
            gone = [content for content in held.ids() if content[:CONTENT_PREFIX] not in kept]
            if gone:
                held.delete(gone)
                deleted += len(gone)
        return deleted


def _held_meta(kind: str, content: str, row: Mapping[str, Any]) -> dict[str, MetadataValue]:
    """A held row's metadata: its content hash and, for text read in an image, that text."""
    if kind in _TEXT_KINDS:
        return {"text_hash": content}
    meta: dict[str, MetadataValue] = {"image_hash": content}
    if "ocr_text" in row:
        meta.update(ocr_text=str(row["ocr_text"]), has_text=bool(row.get("has_text", bool(row["ocr_text"]))))
    return meta
