"""What one ``python -m bench.latency run`` measures besides building and opening the index: the stage timings of
a search and their percentiles, the cost of an edit, a search against one plain MiniLM encode of the same
request, a labelled evaluation's throughput, and the same queries against a Chroma server.
"""

from __future__ import annotations

import dataclasses
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import REPO, say

__all__ = ["STAGES", "edits", "evaluation", "rss_mb", "server", "stages", "timed_search", "versus_minilm"]

STAGES = ("encode_text", "encode_image", "index_search", "bm25", "score", "fusion", "rerank", "beyond_encoding",
          "total")


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else float("nan")


def stages(timings: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for stage in STAGES:
        values = [t[stage] for t in timings if stage in t]
        if values:
            out[stage] = {"p50": _pct(values, 50), "p95": _pct(values, 95), "n": len(values)}
    return out


def timed_search(retriever: Any, query: str, image: Any = None) -> dict[str, float]:
    result = retriever.search(query, image=image)
    timing = dict(result.timing_ms)
    timing["beyond_encoding"] = timing["total"] - timing.get("encode_text", 0.0) - timing.get("encode_image", 0.0)
    return timing


def edits(retriever: Any, n: int) -> dict[str, Any]:
    """Edit one profile's embedded text and re-index, then restore it; both directions are one edit. The
    serving state is saved in the background after each edit: that is waited for (and timed) between edits,
    outside the edit's own time. The decision needs nothing per catalog, so nothing is refitted."""
    catalog = retriever.index.catalog
    times, encoded, saves = [], [], []
    wait = getattr(retriever.index, "wait_saved", lambda: None)
    for tool in catalog.tools[1: 1 + n]:
        field = "embedding_text" if tool.embedding_text else "description"
        edited = dataclasses.replace(tool, **{field: getattr(tool, field) + " Edited for the benchmark."})
        for version in (edited, tool):
            start = time.perf_counter()
            encoded.append(retriever.reload(retriever.index.catalog.with_tool(version)))
            times.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            wait()
            saves.append(time.perf_counter() - start)
    return {"p50_ms": statistics.median(times), "max_ms": max(times), "encoded_per_edit": sorted(set(encoded)),
            "n": len(times), "background_save_s": statistics.median(saves)}


def versus_minilm(retriever: Any, queries: list[tuple[str, str]]) -> dict[str, Any]:
    """A search (both text models, nothing cached) against one plain fp32 encode of the same request with
    sentence-transformers' all-MiniLM-L6-v2, alternating request by request in this process."""
    from sentence_transformers import SentenceTransformer

    from toolrag.encode.resolve import resolve_text_model
    from toolrag.search.query import QueryAnalyzer

    plain = SentenceTransformer(resolve_text_model("minilm").location, local_files_only=True)
    plain.encode(["warm up"])
    retriever.analyzer = QueryAnalyzer(retriever.index.models, cache_size=4096)
    searches, encodes, encode_text = [], [], []
    for i, (query, _) in enumerate(queries):
        request = f"{query} ({i})"  # distinct text: nothing cached
        start = time.perf_counter()
        result = retriever.search(request)
        searches.append((time.perf_counter() - start) * 1000)
        encode_text.append(result.timing_ms.get("encode_text", 0.0))
        start = time.perf_counter()
        plain.encode([request], convert_to_numpy=True, normalize_embeddings=True)
        encodes.append((time.perf_counter() - start) * 1000)
    search_p50, encode_p50 = statistics.median(searches), statistics.median(encodes)
    return {"search_p50_ms": search_p50, "plain_minilm_p50_ms": encode_p50, "ratio": search_p50 / encode_p50,
            "encode_text_p50_ms": statistics.median(encode_text), "n": len(queries),
            "text_backend": getattr(retriever.models.text, "backend", "torch").__str__()}


def evaluation(retriever: Any, pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Labelled requests per second through Evaluator (batched encoding), nothing cached; the first rows are
    checked against one-at-a-time search with a fresh cache."""
    from toolrag.evaluation.evaluator import Evaluator
    from toolrag.evaluation.queries import QueryRow
    from toolrag.search.query import QueryAnalyzer

    rows = [QueryRow(query=f"{q} [{i}]", gold=(gold,)) for i, (q, gold) in enumerate(pairs)]
    retriever.analyzer = QueryAnalyzer(retriever.index.models)
    start = time.perf_counter()
    report = Evaluator(rows)(retriever)
    seconds = time.perf_counter() - start
    check = rows[: min(100, len(rows))]
    retriever.analyzer = QueryAnalyzer(retriever.index.models)
    single = [tuple(retriever.search(r.query, top_k=10).ids) for r in check]
    same = sum(o.returned == ids for o, ids in zip(report.per_query, single, strict=False)) / len(check)
    return {"rows": len(rows), "seconds": seconds, "requests_per_s": len(rows) / seconds,
            "identical_to_one_at_a_time": same, "checked": len(check), "ndcg@10": report.metrics.get("ndcg@10")}


def server(root: Path, folder: Path, data_dir: Path, settings: Any, models: Any, embedded: Any,
            texts: list[str]) -> dict[str, Any]:
    """The same queries against a Chroma server holding a copy of the embedded index (nothing re-encoded)."""
    import sys

    sys.path.insert(0, str(REPO / "tests"))
    from chroma_server import running_chroma_server  # type: ignore[import-not-found]

    from toolrag.search.retriever import ToolRetriever

    with tempfile.TemporaryDirectory(dir=root) as tmp:
        shutil.copytree(data_dir / "chroma", Path(tmp) / "chroma-server")
        with running_chroma_server(Path(tmp)) as url:
            start = time.perf_counter()
            served = ToolRetriever.from_catalog(folder, settings=settings, data_dir=data_dir, models=models,
                                                chroma_url=url)
            open_s = time.perf_counter() - start
            served.analyzer = embedded.analyzer  # the same cached query vectors: only the store differs
            timings = [timed_search(served, q) for q in texts]
            same = sum(served.search(q).ids == embedded.search(q).ids for q in texts[:50]) / min(50, len(texts))
    say(f"server: open {open_s:.1f}s, p50 beyond encoding {stages(timings)['beyond_encoding']['p50']:.1f} ms")
    return {"open_s": open_s, "encoded": served.index.encoded_last_sync, "text": stages(timings),
            "same_top5_share": same}

