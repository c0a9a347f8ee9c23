"""The quality table of bench.quality, in one place: the metrics it reports, the label of each method and the
one rendering of the table (what ``python -m bench.quality`` prints and what docs/benchmarks.md shows).
"""

from __future__ import annotations

from typing import Any

__all__ = ["HEADER", "LABELS", "METRICS", "pct", "quality_rows"]

#: The metrics of every row, in column order (names as toolrag.evaluation.metrics computes them).
METRICS = ("recall@5", "ndcg@5", "ndcg@10", "completeness@5", "mrr@10")
#: The method of each row, in words.
LABELS = {
    "bm25": "BM25 only",
    "dense_e5": "dense only: multilingual-e5-small",
    "dense_minilm": "dense only: all-MiniLM-L6-v2",
    "rrf": "RRF (k 60) of BM25, e5, MiniLM",
    "hybrid": "**hybrid (shipped defaults)**",
    "tuned": "hybrid, weights tuned on 100 labelled queries of the catalog (toolrag.evaluation.tune)",
    "rerank": "hybrid + rerank",
}
HEADER = ["| set | method | R@5 | NDCG@5 | NDCG@10 | Comp@5 | MRR@10 |", "|---|---|---|---|---|---|---|"]


def pct(value: float) -> str:
    """A rate in percent with two decimals: 0.7769 -> ``77.69``."""
    return f"{100 * value:.2f}"


def quality_rows(results: dict[str, Any]) -> list[str]:
    """The table of ``results`` (bench.quality's JSON): :data:`HEADER`, then one row per set and method, the set
    named on its first row; a method that did not run reads ``n/a`` with the reason."""
    lines = list(HEADER)
    for entry in results["sets"].values():
        for n, (method, values) in enumerate(entry["methods"].items()):
            label = entry["label"] if n == 0 else ""
            if "skipped" in values:
                lines.append(f"| {label} | {LABELS.get(method, method)} | n/a: {values['skipped']} | | | | |")
                continue
            lines.append(f"| {label} | {LABELS.get(method, method)} | "
                         + " | ".join(pct(values[m]) for m in METRICS) + " |")
    return lines
