"""What BM25 costs a caller who sees a subset of a large catalog, per search (``BM25Index.scores`` with the
caller's visible mask, as a search asks for it), against the same search over the whole catalog.

    python -m bench.bm25_subset                    # 50,000 synthetic tools (bench/synthetic.py), 200 queries
    python -m bench.bm25_subset --tools 10000 --queries 100

The caller sees the tools of half of the synthetic domains. Each query is scored once per pass (a search asks
for the same query's scores up to three times; the index keeps the last query's, so only the first costs);
the first pass finds each term's subset weights to compute, the later ones what a caller's next searches pay.
Pure CPU: the lexical texts of the synthetic tools, tokenised once, no model.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import at_least, machine, parse_args
from bench.synthetic import make_catalog, make_queries

__all__ = ["main"]


def _pass_ms(index: object, queries: list[str], visible: np.ndarray | None) -> list[float]:
    times = []
    for query in queries:
        start = time.perf_counter()
        index.scores(query, visible)  # type: ignore[attr-defined]
        times.append((time.perf_counter() - start) * 1000)
    return times


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--tools", type=int, default=50_000)
        parser.add_argument("--queries", type=int, default=200)
        parser.add_argument("--passes", type=at_least(2), default=3, help="the first, then the later ones")

    args = parse_args("bench.bm25_subset", __doc__.split("\n\n")[0], argv, options, cache=False)
    from toolrag.catalog.loader import load_catalog
    from toolrag.index.bm25 import BM25Index

    with tempfile.TemporaryDirectory(prefix="toolrag-bm25-") as tmp:
        folder = make_catalog(Path(tmp), args.tools, image_every=0)
        catalog = load_catalog(folder, cache=False)
        requests = {"short requests": [q for q, _ in make_queries(folder, args.queries)],
                    # an agent's longer request shares common words ("system", "user") with most tools
                    "long requests": [t.description for t in catalog.tools[:: max(1, len(catalog) // args.queries)]]}
        domains = sorted({json.loads(line)["category"] for line in
                          (folder / "tools.jsonl").read_text(encoding="utf-8").splitlines()})
    start = time.perf_counter()
    index = BM25Index.build([t.id for t in catalog.tools], [t.lexical_text() for t in catalog.tools])
    build_s = time.perf_counter() - start
    seen = set(domains[::2])
    visible = np.fromiter((t.category in seen for t in catalog.tools), dtype=bool, count=len(catalog.tools))
    visible.flags.writeable = False
    rows = []
    for kind, queries in requests.items():
        for label, mask in (("the whole catalog", None), (f"a caller's {visible.mean():.0%}", visible)):
            passes = [_pass_ms(index, queries, mask) for _ in range(args.passes)]
            later = [t for p in passes[1:] for t in p]
            rows.append((kind, label, statistics.median(passes[0]), statistics.median(later),
                         float(np.percentile(later, 95))))
    print(f"{machine()}; {args.tools:,} synthetic tools, {args.queries} queries of each kind, {args.passes} passes; "
          f"index built in {build_s:.1f} s\n")
    print("| requests | scored over | first pass, median ms | later passes, median ms | later passes, p95 ms |")
    print("|---|---|---:|---:|---:|")
    for kind, label, first, median, p95 in rows:
        print(f"| {kind} | {label} | {first:.2f} | {median:.2f} | {p95:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
