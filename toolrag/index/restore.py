"""Between a :class:`~toolrag.index.tool_index.ToolIndex` and its saved serving state
(:mod:`toolrag.index.serving`): building the state of a snapshot, and a snapshot from a state that matches.

Kept apart from the index so the index module stays about syncing with Chroma. Both directions use the same
row identities as the sync (tool ids, ``tool_id#image_hash`` for example images), so a restored snapshot is
the snapshot a sync would have built from Chroma: ``tests/test_serving.py`` compares them.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any

import numpy as np

from toolrag.catalog.profile import Catalog, ToolProfile
from toolrag.index.ann import IvfIndex
from toolrag.index.bm25 import BM25Index
from toolrag.index.mirror import LazyRows, MirroredCollection
from toolrag.index.serving import SavedState, rows_signature, state_fingerprint
from toolrag.index.snapshot import IndexSnapshot, perm_codes
from toolrag.signals import COLLECTIONS

__all__ = ["ANN_MIN_ROWS", "ANN_PROBES", "build_ann", "current_fingerprint", "restore_snapshot", "saved_state",
           "state_snapshot", "tool_columns"]

#: Catalogs with more tools than this get the in-process nearest-neighbour lists (the retriever scores every
#: tool exactly up to the same size, see toolrag.search.retriever.EXACT_LIMIT).
ANN_MIN_ROWS = 20_000

#: Lists an ANN query looks into (of about 2 * sqrt(n)): about 4 % of the rows at 100,000 tools.
ANN_PROBES = 24

_TOOL_KINDS = tuple(c.kind for c in COLLECTIONS if c.rows == "tool")
_IMAGE_KINDS = tuple(c.kind for c in COLLECTIONS if c.rows == "image")


def image_rows(tools: Sequence[ToolProfile], image_ids: Sequence[str]) -> dict[str, list[str]]:
    """tool id -> the row ids of its example images (in the snapshot's image order)."""
    out: dict[str, list[str]] = {}
    for iid in image_ids:
        out.setdefault(iid.split("#", 1)[0], []).append(iid)
    return out


def current_fingerprint(catalog_key: str, collections: Mapping[str, MirroredCollection],
                        tools: Sequence[ToolProfile], image_ids: Sequence[str]) -> str | None:
    """The fingerprint a saved state of these rows must carry now (``None``: a collection has no generation
    yet, so no saved state can be trusted)."""
    generations = {kind: (c.collection.fingerprint, c.collection.generation) for kind, c in collections.items()}
    if any(gen is None for _, gen in generations.values()):
        return None
    return state_fingerprint(catalog_key, {k: (fp, str(g)) for k, (fp, g) in generations.items()},
                             rows_signature(tools, image_rows(tools, image_ids)))


def build_ann(snapshot_vectors: Mapping[str, np.ndarray], previous: IndexSnapshot | None,
              changed: Mapping[str, Sequence[int]], same_rows: bool) -> dict[str, IvfIndex]:
    """The ANN lists of each tool collection of a large catalog: the previous ones with the changed rows
    re-filed when the rows are the same tools in the same order, else built anew."""
    out: dict[str, IvfIndex] = {}
    for kind, matrix in snapshot_vectors.items():
        if matrix.shape[0] <= ANN_MIN_ROWS:
            continue
        old = previous.ann.get(kind) if previous is not None else None
        if old is not None and same_rows and old.n_rows == matrix.shape[0]:
            rows = changed.get(kind, ())
            out[kind] = old.with_rows(matrix, rows) if rows else old
        else:
            out[kind] = IvfIndex.build(matrix)
    return out


def saved_state(snapshot: IndexSnapshot, fingerprint: str, ocr_texts: Mapping[str, str],
                image_ids: Sequence[str]) -> SavedState:
    """The state to save for ``snapshot`` (arrays are referenced, not copied)."""
    return SavedState(
        fingerprint=fingerprint, ids=snapshot.ids, vectors=dict(snapshot.vectors),
        image_ids=tuple(image_ids), image_vectors=dict(snapshot.image_vectors),
        ocr_texts={iid: ocr_texts.get(iid, "") for iid in image_ids}, image_text=snapshot.image_text,
        english=snapshot.english, bm25=snapshot.bm25.to_arrays(),
        ann={kind: ann.to_arrays() for kind, ann in snapshot.ann.items()},
    )


def restore_snapshot(state: SavedState, catalog: Catalog, collections: Mapping[str, MirroredCollection],
                     image_ids: Sequence[str], *, text_meta: Callable[[ToolProfile], dict[str, Any]],
                     tool_arrays: Callable[[np.ndarray], dict[str, Any]], text_dim: int) -> IndexSnapshot | None:
    """The snapshot ``state`` describes for ``catalog`` (whose fingerprint already matched), with every
    collection's mirror primed so later edits compare against it; ``None`` when the state lacks a collection
    this index has (it was saved with other models on)."""
    snapshot = state_snapshot(state, catalog, image_ids, kinds=collections, tool_arrays=tool_arrays,
                              text_dim=text_dim)
    if snapshot is None:
        return None
    tools, ids, row_of, texts = catalog.tools, snapshot.ids, snapshot.row_of, state.ocr_texts
    # The mirrors' row metadata is built row by row when read (an edit reads a few rows), not here: a restart
    # that only serves searches never needs it.
    for kind in snapshot.vectors:
        collections[kind].prime(LazyRows(ids, lambda n: text_meta(tools[n]), positions=row_of), ids,
                                state.vectors[kind], positions=row_of)
    owner = snapshot.image_owner.tolist()
    for kind in snapshot.image_vectors:
        collections[kind].prime(LazyRows(image_ids, lambda n: {**_image_meta(text_meta(tools[owner[n]])),
                                                               "tool_id": tools[owner[n]].id}),
                                image_ids, state.image_vectors[kind])
    if "image_text" in collections:
        text_ids = [iid for iid in image_ids if texts.get(iid)]
        collections["image_text"].prime(LazyRows(image_ids, lambda n: {
            "tool_id": tools[owner[n]].id, "ocr_text": texts.get(image_ids[n], ""),
            "has_text": bool(texts.get(image_ids[n]))}), text_ids, snapshot.image_text)
    return snapshot


def state_snapshot(state: SavedState, catalog: Catalog, image_ids: Sequence[str], *, kinds: Container[str],
                   tool_arrays: Callable[[np.ndarray], dict[str, Any]], text_dim: int,
                   version: str | None = None) -> IndexSnapshot | None:
    """The snapshot a saved (or published) state describes for ``catalog``, with the collections ``kinds`` of
    this process's models; ``None`` when the state is not of these tools, images and collections."""
    tools = catalog.tools
    ids = tuple(t.id for t in tools)
    wanted_tool = [k for k in _TOOL_KINDS if k in kinds]
    wanted_image = [k for k in _IMAGE_KINDS if k in kinds]
    if (state.ids != ids or tuple(state.image_ids) != tuple(image_ids)
            or sorted(state.vectors) != sorted(wanted_tool) or sorted(state.image_vectors) != sorted(wanted_image)):
        return None
    owner_row = {t.id: row for row, t in enumerate(tools)}
    image_owner = np.array([owner_row[iid.split("#", 1)[0]] for iid in image_ids], dtype=np.int64)
    texts = state.ocr_texts
    text_ids = [iid for iid in image_ids if texts.get(iid)]
    image_text = state.image_text if "image_text" in kinds else np.zeros((0, text_dim), np.float32)
    if image_text.shape[0] != len(text_ids if "image_text" in kinds else ()):
        return None
    extra: dict[str, list[str]] = {}
    for iid in text_ids:
        extra.setdefault(iid.split("#", 1)[0], []).append(texts[iid])
    bm25_texts = tuple("\n".join([t.lexical_text(), *extra[t.id]]) if t.id in extra else t.lexical_text()
                       for t in tools)
    row_of = {tool_id: i for i, tool_id in enumerate(ids)}  # read-only, shared by the snapshot and mirrors
    ann = {kind: IvfIndex.from_arrays(arrays, state.vectors[kind]) for kind, arrays in state.ann.items()
           if kind in state.vectors}
    return IndexSnapshot(
        catalog=catalog, ids=ids, row_of=row_of,
        vectors=dict(state.vectors), image_owner=image_owner, image_vectors=dict(state.image_vectors),
        image_text_owner=np.array([owner_row[iid.split("#", 1)[0]] for iid in text_ids], dtype=np.int64),
        image_text=image_text, bm25=BM25Index.from_arrays(ids, state.bm25), bm25_texts=bm25_texts, ann=ann,
        version=version, **tool_arrays(np.asarray(state.english, dtype=bool)),
    )


def tool_columns(tools: Sequence[ToolProfile], english: np.ndarray) -> dict[str, Any]:
    """The per-tool filter columns of a snapshot (``english``: whether the English model may score each tool)."""
    return {
        "english": english,
        "perm_keys": np.array([t.perm_key for t in tools], dtype=object),
        **perm_codes([t.perm_key for t in tools]),
        "categories": np.array([t.category for t in tools], dtype=object),
        "deprecated": np.array([t.deprecated for t in tools], dtype=bool),
        "priority": np.array([t.priority for t in tools], dtype=np.int64),
    }


def _image_meta(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if k != "text_hash"}
