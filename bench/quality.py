"""Retrieval quality on public sets: BM25, dense, the shipped hybrid, RRF (and rerank when available).

    python -m bench.quality                    # every reported set, writes <bench dir>/quality.json
    python -m bench.quality --write-docs       # ... and the quality section of docs/benchmarks.md
    python -m bench.quality --sets metatool_single --methods hybrid

Each set is converted to a catalog folder of JSON Lines profiles + a queries file (bench/datasets.py), loaded
with ``toolrag.load_catalog`` / ``toolrag.load_queries``, indexed once per model set (re-used afterwards) and
scored with ``ToolRetriever.evaluate`` - the code behind ``toolrag eval``. Every method is a ``Settings``;
only the settings change between rows, never the code path. The no-tool part runs MetaTool ``Task1.json``
through ``search`` and reports the AUC of the top cosine and the accuracy of its decisions (the
decision model shipped with toolrag, shipped settings).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import (
    SETS,
    engine_description,
    git_rev,
    keep_results,
    machine,
    model_ids,
    open_retriever,
    parse_args,
    prepare,
    say,
)
from bench.quality_table import LABELS, METRICS, quality_rows
from bench.report import write_quality_section

__all__ = ["METHODS", "auc", "main", "method_settings"]

REPORTED = ("metatool_single", "metatool_multi", "seal_in", "seal_out", "gorilla", "gorilla_b")
#: The labelled sample each catalog's "tuned" row learns its weights from (never a reported split).
TUNE_FROM = {"metatool": "metatool_dev", "seal_tools": "seal_dev", "gorilla_hf": "gorilla_a"}
TUNE_SAMPLE = 100
METHODS = tuple(LABELS)


def method_settings(method: str) -> Any:
    """The ``Settings`` of one reported method (defaults everywhere else)."""
    from toolrag.settings import Fusion, Settings

    base = Settings()
    if method == "bm25":
        return base.with_overrides(weights={s: 1.0 if s == "bm25" else 0.0 for s in base.weights})
    if method == "dense_e5":
        return base.with_overrides(weights={s: 1.0 if s == "dense" else 0.0 for s in base.weights})
    if method == "dense_minilm":
        return base.with_overrides(weights={s: 1.0 if s == "dense_en" else 0.0 for s in base.weights})
    if method == "rrf":
        return base.with_overrides(fusion=Fusion.RRF, weights={"dense": 1.0, "dense_en": 1.0, "bm25": 1.0})
    if method == "rerank":
        return base.with_overrides(rerank=True)
    if method in ("hybrid", "tuned"):  # "tuned" starts from the shipped settings (see _tune)
        return base
    raise ValueError(f"unknown method {method!r}; methods: {', '.join(METHODS)}")


def auc(scores: Sequence[float], positive: Sequence[bool]) -> float:
    """Area under the ROC curve (ties count one half): P(score of a positive > score of a negative)."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(positive, dtype=bool)
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=np.float64)
    sorted_s = s[order]
    i = 0
    while i < len(s):  # average ranks of ties
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    n1, n0 = int(y.sum()), int((~y).sum())
    return float((ranks[y].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def no_tool(retriever: Any, rows: list[Any]) -> dict[str, Any]:
    """AUC of the top cosine for "a tool is needed", and the accuracy of the shipped decision
    (NO_TOOL or not, from the decision model shipped with toolrag).

    Calibration half = rows 4k and 4k+1 (Task1 alternates need-a-tool / no-tool rows), report half = the rest;
    the top cosine of each text model over the whole catalog is reported too (the anchor: MiniLM, AUC 88.3).
    """
    from toolrag.search.results import Decision
    from toolrag.settings import Settings

    cfg = Settings()
    confidence, decided_tool, positive = [], [], []
    for row in rows:
        result = retriever.search(row.query, settings=cfg)
        confidence.append(result.top_cosine)
        decided_tool.append(result.decision is not Decision.NO_TOOL)
        positive.append(bool(row.gold))
    y = np.array(positive)
    tool = np.array(decided_tool)
    half = np.arange(len(rows)) % 4 >= 2
    out: dict[str, Any] = {
        "n": len(rows), "n_positive": int(y.sum()),
        "precision_target": cfg.precision_target,
        "auc_confidence": auc(confidence, y),
        "accuracy": float((tool == y).mean()),
        "accuracy_report_half": float((tool[half] == y[half]).mean()),
        "tool_recall": float(tool[y].mean()), "no_tool_recall": float((~tool[~y]).mean()),
    }
    from toolrag.search.scoring import score_signals

    snap = retriever.index.snapshot
    every = np.arange(len(snap.ids))
    tops: dict[str, list[float]] = {"dense": [], "dense_en": [], "bm25": []}
    for row in rows:
        feats = retriever.analyzer.analyze(row.query, settings=cfg)
        raw = score_signals(snap, every, feats, history_weight=cfg.history_weight).raw
        for name in tops:
            tops[name].append(float(np.max(raw[name])) if name in raw else float("nan"))
    out["auc_top_cosine"] = {name: auc(v, y) for name, v in tops.items() if not np.isnan(v).any()}
    return out


def _tune(root: Path, retriever: Any, source: str, cache: dict[str, Any]) -> Any:
    """Weights for one catalog from TUNE_SAMPLE labelled queries of its tuning split (toolrag.evaluation.tune)."""
    from toolrag import load_queries
    from toolrag.evaluation.tune import tune_weights

    rows = load_queries(SETS[TUNE_FROM[source]].queries_file(root))
    sample = rows[:: max(1, len(rows) // TUNE_SAMPLE)][:TUNE_SAMPLE]
    start = time.perf_counter()
    result = tune_weights(retriever, sample, base=method_settings("hybrid"), step=0.1)
    say(f"tuned {source} on {len(sample)} queries of {TUNE_FROM[source]} in {time.perf_counter() - start:.0f}s: "
        f"{result.summary()}")
    cache[source] = result.settings
    return result.settings


def run(args: argparse.Namespace) -> dict[str, Any]:
    from toolrag import Evaluator, load_queries
    from toolrag.encode.models import load_models
    from toolrag.settings import Settings

    root = prepare(args.benchmarks, args.bench_dir)
    models = load_models(Settings())
    sets = args.sets.split(",")
    methods = args.methods.split(",")
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": machine(),
                               "revision": git_rev(), "command": args.command_line,
                               "engine": engine_description(),
                               "settings": Settings().to_dict(), "sets": {}}
    retrievers: dict[str, Any] = {}
    tuned: dict[str, Any] = {}
    for name in sets:
        spec = SETS[name]
        if spec.source not in retrievers:
            retrievers[spec.source] = open_retriever(root, spec.source, models=models)
        retriever = retrievers[spec.source]
        results["models"] = model_ids(retriever)
        rows = load_queries(spec.queries_file(root))
        if name == "metatool_task1":
            results["no_tool"] = no_tool(retriever, rows)
            say(f"no-tool: {results['no_tool']}")
            continue
        entry: dict[str, Any] = {"label": spec.label, "queries": len(rows),
                                 "tools": len(retriever.index.catalog), "methods": {}}
        for method in methods:
            if method == "rerank" and getattr(retriever, "reranker", None) is None and \
                    getattr(retriever, "_reranker_factory", None) is None:
                entry["methods"][method] = {"skipped": getattr(retriever, "reranker_note", "no reranker")}
                continue
            start = time.perf_counter()
            cfg = method_settings(method)
            if method == "tuned":
                if name == "gorilla":
                    entry["methods"][method] = {"skipped": "its sample is half of this set: see Gorilla HF half B"}
                    continue
                cfg = tuned[spec.source] if spec.source in tuned else _tune(root, retriever, spec.source, tuned)
                entry["tuned_weights"] = {k: v for k, v in cfg.weights.items() if k in ("dense", "dense_en", "bm25")}
            report = Evaluator(rows)(retriever, settings=cfg)
            entry["methods"][method] = {m: report.metrics[m] for m in METRICS}
            say(f"{name} {method}: " + ", ".join(f"{m} {100 * report.metrics[m]:.2f}" for m in METRICS)
                + f" ({time.perf_counter() - start:.0f}s)")
        results["sets"][name] = entry
    return results


def main(argv: list[str] | None = None) -> int:
    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--sets", default=",".join((*REPORTED, "metatool_task1")))
        parser.add_argument("--methods", default=",".join(METHODS))

    args = parse_args("bench.quality", "retrieval quality on public tool-retrieval sets", argv, options,
                      benchmarks=True, results="quality.json", docs="the quality section of docs/benchmarks.md")
    return keep_results(args, run(args), "quality.json", lambda results: "\n".join(quality_rows(results)),
                        write_quality_section)


if __name__ == "__main__":
    raise SystemExit(main())
