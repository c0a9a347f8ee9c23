"""Syncing the tool-text collections of an index: encode what changed, both text models side by side.

The models encode the same batch at once, each in its own thread (ONNX Runtime and torch release the GIL): on
2 cores two small-batch runs side by side do about 1.5x the work of the same runs one after the other, whose
intra-op threads mostly wait on each other (docs/benchmarks.md, "Where the time goes"). Chroma writes and
progress stay in the calling thread, batch by batch, each row with its text hash, so an interrupted build
leaves at worst an incomplete cache that the next open completes.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from toolrag.catalog.profile import ToolProfile
from toolrag.index.mirror import MirroredCollection
from toolrag.progress import Progress

__all__ = ["AllBut", "sync_texts", "text_meta"]

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
    ids: Sequence[str] | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, list[int]], int]:
    """For each text collection (kind -> (collection, model)): encode the texts that changed, re-label rows
    whose metadata (``meta``) changed, delete removed tools. Returns the vectors in catalog order and the
    rows that were encoded, by kind, and how many texts were encoded. ``same``: ids whose profile is the
    very object of the last sync (not checked at all). ``edited``: when the catalog has exactly the tools
    of the last sync in the same order, the rows whose profile is not the last sync's object (only these
    are checked, and nothing is deleted: an edit at 100,000 tools must not loop over every tool). ``ids``:
    the tools' ids in order, when the caller has them already."""
    plans = {kind: _plan(collection, tools, same, meta, edited) for kind, (collection, _) in collections.items()}
    total = sum(len(plan[0]) for plan in plans.values())
    done = 0
    batches = max((len(plan[0]) for plan in plans.values()), default=0)
    workers = min(2, sum(1 for plan in plans.values() if plan[0]))
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="toolrag-encode") if workers > 1 else None
    try:
        for start in range(0, batches, _BATCH):
            jobs: dict[str, tuple[list[ToolProfile], Any]] = {}
            for kind, (_, model) in collections.items():
                batch = plans[kind][0][start:start + _BATCH]
                if batch:
                    # Text models embed documents with their passage prompt; CLIP has one text tower.
                    encode = getattr(model, "encode_passages", None) or model.encode_texts
                    docs = [t.document_text() for t in batch]
                    jobs[kind] = (batch, pool.submit(encode, docs) if pool is not None else encode(docs))
            for kind, (batch, job) in jobs.items():
                vecs = job.result() if isinstance(job, Future) else job
                wanted = plans[kind][1]
                collections[kind][0].upsert([t.id for t in batch], vecs, [wanted[t.id] for t in batch])
                done += len(batch)
                progress(done / max(total, 1), f"encoded {done}/{total} tool texts")
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    changed: dict[str, list[int]] = {}
    vectors: dict[str, np.ndarray]
    ids = ids if ids is not None else [t.id for t in tools]
    for kind, (collection, _) in collections.items():
        stale, wanted, moved = plans[kind]
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


def _plan(collection: MirroredCollection, tools: Sequence[ToolProfile], same: Container[str],
          meta: Callable[[ToolProfile], dict[str, Any]], edited: Sequence[int] | None,
          ) -> tuple[list[ToolProfile], dict[str, dict[str, Any]], list[ToolProfile]]:
    """What one text collection needs: (profiles to encode, sorted by text length so batches pad little;
    wanted metadata by id; profiles whose metadata alone changed). Rows of removed tools are deleted here."""
    stored = collection.metadata()
    if edited is not None and len(stored) == len(tools):  # the same tools as the last sync: nothing to delete
        check = [tools[n] for n in edited]
        wanted = {t.id: meta(t) for t in check}
        stale = [t for t in check if stored.get(t.id, {}).get("text_hash") != wanted[t.id]["text_hash"]]
        stale_ids = {t.id for t in stale}
        moved = [t for t in check if t.id not in stale_ids and stored.get(t.id) != wanted[t.id]]
        return stale, wanted, moved
    check = [t for t in tools if t.id not in same] if same else list(tools)
    wanted = {t.id: meta(t) for t in check}
    stale = [t for t in check if stored.get(t.id, {}).get("text_hash") != wanted[t.id]["text_hash"]]
    stale_ids = {t.id for t in stale}
    moved = [t for t in check if t.id in stored and t.id not in stale_ids and stored[t.id] != wanted[t.id]]
    present = {t.id for t in tools} if same else wanted
    gone = [i for i in stored if i not in present]
    if gone:
        collection.delete(gone)
    stale.sort(key=lambda t: len(t.document_text()))  # similar lengths share a batch: less padding
    return stale, wanted, moved


def text_meta(tool: ToolProfile) -> dict[str, Any]:
    """The metadata stored with a tool's text rows (its text hash tells a sync whether to re-encode)."""
    return {
        "text_hash": tool.text_hash(),
        "perm_key": tool.perm_key,
        "category": tool.category,
        "deprecated": tool.deprecated,
        "mutation": tool.mutation,
    }
