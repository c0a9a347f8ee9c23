"""Speed, memory and scale: synthetic catalogs built through the real index path, timed stage by stage.

    python -m bench.latency run --tools 1000               # default models (e5 + MiniLM)
    python -m bench.latency run --quick                    # 1,000 tools, fewer queries: a before/after check
    python -m bench.latency run --tools 10000 --server     # also an index served by a Chroma server
    python -m bench.latency run --tools 100000 --english-model none
    python -m bench.latency sizes --encoder standin        # 1,000 / 10,000 / 100,000, each in its own process
    python -m bench.latency tokens                         # schema-token economy (sample catalog, Seal-Tools)
    python -m bench.latency report                         # writes the speed section of docs/benchmarks.md

``run`` writes ``<bench dir>/latency/run-<tools>-<models>.json``: the first build of the index (tools/s, peak
RSS; kept from the run that built it), a restart with the index in place (must encode nothing), query
latency p50/p95 split into the engine's own timing stages for text and text+image queries, the gain of the
query-vector cache on an identical second query, the cost of re-indexing one edited profile, and
optionally the same queries against a Chroma server. Each run is a separate process so peak RSS is its own.
With the real models it also measures, in the same process and alternating request by request, a search
(both text models, nothing cached) against one plain fp32 encode of the same request by sentence-transformers'
all-MiniLM-L6-v2 (the ratio survives a noisy machine better than milliseconds), and the throughput of a
labelled evaluation (``Evaluator``, batched encoding) checked against one-at-a-time search. Those measurements
are :mod:`bench.latency_probes`; ``tokens`` is :mod:`bench.schema_tokens`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from typing import Any

import numpy as np

from bench.common import REPO, engine_description, git_rev, machine, parse_args, say
from bench.datasets import bench_dir
from bench.latency_probes import edits, evaluation, rss_mb, server, stages, timed_search, versus_minilm
from bench.schema_tokens import cmd_tokens
from bench.synthetic import make_catalog, make_queries

__all__ = ["main"]

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
        from toolrag.encode.onnx_build import DEFAULT_BACKEND, text_backend

        backend = text_backend()  # TOOLRAG_TEXT_BACKEND: each backend has its own index and its own row
        models_label = ("e5+minilm" if english else "e5") + ("" if backend is DEFAULT_BACKEND else f"-{backend.value}")
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
                              "command": args.command_line}
    start = time.perf_counter()
    models = load_models(settings) if args.encoder == "real" else _standin_models(english)
    report["encoder"] = args.encoder
    report["model_load_s"] = time.perf_counter() - start
    report["rss_after_models_mb"] = rss_mb()
    say(f"models loaded in {report['model_load_s']:.1f}s, RSS {report['rss_after_models_mb']:.0f} MB")

    start = time.perf_counter()
    catalog = load_catalog(folder)
    report["catalog_load_s"] = time.perf_counter() - start
    say(f"catalog of {len(catalog)} tools loaded and validated in {report['catalog_load_s']:.1f}s")
    new_index = not data_dir.exists()  # an existing one is only brought up to date (a changed model, say)
    start = time.perf_counter()
    retriever = ToolRetriever.from_catalog(catalog, settings=settings, data_dir=data_dir, models=models)
    build_s = time.perf_counter() - start
    encoded = retriever.index.encoded_last_sync
    say(f"index open/build: {build_s:.1f}s, {encoded} texts/images encoded")
    if encoded and new_index:
        report["build"] = {"seconds": build_s, "encoded": encoded, "tools_per_s": args.tools / build_s,
                           "peak_rss_mb": rss_mb(), "rss_before_mb": report["rss_after_models_mb"],
                           "catalog_load_s": report["catalog_load_s"], "date": report["date"]}
    elif "build" in previous:
        report["build"] = previous["build"]

    start = time.perf_counter()
    again = load_catalog(folder)
    loaded = time.perf_counter()
    reopened = ToolRetriever.from_catalog(again, settings=settings, data_dir=data_dir, models=models)
    report["restart"] = {"load_and_open_s": time.perf_counter() - start, "catalog_load_s": loaded - start,
                         "index_open_s": time.perf_counter() - loaded, "encoded": reopened.index.encoded_last_sync,
                         "from_saved_state": bool(getattr(reopened.index, "restored", False))}
    say(f"restart: {report['restart']}")
    del reopened, again
    retriever.analyzer = QueryAnalyzer(retriever.index.models, cache_size=4096)

    queries = make_queries(folder, args.queries + args.cache_queries)
    retriever.search("warm up the first-query caches")  # token counts etc. are computed once per snapshot
    texts = [q for q, _ in queries[: args.queries]]
    timings = [timed_search(retriever, q) for q in texts]
    hits = sum(1 for (q, gold), t in zip(queries, timings, strict=False) if gold in retriever.search(q).ids)
    report["text"] = stages(timings)
    report["text_hit_at_5"] = hits / len(texts)
    say(f"text queries: p50 total {report['text']['total']['p50']:.1f} ms, beyond encoding "
        f"{report['text']['beyond_encoding']['p50']:.1f} ms")

    first, second = [], []
    for q, _ in queries[args.queries:]:
        first.append(timed_search(retriever, q)["total"])
        second.append(timed_search(retriever, q)["total"])
    report["cache"] = {"first_p50": statistics.median(first), "second_p50": statistics.median(second),
                       "speedup": statistics.median(first) / statistics.median(second), "n": len(first)}
    say(f"vector cache: {report['cache']}")

    if args.image_queries:
        from toolrag.search.warmup import warm_up

        start = time.perf_counter()
        warm_up(retriever.models)  # what the app does in the background once its index is ready
        report["warm_up_s"] = time.perf_counter() - start
        image_queries = _image_queries(args.image_queries)
        image_timings = [timed_search(retriever, q, img) for q, img in image_queries]
        report["text_image"] = stages(image_timings)
        report["first_image_query_ms"] = image_timings[0]["total"]
        say(f"text+image: p50 total {report['text_image']['total']['p50']:.1f} ms (first after warm-up "
            f"{report['first_image_query_ms']:.0f} ms)")

    if args.encoder == "real" and args.ratio_queries:
        report["vs_minilm"] = versus_minilm(retriever, make_queries(folder, args.ratio_queries, seed=23))
        say(f"search vs one plain MiniLM encode: {report['vs_minilm']}")
    if args.eval_rows:
        report["evaluation"] = evaluation(retriever, make_queries(folder, args.eval_rows, seed=29))
        say(f"evaluation: {report['evaluation']}")

    report["edit"] = edits(retriever, args.edits)
    say(f"edit one profile: {report['edit']}")
    if args.server:
        report["server"] = server(root, folder, data_dir, settings, models, retriever, texts)
    report["peak_rss_mb"] = rss_mb()
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


def cmd_sizes(args: argparse.Namespace) -> int:
    """Each size in its own process (so peak RSS is its own), then the table of all runs."""
    import subprocess
    import sys

    for size in [int(x) for x in args.sizes.split(",")]:
        cmd = [sys.executable, "-m", "bench.latency", *(["--bench-dir", args.bench_dir] if args.bench_dir else []),
               "run", "--tools", str(size), "--encoder", args.encoder, *args.extra]
        say(f"running {' '.join(cmd[1:])}")
        subprocess.run(cmd, check=True, cwd=REPO)
    from bench.report import latency_tables

    print(latency_tables(bench_dir(args.bench_dir)))
    return 0



def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        sub = parser.add_subparsers(dest="command", required=True)
        run = sub.add_parser("run", help="build/open a synthetic index and time it")
        run.add_argument("--tools", type=int, default=1000)
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
        run.add_argument("--ratio-queries", type=int, default=100,
                         help="requests timed against one plain MiniLM encode (real models only; 0 = skip)")
        run.add_argument("--eval-rows", type=int, default=500, help="labelled requests evaluated (0 = skip)")
        run.add_argument("--quick", action="store_true",
                         help="1,000 tools and fewer requests: a before/after check in about a minute")
        sizes = sub.add_parser("sizes", help="several sizes, each in its own process, then the table")
        sizes.add_argument("--sizes", default="1000,10000,100000")
        sizes.add_argument("--encoder", default="standin", choices=("real", "standin"))
        sizes.add_argument("extra", nargs="*", help="more options for each run (after --)")
        tokens = sub.add_parser("tokens", help="schema-token economy")
        tokens.add_argument("--benchmarks", help="folder of the public sets")
        tokens.add_argument("--n", type=int, default=200, help="queries per catalog")
        sub.add_parser("report", help="write the speed section of docs/benchmarks.md")

    args = parse_args("bench.latency", "speed, memory and scale benchmark", argv, options)
    if args.command == "run" and args.quick:
        args.tools, args.queries, args.cache_queries, args.image_queries = 1000, 60, 10, 10
        args.edits, args.ratio_queries, args.eval_rows = 2, 40, 100
    if args.command == "sizes":
        return cmd_sizes(args)
    if args.command == "run":
        return cmd_run(args)
    if args.command == "tokens":
        return cmd_tokens(args)
    from bench.report import write_latency_section

    write_latency_section(bench_dir(args.bench_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
