"""The mined training folders as arrays the trainer reads.

A :class:`Mined` folder holds one catalog's tools (ids, which the English model reads, their indexed texts), its
requests as the engine read them, the gold tools as row numbers and the mining retriever's top 30 per request
(``bench.train_mine``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Mined", "load_mined"]


@dataclass
class Mined:
    name: str
    ids: list[str]
    english: np.ndarray
    texts: list[str]
    rows: list[dict[str, Any]]
    gold: list[np.ndarray]

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
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text(encoding="utf-8").splitlines() if line]
    row_of = {t: i for i, t in enumerate(tools["ids"])}
    gold = [np.array(sorted({row_of[g] for g in r["gold"] if g in row_of}), dtype=np.int64) for r in rows]
    return Mined(name or folder.parent.name, tools["ids"], np.array(tools["english"], dtype=bool), tools["texts"],
                 rows, gold)

