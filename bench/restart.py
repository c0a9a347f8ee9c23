"""Restart of a large catalog alone, for a before/after check of a change: catalog load and index open, a few
times in one process, on the synthetic catalog and index that ``python -m bench.latency run --tools N`` built.

    python -m bench.restart --tools 100000                  # the index of the latency run
    python -m bench.restart --tools 100000 --index-dir D    # another copy of it (one per revision compared)

Compare two revisions by running this from a worktree of each, alternating, each on its own copy of the index
(a revision whose fingerprint differs rebuilds the saved state once, in the warm-up open). The first open of
the process is a warm-up (imports, the Chroma client) and is not counted; every later one must come from the
saved state, else the run stops.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench.common import machine, parse_args  # also sets the offline, no-telemetry environment
from bench.datasets import bench_dir

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--tools", type=int, default=100_000)
        parser.add_argument("--repeat", type=int, default=3)
        parser.add_argument("--index-dir", type=Path, help="index folder (default: the latency run's)")

    args = parse_args("bench.restart", __doc__.split("\n\n")[0], argv, options)
    from toolrag import load_catalog
    from toolrag.encode.models import load_models
    from toolrag.search.retriever import ToolRetriever
    from toolrag.settings import Settings

    root = bench_dir(args.bench_dir) / "synthetic" / str(args.tools)
    catalog_dir, index_dir = root / "catalog", args.index_dir or root / "index-e5+minilm"
    if not catalog_dir.is_dir() or not index_dir.is_dir():
        raise SystemExit(f"no synthetic catalog or index under {root}: run python -m bench.latency run --tools "
                         f"{args.tools} first")
    settings = Settings()
    models = load_models(settings)
    ToolRetriever.from_catalog(load_catalog(catalog_dir), settings=settings, data_dir=index_dir, models=models)
    rows = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        catalog = load_catalog(catalog_dir)
        loaded = time.perf_counter()
        retriever = ToolRetriever.from_catalog(catalog, settings=settings, data_dir=index_dir, models=models)
        opened = time.perf_counter()
        if not retriever.index.restored or retriever.index.encoded_last_sync:
            raise SystemExit("the index was not reopened from its saved state: run it again (the warm-up open "
                             "saves the state in the background)")
        rows.append((loaded - start, opened - loaded))
        del retriever, catalog
    print(f"{args.tools:,} tools, {machine()}")
    print("| run | catalog load s | index open s | restart s |")
    print("|---|---|---|---|")
    for n, (load, open_) in enumerate(rows, start=1):
        print(f"| {n} | {load:.2f} | {open_:.2f} | {load + open_:.2f} |")
    print(f"| median | {statistics.median(r[0] for r in rows):.2f} | {statistics.median(r[1] for r in rows):.2f} "
          f"| {statistics.median(sum(r) for r in rows):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
