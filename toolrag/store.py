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
import os
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import numpy as np

from toolrag.errors import StoreError
from toolrag.filters import NOTHING, prune_where

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection as ChromaCollection

logger = logging.getLogger(__name__)

MetadataValue = str | int | float | bool
UNIT_NORM_TOLERANCE: Final = 1e-3
"""A stored row's L2 norm may differ from 1 by at most this much."""
CONNECT_TIMEOUT_S: Final = 5.0
"""How long :func:`open_client` waits for the server's heartbeat before giving up."""
_SPACE: Final = "cosine"
_NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$")
_KIND_RE: Final = re.compile(r"^[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?$")
_START_HINT: Final = "start one with `chroma run --path DIR --port N`"


def _chromadb() -> Any:
    """Import chromadb with telemetry off (and the Hub offline unless online mode is on)."""
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    if not (os.environ.get("SPACE_ID") or os.environ.get("TOOLRAG_ONLINE") == "1"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import chromadb
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise StoreError("chromadb is not installed: run `pip install chromadb==1.5.9`") from exc
    return chromadb


def _chroma_errors() -> tuple[type[BaseException], ...]:
    """Exceptions a Chroma call raises for bad input or an unreachable server."""
    import httpx  # a dependency of chromadb
    from chromadb.errors import ChromaError

    return (ChromaError, ValueError, TypeError, OSError, httpx.HTTPError)


def _call(what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run one Chroma call, turning its errors into a :class:`StoreError` that says what was attempted."""
    try:
        return fn(*args, **kwargs)
    except _chroma_errors() as exc:
        raise StoreError(f"Chroma failed to {what}: {exc}") from exc


# --------------------------------------------------------------------------------------------- clients
@dataclass(frozen=True)
class StoreConfig:
    """Where the vectors live: ``url`` of a Chroma server (wins when both are set) or a local ``path``."""

    path: Path | None = None
    url: str | None = None


def _parse_url(url: str) -> tuple[str, int, bool]:
    """Validate ``http(s)://host[:port]`` and return (host, port, ssl); port defaults to 8000 / 443."""
    example = "e.g. http://127.0.0.1:8000"
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https"):
        raise StoreError(f"Chroma URL {url!r} must start with http:// or https:// ({example})")
    if not parts.hostname:
        raise StoreError(f"Chroma URL {url!r} has no host name ({example})")
    try:
        port = parts.port
    except ValueError as exc:
        raise StoreError(f"Chroma URL {url!r} has an invalid port: use a number 1-65535 ({example})") from exc
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise StoreError(f"Chroma URL {url!r} must be only scheme, host and port ({example})")
    ssl = parts.scheme == "https"
    if port is None:
        port = 443 if ssl else 8000
    if port == 0:
        raise StoreError(f"Chroma URL {url!r} has port 0: use the port the server listens on ({example})")
    return parts.hostname, port, ssl


def _open_http(url: str) -> ClientAPI:
    host, port, ssl = _parse_url(url)
    base = f"{'https' if ssl else 'http'}://{f'[{host}]' if ':' in host else host}:{port}"
    # Probe the heartbeat with a timeout first: Chroma's own HTTP client waits forever on a silent port.
    try:
        with urllib.request.urlopen(f"{base}/api/v2/heartbeat", timeout=CONNECT_TIMEOUT_S) as response:
            response.read(1024)
    except urllib.error.HTTPError as exc:
        raise StoreError(
            f"{url} answered HTTP {exc.code} on /api/v2/heartbeat: is it a Chroma (1.x) server? "
            f"Otherwise {_START_HINT}"
        ) from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise StoreError(f"cannot reach a Chroma server at {url} ({reason}); {_START_HINT}") from exc
    chromadb = _chromadb()
    from chromadb.config import Settings

    try:
        client: ClientAPI = chromadb.HttpClient(
            host=host, port=port, ssl=ssl, settings=Settings(anonymized_telemetry=False)
        )
        client.heartbeat()
    except _chroma_errors() as exc:
        raise StoreError(f"{url} does not answer as a Chroma server ({exc}); {_START_HINT}") from exc
    return client


def _open_persistent(path: Path) -> ClientAPI:
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise StoreError(f"Chroma path {path} is a file: give a folder (it is created if missing)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the Chroma folder {path} ({exc}): choose a writable folder") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise StoreError(f"Chroma folder {path} is not writable: choose another folder or fix permissions")
    chromadb = _chromadb()
    from chromadb.config import Settings

    try:
        client: ClientAPI = chromadb.PersistentClient(
            path=str(path), settings=Settings(anonymized_telemetry=False)
        )
    except _chroma_errors() as exc:
        raise StoreError(f"cannot open the Chroma folder {path} ({exc}); delete it to rebuild") from exc
    return client


def open_client(config: StoreConfig) -> ClientAPI:
    """Open a Chroma client: ``HttpClient`` for ``config.url``, else ``PersistentClient`` at ``config.path``.

    Raises :class:`StoreError` for a malformed URL, a server that does not answer within
    :data:`CONNECT_TIMEOUT_S`, a path that cannot be written, or a config with neither set.
    """
    if config.url:
        if config.path is not None:
            logger.info("Chroma URL %s given: ignoring path %s", config.url, config.path)
        return _open_http(config.url)
    if config.path is not None:
        return _open_persistent(config.path)
    raise StoreError(
        "no Chroma store configured: give a folder (path) or a server URL like http://127.0.0.1:8000"
    )


# ------------------------------------------------------------------------------------------ naming
def collection_name(kind: str, fingerprint: str, *, staging: bool = False) -> str:
    """Return ``toolrag-<kind>-<12 hex of sha1(fingerprint)>`` (``-staging`` appended for a rebuild)."""
    if not _KIND_RE.match(kind):
        raise StoreError(
            f"collection kind {kind!r} must be 1-64 lower-case letters, digits, '-' or '_' "
            "starting and ending with a letter or digit, e.g. 'text' or 'clip-image'"
        )
    if not fingerprint:
        raise StoreError("collection fingerprint is empty: pass the model fingerprint")
    digest = hashlib.sha1(fingerprint.encode("utf-8")).hexdigest()[:12]
    return f"toolrag-{kind}-{digest}" + ("-staging" if staging else "")


def _check_name(name: str) -> str:
    if not _NAME_RE.match(name) or ".." in name:
        raise StoreError(
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
            raise StoreError(f"vector dim must be a positive integer, got {dim!r}")
        if not fingerprint:
            raise StoreError(f"collection {name!r} needs a non-empty model fingerprint")
        self._client = client
        self._name = _check_name(name)
        self.dim = dim
        self.fingerprint = fingerprint
        self._lock = threading.RLock()
        self._batch = max(1, int(_call("read the max batch size", client.get_max_batch_size)))
        self._collection = self._open()

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
            col = _call(what, self._client.get_or_create_collection, self._name, **self._create_kwargs())
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
            _call(f"delete collection {self._name!r}", self._client.delete_collection, self._name)
            return _call(what, self._client.create_collection, self._name, **self._create_kwargs())

    def _check_vectors(self, vectors: np.ndarray, n: int) -> np.ndarray:
        arr = np.asarray(vectors)
        if arr.ndim != 2 or arr.shape[1] != self.dim:
            raise StoreError(f"{self._name}: vectors must have shape (n, {self.dim}), got {arr.shape}")
        if arr.shape[0] != n:
            raise StoreError(f"{self._name}: got {n} ids/metadatas for {arr.shape[0]} vector rows")
        if not np.issubdtype(arr.dtype, np.number):
            raise StoreError(f"{self._name}: vectors must be numeric, got dtype {arr.dtype}")
        bad = np.flatnonzero(~np.isfinite(arr).all(axis=1))
        if bad.size:
            raise StoreError(f"{self._name}: vector rows {bad[:5].tolist()} contain NaN or infinity")
        norms = np.linalg.norm(arr.astype(np.float64), axis=1)
        off = np.flatnonzero(np.abs(norms - 1.0) > UNIT_NORM_TOLERANCE)
        if off.size:
            raise StoreError(
                f"{self._name}: vector rows must be unit length (tolerance {UNIT_NORM_TOLERANCE}); rows "
                f"{off[:5].tolist()} have norms {np.round(norms[off[:5]], 4).tolist()}: normalise them first"
            )
        return arr.astype(np.float32, copy=False)

    def _check_ids(self, ids: Sequence[str]) -> list[str]:
        out = list(ids)
        for item in out:
            if not isinstance(item, str) or not item:
                raise StoreError(f"{self._name}: row ids must be non-empty strings, got {item!r}")
        if len(set(out)) != len(out):
            dup = sorted({i for i in out if out.count(i) > 1})[:5]
            raise StoreError(f"{self._name}: duplicate row ids {dup}")
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
            raise StoreError(f"{self._name}: got {len(metadatas)} metadatas for {len(id_list)} ids")
        metas: list[dict[str, MetadataValue]] = []
        for row_id, meta in zip(id_list, metadatas, strict=True):
            if not meta:
                raise StoreError(f"{self._name}: row {row_id!r} has empty metadata (Chroma needs a key)")
            for key, value in meta.items():
                if not isinstance(value, (str, int, float, bool)):
                    raise StoreError(
                        f"{self._name}: row {row_id!r} metadata {key!r}={value!r} is not str/int/float/bool"
                    )
            metas.append(dict(meta))
        with self._lock:
            for start in range(0, len(id_list), self._batch):
                stop = min(start + self._batch, len(id_list))
                _call(
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
                _call(f"delete rows from {self._name!r}", self._collection.delete, ids=chunk)

    def _pages(self, include: list[str]) -> Iterable[dict[str, Any]]:
        offset = 0
        while True:
            page = _call(
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
                    page = _call(
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

    def query(self, vector: np.ndarray, *, k: int, where: Mapping[str, Any] | None = None,
              with_metadata: bool = True) -> list[Hit]:
        """The ``k`` rows most cosine-similar to ``vector`` that satisfy ``where``, best first.

        ``k`` above the number of rows is fine; an empty collection, or a where-clause nothing can satisfy
        (see :func:`build_where`), gives ``[]``. ``with_metadata=False`` leaves ``Hit.metadata`` empty and
        saves a metadata read per hit (about 7 ms per query at 100,000 rows).
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise StoreError(f"k must be a positive integer, got {k!r}")
        vec = np.asarray(vector, dtype=np.float64)
        if vec.shape not in ((self.dim,), (1, self.dim)):
            raise StoreError(f"{self._name}: query vector must have shape ({self.dim},), got {vec.shape}")
        vec = vec.reshape(-1)
        if not np.isfinite(vec).all() or not np.linalg.norm(vec) > 0:
            raise StoreError(f"{self._name}: query vector must be finite and non-zero")
        clause = None if where is None else prune_where(where)
        if clause is NOTHING:
            return []
        collection = self._collection
        result = _call(
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

    def count(self) -> int:
        """Number of rows."""
        return int(_call(f"count rows of {self._name!r}", self._collection.count))

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
            _call(f"rename {self._name!r} to {new_name!r}", self._collection.modify, name=new_name)
            self._name = new_name

    def _delete_if_exists(self, name: str) -> None:
        from chromadb.errors import NotFoundError

        try:
            self._client.delete_collection(name)
        except NotFoundError:
            return
        except _chroma_errors() as exc:
            raise StoreError(f"Chroma failed to delete collection {name!r}: {exc}") from exc

    def drop(self) -> None:
        """Delete the whole collection (e.g. a failed staging build); the object is unusable afterwards."""
        with self._lock:
            _call(f"delete collection {self._name!r}", self._client.delete_collection, self._name)
