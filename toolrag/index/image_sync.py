"""Syncing the example-image collections of an index: image features, CLIP image vectors and the text read in
each image (OCR), each stored once per image content hash (row id ``tool_id#hash``).

Split from :mod:`toolrag.index.tool_index`, which calls these during a sync; Chroma writes go through the
collections' mirrors like the text rows (:mod:`toolrag.index.text_sync`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from toolrag.catalog.profile import ToolProfile
from toolrag.encode.models import ModelSet
from toolrag.errors import ImageError
from toolrag.images import check_example_image, load_image
from toolrag.index.mirror import MirroredCollection
from toolrag.index.text_sync import text_meta
from toolrag.progress import Progress
from toolrag.signals import COLLECTIONS, CollectionSpec, ModelRole

if TYPE_CHECKING:
    from toolrag.index.held import HeldVectors

__all__ = ["ImageSync"]


class ImageSync:
    """The image side of one index's sync (its collections and models); remembers image content hashes by
    path, modification time and size, so an unchanged file is not read again."""

    def __init__(self, collections: Mapping[str, MirroredCollection], models: ModelSet) -> None:
        self._collections, self.models = collections, models
        self._hashes: dict[tuple[str, float, int], str] = {}

    def content_hash(self, path: Path) -> str:
        """The first 16 hex digits of the image file's SHA-256."""
        stat = path.stat()
        key = (str(path), stat.st_mtime, stat.st_size)
        if key not in self._hashes:
            self._hashes[key] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        return self._hashes[key]

    def check_new(self, rows: Sequence[tuple[int, Path]], image_ids: Sequence[str]) -> None:
        """Decode every example image the image collections do not hold yet and refuse an unusable one
        (ImageError, :func:`toolrag.images.check_example_image`); images already indexed were checked then."""
        kinds = [s.kind for s in COLLECTIONS if s.rows != "tool" and s.kind in self._collections]
        stored = [self._collections[k].metadata() for k in kinds]
        for iid, (_, path) in zip(image_ids, rows, strict=True):
            if any(iid not in meta for meta in stored):
                try:
                    check_example_image(path)
                except ImageError as exc:
                    raise ImageError(f"tool {iid.split('#', 1)[0]!r}: {exc}") from None

    def sync_text(self, tools: Sequence[ToolProfile], rows: Sequence[tuple[int, Path]],
                  image_ids: Sequence[str], held: HeldVectors | None = None) -> tuple[dict[str, str], int]:
        """OCR text of every example image (read once per image, by content hash), encoded by the text model
        so a query image's text can be matched with the text of the tools' example images. Returns the text
        of each image and how many images were read and encoded. ``held``: a published index's vectors kept by
        content hash (:mod:`toolrag.index.held`): rows deleted are kept there first, and an image whose text
        and vector are held there is not read again."""
        collection = self._collections.get("image_text")
        if collection is None or not rows:
            return {}, 0
        stored = collection.metadata()
        known = {iid: str(meta.get("ocr_text", "")) for iid, meta in stored.items()}
        wanted = set(image_ids)
        todo = [(iid, path) for iid, (_, path) in zip(image_ids, rows, strict=True) if iid not in known]
        # The same picture used by several tools is read and encoded once (ids are tool_id#content_hash).
        by_hash = {iid.split("#", 1)[-1]: iid for iid in known}
        found_held: dict[str, tuple[str, np.ndarray]] = {}
        if held is not None:
            needed = {iid.split("#", 1)[-1] for iid, _ in todo} - by_hash.keys()
            for image_hash, (vector, meta) in held.find("image_text", needed).items():
                if "ocr_text" in meta:  # a row without the text read is of no use
                    found_held[image_hash] = (str(meta["ocr_text"]), vector)
        unread = [iid for iid, _ in todo if iid.split("#", 1)[-1] not in by_hash.keys() | found_held.keys()]
        ocr = self.models.get_ocr() if unread else None
        if unread and ocr is None:
            return {i: t for i, t in known.items() if i in wanted}, 0
        gone = [i for i in stored if i not in wanted]
        if gone and held is not None:
            held.retire("image_text", collection, {i: i.split("#", 1)[-1] for i in gone})
        if gone:
            collection.delete(gone)
        encoded = 0
        owner = {iid: tools[row].id for (row, _), iid in zip(rows, image_ids, strict=True)}
        for iid, path in todo:
            image_hash = iid.split("#", 1)[-1]
            source = by_hash.get(image_hash)
            found, vec = collection.vectors([source]) if source is not None else ([], np.zeros((0, collection.dim)))
            if source is not None and found:
                text = known[source]
            elif image_hash in found_held:
                text, held_vector = found_held[image_hash]
                vec = held_vector[None, :]
            else:
                text = ocr.read(load_image(path)).text.strip()[:2000]  # type: ignore[union-attr]
                # Images without text get a row too (not read again) with the vector of a blank line.
                vec = self.models.text.encode_passages([text or " "])
                encoded += 1
            known[iid] = text
            by_hash.setdefault(image_hash, iid)
            collection.upsert([iid], vec, [{"tool_id": owner[iid], "ocr_text": text, "has_text": bool(text)}])
        return {iid: known.get(iid, "") for iid in image_ids}, encoded

    def sync(self, spec: CollectionSpec, tools: Sequence[ToolProfile], rows: Sequence[tuple[int, Path]],
             image_ids: Sequence[str], progress: Progress, held: HeldVectors | None = None) -> tuple[np.ndarray, int]:
        """One image collection brought in step with the catalog's example images (new ones encoded in
        batches, removed ones deleted, changed metadata rewritten): its matrix in ``image_ids`` order and how
        many images were encoded. ``held``: a published index's vectors kept by content hash
        (:mod:`toolrag.index.held`): rows deleted are kept there first, and an image whose vector is in this
        collection under another tool or held there is not encoded again."""
        kind = spec.kind
        collection = self._collections[kind]
        stored = collection.metadata()
        wanted = {iid: {**text_meta(tools[row]), "tool_id": tools[row].id}
                  for iid, (row, _) in zip(image_ids, rows, strict=True)}
        for meta in wanted.values():
            meta.pop("text_hash")
        gone = [i for i in stored if i not in wanted]
        todo = [(iid, path) for iid, (_, path) in zip(image_ids, rows, strict=True) if iid not in stored]
        if held is not None and (todo or gone):
            todo = self._reuse(kind, collection, todo, gone, wanted, held)
        if gone:
            collection.delete(gone)
        moved = [iid for iid in wanted if iid in stored and stored[iid] != wanted[iid]]
        model: Any = getattr(self.models, spec.model.value)
        encoded = 0
        for start in range(0, len(todo), 16):
            batch = todo[start:start + 16]
            images = [load_image(path) for _, path in batch]
            vecs = model.features(images) if spec.model is ModelRole.IMAGE else model.encode_images(images)
            collection.upsert([i for i, _ in batch], vecs, [wanted[i] for i, _ in batch])
            encoded += len(batch)
            progress((start + len(batch)) / max(len(todo), 1), f"encoded {start + len(batch)}/{len(todo)} "
                                                                f"tool images ({kind})")
        if moved:
            got_ids, got = collection.vectors(moved)
            collection.upsert(got_ids, got, [wanted[i] for i in got_ids])
        return collection.matrix(list(image_ids)), encoded

    @staticmethod
    def _reuse(kind: str, collection: MirroredCollection, todo: list[tuple[str, Path]], gone: Sequence[str],
               wanted: Mapping[str, dict[str, Any]], held: HeldVectors) -> list[tuple[str, Path]]:
        """Before the rows ``gone`` are deleted: keep them in ``held`` (when a kept version holds their image),
        write the vector of every new row (``todo``) whose image is in this collection (another tool's row) or
        held there, and return the rows left to encode."""
        held.retire(kind, collection, {i: i.split("#", 1)[-1] for i in gone})
        stored_by_hash = {iid.split("#", 1)[-1]: iid for iid in collection.metadata()}
        needed = {iid.split("#", 1)[-1] for iid, _ in todo}
        found: dict[str, np.ndarray] = {}
        local = {h: stored_by_hash[h] for h in needed if h in stored_by_hash}
        if local:
            got_ids, got = collection.vectors(list(local.values()))
            by_row = dict(zip(got_ids, got, strict=True))
            found.update({h: by_row[row_id] for h, row_id in local.items() if row_id in by_row})
        found.update({h: vector for h, (vector, _) in held.find(kind, needed - found.keys()).items()})
        reused = [iid for iid, _ in todo if iid.split("#", 1)[-1] in found]
        if reused:
            collection.upsert(reused, np.stack([found[iid.split("#", 1)[-1]] for iid in reused]),
                              [wanted[iid] for iid in reused])
        return [(iid, path) for iid, path in todo if iid.split("#", 1)[-1] not in found]
