"""The lone-tool rule of the decision (one permitted tool): how many requests that need a tool pass it, and how
many that need none are refused, for thresholds of ``toolrag.search.features.lone_tool_z``.

    python -m bench.lone_tool                          # bundled, MetaTool Task1, Seal-Tools in, Gorilla
    python -m bench.lone_tool --sets bundled --thresholds 1.5,2,2.5
    python -m bench.lone_tool --signals dense           # the multilingual model alone

Each labelled request that needs a tool meets its gold tool as the lone tool (passed: it is called); each
request that needs none (MetaTool Task1's, the bundled ones) meets the tool ranked first for it, the hardest
lone tool it could meet (refused: NO_TOOL). Also printed, where a set has both kinds: how well -z of the tool
ranked first separates the requests that need no tool (AUC). Query vectors come from the same caches as
``bench.decisions``.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from bench.common import machine, open_retriever, parse_args, say
from bench.datasets import SETS, prepare
from bench.decisions import _bundled, _cache, _root, auc

__all__ = ["main"]


def _counts(retriever: Any, rows: Any, thresholds: list[float], signals: list[str]
            ) -> tuple[dict[float, list[int]], float]:
    """Pass/refusal counts per threshold, and the no-tool AUC of -z of the tool ranked first (NaN without
    both kinds of request)."""
    from toolrag.search.decision_step import top_tool_z

    snap, calibrator = retriever.index.snapshot, retriever.decisions
    chat, chat_cjk = calibrator.chat_vectors(), calibrator.chat_cjk()
    out = {t: [0, 0, 0, 0] for t in thresholds}  # passed, needing a tool, refused, needing none
    ranked: list[tuple[float, bool]] = []  # (-z of the top tool, needs no tool)

    def z_of(tool: int, q: Any) -> float:
        return top_tool_z(snap, tool, q, chat, chat_cjk, signals=signals)

    for row in rows:
        if row.image is not None:
            continue
        q = retriever.analyzer.analyze(row.query, settings=retriever.settings)
        top = retriever.search(row.query, top_k=1, audited=False).candidates
        first = snap.row_of[top[0].id] if top else None
        if first is not None:
            ranked.append((-z_of(first, q), not row.gold))
        tool = snap.row_of.get(next(iter(row.gold))) if row.gold else first
        if tool is None:
            continue
        z = z_of(tool, q)
        for t, counts in out.items():
            if row.gold:
                counts[0] += bool(z >= t) or not np.isfinite(z)
                counts[1] += 1
            else:
                counts[2] += bool(z < t)
                counts[3] += 1
    kinds = {none for _, none in ranked}
    score = auc([v for v, _ in ranked], [none for _, none in ranked]) if len(kinds) == 2 else float("nan")
    return out, score


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--sets", default="bundled,metatool_task1,seal_in,gorilla")
        parser.add_argument("--thresholds", default="1.5,2,2.5")
        parser.add_argument("--limit", type=int, default=None)
        parser.add_argument("--signals", default="dense_en,dense",
                            help="text signals in order of preference: the first that reads the request counts")

    args = parse_args("bench.lone_tool", __doc__.split("\n\n")[0], argv, options, benchmarks=True)
    from toolrag import load_queries
    from toolrag.encode.models import load_models
    from toolrag.settings import Settings

    thresholds = [float(t) for t in args.thresholds.split(",")]
    models = load_models(Settings())
    results: dict[str, dict[float, list[int]]] = {}
    aucs: dict[str, float] = {}
    for name in args.sets.split(","):
        if name == "bundled":
            retriever, rows = _bundled(args, models)
            cache = _cache(retriever, _root(args), "bundled")
        else:
            root = prepare(args.benchmarks, args.bench_dir)
            spec = SETS[name]
            retriever = open_retriever(root, spec.source, models=models)
            cache = _cache(retriever, root, spec.source)
            rows = load_queries(spec.queries_file(root))
        rows = rows[: args.limit] if args.limit else rows
        results[name], aucs[name] = _counts(retriever, rows, thresholds, args.signals.split(","))
        cache.save()
        say(f"{name}: {len(rows)} rows")
    print(f"machine: {machine()}")
    print("| set | threshold | requests needing a tool: passed | needing none: refused |")
    print("|---|---|---|---|")
    for name, by_t in results.items():
        for t, (passed, tools, refused, none) in by_t.items():
            refusal = f"{100 * refused / none:.1f} ({none})" if none else "n/a"
            print(f"| {name} | {t:g} | {100 * passed / max(tools, 1):.1f} ({tools}) | {refusal} |")
    for name, value in aucs.items():
        if value == value:
            print(f"{name}: no-tool AUC of -z of the tool ranked first: {100 * value:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
