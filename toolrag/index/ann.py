"""An in-process approximate nearest-neighbour index for large catalogs: an inverted file (IVF) of unit rows.

Why: above :data:`toolrag.search.retriever.EXACT_LIMIT` tools a search cannot score every tool exactly within
its budget, and asking Chroma's HNSW costs a store round trip per signal (about 4 ms each at 100,000 rows,
docs/benchmarks.md). This index lives next to the vectors already in memory: k-means centroids (spherical,
trained on a fixed sample, deterministic seed), each row filed under its nearest centroid, and each list's
vectors kept in one small contiguous block. A query scores the centroids, then the rows of the ``probes``
best lists, and returns the best ``k`` permitted rows. Candidates are then re-scored exactly by the retriever,
so the index only decides which tools are looked at.

The lists' blocks hold each vector projected onto :data:`PROJECTED_DIM` directions (the sample's mean direction
and its principal axes, an orthonormal basis), so the scan reads a third of the memory a 384-d block needs: the
scan is bound by memory reads, not arithmetic. At 100,000 synthetic tools it found the same share of the exact
top 10 as the full vectors in half the time (docs/measurements.md).

An edit re-files only the rows that changed (copy-on-write of the two lists concerned), so an index is never
modified under a search that uses it. Rows are snapshot rows (catalog order).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["PROJECTED_DIM", "IvfIndex", "projection"]

#: Dimensions of the vectors the lists' scan reads (see the module docstring); vectors of at most this many
#: dimensions are scanned as they are.
PROJECTED_DIM = 128


def projection(sample: np.ndarray, dims: int = PROJECTED_DIM) -> np.ndarray | None:
    """A (d, dims) orthonormal basis: the sample's mean direction, then its principal axes (of the centred sample)
    in order; None when the vectors have at most ``dims`` dimensions (nothing to gain). Scores in the basis are
    ``(x @ P) @ (q @ P)``, the part of ``x @ q`` that lies in its span."""
    data = np.asarray(sample, dtype=np.float64)
    d = data.shape[1]
    if d <= dims:
        return None
    mean = data.mean(axis=0)
    centred = data - mean
    # the principal axes as eigenvectors of the (d, d) scatter matrix, largest first: what an SVD of the (n, d)
    # sample gives, at a fraction of its cost (an SVD of 6,000 x 384 rows took 7-15 s with OpenBLAS's threads on
    # a busy 2-core machine, this 0.1-0.6 s)
    _, vectors = np.linalg.eigh(centred.T @ centred)
    axes = vectors[:, ::-1].T
    norm = float(np.linalg.norm(mean))
    first = [mean / norm] if norm > 1e-12 else []
    basis, _ = np.linalg.qr(np.vstack([*first, axes[: dims - len(first)]]).T)
    return np.ascontiguousarray(basis[:, :dims], dtype=np.float32)


class IvfIndex:
    """Immutable IVF over the rows of a (n, d) unit matrix. Build with :meth:`build`."""

    def __init__(self, centroids: np.ndarray, lists: Sequence[np.ndarray], blocks: Sequence[np.ndarray],
                 list_of: np.ndarray, basis: np.ndarray | None = None) -> None:
        self.centroids = centroids        # (n_lists, d) unit rows
        self.lists = tuple(lists)         # per list: the snapshot rows filed under it (int64)
        self.blocks = tuple(blocks)       # per list: their vectors in the basis, (len(list), r) float32
        self.list_of = list_of            # per snapshot row: its list
        self.basis = basis                # (d, r) orthonormal, or None: blocks hold the vectors as they are

    def _project(self, vectors: np.ndarray) -> np.ndarray:
        out = vectors if self.basis is None else vectors @ self.basis
        return np.ascontiguousarray(out, dtype=np.float32)

    @property
    def n_rows(self) -> int:
        return int(self.list_of.shape[0])

    @classmethod
    def build(cls, matrix: np.ndarray, *, n_lists: int | None = None, iterations: int = 8,
              sample: int = 16_384, seed: int = 0) -> IvfIndex:
        """k-means (cosine) on a fixed random sample of the rows, then every row filed under its best centroid.

        ``n_lists`` defaults to about 2 * sqrt(n) (a query probes a few percent of the rows)."""
        data = np.ascontiguousarray(matrix, dtype=np.float32)
        n = data.shape[0]
        if n == 0:
            raise ValueError("cannot build an IVF index over no rows")
        k = max(1, min(n, n_lists or int(2 * np.sqrt(n))))
        rng = np.random.default_rng(seed)
        train = data[np.sort(rng.choice(n, size=min(n, max(sample, k)), replace=False))]
        centroids = train[np.sort(rng.choice(train.shape[0], size=k, replace=False))].copy()
        for _ in range(iterations):
            assign = np.argmax(train @ centroids.T, axis=1)
            sums = np.zeros_like(centroids)
            np.add.at(sums, assign, train)
            norms = np.linalg.norm(sums, axis=1, keepdims=True)
            empty = norms[:, 0] < 1e-12
            centroids = np.where(empty[:, None], centroids, sums / np.maximum(norms, 1e-12)).astype(np.float32)
        list_of = np.empty(n, dtype=np.int64)
        for start in range(0, n, 8192):  # bounded memory: (8192, k) scores at a time
            list_of[start:start + 8192] = np.argmax(data[start:start + 8192] @ centroids.T, axis=1)
        order = np.argsort(list_of, kind="stable")
        bounds = np.searchsorted(list_of[order], np.arange(k + 1))
        lists = [order[bounds[i]:bounds[i + 1]] for i in range(k)]
        index = cls(centroids, lists, [], list_of, projection(train))
        index.blocks = tuple(index._project(data[rows]) for rows in lists)
        return index

    def search(self, vector: np.ndarray, *, k: int, probes: int, mask: np.ndarray | None = None) -> np.ndarray:
        """Rows of the best ``k`` permitted rows among the ``probes`` lists nearest to ``vector``, best first
        (ties by row). ``mask``: bool per snapshot row, True = permitted."""
        if k < 1 or probes < 1:
            raise ValueError(f"k and probes must be at least 1, got k={k}, probes={probes}")
        q = np.asarray(vector, dtype=np.float32)
        near = self.centroids @ q
        scan = self._project(q)
        chosen = np.argpartition(-near, probes - 1)[:probes] if probes < len(near) else np.arange(len(near))
        rows = [self.lists[c] for c in chosen if len(self.lists[c])]
        if not rows:
            return np.zeros(0, dtype=np.int64)
        all_rows = np.concatenate(rows)
        scores = np.concatenate([self.blocks[c] @ scan for c in chosen if len(self.lists[c])])
        if mask is not None:
            keep = mask[all_rows]
            all_rows, scores = all_rows[keep], scores[keep]
        if len(all_rows) > k:
            top = np.argpartition(-scores, k - 1)[:k]
            all_rows, scores = all_rows[top], scores[top]
        return all_rows[np.lexsort((all_rows, -scores))]

    def with_rows(self, matrix: np.ndarray, rows: Sequence[int]) -> IvfIndex:
        """A new index in which ``rows`` (same snapshot rows, vectors changed in ``matrix``) are re-filed under
        their nearest centroid; only the lists they leave or join are copied."""
        lists, blocks, list_of = list(self.lists), list(self.blocks), self.list_of.copy()
        for row in rows:
            vec = np.asarray(matrix[row], dtype=np.float32)
            old, new = int(list_of[row]), int(np.argmax(self.centroids @ vec))
            at = int(np.flatnonzero(lists[old] == row)[0])
            lists[old], blocks[old] = np.delete(lists[old], at), np.delete(blocks[old], at, axis=0)
            lists[new] = np.append(lists[new], row)
            blocks[new] = np.concatenate([blocks[new], self._project(vec[None, :])])
            list_of[row] = new
        return IvfIndex(self.centroids, lists, blocks, list_of, self.basis)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Centroids, the row order by list and the basis (the blocks are rebuilt from the vectors when loaded)."""
        sizes = np.array([len(rows) for rows in self.lists], dtype=np.int64)
        order = np.concatenate(self.lists) if self.lists else np.zeros(0, dtype=np.int64)
        basis = self.basis if self.basis is not None else np.zeros((0, 0), dtype=np.float32)
        return {"centroids": self.centroids, "order": order, "sizes": sizes, "basis": basis}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], matrix: np.ndarray) -> IvfIndex:
        """The index saved by :meth:`to_arrays`, over ``matrix`` (the same rows and vectors)."""
        centroids = np.asarray(arrays["centroids"], dtype=np.float32)
        order = np.asarray(arrays["order"], dtype=np.int64)
        sizes = np.asarray(arrays["sizes"], dtype=np.int64)
        if order.shape[0] != matrix.shape[0] or sizes.sum() != order.shape[0] or len(sizes) != len(centroids):
            raise ValueError("the saved IVF index does not cover the vectors")
        basis = np.asarray(arrays["basis"], dtype=np.float32)
        basis_or_none = basis if basis.size else None
        if basis_or_none is not None and basis.shape[0] != matrix.shape[1]:
            raise ValueError("the saved IVF basis does not fit the vectors")
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        lists = [order[bounds[i]:bounds[i + 1]] for i in range(len(sizes))]
        index = cls(centroids, lists, [], np.empty(order.shape[0], dtype=np.int64), basis_or_none)
        # every row projected in one product, in list order, then cut into the lists' blocks
        ordered = index._project(np.asarray(matrix, dtype=np.float32)[order])
        index.blocks = tuple(ordered[bounds[i]:bounds[i + 1]] for i in range(len(sizes)))
        index.list_of[order] = np.repeat(np.arange(len(sizes)), sizes)
        return index
