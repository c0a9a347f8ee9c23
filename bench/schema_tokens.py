"""The schema-token economy (``python -m bench.latency tokens``): tokens of the tool schemas injected for the top five
and for the decision's selection against the whole catalog, averaged over real requests of the bundled catalog
and Seal-Tools; written to ``<bench dir>/latency/tokens.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from bench.common import REPO, machine, say
from bench.datasets import bench_dir

__all__ = ["cmd_tokens"]


def cmd_tokens(args: argparse.Namespace) -> int:
    """Schema tokens injected for the top 5 vs the whole catalog, averaged over real queries."""
    from bench.common import index_dir, open_retriever, prepare
    from toolrag import load_queries
    from toolrag.search.retriever import ToolRetriever

    root = prepare(args.benchmarks, args.bench_dir)
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": machine(),
                           "command": args.command_line}
    sample = ToolRetriever.from_catalog(REPO / "sample_tools", data_dir=index_dir(root))
    rows = [r for r in load_queries(REPO / "sample_tools" / "queries.yaml") if r.query.strip()][: args.n]
    seal = open_retriever(root, "seal_tools")
    seal_rows = load_queries(root / "sets" / "seal_tools" / "test_in.jsonl")[: args.n]
    for name, retriever, items in (("sample", sample, rows), ("seal_tools", seal, seal_rows)):
        top5, selected, whole, tokenizer = [], [], 0, ""
        for row in items:
            result = retriever.search(row.query, top_k=5)
            if result.candidates:
                top5.append(result.tokens.candidates or _top5_tokens(retriever, result))
                selected.append(result.tokens.selected)  # 0 when the decision is NO_TOOL: nothing injected
            whole, tokenizer = result.tokens.all, result.tokens.tokenizer
        mean_top5, mean_sel = statistics.mean(top5), statistics.mean(selected)
        out[name] = {"tools": len(retriever.index.catalog), "queries": len(items), "top5_tokens_mean": mean_top5,
                     "selected_tokens_mean": mean_sel, "catalog_tokens": whole, "reduction": 1 - mean_top5 / whole,
                     "selected_reduction": 1 - mean_sel / whole, "tokenizer": tokenizer}
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
