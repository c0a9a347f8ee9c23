"""Syncing the tool-text collections of an index: encode what changed, the text models' batches spread over the cores.

Each block of tool texts is cut into every model's batches, and two worker threads take them from one queue
(:mod:`toolrag.encode.spread`; ONNX Runtime releases the GIL): on 2 cores this keeps both busy until the block
is done, where one model per thread left a core idle once the faster model had finished (docs/benchmarks.md,
"Where the time goes"). Chroma writes and progress stay in the calling thread, block by block, each row with
its text hash, so an interrupted build leaves at worst an incomplete cache that the next open completes.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from toolrag.catalog.profile import ToolProfile
from toolrag.encode.spread import passage_jobs, spread
from toolrag.index.mirror import MirroredCollection
from toolrag.progress import Progress
from toolrag.text import ENGLISH_SEGMENTS_VERSION, english_segments

if TYPE_CHECKING:
    from toolrag.index.held import HeldVectors

__all__ = ["AllBut", "reading_key", "sync_texts", "text_meta", "tool_text"]

#: Tool texts encoded (and written to Chroma) per batch; sorted by length first, so batches pad little.
_BATCH = 256


class AllBut(Container[str]):
    """Every id except a few: the unchanged tools of an edit, without a set of 100,000 ids."""

    def __init__(self, excluded: Container[str]) -> None:
        self._excluded = excluded

    def __contains__(self, item: object) -> bool:
        return item not in self._excluded

    def __bool__(self) -> bool:
        return True


def sync_texts(
    collections: Mapping[str, tuple[MirroredCollection, Any]], tools: Sequence[ToolProfile], same: Container[str],
    progress: Progress, *, meta: Callable[[ToolProfile], dict[str, Any]], edited: Sequence[int] | None = None,
    ids: Sequence[str] | None = None, held: HeldVectors | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, list[int]], int]:
    """For each text collection (kind -> (collection, model)): encode the texts that changed, re-label rows
    whose metadata (``meta``) changed, delete removed tools. Returns the vectors in catalog order and the
    rows that were encoded, by kind, and how many texts were encoded. ``same``: ids whose profile is the
    very object of the last sync (not checked at all). ``edited``: when the catalog has exactly the tools
    of the last sync in the same order, the rows whose profile is not the last sync's object (only these
    are checked, and nothing is deleted: an edit at 100,000 tools must not loop over every tool). ``ids``:
    the tools' ids in order, when the caller has them already. ``held``: a published index's vectors kept by
    content hash (:mod:`toolrag.index.held`): the rows replaced or deleted are kept there first, and a text
    whose vector is among them or held there is not encoded again (it does not count as encoded)."""
    plans = {kind: _plan(collection, tools, same, meta, edited) for kind, (collection, _) in collections.items()}
    stale_of = {kind: plan[0] for kind, plan in plans.items()}  # rows written (encoded or reused)
    for kind, (collection, _) in collections.items():
        stale, wanted, moved, gone = plans[kind]
        if held is not None and stale:
            plans[kind] = (_reuse(kind, collection, stale, wanted, gone, held), wanted, moved, gone)
        elif held is not None and gone:
            held.retire(kind, collection, _hashes(collection, gone))
        if gone:
            collection.delete(gone)
    total = sum(len(plan[0]) for plan in plans.values())
    done = 0
    batches = max((len(plan[0]) for plan in plans.values()), default=0)
    for start in range(0, batches, _BATCH):
        block = {kind: plans[kind][0][start:start + _BATCH] for kind in collections}
        block = {kind: batch for kind, batch in block.items() if batch}
        # Text models embed documents with their passage prompt; CLIP has one text tower. A tool the English model
        # does not read keeps its row (its document's vector), which no search scores (the index's English flags).
        work = [(len(batch), passage_jobs(collections[kind][1],
                                          [tool_text(kind, t.document_text()) or t.document_text() for t in batch]))
                for kind, batch in block.items()]
        for (kind, batch), vecs in zip(block.items(), spread(work), strict=True):
            wanted = plans[kind][1]
            collections[kind][0].upsert([t.id for t in batch], vecs, [wanted[t.id] for t in batch])
            done += len(batch)
            progress(done / max(total, 1), f"encoded {done}/{total} tool texts")
    changed: dict[str, list[int]] = {}
    vectors: dict[str, np.ndarray]
    ids = ids if ids is not None else [t.id for t in tools]
    for kind, (collection, _) in collections.items():
        _, wanted, moved, _ = plans[kind]
        stale = stale_of[kind]
        if moved:  # metadata changed (permissions, category...) but not the text: keep the vectors
            got_ids, got = collection.vectors([t.id for t in moved])
            collection.upsert(got_ids, got, [wanted[i] for i in got_ids])
        stale_ids = {t.id for t in stale}
        if edited is not None:
            changed[kind] = sorted(n for n in edited if tools[n].id in stale_ids)
        else:
            changed[kind] = [n for n, t in enumerate(tools) if t.id in stale_ids] if stale else []
    if edited is not None and len(collections) > 1:
        # An edit: each matrix is the last one plus the rows just written (nothing read from the store), in an
        # older matrix nobody holds any more or else in a copy (MirroredCollection.matrix). numpy copies
        # without the GIL: two 146 MB copies at 100,000 tools take 94 ms one after the other and 49 ms side by
        # side on this 2-core CPU (python -m bench.matrix_copy).
        with ThreadPoolExecutor(max_workers=len(collections), thread_name_prefix="toolrag-matrix") as copies:
            futures = {kind: copies.submit(collection.matrix, ids) for kind, (collection, _) in collections.items()}
            vectors = {kind: future.result() for kind, future in futures.items()}
    else:
        vectors = {kind: collection.matrix(ids) for kind, (collection, _) in collections.items()}
    return vectors, changed, done


def tool_text(kind: str, document: str) -> str:
    """What a tool-text collection of ``kind`` embeds of a tool's ``document``: the document, except that the
    English model reads a mostly-Chinese one through its English words (:func:`toolrag.text.english_segments`: a
    bilingual tool's English name, tags and examples; "" when they are too few to read, and the English model
    then does not score the tool). Index builds, the English flag of each tool and the leave-one-out views of
    ``toolrag.evaluation`` all read it here."""
    return english_segments(document) if kind == "dense_en" else document


def reading_key(kind: str) -> str:
    """What a collection's name adds for :func:`tool_text` (so a changed reading rebuilds its vectors)."""
    return f"|reading={ENGLISH_SEGMENTS_VERSION}" if kind == "dense_en" else ""


def _plan(collection: MirroredCollection, tools: Sequence[ToolProfile], same: Container[str],
          meta: Callable[[ToolProfile], dict[str, Any]], edited: Sequence[int] | None,
          ) -> tuple[list[ToolProfile], dict[str, dict[str, Any]], list[ToolProfile], list[str]]:
    """What one text collection needs: (profiles to encode, sorted by text length so batches pad little;
    wanted metadata by id; profiles whose metadata alone changed; ids of removed tools, whose rows the caller
    deletes)."""
    stored = collection.metadata()
    if edited is not None and len(stored) == len(tools):  # the same tools as the last sync: nothing to delete
        check = [tools[n] for n in edited]
        wanted = {t.id: meta(t) for t in check}
        stale = [t for t in check if stored.get(t.id, {}).get("text_hash") != wanted[t.id]["text_hash"]]
        stale_ids = {t.id for t in stale}
        moved = [t for t in check if t.id not in stale_ids and stored.get(t.id) != wanted[t.id]]
        return stale, wanted, moved, []
    check = [t for t in tools if t.id not in same] if same else list(tools)
    wanted = {t.id: meta(t) for t in check}
    stale = [t for t in check if stored.get(t.id, {}).get("text_hash") != wanted[t.id]["text_hash"]]
    stale_ids = {t.id for t in stale}
    moved = [t for t in check if t.id in stored and t.id not in stale_ids and stored[t.id] != wanted[t.id]]
    present = {t.id for t in tools} if same else wanted
    gone = [i for i in stored if i not in present]
    stale.sort(key=lambda t: len(t.document_text()))  # similar lengths share a batch: less padding
    return stale, wanted, moved, gone


def _hashes(collection: MirroredCollection, ids: Sequence[str]) -> dict[str, str]:
    """Row id -> the text hash stored with it (rows without one are left out)."""
    stored = collection.metadata()
    return {i: str(stored[i]["text_hash"]) for i in ids if i in stored and stored[i].get("text_hash")}


def _reuse(kind: str, collection: MirroredCollection, stale: list[ToolProfile], wanted: Mapping[str, dict[str, Any]],
           gone: Sequence[str], held: HeldVectors) -> list[ToolProfile]:
    """Before the rows of ``stale`` tools are rewritten and those of removed tools (``gone``) deleted: keep them
    in ``held`` (when a kept version holds their text), write the vector of every stale tool whose text is among
    them or held there, and return the tools left to encode."""
    replaced = _hashes(collection, [*(t.id for t in stale), *gone])
    held.retire(kind, collection, replaced)
    needed = {t.text_hash() for t in stale}
    found: dict[str, np.ndarray] = {}
    local = {content: row_id for row_id, content in replaced.items() if content in needed}
    if local:
        got_ids, got = collection.vectors(list(local.values()))
        by_row = dict(zip(got_ids, got, strict=True))
        found.update({content: by_row[row_id] for content, row_id in local.items() if row_id in by_row})
    found.update({content: vector for content, (vector, _) in held.find(kind, needed - found.keys()).items()})
    reused = [t for t in stale if t.text_hash() in found]
    if reused:
        collection.upsert([t.id for t in reused], np.stack([found[t.text_hash()] for t in reused]),
                          [wanted[t.id] for t in reused])
    return [t for t in stale if t.text_hash() not in found]


def text_meta(tool: ToolProfile) -> dict[str, Any]:
    """The metadata stored with a tool's text rows (its text hash tells a sync whether to re-encode)."""
    return {
        "text_hash": tool.text_hash(),
        "perm_key": tool.perm_key,
        "category": tool.category,
        "deprecated": tool.deprecated,
        "mutation": tool.mutation,
    }
