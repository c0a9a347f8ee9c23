"""Vector storage of tool embeddings in Chroma (embedded folder or a Chroma server).

Why a layer of its own: the rest of toolrag sees plain ids, unit-length numpy rows and cosine *similarities*;
everything Chroma-specific lives here - opening a client with clear errors, naming collections after the model
that produced the vectors (so vectors of two models are never mixed), batching writes to Chroma's batch limit,
paging reads, building permission/category where-clauses, and turning Chroma's cosine *distance* into a
similarity in exactly one place (:func:`_similarity`).

Collections are created without an embedding function and always receive ``embeddings=`` /
``query_embeddings=``, so Chroma never loads (or downloads) its default embedder.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from toolrag.errors import StoreError
from toolrag.index.client import chroma_call, chroma_errors
from toolrag.index.filters import NOTHING, prune_where

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection as ChromaCollection

__all__ = ["Hit", "MetadataValue", "VectorCollection", "collection_name"]

logger = logging.getLogger(__name__)

MetadataValue = str | int | float | bool


UNIT_NORM_TOLERANCE: Final = 1e-3
"""A stored row's L2 norm may differ from 1 by at most this much."""


_SPACE: Final = "cosine"


_NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$")


_KIND_RE: Final = re.compile(r"^[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?$")


# ------------------------------------------------------------------------------------------ naming
def collection_name(kind: str, fingerprint: str, *, staging: bool = False) -> str:
    """Return ``toolrag-<kind>-<12 hex of sha1(fingerprint)>`` (``-staging`` appended for a rebuild)."""
    if not _KIND_RE.match(kind):
        raise ValueError(
            f"collection kind {kind!r} must be 1-64 lower-case letters, digits, '-' or '_' "
            "starting and ending with a letter or digit, e.g. 'text' or 'clip-image'"
        )
    if not fingerprint:
        raise ValueError("collection fingerprint is empty: pass the model fingerprint")
    digest = hashlib.sha1(fingerprint.encode("utf-8")).hexdigest()[:12]
    return f"toolrag-{kind}-{digest}" + ("-staging" if staging else "")


def _check_name(name: str) -> str:
    if not _NAME_RE.match(name) or ".." in name:
        raise ValueError(
            f"Chroma collection name {name!r} is invalid: use 3-512 characters of [a-zA-Z0-9._-] "
            "starting and ending with a letter or digit (see collection_name())"
        )
    return name


@dataclass(frozen=True)
class Hit:
    """One query result: the row id, its cosine similarity to the query, and the row's metadata."""

    id: str
    similarity: float
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict, compare=False, hash=False)


def _similarity(distance: float) -> float:
    """The one place where Chroma's cosine distance becomes a cosine similarity."""
    return 1.0 - float(distance)


class VectorCollection:
    """One Chroma collection of vectors of one kind from one model (the name includes a model fingerprint).

    The collection's metadata records ``fingerprint`` and ``dim``; opening an existing collection whose
    fingerprint, dim or distance space differs deletes and recreates it empty, so vectors of two models are
    never mixed. Writes (and paged reads, for a consistent snapshot) hold a per-instance ``RLock``; queries do
    not, so several threads may query while another upserts.
    """

    def __init__(self, client: ClientAPI, name: str, *, dim: int, fingerprint: str) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"vector dim must be a positive integer, got {dim!r}")
        if not fingerprint:
            raise ValueError(f"collection {name!r} needs a non-empty model fingerprint")
        self._client = client
        self._name = _check_name(name)
        self.dim = dim
        self.fingerprint = fingerprint
        self._lock = threading.RLock()
        self._batch = max(1, int(chroma_call("read the max batch size", client.get_max_batch_size)))
        self._collection = self._open()
        self._generation: str | None = (self._collection.metadata or {}).get("generation")

    @property
    def name(self) -> str:
        """The current Chroma collection name (changes with :meth:`rename`)."""
        return self._name

    def _create_kwargs(self) -> dict[str, Any]:
        return {
            "embedding_function": None,
            "configuration": {"hnsw": {"space": _SPACE}},
            "metadata": {"fingerprint": self.fingerprint, "dim": self.dim},
        }

    def _open(self) -> ChromaCollection:
        with self._lock:
            what = f"open collection {self._name!r}"
            col = chroma_call(what, self._client.get_or_create_collection, self._name, **self._create_kwargs())
            meta = col.metadata or {}
            space = ((col.configuration or {}).get("hnsw") or {}).get("space", _SPACE)
            wanted = (self.fingerprint, self.dim, _SPACE)
            if (meta.get("fingerprint"), meta.get("dim"), space) == wanted:
                return col
            found = (meta.get("fingerprint"), meta.get("dim"), space)
            logger.warning(
                "Chroma collection %s holds (fingerprint, dim, space)=%r, not %r: recreating it empty",
                self._name,
                found,
                wanted,
            )
            chroma_call(f"delete collection {self._name!r}", self._client.delete_collection, self._name)
            return chroma_call(what, self._client.create_collection, self._name, **self._create_kwargs())

    def _check_vectors(self, vectors: np.ndarray, n: int) -> np.ndarray:
        arr = np.asarray(vectors)
        if arr.ndim != 2 or arr.shape[1] != self.dim:
            raise ValueError(f"{self._name}: vectors must have shape (n, {self.dim}), got {arr.shape}")
        if arr.shape[0] != n:
            raise ValueError(f"{self._name}: got {n} ids/metadatas for {arr.shape[0]} vector rows")
        if not np.issubdtype(arr.dtype, np.number):
            raise ValueError(f"{self._name}: vectors must be numeric, got dtype {arr.dtype}")
        bad = np.flatnonzero(~np.isfinite(arr).all(axis=1))
        if bad.size:
            raise ValueError(f"{self._name}: vector rows {bad[:5].tolist()} contain NaN or infinity")
        norms = np.linalg.norm(arr.astype(np.float64), axis=1)
        off = np.flatnonzero(np.abs(norms - 1.0) > UNIT_NORM_TOLERANCE)
        if off.size:
            raise ValueError(
                f"{self._name}: vector rows must be unit length (tolerance {UNIT_NORM_TOLERANCE}); rows "
                f"{off[:5].tolist()} have norms {np.round(norms[off[:5]], 4).tolist()}: normalise them first"
            )
        return arr.astype(np.float32, copy=False)

    def _check_ids(self, ids: Sequence[str]) -> list[str]:
        out = list(ids)
        for item in out:
            if not isinstance(item, str) or not item:
                raise ValueError(f"{self._name}: row ids must be non-empty strings, got {item!r}")
        if len(set(out)) != len(out):
            dup = sorted({i for i in out if out.count(i) > 1})[:5]
            raise ValueError(f"{self._name}: duplicate row ids {dup}")
        return out

    def upsert(
        self,
        ids: Sequence[str],
        vectors: np.ndarray,
        metadatas: Sequence[Mapping[str, MetadataValue]],
    ) -> None:
        """Insert or replace rows (finite, unit length); large inputs are written in Chroma-sized batches."""
        id_list = self._check_ids(ids)
        arr = self._check_vectors(vectors, len(id_list))
        if len(metadatas) != len(id_list):
            raise ValueError(f"{self._name}: got {len(metadatas)} metadatas for {len(id_list)} ids")
        metas: list[dict[str, MetadataValue]] = []
        for row_id, meta in zip(id_list, metadatas, strict=True):
            if not meta:
                raise ValueError(f"{self._name}: row {row_id!r} has empty metadata (Chroma needs a key)")
            for key, value in meta.items():
                if not isinstance(value, (str, int, float, bool)):
                    raise ValueError(
                        f"{self._name}: row {row_id!r} metadata {key!r}={value!r} is not str/int/float/bool"
                    )
            metas.append(dict(meta))
        with self._lock:
            for start in range(0, len(id_list), self._batch):
                stop = min(start + self._batch, len(id_list))
                chroma_call(
                    f"upsert {stop - start} rows into {self._name!r}",
                    self._collection.upsert,
                    ids=id_list[start:stop],
                    embeddings=arr[start:stop],
                    metadatas=metas[start:stop],
                )

    def delete(self, ids: Sequence[str]) -> None:
        """Delete rows by id; unknown ids are ignored."""
        id_list = list(dict.fromkeys(ids))
        with self._lock:
            for start in range(0, len(id_list), self._batch):
                chunk = id_list[start : start + self._batch]
                chroma_call(f"delete rows from {self._name!r}", self._collection.delete, ids=chunk)

    def _pages(self, include: list[str]) -> Iterable[dict[str, Any]]:
        offset = 0
        while True:
            page = chroma_call(
                f"read rows of {self._name!r}",
                self._collection.get,
                include=include,
                limit=self._batch,
                offset=offset,
            )
            if not page["ids"]:
                return
            yield page
            offset += len(page["ids"])

    def get_metadata(self) -> dict[str, dict[str, MetadataValue]]:
        """Metadata of every row, id -> metadata (read in pages)."""
        out: dict[str, dict[str, MetadataValue]] = {}
        with self._lock:
            for page in self._pages(["metadatas"]):
                for row_id, meta in zip(page["ids"], page["metadatas"], strict=True):
                    out[row_id] = dict(meta or {})
        return out

    def get_vectors(self, ids: Sequence[str] | None = None) -> tuple[list[str], np.ndarray]:
        """Stored rows as (ids, float32 matrix). All rows when ``ids`` is None (paged); otherwise the rows
        found, in the order asked (ids not stored are left out)."""
        found: dict[str, np.ndarray] = {}
        with self._lock:
            if ids is None:
                for page in self._pages(["embeddings"]):
                    found.update(zip(page["ids"], np.asarray(page["embeddings"]), strict=True))
                order = list(found)
            else:
                order = list(dict.fromkeys(ids))
                for start in range(0, len(order), self._batch):
                    page = chroma_call(
                        f"read rows of {self._name!r}",
                        self._collection.get,
                        ids=order[start : start + self._batch],
                        include=["embeddings"],
                    )
                    found.update(zip(page["ids"], np.asarray(page["embeddings"]), strict=True))
        kept = [row_id for row_id in order if row_id in found]
        if not kept:
            return [], np.zeros((0, self.dim), dtype=np.float32)
        return kept, np.stack([found[row_id] for row_id in kept]).astype(np.float32)

    def get_rows(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray, list[dict[str, MetadataValue]]]:
        """The stored rows of ``ids`` as (ids, float32 matrix, metadatas), in the order asked (ids not stored
        are left out)."""
        order = list(dict.fromkeys(ids))
        found: dict[str, tuple[np.ndarray, dict[str, MetadataValue]]] = {}
        with self._lock:
            for start in range(0, len(order), self._batch):
                page = chroma_call(f"read rows of {self._name!r}", self._collection.get,
                                   ids=order[start:start + self._batch], include=["embeddings", "metadatas"])
                for row_id, vec, meta in zip(page["ids"], np.asarray(page["embeddings"]), page["metadatas"] or [],
                                             strict=True):
                    found[row_id] = (vec, dict(meta or {}))
        kept = [row_id for row_id in order if row_id in found]
        if not kept:
            return [], np.zeros((0, self.dim), dtype=np.float32), []
        return (kept, np.stack([found[row_id][0] for row_id in kept]).astype(np.float32),
                [found[row_id][1] for row_id in kept])

    def present(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are stored."""
        order = list(dict.fromkeys(ids))
        found: set[str] = set()
        with self._lock:
            for start in range(0, len(order), self._batch):
                page = chroma_call(f"read rows of {self._name!r}", self._collection.get,
                                   ids=order[start:start + self._batch], include=[])
                found.update(page["ids"])
        return found

    def ids(self) -> list[str]:
        """The ids of every stored row (read in pages)."""
        with self._lock:
            return [row_id for page in self._pages([]) for row_id in page["ids"]]

    def query(self, vector: np.ndarray, *, k: int, where: Mapping[str, Any] | None = None,
              with_metadata: bool = True) -> list[Hit]:
        """The ``k`` rows most cosine-similar to ``vector`` that satisfy ``where``, best first.

        ``k`` above the number of rows is fine; an empty collection, or a where-clause nothing can satisfy
        (see :func:`build_where`), gives ``[]``. ``with_metadata=False`` leaves ``Hit.metadata`` empty and
        saves a metadata read per hit (about 7 ms per query at 100,000 rows).
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        vec = np.asarray(vector, dtype=np.float64)
        if vec.shape not in ((self.dim,), (1, self.dim)):
            raise ValueError(f"{self._name}: query vector must have shape ({self.dim},), got {vec.shape}")
        vec = vec.reshape(-1)
        if not np.isfinite(vec).all() or not np.linalg.norm(vec) > 0:
            raise ValueError(f"{self._name}: query vector must be finite and non-zero")
        clause = None if where is None else prune_where(where)
        if clause is NOTHING:
            return []
        collection = self._collection
        result = chroma_call(
            f"query {self._name!r} with where={clause!r}",
            collection.query,
            query_embeddings=[vec.astype(np.float32)],
            n_results=k,
            where=clause,
            include=["distances", "metadatas"] if with_metadata else ["distances"],
        )
        metas = (result.get("metadatas") or [[]])[0] or [{}] * len(result["ids"][0])
        hits = [
            Hit(id=row_id, similarity=_similarity(dist), metadata=dict(meta or {}))
            for row_id, dist, meta in zip(result["ids"][0], result["distances"][0], metas, strict=True)
        ]
        hits.sort(key=lambda hit: (-hit.similarity, hit.id))
        return hits[:k]

    @property
    def generation(self) -> str | None:
        """A token that changes whenever toolrag writes to this collection (``None`` until the first one):
        a copy of the vectors made at one generation is stale at any other (see toolrag.index.serving)."""
        return self._generation

    def new_generation(self) -> str:
        """Record a fresh generation token in the collection's metadata (before a write) and return it."""
        token = uuid.uuid4().hex
        metadata = {"fingerprint": self.fingerprint, "dim": self.dim, "generation": token}
        with self._lock:
            chroma_call(f"update the metadata of {self._name!r}", self._collection.modify, metadata=metadata)
            self._generation = token
        return token

    def count(self) -> int:
        """Number of rows."""
        return int(chroma_call(f"count rows of {self._name!r}", self._collection.count))

    def rename(self, new_name: str) -> None:
        """Rename this collection, replacing any collection already called ``new_name``.

        Used to swap a freshly built staging collection into place; other ``VectorCollection`` objects on the
        replaced collection become stale and must be reopened.
        """
        _check_name(new_name)
        with self._lock:
            if new_name == self._name:
                return
            self._delete_if_exists(new_name)
            chroma_call(f"rename {self._name!r} to {new_name!r}", self._collection.modify, name=new_name)
            self._name = new_name

    def _delete_if_exists(self, name: str) -> None:
        from chromadb.errors import NotFoundError

        try:
            self._client.delete_collection(name)
        except NotFoundError:
            return
        except chroma_errors() as exc:
            raise StoreError(f"Chroma failed to delete collection {name!r}: {exc}") from exc

    def drop(self) -> None:
        """Delete the whole collection (e.g. a failed staging build); the object is unusable afterwards."""
        with self._lock:
            chroma_call(f"delete collection {self._name!r}", self._client.delete_collection, self._name)
