"""The labelled sets ``bench.decisions`` decides: each catalog's retriever opened once,
its query analysis cached in the bench folder, and each set's rows.

Sets: ``bundled`` (sample_tools/queries.yaml: 223 rows with an expected decision), ``multilingual`` (30 of them
in English and translated into eight languages, sample_tools/queries_multilingual.yaml: one set per language), ``bundled_tuned`` (the odd
rows, at the precision target ``toolrag tune`` chose from the even ones: a catalog's own labelled rows move only
the operating point), ``bundled_history`` (the bundled text rows, each after one earlier turn: another row's
request that a tool serves, of other tools: a conversation that moved on, labelled as the row alone),
``mcp_zh`` / ``mcp_en`` (50 requests written for this project, in Chinese and the same in
English, to the 31 English tools of tests/data/published_mcp), ``metatool_task1`` (520 need-a-tool + 520
need-no-tool requests), the single-tool test splits of MetaTool, Seal-Tools (in and out of domain) and Gorilla HF
(every row needs a tool), MetaTool two-tool (the selection), and ``small``: catalogs of 1-5 tools
(``bench.small_catalogs``), each request with its tool present, left out, or needing no tool. No row of any set is
used to fit the decision model (``bench.decision_train`` fits it on the training sets only).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import REPO, SETS, index_dir, open_retriever, prepare

__all__ = ["DECISION_SETS", "REPO_SETS", "SMALL_DRAWS", "SMALL_SIZES", "SetOpener", "expected_decision", "moved_on"]

DECISION_SETS = ("bundled", "bundled_tuned", "bundled_history", "multilingual", "mcp_zh", "mcp_en", "metatool_task1",
                 "metatool_single", "metatool_multi", "seal_in", "seal_out", "gorilla", "small")
#: The small catalogs of the ``small`` set: 1-5 tools, 4 draws per size and source (MetaTool, the bundled catalog).
SMALL_SIZES = (1, 2, 3, 4, 5)
SMALL_DRAWS = 4
#: Sets kept in this repository: set name -> (catalog, labelled queries), relative to the repository.
REPO_SETS = {
    "mcp_zh": ("tests/data/published_mcp/tools.json", "tests/data/published_mcp/queries_zh.yaml"),
    "mcp_en": ("tests/data/published_mcp/tools.json", "tests/data/published_mcp/queries_en.yaml"),
}


def expected_decision(row: Any) -> str:
    """A labelled row's expected decision: its own ``expect``, else EXECUTE when it has gold tools, else NO_TOOL."""
    return row.expect.value if row.expect is not None else ("EXECUTE" if row.gold else "NO_TOOL")


def moved_on(rows: Sequence[Any]) -> list[Any]:
    """The text rows of ``rows``, each after one earlier turn: the request of the next text row (in file order,
    wrapping) that a tool serves and that shares no tool with it (with the same caller, so the turn was served
    for that caller too). The row's labels stay its own: a conversation that moved on."""
    from dataclasses import replace

    text = [r for r in rows if r.image is None and not r.history]
    out = []
    for i, row in enumerate(text):
        for step in range(1, len(text)):
            other = text[(i + step) % len(text)]
            if other.gold and not set(other.gold) & set(row.gold) and other.permissions == row.permissions \
                    and other.role == row.role:
                out.append(replace(row, history=(other.query,)))
                break
    return out


def _limit(rows: list[Any], limit: int | None) -> list[Any]:
    if not limit or len(rows) <= limit:
        return rows
    return rows[:: max(1, len(rows) // limit)][:limit]


class _CachedAnalyzer:
    """The retriever's query analysis behind a pickle cache in the bench folder (per model set): re-running
    the benchmark after a change of the decision code encodes and OCRs nothing again."""

    def __init__(self, analyzer: Any, file: Path) -> None:
        self.analyzer, self.file = analyzer, file
        self.models = analyzer.models
        self.cache: dict[Any, Any] = {}
        if file.is_file():
            with file.open("rb") as fh:
                self.cache = pickle.load(fh)
        self.dirty = False

    def analyze(self, query: str, *, image: Any = None, history: Sequence[str] = (), settings: Any) -> Any:
        key = (query, str(image), tuple(history), settings.history_weight)
        if key not in self.cache:
            self.cache[key] = self.analyzer.analyze(query, image=image, history=history, settings=settings)
            self.dirty = True
        return self.cache[key]

    def save(self) -> None:
        if self.dirty:
            tmp = self.file.with_suffix(".tmp")
            with tmp.open("wb") as fh:
                pickle.dump(self.cache, fh)
            tmp.replace(self.file)
            self.dirty = False


def cache_analysis(retriever: Any, root: Path, name: str) -> _CachedAnalyzer:
    """Put ``retriever``'s query analysis behind a cache file in ``root`` (keyed by the models and by the code that
    reads a request)."""
    models = retriever.models
    tag = hashlib.sha256(f"{models.text.fingerprint}|{getattr(models.english, 'fingerprint', '-')}".encode())
    for module in ("toolrag.search.query", "toolrag.search.gloss", "toolrag.text"):
        # a change of how a request is read (its cleaning, what stands in for an address) reads it again
        tag.update(Path(importlib.import_module(module).__file__ or "").read_bytes())
    cached = _CachedAnalyzer(retriever.analyzer, root / f"query-features-{name}-{tag.hexdigest()[:12]}.pkl")
    retriever.analyzer = cached
    return cached


class SetOpener:
    """Opens each set's retriever once per catalog (with its query-analysis cache) and yields its labelled rows."""

    def __init__(self, args: argparse.Namespace, models: Any) -> None:
        self.args, self.models = args, models
        self.root: Path | None = None
        self.retrievers: dict[str, Any] = {}
        self.caches: list[_CachedAnalyzer] = []

    def _bench(self) -> Path:
        from bench.datasets import bench_dir

        return bench_dir(self.args.bench_dir)

    def bundled(self) -> tuple[Any, list[Any]]:
        from toolrag import load_queries
        from toolrag.search.retriever import ToolRetriever

        if "bundled" not in self.retrievers:
            folder = index_dir(self._bench()) / "bundled"
            retriever = ToolRetriever.from_catalog(REPO / "sample_tools", data_dir=folder, models=self.models)
            self.caches.append(cache_analysis(retriever, self._bench(), "bundled"))
            self.retrievers["bundled"] = retriever
        return self.retrievers["bundled"], load_queries(REPO / "sample_tools" / "queries.yaml")

    def source(self, source: str) -> Any:
        """The retriever of one converted benchmark catalog (``metatool``, ``seal_tools``, ``gorilla_hf``)."""
        if source not in self.retrievers:
            self.root = self.root or prepare(self.args.benchmarks, self.args.bench_dir)
            self.retrievers[source] = open_retriever(self.root, source, models=self.models)
            self.caches.append(cache_analysis(self.retrievers[source], self.root, source))
        return self.retrievers[source]

    def rows(self, name: str) -> tuple[Any, list[Any]]:
        """(retriever, labelled rows) of set ``name`` (``bundled_tuned``: the odd rows)."""
        from toolrag import load_queries

        if name == "multilingual":  # 30 bundled rows in English and 8 translations (bench.decisions splits them)
            retriever, _ = self.bundled()
            return retriever, load_queries(REPO / "sample_tools" / "queries_multilingual.yaml")
        if name in ("bundled", "bundled_tuned"):
            retriever, rows = self.bundled()
            return retriever, _limit(rows[1::2] if name == "bundled_tuned" else rows, self.args.limit)
        if name == "bundled_history":
            retriever, rows = self.bundled()
            return retriever, _limit(moved_on(rows), self.args.limit)
        if name in REPO_SETS:
            catalog, queries = REPO_SETS[name]
            if catalog not in self.retrievers:
                from toolrag.search.retriever import ToolRetriever

                folder = index_dir(self._bench()) / "repo" / Path(catalog).stem
                self.retrievers[catalog] = ToolRetriever.from_catalog(REPO / catalog, data_dir=folder, models=self.models)
                self.caches.append(cache_analysis(self.retrievers[catalog], self._bench(), "published_mcp"))
            return self.retrievers[catalog], _limit(load_queries(REPO / queries), self.args.limit)
        spec = SETS[name]
        retriever = self.source(spec.source)
        return retriever, _limit(load_queries(spec.queries_file(self.root or prepare(self.args.benchmarks,
                                                                                     self.args.bench_dir))),
                                 self.args.limit)

    def tuned_target(self) -> tuple[float, str]:
        """The precision target ``toolrag tune`` chooses from the bundled catalog's even rows, and its summary."""
        from toolrag.evaluation.tune import calibrate_target

        retriever, rows = self.bundled()
        chosen = calibrate_target(retriever, rows[0::2])
        return chosen.target, chosen.summary()

    def small(self) -> list[tuple[Any, Any, list[Any]]]:
        """The ``small`` set: (retriever, caller seeing the catalog's tools only, requests) per sampled catalog."""
        from bench.small_catalogs import sample_catalogs
        from toolrag.catalog.caller import Caller

        out = []
        for _, source, tools, requests in sample_catalogs(prepare(self.args.benchmarks, self.args.bench_dir),
                                                          sizes=SMALL_SIZES, catalogs=SMALL_DRAWS,
                                                          sources=("metatool", "bundled"), seed=7):
            retriever = self.bundled()[0] if source == "bundled" else self.source("metatool")
            out.append((retriever, Caller(tools=frozenset(tools)), requests))
        return out

    def save(self) -> None:
        for cache in self.caches:
            cache.save()
