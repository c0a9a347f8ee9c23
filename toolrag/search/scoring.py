"""The per-signal raw scores of candidate tools for one analysed request (:mod:`toolrag.search.query`).

Each signal gives a raw score per candidate and a presence mask; a signal that cannot run for a query (no
image, model unavailable, Chinese query for the English model) or for a tool (no example images) is absent,
never scored as zero. Fusion normalises; signals never do.

| signal | query side | tool side | raw score |
|---|---|---|---|
| dense | text (+ earlier turns) by the multilingual model | tool document | cosine |
| dense_en | text by the English model (a Chinese text: its English gloss) | document of English tools | cosine |
| bm25 | text tokens (+ the gloss of a Chinese text, OCR text tokens) | lexical text incl. parameters | Okapi BM25 |
| ocr | text read from the image, multilingual model | tool document | cosine |
| concepts | top ImageNet labels of the image as text | tool document | cosine |
| visual | EfficientNet features of the image | tool example images | max cosine |
| clip | CLIP text and image embeddings | tool images and texts | mean of the two directions |
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from toolrag.index.snapshot import IndexSnapshot
from toolrag.search.query import QueryFeatures
from toolrag.signals import COLLECTIONS, SIGNAL_SPECS, ModelRole

__all__ = ["RawScores", "row_dot", "score_signals"]

_TOOL_KINDS = {c.kind for c in COLLECTIONS if c.rows == "tool"}


def row_dot(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector``, each row's product summed in the same order whatever the matrix holds beside it: a
    BLAS product's last bits depend on the matrix's row count and the row's place in it (its blocked kernels),
    so a hidden tool's row would move a visible tool's score (and its z-score, to the sixth digit)."""
    return np.einsum("ij,j->i", matrix, vector)
#: (signal, query-vector key, collection, English tools only) for the signals scored against one vector per tool.
_TOOL_PROBES = tuple((s.name, key, kind, s.model is ModelRole.ENGLISH) for s in SIGNAL_SPECS
                     if len(s.probes) == 1 for key, kind in s.probes if kind in _TOOL_KINDS)


@dataclass(frozen=True)
class RawScores:
    """Raw scores of the candidate rows for each signal that ran, with per-candidate presence."""

    raw: dict[str, np.ndarray]
    present: dict[str, np.ndarray]


def score_signals(snap: IndexSnapshot, rows: np.ndarray, q: QueryFeatures, *,
                  history_weight: float, row_vectors: Mapping[str, np.ndarray] | None = None,
                  visible: np.ndarray | None = None) -> RawScores:
    """Exact raw scores of every signal for the candidate ``rows`` (indices into the snapshot).
    ``row_vectors``: the tool vectors of ``rows`` already gathered (``snap.vectors[space][rows]``), for a
    row set scored again and again. ``visible``: the caller's visible tools (a bool mask over the snapshot;
    ``None``: all): BM25 reads their statistics only, so a hidden tool's words move no score."""
    raw: dict[str, np.ndarray] = {}
    present: dict[str, np.ndarray] = {}
    n = len(rows)
    everyone = np.ones(n, dtype=bool)
    # Most of the catalog (the exact path): one product over the whole matrix, then pick the rows; picking
    # the rows first would copy the matrix (15 MB at 10,000 tools) for every signal.
    whole = n > len(snap.ids) // 4
    for name, key, space, english_only in _TOOL_PROBES:
        if key in q.vectors and space in snap.vectors:
            matrix = snap.vectors[space]
            if row_vectors is not None and space in row_vectors:
                raw[name] = row_dot(row_vectors[space], q.vectors[key])
            else:
                raw[name] = row_dot(matrix, q.vectors[key])[rows] if whole else row_dot(matrix[rows], q.vectors[key])
            present[name] = snap.english[rows].copy() if english_only else everyone
    if "ocr" in raw and len(snap.image_text_owner):
        # Text read in the query image also matches text read in the tools' example images (a receipt
        # looks like a receipt): the best of the two similarities counts.
        best = np.full(len(snap.ids), -np.inf, dtype=np.float32)
        np.maximum.at(best, snap.image_text_owner, row_dot(snap.image_text, q.vectors["ocr"]).astype(np.float32))
        raw["ocr"] = np.maximum(raw["ocr"], best[rows])
    lexical = q.lexical
    if lexical or q.history:
        scores = snap.bm25.scores(lexical, visible)[rows] if lexical else np.zeros(n, dtype=np.float32)
        if q.history:
            past = snap.bm25.scores(" ".join(q.history), visible)[rows]
            scores = (1.0 - history_weight) * scores + history_weight * past if lexical else past
        raw["bm25"], present["bm25"] = scores.astype(np.float32), everyone
    if "visual" in q.vectors and "visual" in snap.image_vectors:
        raw["visual"], present["visual"] = _per_tool_max(snap, rows, "visual", q.vectors["visual"])
    parts = []
    if "clip_text" in q.vectors and "clip_image" in snap.image_vectors:
        parts.append(_per_tool_max(snap, rows, "clip_image", q.vectors["clip_text"]))
    if "clip_image" in q.vectors and "clip_text" in snap.vectors:
        clip_text = snap.vectors["clip_text"]
        if row_vectors is not None and "clip_text" in row_vectors:
            sims = row_dot(row_vectors["clip_text"], q.vectors["clip_image"])
        else:
            sims = (row_dot(clip_text, q.vectors["clip_image"])[rows] if whole
                    else row_dot(clip_text[rows], q.vectors["clip_image"]))
        parts.append((sims, everyone))
    if parts:
        total = np.sum([np.where(p, s, 0.0) for s, p in parts], axis=0)
        count = np.sum([p.astype(np.float32) for _, p in parts], axis=0)
        present["clip"] = np.asarray(count > 0)
        raw["clip"] = np.where(count > 0, total / np.maximum(count, 1), 0.0).astype(np.float32)
    return RawScores(raw, present)


def _per_tool_max(snap: IndexSnapshot, rows: np.ndarray, kind: str, vector: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Max cosine over each candidate tool's example images; absent for tools without images."""
    n_tools = len(snap.ids)
    best = np.full(n_tools, -np.inf, dtype=np.float32)
    if len(snap.image_owner):
        sims = row_dot(snap.image_vectors[kind], vector)
        np.maximum.at(best, snap.image_owner, sims.astype(np.float32))
    picked = best[rows]
    has = np.isfinite(picked)
    return np.where(has, picked, 0.0).astype(np.float32), has
