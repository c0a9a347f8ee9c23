"""A Chroma collection with an in-memory mirror of its metadata and of the vectors the index last used.

Why: syncing the index after one edited profile must cost milliseconds, not a read of every row back from
Chroma (the metadata and vectors of 10,000 tools take seconds to page out of it). The first sync reads the
collection once; later syncs compare against the mirror, write only what changed, and assemble the new
vector matrix from the previous one plus the rows just written. Chroma stays the durable copy: a new
process starts from it, and only this process's writes go through the mirror (one writer per index).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence

import numpy as np

from toolrag.errors import StoreError
from toolrag.index.store import Hit, MetadataValue, VectorCollection

__all__ = ["LazyRows", "MirroredCollection"]

Metadata = dict[str, MetadataValue]


class LazyRows(MutableMapping[str, Metadata]):
    """The metadata of rows known to be stored (a restored index), each row's dict built on its first read:
    an edit at 100,000 tools reads a few rows, and a restart that only serves searches reads none, so the
    100,000 dicts are never built. Writes and deletions are kept on top of the known rows."""

    def __init__(self, ids: Sequence[str], make: Callable[[int], Metadata], *,
                 positions: Mapping[str, int] | None = None) -> None:
        self._ids, self._make = ids, make
        self._row = positions if positions is not None else {i: n for n, i in enumerate(ids)}
        self._built: dict[str, Metadata] = {}   # rows read or written since
        self._gone: set[str] = set()            # known rows deleted since

    def __getitem__(self, key: str) -> Metadata:
        if key in self._built:
            return self._built[key]
        if key in self._gone or key not in self._row:
            raise KeyError(key)
        value = self._built[key] = self._make(self._row[key])
        return value

    def __setitem__(self, key: str, value: Metadata) -> None:
        self._built[key] = value
        self._gone.discard(key)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._built.pop(key, None)
        if key in self._row:
            self._gone.add(key)

    def __contains__(self, key: object) -> bool:
        return key in self._built or (key in self._row and key not in self._gone)

    def __iter__(self) -> Iterator[str]:
        yield from (i for i in self._ids if i not in self._gone)
        yield from (i for i in self._built if i not in self._row)

    def __len__(self) -> int:
        return len(self._ids) - len(self._gone) + sum(1 for i in self._built if i not in self._row)


class MirroredCollection:
    """Wraps a :class:`~toolrag.index.store.VectorCollection`; reads are served from memory after the first."""

    def __init__(self, collection: VectorCollection) -> None:
        self.collection = collection
        self._meta: MutableMapping[str, Metadata] | None = None
        self._fresh: dict[str, np.ndarray] = {}          # rows written since the last matrix()
        self._last_ids: Mapping[str, int] = {}           # id -> row of the last matrix() (never written into)
        self._last: np.ndarray | None = None
        self._spare: np.ndarray | None = None            # the matrix before the last one (see matrix())
        self._spare_behind: list[int] = []               # rows where it differs from the last one
        self._writing = False                            # the generation was renewed in this sync

    @property
    def dim(self) -> int:
        return self.collection.dim

    def begin_sync(self) -> None:
        """Start a sync: its first write renews the collection's generation (before writing)."""
        self._writing = False

    def prime(self, metadata: MutableMapping[str, Metadata], ids: Sequence[str], matrix: np.ndarray, *,
              positions: Mapping[str, int] | None = None) -> None:
        """Start from a saved state known to equal Chroma's content (toolrag.index.serving): the metadata of
        every row (a :class:`LazyRows` builds each row's on its first read), and the vectors of ``ids`` as the
        last matrix. ``positions``: ``ids`` -> row, when the caller has that map already (it is only read).
        Nothing is read from Chroma."""
        self._meta = metadata
        rows = positions if positions is not None else {i: n for n, i in enumerate(ids)}
        self._last, self._last_ids, self._fresh = matrix, rows, {}
        self._spare, self._spare_behind = None, []

    def _renew(self) -> None:
        if not self._writing:
            self.collection.new_generation()
            self._writing = True

    def metadata(self) -> MutableMapping[str, Metadata]:
        """Metadata of every stored row, id -> metadata (read from Chroma once, then kept in step)."""
        if self._meta is None:
            self._meta = self.collection.get_metadata()
        return self._meta

    def upsert(self, ids: Sequence[str], vectors: np.ndarray, metadatas: Sequence[Mapping[str, MetadataValue]]
               ) -> None:
        """Write rows to Chroma, then to the mirror (a failed write leaves the mirror as it was).

        The mirror keeps the vectors as Chroma returns them: Chroma re-normalises cosine rows on write (a last
        bit may change), and the serving state must equal what a restart reads back from Chroma."""
        self._renew()
        self.collection.upsert(list(ids), np.asarray(vectors, dtype=np.float32), [dict(m) for m in metadatas])
        got_ids, vecs = self.collection.get_vectors(list(ids))
        if got_ids != list(ids):
            raise StoreError(f"Chroma did not keep the rows just written to {self.collection.name!r}: "
                             f"{sorted(set(ids) - set(got_ids))[:3]}; delete the index folder and re-index")
        meta = self.metadata()
        for row_id, vec, m in zip(ids, vecs, metadatas, strict=True):
            meta[row_id] = dict(m)
            self._fresh[row_id] = vec

    def delete(self, ids: Sequence[str]) -> None:
        self._renew()
        self.collection.delete(list(ids))
        meta = self.metadata()
        for row_id in ids:
            meta.pop(row_id, None)
            self._fresh.pop(row_id, None)

    def vectors(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """Stored vectors of ``ids`` (those found, in the order asked), from memory when it holds them."""
        known = [i for i in ids if i in self._fresh or i in self._last_ids]
        if len(known) < len(ids):
            return self.collection.get_vectors(list(ids))
        if not known:
            return [], np.zeros((0, self.dim), dtype=np.float32)
        return known, np.stack([self._row(i) for i in known]).astype(np.float32)

    def matrix(self, ids: Sequence[str]) -> np.ndarray:
        """The vectors of ``ids`` as one contiguous float32 matrix in that order; becomes the new baseline."""
        if self._last is not None and len(ids) == len(self._last_ids) and list(self._last_ids) == list(ids):
            # Same rows in the same order (an edit): the last matrix plus the rows written since.
            out = self._recycled()
            written = [self._last_ids[row_id] for row_id in self._fresh if row_id in self._last_ids]
            for row_id, vec in self._fresh.items():
                if row_id in self._last_ids:  # rows written but not asked for (an image without text) stay out
                    out[self._last_ids[row_id]] = vec
            self._spare, self._spare_behind = self._last, written
            self._last, self._fresh = out, {}
            return out
        self._spare, self._spare_behind = None, []
        out = np.empty((len(ids), self.dim), dtype=np.float32)
        missing: list[tuple[int, str]] = []
        for n, row_id in enumerate(ids):
            if row_id in self._fresh or row_id in self._last_ids:
                out[n] = self._row(row_id)
            else:
                missing.append((n, row_id))
        if missing:
            got_ids, got = self.collection.get_vectors([i for _, i in missing])
            position = {i: k for k, i in enumerate(got_ids)}
            lost = [i for _, i in missing if i not in position]
            if lost:
                raise StoreError(f"index rows missing after sync: {lost[:3]}; delete the index folder and "
                                 f"re-index")
            for n, row_id in missing:
                out[n] = got[position[row_id]]
        self._last, self._last_ids, self._fresh = out, {i: n for n, i in enumerate(ids)}, {}
        return out

    def _recycled(self) -> np.ndarray:
        """A copy of the last matrix to write an edit into. Snapshots are immutable (a search in flight keeps
        reading the matrix it started with), so an edit cannot write into the live matrix; copying it costs
        ~50 ms at 100,000 tools. The matrix of the snapshot before the live one is reused instead when
        nothing holds it any more (no snapshot, search, save or view of it is alive: its reference count is
        this object's own), brought up to date by copying the few rows the last edit changed."""
        last, spare, self._spare = self._last, self._spare, None
        if last is None:
            raise StoreError("no matrix to copy: call matrix() once before an edit")
        # References to ``spare``: this local variable and getrefcount's argument; any other (a snapshot,
        # a view, a background save) means someone may still read it.
        if (spare is not None and spare.shape == last.shape and spare.dtype == last.dtype
                and spare.flags.writeable and spare.flags.owndata and sys.getrefcount(spare) <= 2):
            for row in self._spare_behind:
                spare[row] = last[row]
            return spare
        return last.copy()

    def query(self, vector: np.ndarray, *, k: int, where: Mapping[str, object] | None = None) -> list[Hit]:
        """Nearest rows (ids and similarities only: the mirror already holds the metadata)."""
        return self.collection.query(vector, k=k, where=where, with_metadata=False)

    def _row(self, row_id: str) -> np.ndarray:
        if row_id in self._fresh:
            return self._fresh[row_id]
        return self._last[self._last_ids[row_id]]  # type: ignore[index]
