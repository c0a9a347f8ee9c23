"""The text encoders compared in one process: sentence-transformers, ONNX fp32 and ONNX int8, request by request.

    python -m bench.encoders                  # writes <bench dir>/encoders.json and prints the table
    python -m bench.encoders --write-docs     # ... and the "encoders" section of docs/benchmarks.md

Every backend of both text models is loaded in this process; each request is encoded by every one of them in
turn (so load on a shared machine hits them alike), one request at a time as a search does. Tool texts (the
synthetic catalog's) are encoded in batches as indexing does. The plain row is one fp32 encode by
sentence-transformers' all-MiniLM-L6-v2: the yardstick of the "one plain MiniLM encode" target. Cosines are
against the torch backend of the same model.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from bench.common import REPO, engine_description, git_rev, keep_results, machine, parse_args, say
from bench.datasets import bench_dir
from bench.report import write_section
from bench.synthetic import make_catalog, make_queries

__all__ = ["main"]

BACKENDS = ("torch", "onnx", "onnx-int8")


def run(args: argparse.Namespace) -> dict[str, Any]:
    from toolrag import load_catalog
    from toolrag.encode.models import get_text_encoder

    root = bench_dir(args.bench_dir)
    folder = make_catalog(root / "synthetic" / "1000", 1000, image_every=500, assets=REPO / "assets")
    queries = [q for q, _ in make_queries(folder, args.queries, seed=31)]
    docs = [t.document_text() for t in load_catalog(folder).tools[: args.passages]]
    encoders = {(name, backend): get_text_encoder(name, backend) for name in ("minilm", "e5") for backend in BACKENDS}
    for enc in encoders.values():
        enc.encode_queries(["warm up"])
    per_query: dict[str, list[float]] = {f"{n}/{b}": [] for n, b in encoders}
    for i, query in enumerate(queries):
        request = f"{query} ({i})"
        for (name, backend), enc in encoders.items():
            start = time.perf_counter()
            enc.encode_queries([request])
            per_query[f"{name}/{backend}"].append((time.perf_counter() - start) * 1000)
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": machine(), "revision": git_rev(),
                           "engine": engine_description(), "command": args.command_line,
                           "queries": len(queries), "passages": len(docs), "rows": {}}
    for (name, backend), enc in encoders.items():
        start = time.perf_counter()
        vectors = enc.encode_passages(docs)
        passages_s = len(docs) / (time.perf_counter() - start)
        ref = encoders[(name, "torch")]
        cos = np.concatenate([np.sum(ref.encode_queries(queries[:50]) * enc.encode_queries(queries[:50]), axis=1),
                              np.sum(ref.encode_passages(docs[:50]) * vectors[:50], axis=1)])
        out["rows"][f"{name}/{backend}"] = {
            "model": name, "backend": backend, "query_p50_ms": statistics.median(per_query[f"{name}/{backend}"]),
            "passages_per_s": passages_s, "cosine_mean": float(cos.mean()), "cosine_min": float(cos.min()),
            "fingerprint": enc.fingerprint}
        say(f"{name}/{backend}: {out['rows'][f'{name}/{backend}']}")
    plain = out["rows"]["minilm/torch"]["query_p50_ms"]
    for backend in BACKENDS:
        both = sum(statistics.median(per_query[f"{n}/{backend}"]) for n in ("minilm", "e5"))
        out[f"both_{backend}_ms"] = both
        out[f"both_{backend}_ratio"] = both / plain
        tools_s = 1.0 / sum(1.0 / out["rows"][f"{n}/{backend}"]["passages_per_s"] for n in ("minilm", "e5"))
        out[f"index_{backend}_tools_per_s"] = tools_s
    return out


def table(results: dict[str, Any]) -> str:
    lines = [f"Command: `{results['command']}`  ", f"Date: {results['date']}; machine: {results['machine']}  ",
             f"Engine: {results['engine']}; {results['queries']} requests one at a time, "
             f"{results['passages']} tool texts in batches", "",
             "| model | backend | request p50 ms | tool texts/s | cosine to torch (mean / min) |",
             "|---|---|---|---|---|"]
    for row in results["rows"].values():
        lines.append(f"| {row['model']} | {row['backend']} | {row['query_p50_ms']:.1f} | "
                     f"{row['passages_per_s']:.0f} | {row['cosine_mean']:.4f} / {row['cosine_min']:.4f} |")
    lines += ["", "| backend | both models, one request: ms | ... / one plain MiniLM encode (torch) | "
              "indexing, both models: tools/s |", "|---|---|---|---|"]
    for backend in BACKENDS:
        lines.append(f"| {backend} | {results[f'both_{backend}_ms']:.1f} | {results[f'both_{backend}_ratio']:.2f} | "
                     f"{results[f'index_{backend}_tools_per_s']:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--queries", type=int, default=200)
        parser.add_argument("--passages", type=int, default=256)

    args = parse_args("bench.encoders", "text encoder backends compared in one process", argv, options,
                      results="encoders.json", docs="the encoders section of docs/benchmarks.md")
    return keep_results(args, run(args), "encoders.json", table, lambda results: write_section("encoders", table(results)))


if __name__ == "__main__":
    raise SystemExit(main())
