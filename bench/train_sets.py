"""The mined training and evaluation folders as arrays the trainers read, and the ranking metrics they report.

A :class:`Mined` folder holds one catalog's indexed tool vectors, its requests' query vectors and texts, the gold
tools as row numbers and the shipped retriever's top 30 per request (``bench.train_mine``). Scoring here is
offline and exact (every tool of the catalog), for choosing and comparing models quickly; the numbers that go
into docs/ come from the real engine (``bench.quality``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Mined", "load_mined", "ranking_metrics"]


@dataclass
class Mined:
    name: str
    ids: list[str]
    english: np.ndarray
    texts: list[str]
    tool_dense: np.ndarray
    tool_dense_en: np.ndarray
    q_dense: np.ndarray
    q_dense_en: np.ndarray
    rows: list[dict[str, Any]]
    gold: list[np.ndarray]

    @property
    def queries(self) -> list[str]:
        """What the multilingual model reads of each request (cleaned text; its query prompt is added later)."""
        return [r["text"] for r in self.rows]

    @property
    def english_queries(self) -> list[str]:
        """What the English model reads of each request: its gloss when it has one, else the text."""
        return [r["gloss"] or r["text"] for r in self.rows]

    def candidates(self, n: int) -> list[np.ndarray]:
        """Row numbers of the shipped retriever's top ``n`` per request."""
        row_of = {t: i for i, t in enumerate(self.ids)}
        return [np.array([row_of[c["id"]] for c in r["cands"][:n]], dtype=np.int64) for r in self.rows]


def load_mined(folder: Path, name: str = "") -> Mined:
    tools = json.loads((folder / "tools.json").read_text(encoding="utf-8"))
    vec = np.load(folder / "vectors.npz")
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text(encoding="utf-8").splitlines() if line]
    row_of = {t: i for i, t in enumerate(tools["ids"])}
    gold = [np.array(sorted({row_of[g] for g in r["gold"] if g in row_of}), dtype=np.int64) for r in rows]
    return Mined(name or folder.parent.name, tools["ids"], np.array(tools["english"], dtype=bool), tools["texts"],
                 vec["tool_dense"], vec["tool_dense_en"], vec["q_dense"], vec["q_dense_en"], rows, gold)


def ranking_metrics(scores: np.ndarray, gold: list[np.ndarray], *, k: int = 10) -> dict[str, float]:
    """NDCG@10, Recall@1/@5 (share of gold in the top k) and MRR@10 of a (requests x tools) score matrix, binary
    relevance; ties broken by the tool's row (the lower first), as the engine breaks them by catalog order.
    Requests without a gold tool are skipped."""
    out = {"ndcg@10": 0.0, "recall@1": 0.0, "recall@5": 0.0, "mrr@10": 0.0}
    n = 0
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    for s, g in zip(scores, gold, strict=True):
        if len(g) == 0:
            continue
        n += 1
        order = np.lexsort((np.arange(len(s)), -s))[:k]
        hit = np.isin(order, g)
        ideal = discounts[: min(len(g), k)].sum()
        out["ndcg@10"] += float((hit * discounts).sum() / ideal)
        out["recall@1"] += float(hit[:1].sum() / len(g))
        out["recall@5"] += float(hit[:5].sum() / len(g))
        first = np.flatnonzero(hit)
        out["mrr@10"] += 1.0 / (first[0] + 1) if len(first) else 0.0
    return {key: 100 * v / n if n else math.nan for key, v in out.items()}
