"""What Chroma's own HNSW graph costs when an index is written, at several graph settings.

    python -m bench.chroma_writes                      # 30,000 rows, default and lighter graph settings
    python -m bench.chroma_writes --rows 10000 --settings 100:16,32:8

toolrag serves searches from in-process structures (every tool scored exactly up to 20,000 tools, IVF lists
above), so Chroma's HNSW graph is built on every write but read only by other clients of the collection. This
writes ``--rows`` unit vectors (384-d, random, in blocks of 1,024 as an index build does) into a new embedded
collection per setting (``ef_construction:max_neighbors``) and prints the write time and the graph's recall@10
for 200 queries that mix two stored vectors (random vectors are a hard case for any graph).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import at_least, machine, parse_args, say


def _hnsw_settings(text: str) -> list[tuple[int, int]]:
    """``--settings``: comma-separated ef_construction:max_neighbors pairs, as ``100:16,50:12``."""
    settings: list[tuple[int, int]] = []
    for setting in text.split(","):
        try:
            ef, neighbors = (int(x) for x in setting.split(":"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{setting!r} is not ef_construction:max_neighbors (two whole numbers, "
                                             "as 100:16)") from None
        settings.append((ef, neighbors))
    return settings


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--rows", type=at_least(10), default=30_000,
                            help="rows written (at least 10: a query asks for 10 neighbours)")
        parser.add_argument("--settings", type=_hnsw_settings, default="100:16,50:12,32:16,32:8",
                            help="ef_construction:max_neighbors pairs (Chroma's default is 100:16)")

    args = parse_args("bench.chroma_writes", __doc__, argv, options, cache=False)
    settings: list[tuple[int, int]] = args.settings
    import chromadb

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(args.rows, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = 0.6 * vectors[rng.integers(0, args.rows, 200)] + 0.4 * vectors[rng.integers(0, args.rows, 200)]
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    exact = np.argsort(-(queries @ vectors.T), axis=1)[:, :10]
    print(f"{args.rows:,} rows of 384-d unit vectors, written in blocks of 1,024; {machine()}")
    print("| ef_construction:max_neighbors | write s | rows/s | recall@10 of the graph |")
    print("|---|---|---|---|")
    for ef, neighbors in settings:
        setting = f"{ef}:{neighbors}"
        folder = Path(tempfile.mkdtemp(prefix="chroma-writes-"))
        try:
            client = chromadb.PersistentClient(path=str(folder))
            hnsw = {"space": "cosine", "ef_construction": ef, "max_neighbors": neighbors}
            col = client.create_collection("bench-writes", embedding_function=None, configuration={"hnsw": hnsw})
            say(f"writing with {setting}")
            start = time.perf_counter()
            for first in range(0, args.rows, 1024):
                last = min(args.rows, first + 1024)
                col.upsert(ids=[f"r{i}" for i in range(first, last)], embeddings=vectors[first:last],
                           metadatas=[{"row": i} for i in range(first, last)])
            spent = time.perf_counter() - start
            found = col.query(query_embeddings=queries, n_results=10)["ids"]
            recall = np.mean([len({int(x[1:]) for x in got} & set(want)) / 10
                              for got, want in zip(found, exact.tolist(), strict=True)])
            print(f"| {setting} | {spent:.1f} | {args.rows / spent:,.0f} | {recall:.2f} |")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
