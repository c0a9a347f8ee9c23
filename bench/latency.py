"""Speed, memory and scale: synthetic catalogs built through the real index path, timed stage by stage.

    python -m bench.latency run --tools 1000               # default models (e5 + MiniLM)
    python -m bench.latency run --tools 10000 --server     # also an index served by a Chroma server
    python -m bench.latency run --tools 100000 --english-model none
    python -m bench.latency tokens                         # schema-token economy (sample catalog, Seal-Tools)
    python -m bench.latency report                         # writes the speed section of docs/benchmarks.md

``run`` writes ``<bench dir>/latency/run-<tools>-<models>.json``: the first build of the index (tools/s, peak
RSS; kept from the run that built it), a restart with the index in place (must encode nothing), query
latency p50/p95 split into the engine's own timing stages for text and text+image queries, the gain of the
query-vector cache on an identical second query, the cost of re-indexing one edited profile, and
optionally the same queries against a Chroma server. Each run is a separate process so peak RSS is its own.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import REPO, engine_description, git_rev, machine, say
from bench.datasets import bench_dir
from bench.synthetic import make_catalog, make_queries

__all__ = ["main"]

STAGES = ("encode_text", "encode_image", "index_search", "bm25", "score", "fusion", "rerank", "beyond_encoding",
          "total")


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else float("nan")


def _stages(timings: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for stage in STAGES:
        values = [t[stage] for t in timings if stage in t]
        if values:
            out[stage] = {"p50": _pct(values, 50), "p95": _pct(values, 95), "n": len(values)}
    return out


def _timed_search(retriever: Any, query: str, image: Any = None) -> dict[str, float]:
    result = retriever.search(query, image=image)
    timing = dict(result.timing_ms)
    timing["beyond_encoding"] = timing["total"] - timing.get("encode_text", 0.0) - timing.get("encode_image", 0.0)
    return timing


def _image_queries(n: int, seed: int = 3) -> list[tuple[str, Any]]:
    """Text + image queries whose images are all different (random crops/rotations of the repo's photos), so
    every one pays the image encoders: the image cache never hides the cost."""
    from PIL import Image

    from bench.synthetic import ASSET_IMAGES

    rng = np.random.default_rng(seed)
    prompts = ("submit this", "what tool handles this picture", "file this document", "process this image")
    out = []
    for i in range(n):
        img = Image.open(REPO / "assets" / ASSET_IMAGES[i % len(ASSET_IMAGES)]).convert("RGB")
        w, h = img.size
        dx, dy = int(rng.integers(0, max(1, w // 10))), int(rng.integers(0, max(1, h // 10)))
        img = img.crop((dx, dy, w - int(rng.integers(0, max(1, w // 10))), h - dy)).rotate(float(rng.uniform(-3, 3)))
        out.append((prompts[i % len(prompts)], img))
    return out


def cmd_run(args: argparse.Namespace) -> int:
    from toolrag import load_catalog
    from toolrag.encode.models import load_models
    from toolrag.search.query import QueryAnalyzer
    from toolrag.search.retriever import ToolRetriever
    from toolrag.settings import Settings

    root = bench_dir(args.bench_dir)
    english = args.english_model != "none"
    if args.encoder == "real":
        models_label = "e5+minilm" if english else "e5"
    else:
        models_label = "standin2" if english else "standin1"
    folder = make_catalog(root / "synthetic" / str(args.tools), args.tools, image_every=args.image_every,
                          assets=REPO / "assets")
    data_dir = root / "synthetic" / str(args.tools) / f"index-{models_label}"
    out_file = root / "latency" / f"run-{args.tools}-{models_label}.json"
    out_file.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(out_file.read_text(encoding="utf-8")) if out_file.is_file() else {}
    if args.fresh and data_dir.exists():
        shutil.rmtree(data_dir)
    settings = Settings(english_model=None) if args.english_model == "none" else Settings()
    report: dict[str, Any] = {"tools": args.tools, "models": models_label, "machine": machine(),
                              "engine": engine_description(),
                              "revision": git_rev(), "date": time.strftime("%Y-%m-%d %H:%M"),
                              "command": f"python -m bench.latency {' '.join(args.argv)}"}
    start = time.perf_counter()
    models = load_models(settings) if args.encoder == "real" else _standin_models(english)
    report["encoder"] = args.encoder
    report["model_load_s"] = time.perf_counter() - start
    report["rss_after_models_mb"] = _rss_mb()
    say(f"models loaded in {report['model_load_s']:.1f}s, RSS {report['rss_after_models_mb']:.0f} MB")

    start = time.perf_counter()
    catalog = load_catalog(folder)
    report["catalog_load_s"] = time.perf_counter() - start
    say(f"catalog of {len(catalog)} tools loaded and validated in {report['catalog_load_s']:.1f}s")
    start = time.perf_counter()
    retriever = ToolRetriever.from_catalog(catalog, settings=settings, data_dir=data_dir, models=models)
    build_s = time.perf_counter() - start
    encoded = retriever.index.encoded_last_sync
    say(f"index open/build: {build_s:.1f}s, {encoded} texts/images encoded")
    if encoded:
        report["build"] = {"seconds": build_s, "encoded": encoded, "tools_per_s": args.tools / build_s,
                           "peak_rss_mb": _rss_mb(), "rss_before_mb": report["rss_after_models_mb"],
                           "catalog_load_s": report["catalog_load_s"], "date": report["date"]}
    elif "build" in previous:
        report["build"] = previous["build"]

    start = time.perf_counter()
    reopened = ToolRetriever.from_catalog(load_catalog(folder), settings=settings, data_dir=data_dir,
                                          models=models)
    report["restart"] = {"load_and_open_s": time.perf_counter() - start,
                         "encoded": reopened.index.encoded_last_sync}
    say(f"restart: {report['restart']}")
    del reopened
    retriever.analyzer = QueryAnalyzer(retriever.index.models, cache_size=4096)

    queries = make_queries(folder, args.queries + args.cache_queries)
    retriever.search("warm up the first-query caches")  # token counts etc. are computed once per snapshot
    texts = [q for q, _ in queries[: args.queries]]
    timings = [_timed_search(retriever, q) for q in texts]
    hits = sum(1 for (q, gold), t in zip(queries, timings, strict=False) if gold in retriever.search(q).ids)
    report["text"] = _stages(timings)
    report["text_hit_at_5"] = hits / len(texts)
    say(f"text queries: p50 total {report['text']['total']['p50']:.1f} ms, beyond encoding "
        f"{report['text']['beyond_encoding']['p50']:.1f} ms")

    first, second = [], []
    for q, _ in queries[args.queries:]:
        first.append(_timed_search(retriever, q)["total"])
        second.append(_timed_search(retriever, q)["total"])
    report["cache"] = {"first_p50": statistics.median(first), "second_p50": statistics.median(second),
                       "speedup": statistics.median(first) / statistics.median(second), "n": len(first)}
    say(f"vector cache: {report['cache']}")

    if args.image_queries:
        image_timings = [_timed_search(retriever, q, img) for q, img in _image_queries(args.image_queries)]
        report["text_image"] = _stages(image_timings)
        say(f"text+image: p50 total {report['text_image']['total']['p50']:.1f} ms")

    report["edit"] = _edits(retriever, args.edits)
    say(f"edit one profile: {report['edit']}")
    if args.server:
        report["server"] = _server(root, folder, data_dir, settings, models, retriever, texts)
    report["peak_rss_mb"] = _rss_mb()
    out_file.write_text(json.dumps(report, indent=1), encoding="utf-8")
    say(f"wrote {out_file}")
    return 0


def _standin_models(english: bool) -> Any:
    """The real image model and OCR, with hashing stand-ins for the two text models (bench/synthetic.py)."""
    from bench.synthetic import HashingEncoder
    from toolrag.encode import models as encoders
    from toolrag.encode.models import ModelSet

    models = ModelSet(text=HashingEncoder("dense"), english=HashingEncoder("dense_en") if english else None,
                      ocr_factory=encoders.get_ocr)
    if not english:
        models.unavailable["english"] = "English model turned off"
    models.image = encoders.get_image_encoder()
    models.unavailable["clip"] = "CLIP is off"
    return models


def _edits(retriever: Any, n: int) -> dict[str, Any]:
    """Edit one profile's embedded text and re-index, then restore it; both directions are one edit."""
    catalog = retriever.index.catalog
    times, encoded = [], []
    for tool in catalog.tools[1: 1 + n]:
        field = "embedding_text" if tool.embedding_text else "description"
        edited = dataclasses.replace(tool, **{field: getattr(tool, field) + " Edited for the benchmark."})
        for version in (edited, tool):
            start = time.perf_counter()
            encoded.append(retriever.reload(retriever.index.catalog.with_tool(version)))
            times.append((time.perf_counter() - start) * 1000)
    return {"p50_ms": statistics.median(times), "max_ms": max(times), "encoded_per_edit": sorted(set(encoded)),
            "n": len(times)}


def _server(root: Path, folder: Path, data_dir: Path, settings: Any, models: Any, embedded: Any,
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
            timings = [_timed_search(served, q) for q in texts]
            same = sum(served.search(q).ids == embedded.search(q).ids for q in texts[:50]) / min(50, len(texts))
    say(f"server: open {open_s:.1f}s, p50 beyond encoding {_stages(timings)['beyond_encoding']['p50']:.1f} ms")
    return {"open_s": open_s, "encoded": served.index.encoded_last_sync, "text": _stages(timings),
            "same_top5_share": same}


def cmd_tokens(args: argparse.Namespace) -> int:
    """Schema tokens injected for the top 5 vs the whole catalog, averaged over real queries."""
    from bench.common import index_dir, open_retriever, prepare
    from toolrag import load_queries
    from toolrag.search.retriever import ToolRetriever

    root = prepare(args.benchmarks, args.bench_dir)
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": machine(),
                           "command": f"python -m bench.latency {' '.join(args.argv)}"}
    sample = ToolRetriever.from_catalog(REPO / "sample_tools", data_dir=index_dir(root))
    rows = [r for r in load_queries(REPO / "sample_tools" / "queries.yaml") if r.query.strip()][: args.n]
    seal = open_retriever(root, "seal_tools")
    seal_rows = load_queries(root / "sets" / "seal_tools" / "test_in.jsonl")[: args.n]
    for name, retriever, items in (("sample", sample, rows), ("seal_tools", seal, seal_rows)):
        selected, whole, tokenizer = [], 0, ""
        for row in items:
            result = retriever.search(row.query, top_k=5)
            if result.candidates:
                selected.append(result.tokens.selected if result.tokens.selected else
                                _top5_tokens(retriever, result))
            whole, tokenizer = result.tokens.all, result.tokens.tokenizer
        mean_sel = statistics.mean(selected)
        out[name] = {"tools": len(retriever.index.catalog), "queries": len(items), "top5_tokens_mean": mean_sel,
                     "catalog_tokens": whole, "reduction": 1 - mean_sel / whole, "tokenizer": tokenizer}
        say(f"{name}: {out[name]}")
    target = bench_dir(args.bench_dir) / "latency" / "tokens.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


def _top5_tokens(retriever: Any, result: Any) -> int:
    """Tokens of the top 5 tools even when the decision was NO_TOOL (then nothing is injected)."""
    from toolrag.search.prompting import schema_tokens

    catalog = retriever.index.catalog
    return schema_tokens([catalog.get(c.id).openai_tool() for c in result.candidates[:5]])


def main(argv: list[str] | None = None) -> int:
    import sys

    raw = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description="speed, memory and scale benchmark")
    parser.add_argument("--bench-dir", help="cache folder (default $TOOLRAG_BENCH_DIR or <temp>/toolrag-bench)")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="build/open a synthetic index and time it")
    run.add_argument("--tools", type=int, required=True)
    run.add_argument("--english-model", default="minilm", choices=("minilm", "none"))
    run.add_argument("--encoder", default="real", choices=("real", "standin"),
                     help="real models, or hashing stand-ins for the text models (scale runs)")
    run.add_argument("--queries", type=int, default=200)
    run.add_argument("--cache-queries", type=int, default=30)
    run.add_argument("--image-queries", type=int, default=20)
    run.add_argument("--image-every", type=int, default=500, help="one tool in N gets an example image")
    run.add_argument("--edits", type=int, default=5)
    run.add_argument("--server", action="store_true", help="also query the index through a Chroma server")
    run.add_argument("--fresh", action="store_true", help="delete the index first (measures a full build)")
    tokens = sub.add_parser("tokens", help="schema-token economy")
    tokens.add_argument("--benchmarks", help="folder of the public sets")
    tokens.add_argument("--n", type=int, default=200, help="queries per catalog")
    sub.add_parser("report", help="write the speed section of docs/benchmarks.md")
    args = parser.parse_args(raw)
    args.argv = raw
    if args.command == "run":
        return cmd_run(args)
    if args.command == "tokens":
        return cmd_tokens(args)
    from bench.report import write_latency_section

    write_latency_section(bench_dir(args.bench_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
