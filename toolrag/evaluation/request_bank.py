"""The bundled bank of real requests, and the ones that share the most words with a tool's text.

``toolrag/data/request_bank/requests.jsonl.gz`` holds about 9,300 requests people wrote for the tools of other
catalogs (English and Chinese), built by ``scripts/build_request_bank.py`` from the project's training data; the
licence and origin of each source sit beside it (``ATTRIBUTION.md``, ``licenses/``). The label-free check
(:mod:`toolrag.evaluation.label_free`) suggests example requests from it: the requests that share the most
rare words with a tool (BM25 over the bank, with the index's own tokenisation), re-ranked by the text models
and kept only when the real search sends them to that tool.

The BM25 index of each language is built once per process, on first use (about a second per language).
"""

from __future__ import annotations

import functools
import gzip
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from toolrag.errors import CatalogError
from toolrag.index.bm25 import BM25Index

__all__ = ["BANK_DIR", "BankRequest", "RequestBank"]

#: The bundled bank (requests, their licences and attribution).
BANK_DIR = Path(__file__).resolve().parent.parent / "data" / "request_bank"


@dataclass(frozen=True)
class BankRequest:
    """One request of the bank: its text, language (``en`` or ``zh``) and the dataset it comes from."""

    query: str
    lang: str
    source: str

    def to_json(self) -> dict[str, str]:
        return {"query": self.query, "lang": self.lang, "source": self.source}


class RequestBank:
    """Requests to draw example requests from (:meth:`bundled`, or any JSON Lines file of the same shape)."""

    def __init__(self, requests: Sequence[BankRequest]) -> None:
        self.requests = tuple(requests)
        self._lock = threading.Lock()
        self._indexes: dict[str, tuple[BM25Index, list[int]]] = {}

    @classmethod
    def from_file(cls, path: str | Path) -> RequestBank:
        """Read ``{"query", "lang", "source"}`` lines (gzip-compressed when the name ends in ``.gz``); a bad line
        names the file and the line."""
        file = Path(path)
        rows: list[BankRequest] = []
        try:
            lines = _read_text(file).splitlines()
        except OSError as exc:
            raise CatalogError(f"cannot read the request bank {file}: {exc.strerror or exc}") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                rows.append(BankRequest(str(data["query"]), str(data.get("lang", "en")), str(data.get("source", ""))))
            except (ValueError, KeyError, TypeError) as exc:
                raise CatalogError(f"{file}:{number}: not a request of the bank ({exc}); each line is "
                                   '{"query": ..., "lang": "en" or "zh", "source": ...}') from None
        return cls(rows)

    @classmethod
    def bundled(cls) -> RequestBank:
        """The bank shipped with toolrag (read once per process)."""
        return _bundled()

    def __len__(self) -> int:
        return len(self.requests)

    def sharing_words(self, text: str, *, lang: str, k: int) -> list[BankRequest]:
        """The ``k`` requests in ``lang`` that share the most (rare) words with ``text`` (BM25, best first; only
        requests with at least one word in common)."""
        index, rows = self._index(lang)
        if not rows or not text.strip():
            return []
        return [self.requests[rows[int(doc)]] for doc, _ in index.top(text, k=k)]

    def _index(self, lang: str) -> tuple[BM25Index, list[int]]:
        with self._lock:
            built = self._indexes.get(lang)
            if built is None:
                rows = [i for i, r in enumerate(self.requests) if r.lang == lang]
                index = BM25Index.build([str(n) for n in range(len(rows))], [self.requests[i].query for i in rows]
                                        ) if rows else BM25Index.build(["0"], [""])
                built = self._indexes[lang] = (index, rows)
            return built


@functools.lru_cache(maxsize=1)
def _bundled() -> RequestBank:
    return RequestBank.from_file(BANK_DIR / "requests.jsonl.gz")


def _read_text(file: Path) -> str:
    if file.suffix == ".gz":
        with gzip.open(file, "rt", encoding="utf-8") as fh:
            return fh.read()
    return file.read_text(encoding="utf-8")
