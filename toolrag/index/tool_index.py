"""The tool index: profiles -> vectors (cached by content hash) in Chroma, plus the BM25 index.

Chroma is the store of record for vectors (embedded folder or a server) and proposes candidates with its
HNSW index under a permission/category filter. On open, every row's content hash and model fingerprint are
compared with the catalog: only missing or changed profiles are encoded (a restart with an unchanged catalog
encodes nothing; an edit re-encodes only that tool), rows of removed tools are deleted, and a collection
built with another model is never reused (its name carries the model fingerprint). Rows are written batch by
batch, each with its hash, so an interrupted build leaves at worst an incomplete cache: the next open
re-encodes what is missing before the index is used, and the index is never served half-built.

For exact re-scoring of candidates, the vectors are also held in memory as an immutable snapshot that an
edit swaps atomically, so searches running in other threads always see a consistent index. That serving
state is saved next to Chroma (:mod:`toolrag.index.serving`): a restart whose catalog, models and Chroma
generation match it reads nothing back from Chroma. Catalogs above ``ANN_MIN_ROWS`` tools also get
in-process nearest-neighbour lists (:mod:`toolrag.index.ann`) instead of a Chroma query per signal.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Container, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from toolrag.catalog.caller import Caller
from toolrag.catalog.profile import Catalog, ToolProfile
from toolrag.config import data_dir
from toolrag.encode.models import ModelSet
from toolrag.encode.ocr import OcrEngine
from toolrag.gcpause import paused_gc
from toolrag.index.bm25 import BM25Index
from toolrag.index.client import StoreConfig, open_client
from toolrag.index.filters import build_where
from toolrag.index.image_sync import ImageSync
from toolrag.index.mirror import MirroredCollection
from toolrag.index.restore import (
    ANN_PROBES,
    build_ann,
    current_fingerprint,
    restore_snapshot,
    saved_state,
    tool_columns,
)
from toolrag.index.serving import SavedState, ServingStore
from toolrag.index.snapshot import IndexSnapshot, perm_codes
from toolrag.index.store import VectorCollection, collection_name
from toolrag.index.text_sync import AllBut, reading_key, sync_texts, text_meta, tool_text
from toolrag.progress import Progress, no_progress
from toolrag.signals import COLLECTIONS, ModelRole

if TYPE_CHECKING:
    from toolrag.index.held import HeldVectors

__all__ = ["ToolIndex", "collection_specs"]

log = logging.getLogger(__name__)

#: Filters keeping at least this share of the catalog are applied after an unfiltered nearest-neighbour query.
_UNFILTERED_SHARE = 0.5


#: Extra rows asked of Chroma on an unfiltered query, so that filtering afterwards still leaves ``k``.
_OVERFETCH = 16


def collection_specs(models: ModelSet, catalog_key: str) -> dict[str, tuple[str, int, str]]:
    """kind -> (Chroma collection name, dim, model fingerprint) of every collection of
    :data:`toolrag.signals.COLLECTIONS` whose models are here; the name carries the catalog and the model
    fingerprint (and the OCR model's, for text read in images)."""
    out = {}
    for spec in COLLECTIONS:
        if not all(models.has(role) for role in (spec.model, *spec.requires)):
            continue
        model = getattr(models, spec.model.value)
        fp = f"{catalog_key}|{spec.kind}|{model.fingerprint}"
        fp += reading_key(spec.kind)
        if ModelRole.OCR in spec.requires:  # text read by another OCR reading is read again, not mixed
            fp += f"|{OcrEngine.model_id}"
        out[spec.kind] = (collection_name(spec.kind.replace("_", "-"), fp), model.dim, model.fingerprint)
    return out


class ToolIndex:
    """A catalog indexed for retrieval. Construct it once per catalog and share it between searches."""

    def __init__(
        self,
        catalog: Catalog,
        models: ModelSet,
        *,
        store: StoreConfig | None = None,
        progress: Progress | None = None,
        serving_dir: Path | None = None,
        catalog_key: str | None = None,
        held: HeldVectors | None = None,
    ) -> None:
        """``serving_dir``: where the serving state is saved (default: ``serving`` beside an embedded store's
        folder, else in the data folder). ``catalog_key``: what the collections are named after (default: the
        catalog's folder; a published index uses its name, so every machine shares one set of vectors).
        ``held``: a published index's vectors kept by content hash (:mod:`toolrag.index.held`), for this sync."""
        self.models = models
        self.store_config = store or StoreConfig(path=data_dir() / "chroma")
        self._client = open_client(self.store_config)
        self._lock = threading.RLock()
        self._english: dict[str, bool] = {}
        self.encoded_last_sync = 0
        self._bm25_texts: tuple[str, ...] = ()
        key = catalog_key or (str(catalog.root.resolve()) if catalog.root else f"memory:{catalog.name}")
        self._catalog_key = key
        self._collections = self._open_collections(key)
        self._images = ImageSync(self._collections, models)
        self._serving = ServingStore(self._serving_folder(key, serving_dir))
        restored = self._restore(catalog)
        self.restored = restored is not None
        self._snapshot = restored if restored is not None else self._sync(catalog, progress or no_progress, held)
        if restored is None:
            self._save(background=False)

    @property
    def snapshot(self) -> IndexSnapshot:
        return self._snapshot

    @property
    def catalog(self) -> Catalog:
        return self._snapshot.catalog

    def query_rows(
        self, kind: str, vector: np.ndarray, *, k: int, mask: np.ndarray, caller: Caller,
        snapshot: IndexSnapshot | None = None,
    ) -> np.ndarray:
        """Snapshot rows of the tools ``caller`` sees (``mask``) nearest to ``vector`` in one collection (at most
        ``k``), rows of ``snapshot`` (default: the live one; a search passes the one it holds, so an edit that
        swaps the live snapshot in between cannot hand it rows of another).

        When the filters keep at least half the catalog (``mask``), Chroma is asked without a where-clause for
        a few more rows and the filter is applied here: Chroma's metadata filter costs ~100 ms at 10,000 rows
        against ~5 ms for the plain search (docs/benchmarks.md). A selective filter goes to Chroma, which then
        searches only permitted rows; so does an over-fetch that left fewer than ``k`` permitted rows.
        """
        collection = self._collections.get(kind)
        if collection is None:
            return np.zeros(0, dtype=np.int64)
        snap = snapshot if snapshot is not None else self._snapshot
        ann = snap.ann.get(kind)
        if ann is not None:  # in-process lists: no store round trip; more lists when the filter is selective
            probes, permitted = ANN_PROBES, int(np.count_nonzero(mask))
            every = None if permitted == len(mask) else mask  # nothing to filter: skip a pass over the rows
            while True:
                rows = ann.search(vector, k=k, probes=probes, mask=every)
                if len(rows) >= min(k, permitted) or probes >= len(ann.lists):
                    return rows
                probes *= 4
        share = float(mask.mean()) if len(mask) else 0.0
        if share >= _UNFILTERED_SHARE:
            fetch = min(len(mask) * 4, int(np.ceil(k / share)) + _OVERFETCH)
            rows = self._rows(snap, collection.query(vector, k=fetch))
            rows = rows[mask[rows]] if len(rows) else rows
            if len(rows) >= k or share == 1.0:
                return rows[:k]
        where = build_where(caller, snap.distinct_perm_keys)
        rows = self._rows(snap, collection.query(vector, k=k, where=where))
        return rows[mask[rows]] if len(rows) else rows

    @staticmethod
    def _rows(snap: IndexSnapshot, hits: Sequence[Any]) -> np.ndarray:
        """Distinct snapshot rows of the hits' tools, best first (image rows are ``tool_id#image_hash``)."""
        seen: dict[int, None] = {}
        for hit in hits:
            row = snap.row_of.get(hit.id.split("#", 1)[0])
            if row is not None:
                seen.setdefault(row, None)
        return np.fromiter(seen, dtype=np.int64, count=len(seen))

    def update(self, catalog: Catalog, progress: Progress | None = None, *, held: HeldVectors | None = None) -> int:
        """Bring the index in line with ``catalog`` (an edit, an addition, a removal); returns how many
        texts and images were encoded. Only changed profiles are re-encoded (``held``: and only those whose
        vectors a published index does not keep, :mod:`toolrag.index.held`)."""
        with self._lock:
            self._snapshot = self._sync(catalog, progress or no_progress, held)
            self._save(background=True)
            return self.encoded_last_sync

    def state(self) -> SavedState:
        """The serving state of the current snapshot (what a published version holds,
        :mod:`toolrag.index.published`); its fingerprint is left empty: a version is named by its sources."""
        snapshot = self._snapshot
        texts = self._collections["image_text"].metadata() if "image_text" in self._collections else {}
        ocr = {iid: str(meta.get("ocr_text", "")) for iid, meta in texts.items()}
        return saved_state(snapshot, "", ocr, self._image_ids(snapshot.catalog.tools))

    def wait_saved(self) -> None:
        """Wait until the serving state of the latest sync is on disk (saves after edits run in the background)."""
        self._serving.wait()

    # ------------------------------------------------------------------------------------------- internals

    def _open_collections(self, catalog_key: str) -> dict[str, MirroredCollection]:
        """One collection per kind of :data:`toolrag.signals.COLLECTIONS` whose models are here
        (:func:`collection_specs`), so vectors of two models are never mixed."""
        return {kind: MirroredCollection(VectorCollection(self._client, name, dim=dim, fingerprint=fingerprint))
                for kind, (name, dim, fingerprint) in collection_specs(self.models, catalog_key).items()}

    def _serving_folder(self, key: str, chosen: Path | None) -> Path:
        kinds = "|".join(f"{k}={c.collection.name}" for k, c in sorted(self._collections.items()))
        where = self.store_config.url or str(self.store_config.path)
        name = hashlib.sha1(f"{where}|{key}|{kinds}".encode()).hexdigest()[:16]
        if chosen is not None:
            return chosen / name
        if self.store_config.path is not None and not self.store_config.url:
            return Path(self.store_config.path).parent / "serving" / name
        return data_dir() / "serving" / name

    def _image_ids(self, tools: Sequence[ToolProfile]) -> list[str]:
        return [f"{t.id}#{self._images.content_hash(img.file)}" for t in tools for img in t.images]

    def _restore(self, catalog: Catalog) -> IndexSnapshot | None:
        """The snapshot of the saved serving state when it matches this catalog, these models and Chroma's
        generation; ``None`` otherwise (then the index is synced from Chroma)."""
        with paused_gc():  # derived texts and row metadata of every tool: see toolrag.gcpause
            return self._restored(catalog)

    def _restored(self, catalog: Catalog) -> IndexSnapshot | None:
        image_ids = self._image_ids(catalog.tools)
        fingerprint = current_fingerprint(self._catalog_key, self._collections, catalog.tools, image_ids)
        state = self._serving.load(fingerprint) if fingerprint is not None else None
        if state is None:
            return None
        snapshot = restore_snapshot(state, catalog, self._collections, image_ids, text_meta=text_meta,
                                    tool_arrays=lambda english: self._tool_arrays(catalog.tools, None, None, english),
                                    text_dim=self.models.text.dim)
        if snapshot is not None:
            self._bm25_texts = snapshot.bm25_texts
            log.info("index of %d tools restored from its saved serving state", len(snapshot.ids))
        return snapshot

    def _save(self, *, background: bool) -> None:
        """Save the serving state of the current snapshot (after an edit: in the background, so the edit
        returns at once). Every collection gets a generation first, so the state can be matched later."""
        snapshot = self._snapshot
        for mirror in self._collections.values():
            if mirror.collection.generation is None:
                mirror.collection.new_generation()
        collections = dict(self._collections)
        texts = collections["image_text"].metadata() if "image_text" in collections else {}
        ocr = {iid: str(meta.get("ocr_text", "")) for iid, meta in texts.items()}
        generations = {k: c.collection.generation for k, c in collections.items()}

        def state() -> Any:
            image_ids = self._image_ids(snapshot.catalog.tools)
            fingerprint = current_fingerprint(self._catalog_key, collections, snapshot.catalog.tools, image_ids)
            if fingerprint is None or generations != {k: c.collection.generation for k, c in collections.items()}:
                return None  # the collections were written again meanwhile: a newer save follows
            return saved_state(snapshot, fingerprint, ocr, image_ids)

        self._serving.save(state, background=background)

    def _sync(self, catalog: Catalog, progress: Progress, held: HeldVectors | None = None) -> IndexSnapshot:
        tools = catalog.tools
        ids = catalog.id_order
        self.encoded_last_sync = 0
        for mirror in self._collections.values():
            mirror.begin_sync()
        previous: IndexSnapshot | None = getattr(self, "_snapshot", None)
        # Profiles are immutable: one that is the very object the last sync indexed needs no check at all
        # (Catalog.with_tool keeps the other profiles), which makes a sync after one edit cheap. When the
        # tools are those of the last sync in the same order, only the edited rows are looked at.
        edited = catalog.rows_changed_since(previous.catalog) if previous is not None else None
        same: Container[str]
        if edited is not None:
            same = AllBut({tools[n].id for n in edited})
        else:
            same = {t.id for t in tools if previous.catalog.get(t.id) is t} if previous is not None else set()
        image_rows = catalog.image_rows
        image_ids = [f"{tools[row].id}#{self._images.content_hash(path)}" for row, path in image_rows]
        self._images.check_new(image_rows, image_ids)  # a bad image is refused before anything is written
        text_kinds = [(spec.kind, getattr(self.models, spec.model.value)) for spec in COLLECTIONS
                      if spec.rows == "tool" and spec.kind in self._collections]
        progress(0.0, "indexing tool texts")
        vectors, changed, encoded = sync_texts({kind: (self._collections[kind], model) for kind, model in text_kinds},
                                               tools, same, progress, meta=text_meta, edited=edited,
                                               ids=ids, held=held)
        self.encoded_last_sync += encoded
        image_vectors: dict[str, np.ndarray] = {}
        for spec in COLLECTIONS:
            if spec.rows == "image" and spec.kind in self._collections:
                progress(0.0, f"indexing tool images ({spec.kind})")
                image_vectors[spec.kind], encoded = self._images.sync(spec, tools, image_rows, image_ids,
                                                                      progress, held)
                self.encoded_last_sync += encoded
        progress(0.8, "reading text in tool images")
        ocr_texts, encoded = self._images.sync_text(tools, image_rows, image_ids, held)
        self.encoded_last_sync += encoded
        text_rows = [row for (row, _), iid in zip(image_rows, image_ids, strict=True) if ocr_texts.get(iid)]
        text_ids = [iid for iid in image_ids if ocr_texts.get(iid)]
        image_text = (self._collections["image_text"].matrix(text_ids)
                      if "image_text" in self._collections else np.zeros((0, self.models.text.dim), np.float32))
        extra: dict[str, list[str]] = {}
        for (row, _), iid in zip(image_rows, image_ids, strict=True):
            if ocr_texts.get(iid):
                extra.setdefault(tools[row].id, []).append(ocr_texts[iid])
        progress(0.9, "building the keyword index")
        bm25 = self._build_bm25(tools, extra, same, edited)
        same_rows = previous is not None and previous.ids == ids
        ann = build_ann(vectors, previous, changed, same_rows)
        progress(1.0, "index ready")
        return IndexSnapshot(
            catalog=catalog,
            ids=ids,
            row_of=previous.row_of if previous is not None and previous.ids == ids else
            {tool_id: i for i, tool_id in enumerate(ids)},
            vectors=vectors,
            image_owner=np.array([row for row, _ in image_rows], dtype=np.int64),
            image_vectors=image_vectors,
            image_text_owner=np.array(text_rows, dtype=np.int64),
            image_text=image_text,
            bm25=bm25,
            bm25_texts=self._bm25_texts,
            ann=ann,
            **self._tool_arrays(tools, previous, edited),
        )

    def _tool_arrays(self, tools: Sequence[ToolProfile], previous: IndexSnapshot | None,
                     edited: Sequence[int] | None, english: np.ndarray | None = None) -> dict[str, Any]:
        """Per-tool filter columns; after an edit (``edited`` rows of the same tools in the same order) only
        those rows are redone."""
        if previous is not None and edited is not None and previous.perm_key_codes is not None:
            changed = list(edited)
            cols: dict[str, Any] = {"english": previous.english.copy(), "perm_keys": previous.perm_keys.copy(),
                    "categories": previous.categories.copy(), "deprecated": previous.deprecated.copy(),
                    "priority": previous.priority.copy()}
            for row in changed:
                t = tools[row]
                cols["english"][row], cols["perm_keys"][row] = self._is_english(t), t.perm_key
                cols["categories"][row], cols["deprecated"][row] = t.category, t.deprecated
                cols["priority"][row] = t.priority
            if any(previous.perm_keys[row] != cols["perm_keys"][row] for row in changed):
                cols.update(perm_codes(list(cols["perm_keys"])))
            else:
                cols.update(perm_key_values=previous.perm_key_values, perm_key_codes=previous.perm_key_codes)
            return cols
        return tool_columns(tools, english if english is not None else
                            np.array([self._is_english(t) for t in tools], dtype=bool))

    def _build_bm25(self, tools: Sequence[ToolProfile], extra: Mapping[str, list[str]], same: Container[str],
                    edited: Sequence[int] | None) -> BM25Index:
        """The keyword index in catalog row order (tool text plus the text read in its example images);
        after an edit only changed texts are re-tokenised."""
        def text(t: ToolProfile) -> str:
            return "\n".join([t.lexical_text(), *extra[t.id]]) if t.id in extra else t.lexical_text()

        previous: IndexSnapshot | None = getattr(self, "_snapshot", None)
        if previous is not None and edited is not None and previous.bm25_texts:
            # An edit (same tools, same order): only the edited rows and the rows with image text (which may
            # have been read since) are compared.
            texts_now = list(previous.bm25_texts)
            edits: dict[str, str] = {}
            for row in sorted({*edited, *(previous.row_of[i] for i in extra)}):
                t = tools[row]
                new = text(t)
                if new != texts_now[row]:
                    texts_now[row], edits[t.id] = new, new
            self._bm25_texts = tuple(texts_now)
            return previous.bm25.update(edits, ()) if edits else previous.bm25
        texts = {t.id: text(t) for t in tools}
        if previous is not None:
            old = dict(zip(previous.bm25.ids, previous.bm25_texts, strict=True))
            changed = {i: s for i, s in texts.items() if (i not in same or i in extra) and old.get(i) != s}
            removed = [i for i in previous.ids if i not in texts]
            updated = previous.bm25.update(changed, removed) if (changed or removed) else previous.bm25
            if list(updated.ids) == list(texts):
                self._bm25_texts = tuple(texts.values())
                return updated
        self._bm25_texts = tuple(texts.values())
        return BM25Index.build(list(texts), list(texts.values()))

    def _is_english(self, tool: ToolProfile) -> bool:
        """Whether the English model may score this tool (cached by text hash: edits re-check one tool)."""
        key = tool.text_hash()
        if key not in self._english:
            self._english[key] = bool(tool_text("dense_en", tool.document_text()))
        return self._english[key]
